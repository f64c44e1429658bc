/* feed_posts.c -- posts: writing one (with its outbox row, in one
 * transaction, before any fan-out), reading them by id (the id says the
 * month, so the partition), deleting, an author's pages, and the monthly
 * partitions PostgreSQL keeps them in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/idgen.h"
#include "feed/feed_int.h"
#include "time/civil.h"
#include "time/rfc3339.h"

int feed_month_of(int64_t post_id)
{
    civil_time t;
    civil_from_seconds(idgen_ms(post_id) / 1000, &t);
    return t.year * 100 + t.month;
}

/* ---- the post as the API shows it ------------------------------------------ */

#define POST_COLS "p.id, p.author_id, u.name, p.text, p.created_ms"
#define POST_FROM "posts p JOIN users u ON u.id = p.author_id"

static json_t *post_json(store_stmt *st)
{
    char id[24], author[17], created[32];
    snprintf(id, sizeof id, "%lld", (long long)store_col_int64(st, 0));
    base_id_format(store_col_int64(st, 1), author);
    rfc3339_format_ms(store_col_int64(st, 4), created, sizeof created);
    return json_pack("{s:s,s:{s:s,s:s},s:s%,s:s}", "id", id, "author", "id", author, "name", store_col_text(st, 2),
                     "text", store_col_text(st, 3), store_col_len(st, 3), "created", created);
}

int feed_post_get(store *db, int64_t id, json_t **out)
{
    *out = NULL;
    store_stmt *st = store_prepare(db, "SELECT " POST_COLS " FROM " POST_FROM
                                       " WHERE p.month = $1 AND p.id = $2 AND p.deleted = 0");
    store_bind_int64(st, 1, feed_month_of(id));
    store_bind_int64(st, 2, id);
    int rc = store_step(st);
    if (rc == STORE_ROW) *out = post_json(st);
    store_reset(st);
    if (rc == STORE_ROW) return *out ? FEED_OK : FEED_ERROR;
    return rc == STORE_DONE ? FEED_NOT_FOUND : FEED_ERROR;
}

int feed_posts_load(store *db, const int64_t *ids, size_t n, json_t **out)
{
    *out = json_array();
    for (size_t i = 0; *out && i < n; i++) {
        json_t *p;
        int rc = feed_post_get(db, ids[i], &p);
        if (rc == FEED_ERROR) {
            json_decref(*out);
            *out = NULL;
            return FEED_ERROR;
        }
        if (rc == FEED_OK) json_array_append_new(*out, p);
    }
    return *out ? FEED_OK : FEED_ERROR;
}

int feed_user_posts(store *db, int64_t user, int64_t max_id, int limit, json_t **out, int64_t *next_max_id)
{
    store_stmt *st = store_prepare(db, "SELECT " POST_COLS " FROM " POST_FROM " WHERE p.author_id = $1 AND p.id < $2 "
                                       "AND p.deleted = 0 ORDER BY p.id DESC LIMIT $3");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, max_id > 0 ? max_id : INT64_MAX);
    store_bind_int64(st, 3, (int64_t)limit + 1); /* one more: is there a next page? */
    *out = json_array();
    *next_max_id = 0;
    int rc, n = 0;
    int64_t last = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (n++ == limit) { /* the one more: the next page starts below the last one shown */
            *next_max_id = last;
            continue;
        }
        last = store_col_int64(st, 0);
        json_array_append_new(*out, post_json(st));
    }
    store_reset(st);
    if (rc == STORE_DONE) return FEED_OK;
    json_decref(*out);
    *out = NULL;
    return FEED_ERROR;
}

/* ---- writing one ------------------------------------------------------------- */

