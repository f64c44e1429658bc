/* hot_actions.c -- comments and shares: each writes its own row and the
 * post's counts in one transaction, so the counts are exact and a crash
 * leaves both or neither. A repeated share changes nothing (its key is
 * (post, user)). Also the counts shown on posts. Likes and views are
 * hot_writer.c's, many in a transaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "feed/feed.h"
#include "hot/hot_int.h"
#include "time/rfc3339.h"

typedef enum { COUNT_COMMENTS, COUNT_SHARES } count_kind;

/* One text per column: SQL is never built from data. */
static const char *const count_up[] = {
    "INSERT INTO hot_counts (post_id, created_ms, comments) VALUES ($1, $2, 1) "
    "ON CONFLICT (post_id) DO UPDATE SET comments = hot_counts.comments + 1",
    "INSERT INTO hot_counts (post_id, created_ms, shares) VALUES ($1, $2, 1) "
    "ON CONFLICT (post_id) DO UPDATE SET shares = hot_counts.shares + 1",
};
static const char *const count_down[] = {
    "UPDATE hot_counts SET comments = comments - 1 WHERE post_id = $1 AND comments > 0",
    "UPDATE hot_counts SET shares = shares - 1 WHERE post_id = $1 AND shares > 0",
};

int hot_exec(store_stmt *st, int64_t *changes)
{
    int rc = store_step(st);
    if (changes) *changes = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

static int count_move(store *db, count_kind k, int64_t post_id, int64_t created_ms, bool up)
{
    store_stmt *st = store_prepare(db, up ? count_up[k] : count_down[k]);
    store_bind_int64(st, 1, post_id);
    if (up) store_bind_int64(st, 2, created_ms);
    return hot_exec(st, NULL);
}

static int finish_tx(store *db, int rc)
{
    if (rc == STORE_OK) rc = store_commit(db);
    else store_rollback(db);
    return rc == STORE_OK ? HOT_OK : HOT_ERROR;
}

int hot_post_find(store *db, int64_t post_id, int64_t *created_ms, int64_t *author)
{
    store_stmt *st = store_prepare(db, "SELECT created_ms, author_id FROM posts WHERE month = $1 AND id = $2 "
                                       "AND deleted = 0");
    store_bind_int64(st, 1, feed_month_of(post_id));
    store_bind_int64(st, 2, post_id);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        *created_ms = store_col_int64(st, 0);
        if (author) *author = store_col_int64(st, 1);
    }
    store_reset(st);
    return rc == STORE_ROW ? HOT_OK : rc == STORE_DONE ? HOT_NOT_FOUND : HOT_ERROR;
}

/* ---- comments ------------------------------------------------------------------- */

static json_t *comment_json(int64_t id, int64_t post_id, int64_t user_id, const char *name, const char *text,
                            size_t text_len, int64_t created_ms)
{
    char cid[24], pid[24], uid[17], created[32];
    snprintf(cid, sizeof cid, "%lld", (long long)id);
    snprintf(pid, sizeof pid, "%lld", (long long)post_id);
    base_id_format(user_id, uid);
    rfc3339_format_ms(created_ms, created, sizeof created);
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:s%,s:s}", "id", cid, "post_id", pid, "author", "id", uid, "name", name,
                     "text", text, text_len, "created", created);
}

int hot_comment_add(store *db, int64_t id, int64_t post_id, int64_t user_id, const char *text, int64_t created_ms,
                    int64_t now, json_t **out)
{
    *out = NULL;
    int rc = store_begin(db);
    store_stmt *st = store_prepare(db, "INSERT INTO hot_comments (id, post_id, user_id, text, created_ms) "
                                       "VALUES ($1, $2, $3, $4, $5)");
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, post_id);
    store_bind_int64(st, 3, user_id);
    store_bind_str(st, 4, text);
    store_bind_int64(st, 5, now);
    if (rc == STORE_OK) rc = hot_exec(st, NULL);
    if (rc == STORE_OK) rc = count_move(db, COUNT_COMMENTS, post_id, created_ms, true);
    if (finish_tx(db, rc) != HOT_OK) return HOT_ERROR;
    st = store_prepare(db, "SELECT name FROM users WHERE id = $1");
    store_bind_int64(st, 1, user_id);
    rc = store_step(st);
    if (rc == STORE_ROW) *out = comment_json(id, post_id, user_id, store_col_text(st, 0), text, strlen(text), now);
    store_reset(st);
    return *out ? HOT_OK : HOT_ERROR;
}

int hot_comment_delete(store *db, int64_t post_id, int64_t comment_id, int64_t user_id)
{
    int64_t changed = 0;
    int rc = store_begin(db);
    store_stmt *st = store_prepare(db, "DELETE FROM hot_comments WHERE id = $1 AND post_id = $2 AND user_id = $3");
    store_bind_int64(st, 1, comment_id);
    store_bind_int64(st, 2, post_id);
    store_bind_int64(st, 3, user_id);
    if (rc == STORE_OK) rc = hot_exec(st, &changed);
    if (rc == STORE_OK && changed) rc = count_move(db, COUNT_COMMENTS, post_id, 0, false);
    rc = finish_tx(db, rc);
    return rc != HOT_OK ? rc : changed ? HOT_OK : HOT_NOT_FOUND;
}