static int exec(store *db, store_stmt *st)
{
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* The original of a retried post (client_id used before), or 0. */
static int original_of(store *db, int64_t author, const char *client_id, int64_t *id)
{
    *id = 0;
    store_stmt *st = store_prepare(db, "SELECT post_id FROM post_clients WHERE author_id = $1 AND client_post_id = $2");
    store_bind_int64(st, 1, author);
    store_bind_str(st, 2, client_id);
    int rc = store_step(st);
    if (rc == STORE_ROW) *id = store_col_int64(st, 0);
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : rc;
}

/* Whether the author posts in pull mode now: over the threshold. Leaving
 * pull mode queues a backfill of its recent pulled posts (pushed to its
 * followers, who would otherwise stop seeing them). */
static int decide_mode(store *db, int64_t author, int64_t post_id, const feed_limits *lim, int64_t now, bool *pulled)
{
    store_stmt *st = store_prepare(db, "SELECT followers, pull_mode FROM feed_users WHERE user_id = $1");
    store_bind_int64(st, 1, author);
    int rc = store_step(st);
    int64_t followers = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    bool was = rc == STORE_ROW && store_col_int64(st, 1);
    store_reset(st);
    if (rc != STORE_ROW) return rc < 0 ? rc : STORE_ERROR;
    *pulled = followers > lim->push_max_followers;
    if (*pulled == was) return STORE_OK;
    st = store_prepare(db, "UPDATE feed_users SET pull_mode = $2 WHERE user_id = $1");
    store_bind_int64(st, 1, author);
    store_bind_int64(st, 2, *pulled);
    rc = exec(db, st);
    if (rc == STORE_OK && !*pulled) rc = feed_outbox_add(db, "backfill", post_id, author, now);
    return rc;
}

static int post_rows(store *db, const feed_post_in *in, bool pulled, int64_t now)
{
    int month = feed_month_of(in->id);
    store_stmt *st = store_prepare(db, "INSERT INTO posts (id, month, author_id, text, created_ms, pulled) "
                                       "VALUES ($1, $2, $3, $4, $5, $6)");
    store_bind_int64(st, 1, in->id);
    store_bind_int64(st, 2, month);
    store_bind_int64(st, 3, in->author);
    store_bind_str(st, 4, in->text);
    store_bind_int64(st, 5, now);
    store_bind_int64(st, 6, pulled);
    int rc = exec(db, st);
    if (rc == STORE_OK && in->client_id) {
        st = store_prepare(db, "INSERT INTO post_clients (author_id, client_post_id, post_id) VALUES ($1, $2, $3)");
        store_bind_int64(st, 1, in->author);
        store_bind_str(st, 2, in->client_id);
        store_bind_int64(st, 3, in->id);
        rc = exec(db, st);
    }
    if (rc == STORE_OK) {
        st = store_prepare(db, "INSERT INTO author_months (author_id, month, posts) VALUES ($1, $2, 1) "
                               "ON CONFLICT (author_id, month) DO UPDATE SET posts = author_months.posts + 1");
        store_bind_int64(st, 1, in->author);
        store_bind_int64(st, 2, month);
        rc = exec(db, st);
    }
    if (rc == STORE_OK) {
        st = store_prepare(db, "UPDATE feed_users SET posts = posts + 1 WHERE user_id = $1");
        store_bind_int64(st, 1, in->author);
        rc = exec(db, st);
    }
    if (rc == STORE_OK) { /* your own posts are in your timeline at once */
        st = store_prepare(db, "INSERT INTO timelines (user_id, post_id, author_id) VALUES ($1, $2, $1) "
                               "ON CONFLICT DO NOTHING");
        store_bind_int64(st, 1, in->author);
        store_bind_int64(st, 2, in->id);
        rc = exec(db, st);
    }
    return rc;
}

int feed_post_tx(store *db, const feed_post_in *in, const feed_limits *lim, int64_t now, int64_t *original)
{
    *original = 0;
    bool pulled = false;
    int rc = in->client_id ? original_of(db, in->author, in->client_id, original) : STORE_OK;
    if (rc != STORE_OK || *original) return rc;
    rc = feed_user_row(db, in->author);
    if (rc == STORE_OK) rc = decide_mode(db, in->author, in->id, lim, now, &pulled);
    if (rc == STORE_OK) rc = post_rows(db, in, pulled, now);
    if (rc == STORE_OK) rc = feed_outbox_add(db, "post", in->id, in->author, now);
    return rc;
}

int feed_post(store *db, const feed_post_in *in, const feed_limits *lim, int64_t now, json_t **out)
{
    int64_t original = 0;
    *out = NULL;
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = feed_post_tx(db, in, lim, now, &original);
    if (rc == STORE_OK) rc = store_commit(db);
    else store_rollback(db);
    if (rc != STORE_OK) return FEED_ERROR;
    rc = feed_post_get(db, original ? original : in->id, out);
    if (rc != FEED_OK) return FEED_ERROR;
    return original ? FEED_CONFLICT : FEED_OK;
}

int feed_post_delete(store *db, int64_t me, int64_t id)
{
    int rc = store_begin(db);
    store_stmt *st = store_prepare(db, "UPDATE posts SET deleted = 1, text = '' WHERE month = $1 AND id = $2 "
                                       "AND author_id = $3 AND deleted = 0");
    store_bind_int64(st, 1, feed_month_of(id));
    store_bind_int64(st, 2, id);
    store_bind_int64(st, 3, me);
    if (rc == STORE_OK) rc = store_step(st);
    bool mine = rc == STORE_DONE && store_changes(st) == 1;
    store_reset(st);
    rc = rc == STORE_DONE ? STORE_OK : STORE_ERROR;
    if (rc == STORE_OK && mine) {
        st = store_prepare(db, "DELETE FROM timelines WHERE post_id = $1");
        store_bind_int64(st, 1, id);
        rc = exec(db, st);
    }
    if (rc == STORE_OK && mine) { /* every reader's remembered unread count is stale (feed_unread) */
        st = store_prepare(db, "UPDATE feed_meta SET deletes = deletes + 1 WHERE id = 1");
        rc = exec(db, st);
    }
    if (rc == STORE_OK && mine) {
        st = store_prepare(db, "UPDATE feed_users SET posts = posts - 1 WHERE user_id = $1 AND posts > 0");
        store_bind_int64(st, 1, me);
        rc = exec(db, st);
    }
    if (rc == STORE_OK && mine) {
        st = store_prepare(db, "UPDATE author_months SET posts = posts - 1 WHERE author_id = $1 AND month = $2 "
                               "AND posts > 0");
        store_bind_int64(st, 1, me);
        store_bind_int64(st, 2, feed_month_of(id));
        rc = exec(db, st);
    }
    if (rc == STORE_OK) rc = store_commit(db);
    else store_rollback(db);
    return rc != STORE_OK ? FEED_ERROR : mine ? FEED_OK : FEED_NOT_FOUND;
}

/* ---- monthly partitions (PostgreSQL) ----------------------------------------- */

int feed_partitions(store *db, int64_t now, int months)
{
    if (store_backend_of(db) != STORE_PG) return FEED_OK;
    civil_time t;
    civil_from_seconds(now / 1000, &t);
    int y = t.year, m = t.month;
    for (int i = 0; i < months; i++) {
        int from = y * 100 + m, ny = m == 12 ? y + 1 : y, nm = m == 12 ? 1 : m + 1, to = ny * 100 + nm;
        char sql[200];
        /* DDL takes no parameters: the names and bounds are numbers we made. */
        snprintf(sql, sizeof sql, "CREATE TABLE IF NOT EXISTS posts_%06d PARTITION OF posts FOR VALUES FROM (%d) TO (%d)",
                 from, from, to);
        if (store_exec(db, sql) != STORE_OK) {
            log_warn("feed: cannot make the partition of %d: %s", from, store_errmsg(db));
            return FEED_ERROR;
        }
        y = ny;
        m = nm;
    }
    return FEED_OK;
}