int hot_comments_page(store *db, int64_t post_id, int64_t after, int limit, json_t **out, int64_t *next)
{
    store_stmt *st = store_prepare(db, "SELECT c.id, c.user_id, u.name, c.text, c.created_ms FROM hot_comments c "
                                       "JOIN users u ON u.id = c.user_id WHERE c.post_id = $1 AND c.id > $2 "
                                       "ORDER BY c.id LIMIT $3");
    store_bind_int64(st, 1, post_id);
    store_bind_int64(st, 2, after);
    store_bind_int64(st, 3, limit + 1);
    *out = json_array();
    *next = 0;
    int rc, n = 0;
    int64_t last = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (n == limit) {
            *next = last; /* a row beyond the page: there is more */
            continue;
        }
        last = store_col_int64(st, 0);
        json_array_append_new(*out, comment_json(last, post_id, store_col_int64(st, 1), store_col_text(st, 2),
                                                 store_col_text(st, 3), store_col_len(st, 3), store_col_int64(st, 4)));
        n++;
    }
    store_reset(st);
    if (rc == STORE_DONE && *out) return HOT_OK;
    json_decref(*out);
    *out = NULL;
    return HOT_ERROR;
}

/* ---- shares ----------------------------------------------------------------------- */

static int share_of(store *db, int64_t post_id, int64_t user_id, int64_t *repost)
{
    store_stmt *st = store_prepare(db, "SELECT repost_id FROM hot_shares WHERE post_id = $1 AND user_id = $2");
    store_bind_int64(st, 1, post_id);
    store_bind_int64(st, 2, user_id);
    int rc = store_step(st);
    *repost = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : STORE_ERROR;
}

int hot_share(store *db, feed_http *feed, int64_t repost_id, int64_t post_id, int64_t user_id, int64_t created_ms,
              const char *text, int64_t now, json_t **out)
{
    int64_t existing = 0, original = 0, inserted = 0;
    *out = NULL;
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = share_of(db, post_id, user_id, &existing);
    if (rc == STORE_OK && !existing) {
        /* The repost is an ordinary post of the sharer's, written and
         * fanned out by the feed; the share row says what it reposts. */
        feed_post_in in = {.id = repost_id, .author = user_id, .text = text, .client_id = NULL};
        rc = feed_post_tx(db, &in, &feed->lim, now, &original);
        store_stmt *st = store_prepare(db, "INSERT INTO hot_shares (post_id, user_id, repost_id, created_ms) "
                                           "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING");
        store_bind_int64(st, 1, post_id);
        store_bind_int64(st, 2, user_id);
        store_bind_int64(st, 3, repost_id);
        store_bind_int64(st, 4, now);
        if (rc == STORE_OK) rc = hot_exec(st, &inserted);
        if (rc == STORE_OK && inserted) rc = count_move(db, COUNT_SHARES, post_id, created_ms, true);
        /* A share of the same post by the same user committed meanwhile
         * (PostgreSQL): drop this repost and answer with that one. */
        if (rc == STORE_OK && !inserted) rc = STORE_CONSTRAINT;
    }
    if (existing || rc == STORE_CONSTRAINT) {
        store_rollback(db);
        if (!existing && share_of(db, post_id, user_id, &existing) != STORE_OK) return HOT_ERROR;
        if (!existing) return HOT_ERROR;
        return feed_post_get(db, existing, out) == FEED_OK ? HOT_CONFLICT : HOT_ERROR;
    }
    if (finish_tx(db, rc) != HOT_OK) return HOT_ERROR;
    if (feed->fanout) feed_fanout_wake(feed->fanout);
    return feed_post_get(db, repost_id, out) == FEED_OK ? HOT_OK : HOT_ERROR;
}

/* ---- counts on posts ------------------------------------------------------------- */

/* One statement a post (a timeline page decorates each of its posts):
 * the counts (none yet: zeros), whether the viewer likes it (viewer 0:
 * no one does) and the post it reposts (0: none). */
int hot_counts_into(store *db, int64_t post_id, int64_t viewer, json_t *obj)
{
    static const char *const names[] = {"likes", "comments", "shares", "views"};
    store_stmt *st = store_prepare(
        db, "SELECT COALESCE(c.likes, 0), COALESCE(c.comments, 0), COALESCE(c.shares, 0), COALESCE(c.views, 0), "
            "CASE WHEN EXISTS (SELECT 1 FROM hot_likes l WHERE l.post_id = p.id AND l.user_id = $2) THEN 1 ELSE 0 END, "
            "COALESCE((SELECT s.post_id FROM hot_shares s WHERE s.repost_id = p.id), 0) "
            "FROM (SELECT CAST($1 AS BIGINT) AS id) p LEFT JOIN hot_counts c ON c.post_id = p.id");
    store_bind_int64(st, 1, post_id);
    store_bind_int64(st, 2, viewer);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        for (int i = 0; i < 4; i++) json_object_set_new(obj, names[i], json_integer(store_col_int64(st, i)));
        json_object_set_new(obj, "liked", json_boolean(viewer && store_col_int64(st, 4)));
        int64_t of = store_col_int64(st, 5);
        char id[24];
        if (of && snprintf(id, sizeof id, "%lld", (long long)of) > 0)
            json_object_set_new(obj, "repost_of", json_string(id));
    }
    store_reset(st);
    return rc == STORE_ROW ? HOT_OK : HOT_ERROR;
}

void hot_decorate_posts(void *arg, store *db, int64_t viewer, json_t *posts)
{
    size_t i;
    json_t *p;
    json_array_foreach(posts, i, p) {
        const char *id = json_string_value(json_object_get(p, "id"));
        char *end;
        long long v = id ? strtoll(id, &end, 10) : 0;
        if (v > 0 && hot_counts_into(db, v, viewer, p) != HOT_OK) {
            log_warn("hot: cannot read the counts of post %lld: %s", v, store_errmsg(db));
            return;
        }
    }
}
