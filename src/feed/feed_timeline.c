/* feed_timeline.c -- reading a home timeline: the pushed entries merged
 * with the posts of accounts in pull mode (and, past the trimmed end, with
 * every followed account's), under the reader's watermark; unread counts
 * from the same sources; read marks; rebuilding a returning user's
 * timeline; trimming. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "feed/feed_int.h"
#include "time/rfc3339.h"

#define ACTIVE_WRITE_MS 3600000 /* a read refreshes "active" at most hourly */

typedef struct feed_ids {
    int64_t *v;
    size_t n, cap;
} feed_ids;

static bool ids_add(feed_ids *s, int64_t id)
{
    if (s->n == s->cap) {
        int64_t *grown = base_grow(s->v, sizeof *grown, &s->cap);
        if (!grown) return false;
        s->v = grown;
    }
    s->v[s->n++] = id;
    return true;
}

/* Runs st (already bound) and adds column 0 of its rows to out. */
static int collect(store_stmt *st, feed_ids *out)
{
    int rc;
    while ((rc = store_step(st)) == STORE_ROW)
        if (!ids_add(out, store_col_int64(st, 0))) {
            rc = STORE_ERROR;
            break;
        }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* ---- what the reader may see ------------------------------------------------ */

/* Ids below this are final for the reader: no post older than the oldest
 * still being pushed from the accounts it follows (or its own) can still
 * arrive. INT64_MAX when nothing is pending. */
#define WATERMARK_SQL                                                                                   \
    "SELECT min(o.post_id) FROM feed_outbox o WHERE o.kind = 'post' AND (o.author_id = $1 OR EXISTS (SELECT " \
    "1 FROM follows f WHERE f.follower_id = $1 AND f.followee_id = o.author_id))"

static int watermark(store *db, int64_t me, int64_t *w)
{
    store_stmt *st = store_prepare(db, WATERMARK_SQL);
    store_bind_int64(st, 1, me);
    int rc = store_step(st);
    *w = rc == STORE_ROW && !store_col_is_null(st, 0) ? store_col_int64(st, 0) : INT64_MAX;
    store_reset(st);
    return rc == STORE_ROW ? STORE_OK : STORE_ERROR;
}

/* Accounts whose posts are merged in at read time: those in pull mode,
 * and those whose pulled posts are still being pushed (a backfill).
 * Walked from the accounts in pull mode (the partial index; at most
 * all follows / --feed-push-max-followers of them), each checked against
 * the reader's own follows rows, which sit together: walking the
 * reader's followees instead looked up one feed_users row per followee,
 * scattered over the table (1,000 for a reader following 1,000: 3-4 ms
 * of page reads on every timeline page and unread count). */
#define PULLED_AUTHORS_SQL                                                                                   \
    "SELECT u.user_id FROM feed_users u WHERE u.pull_mode = 1 AND EXISTS (SELECT 1 FROM follows f WHERE "     \
    "f.follower_id = $1 AND f.followee_id = u.user_id) UNION SELECT o.author_id FROM feed_outbox o WHERE "     \
    "o.kind = 'backfill' AND EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = $1 AND f.followee_id = "   \
    "o.author_id)"

static int pulled_authors(store *db, int64_t me, feed_ids *out)
{
    store_stmt *st = store_prepare(db, PULLED_AUTHORS_SQL);
    store_bind_int64(st, 1, me);
    return collect(st, out);
}

typedef struct feed_user_state {
    bool stale;
    int64_t active_ms, home_read, home_read_ms, trimmed_below;
} feed_user_state;

static int user_state(store *db, int64_t me, feed_user_state *u)
{
    memset(u, 0, sizeof *u);
    store_stmt *st = store_prepare(db, "SELECT stale, active_ms, home_read, home_read_ms, trimmed_below FROM "
                                       "feed_users WHERE user_id = $1");
    store_bind_int64(st, 1, me);
    int rc = store_step(st);
    u->stale = rc != STORE_ROW || store_col_int64(st, 0);
    if (rc == STORE_ROW) {
        u->active_ms = store_col_int64(st, 1);
        u->home_read = store_col_int64(st, 2);
        u->home_read_ms = store_col_int64(st, 3);
        u->trimmed_below = store_col_int64(st, 4);
    }
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : STORE_ERROR;
}

/* ---- rebuilding and trimming -------------------------------------------------- */

int feed_trim(store *db, int64_t user, int64_t timeline_max)
{
    store_stmt *st = store_prepare(db, "SELECT post_id FROM timelines WHERE user_id = $1 ORDER BY post_id DESC "
                                       "LIMIT 1 OFFSET $2");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, timeline_max - 1);
    int rc = store_step(st);
    int64_t edge = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    if (rc == STORE_DONE) return FEED_OK;
    if (rc != STORE_ROW) return FEED_ERROR;
    /* Nothing below the edge and trimmed_below already there (the front
     * page of a steady reader): nothing to write, so no write transaction,
     * which on SQLite would queue behind the fan-out's. */
    st = store_prepare(db, "SELECT EXISTS (SELECT 1 FROM timelines WHERE user_id = $1 AND post_id < $2), "
                           "(SELECT trimmed_below FROM feed_users WHERE user_id = $1)");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, edge);
    rc = store_step(st);
    bool settled = rc == STORE_ROW && !store_col_int64(st, 0) && !store_col_is_null(st, 1) &&
                   store_col_int64(st, 1) >= edge;
    store_reset(st);
    if (rc != STORE_ROW) return FEED_ERROR;
    if (settled) return FEED_OK;
    rc = store_begin(db);
    st = store_prepare(db, "DELETE FROM timelines WHERE user_id = $1 AND post_id < $2");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, edge);
    if (rc == STORE_OK) rc = store_step(st) == STORE_DONE ? STORE_OK : STORE_ERROR;
    store_reset(st);
    st = store_prepare(db, "UPDATE feed_users SET trimmed_below = CASE WHEN trimmed_below < $2 THEN $2 ELSE "
                           "trimmed_below END, tl_version = tl_version + 1 WHERE user_id = $1");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, edge);
    if (rc == STORE_OK) rc = store_step(st) == STORE_DONE ? STORE_OK : STORE_ERROR;
    store_reset(st);
    if (rc == STORE_OK) rc = store_commit(db);
    else store_rollback(db);
    return rc == STORE_OK ? FEED_OK : FEED_ERROR;
}

/* A returning user: what the accounts it follows posted is pulled into
 * its timeline before it reads (Mastodon made such users wait for a
 * background job, up to 48 hours). Each account gives its share of the
 * timeline's room, at least a few posts. */
static int rebuild(store *db, int64_t me, const feed_limits *lim)
{
    feed_ids followees = {0};
    store_stmt *st = store_prepare(db, "SELECT f.followee_id FROM follows f JOIN feed_users u ON u.user_id = "
                                       "f.followee_id WHERE f.follower_id = $1 AND u.pull_mode = 0");
    store_bind_int64(st, 1, me);
    int rc = collect(st, &followees);
    int share = followees.n ? (int)(2 * lim->timeline_max / (int64_t)followees.n) : 0;
    if (share < 5) share = 5;
    if (share > FEED_BACKFILL) share = FEED_BACKFILL;
    if (rc == STORE_OK) rc = store_begin(db);
    for (size_t i = 0; rc == STORE_OK && i < followees.n; i++) rc = feed_backfill_one(db, me, followees.v[i], share);
    st = store_prepare(db, "UPDATE feed_users SET stale = 0, tl_version = tl_version + 1 WHERE user_id = $1");
    store_bind_int64(st, 1, me);
    if (rc == STORE_OK) rc = store_step(st) == STORE_DONE ? STORE_OK : STORE_ERROR;
    store_reset(st);
    if (rc == STORE_OK) rc = store_commit(db);
    else store_rollback(db);
    free(followees.v);
    if (rc == STORE_OK) log_debug("feed: rebuilt the timeline of %llx", (unsigned long long)me);
    return rc == STORE_OK ? feed_trim(db, me, lim->timeline_max) : FEED_ERROR;
}

/* Before reading: active (pushed to) from now on, and rebuilt if stale. */
static int ready(store *db, int64_t me, const feed_limits *lim, int64_t now, feed_user_state *u)
{
    if (user_state(db, me, u) != STORE_OK) return FEED_ERROR;
    if (u->active_ms < now - ACTIVE_WRITE_MS || u->stale) {
        if (feed_touch(db, me, lim, now) != FEED_OK || user_state(db, me, u) != STORE_OK) return FEED_ERROR;
    }
    if (u->stale && (rebuild(db, me, lim) != FEED_OK || user_state(db, me, u) != STORE_OK)) return FEED_ERROR;
    return FEED_OK;
}

/* ---- the merge -------------------------------------------------------------- */

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Ids in (lo, hi) of one author's posts, newest first. */
static int author_page(store *db, int64_t author, bool pulled_only, int64_t lo, int64_t hi, int n, feed_ids *out)
{
    store_stmt *st = store_prepare(db, pulled_only ? "SELECT id FROM posts WHERE author_id = $1 AND id > $2 AND id < $3 "
                                                     "AND pulled = 1 AND deleted = 0 ORDER BY id DESC LIMIT $4"
                                                   : "SELECT id FROM posts WHERE author_id = $1 AND id > $2 AND id < $3 "
                                                     "AND deleted = 0 ORDER BY id DESC LIMIT $4");
    store_bind_int64(st, 1, author);
    store_bind_int64(st, 2, lo);
    store_bind_int64(st, 3, hi);
    store_bind_int64(st, 4, n);
    return collect(st, out);
}

/* Past the trimmed end of the pushed entries, every followed account. */
static int deep_pull(store *db, int64_t me, int64_t lo, int64_t hi, int n, feed_ids *out)
{
    feed_ids followees = {0};
    store_stmt *st = store_prepare(db, "SELECT followee_id FROM follows WHERE follower_id = $1");
    store_bind_int64(st, 1, me);
    int rc = collect(st, &followees);
    if (rc == STORE_OK) rc = author_page(db, me, false, lo, hi, n, out);
    for (size_t i = 0; rc == STORE_OK && i < followees.n; i++) rc = author_page(db, followees.v[i], false, lo, hi, n, out);
    free(followees.v);
    return rc;
}

/* The ids of the page: newest first, distinct, at most n+1 (the last
 * says there is more). */
static int page_ids(store *db, int64_t me, const feed_user_state *u, int64_t lo, int64_t hi, int n, feed_ids *out)
{
    feed_ids pulled = {0};
    store_stmt *st = store_prepare(db, "SELECT post_id FROM timelines WHERE user_id = $1 AND post_id > $2 AND "
                                       "post_id < $3 ORDER BY post_id DESC LIMIT $4");
    store_bind_int64(st, 1, me);
    store_bind_int64(st, 2, lo);
    store_bind_int64(st, 3, hi);
    store_bind_int64(st, 4, n + 1);
    int rc = collect(st, out);
    bool short_page = out->n <= (size_t)n;
    if (rc == STORE_OK) rc = pulled_authors(db, me, &pulled);
    for (size_t i = 0; rc == STORE_OK && i < pulled.n; i++) rc = author_page(db, pulled.v[i], true, lo, hi, n + 1, out);
    free(pulled.v);
    /* The pushed entries end where they were trimmed: below, pull. */
    if (rc == STORE_OK && short_page && u->trimmed_below > lo)
        rc = deep_pull(db, me, lo, hi < u->trimmed_below ? hi : u->trimmed_below, n + 1, out);
    if (rc != STORE_OK) return rc;
    if (out->n) qsort(out->v, out->n, sizeof *out->v, cmp_desc);
    size_t k = 0;
    for (size_t i = 0; i < out->n && k <= (size_t)n; i++)
        if (k == 0 || out->v[i] != out->v[k - 1]) out->v[k++] = out->v[i];
    out->n = k;
    return STORE_OK;
}

int feed_timeline(store *db, int64_t me, int64_t max_id, int64_t since_id, int limit, const feed_limits *lim,
                  int64_t now, json_t **out)
{
    feed_user_state u;
    int64_t w;
    feed_ids ids = {0};
    *out = NULL;
    if (ready(db, me, lim, now, &u) != FEED_OK || watermark(db, me, &w) != STORE_OK) return FEED_ERROR;
    if (max_id == 0 && since_id == 0) feed_trim(db, me, lim->timeline_max); /* the front page: keep it bounded */
    int64_t hi = max_id > 0 && max_id < w ? max_id : w;
    if (page_ids(db, me, &u, since_id, hi, limit, &ids) != STORE_OK) {
        free(ids.v);
        return FEED_ERROR;
    }
    bool more = ids.n > (size_t)limit;
    json_t *items;
    int rc = feed_posts_load(db, ids.v, more ? (size_t)limit : ids.n, &items);
    char next[24];
    if (more) snprintf(next, sizeof next, "%lld", (long long)ids.v[limit - 1]);
    free(ids.v);
    if (rc != FEED_OK) return FEED_ERROR;
    *out = json_pack("{s:o,s:o}", "items", items, "next_max_id", more ? json_string(next) : json_null());
    return *out ? FEED_OK : FEED_ERROR;
}

/* ---- unread and read marks ----------------------------------------------------- */

static int count_of(store_stmt *st, int64_t *n)
{
    int rc = store_step(st);
    *n = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    return rc == STORE_ROW ? STORE_OK : STORE_ERROR;
}

/* The unread count's inputs (feed_unread_key), in one statement; *fresh
 * when the reader needs nothing done first (ready() would only read). */
static int unread_key(store *db, int64_t me, int64_t now, feed_unread_key *k, bool *fresh, int64_t *active_until)
{
    store_stmt *st = store_prepare(
        db, "SELECT u.stale, u.active_ms, u.home_read, u.trimmed_below, u.tl_version, (SELECT max(post_id) FROM "
            "timelines WHERE user_id = $1), (" WATERMARK_SQL "), (SELECT max(id) FROM posts WHERE pulled = 1), "
            "(SELECT deletes FROM feed_meta WHERE id = 1) FROM feed_users u WHERE u.user_id = $1");
    store_bind_int64(st, 1, me);
    int rc = store_step(st);
    memset(k, 0, sizeof *k);
    *active_until = 0;
    *fresh = rc == STORE_ROW && !store_col_int64(st, 0) && store_col_int64(st, 1) >= now - ACTIVE_WRITE_MS;
    if (rc == STORE_ROW) {
        *active_until = store_col_int64(st, 1) + ACTIVE_WRITE_MS;
        k->home_read = store_col_int64(st, 2);
        k->trimmed_below = store_col_int64(st, 3);
        k->tl_version = store_col_int64(st, 4);
        k->newest_pushed = store_col_int64(st, 5);
        k->watermark = store_col_is_null(st, 6) ? INT64_MAX : store_col_int64(st, 6);
        k->newest_pulled = store_col_int64(st, 7);
        k->deletes = store_col_int64(st, 8);
    }
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : STORE_ERROR;
}

/* Entries in (k->home_read, k->watermark): the pushed ones and the pulled
 * authors' posts, in one statement (on SQLite every statement is a read
 * transaction of its own: a lock taken and released). A pulled post that
 * a back-fill already pushed to the reader counts once, as the page
 * shows it once. Neither changes while a back-fill runs, so a count kept
 * by feed_unread stays true through it. */
static int unread_between(store *db, int64_t me, const feed_unread_key *k, int64_t *count)
{
    store_stmt *st = store_prepare(db, "SELECT (SELECT count(*) FROM timelines WHERE user_id = $1 AND post_id > $2 AND "
                                       "post_id < $3) + (SELECT count(*) FROM posts p WHERE p.author_id IN (" PULLED_AUTHORS_SQL
                                       ") AND p.id > $2 AND p.id < $3 AND p.pulled = 1 AND p.deleted = 0 AND NOT EXISTS "
                                       "(SELECT 1 FROM timelines t WHERE t.user_id = $1 AND t.post_id = p.id))");
    store_bind_int64(st, 1, me);
    store_bind_int64(st, 2, k->home_read);
    store_bind_int64(st, 3, k->watermark);
    return count_of(st, count);
}

/* The stamp is taken before the inputs are read, and the inputs before
 * the count: a change in between makes the next call's stamp or inputs
 * differ, so a count is never kept under newer ones than it saw. */
int feed_unread(store *db, feed_unread_memo *memo, int64_t me, const feed_limits *lim, int64_t now, int64_t *count)
{
    feed_unread_key k;
    feed_unread_seen seen = {.conn = db};
    int64_t active_until;
    bool fresh;
    *count = 0;
    if (store_change_stamp(db, &seen.stamp) != STORE_OK) seen.conn = NULL;
    if (feed_unread_memo_stamped(memo, me, &seen, now, count)) return FEED_OK;
    if (unread_key(db, me, now, &k, &fresh, &active_until) != STORE_OK) return FEED_ERROR;
    if (fresh && feed_unread_memo_get(memo, me, &k, &seen, active_until, count)) return FEED_OK;
    if (!fresh) {
        feed_user_state u;
        if (ready(db, me, lim, now, &u) != FEED_OK || unread_key(db, me, now, &k, &fresh, &active_until) != STORE_OK)
            return FEED_ERROR;
        seen.conn = NULL; /* ready() may have written: the stamp is of before */
    }
    if (unread_between(db, me, &k, count) != STORE_OK) return FEED_ERROR;
    if (fresh) feed_unread_memo_put(memo, me, &k, *count, &seen, active_until);
    return FEED_OK;
}

int feed_marker_set(store *db, int64_t me, int64_t last_read_id, int64_t now)
{
    int rc = feed_user_row(db, me);
    store_stmt *st = store_prepare(db, "UPDATE feed_users SET home_read = $2, home_read_ms = $3 WHERE user_id = $1 "
                                       "AND home_read < $2");
    store_bind_int64(st, 1, me);
    store_bind_int64(st, 2, last_read_id);
    store_bind_int64(st, 3, now);
    if (rc == STORE_OK) rc = store_step(st) == STORE_DONE ? STORE_OK : STORE_ERROR;
    store_reset(st);
    return rc == STORE_OK ? FEED_OK : FEED_ERROR;
}

int feed_markers(store *db, int64_t me, json_t **out)
{
    feed_user_state u;
    if (user_state(db, me, &u) != STORE_OK) return FEED_ERROR;
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)u.home_read);
    json_t *home = json_pack("{s:s}", "last_read_id", id);
    if (home && u.home_read_ms) {
        char at[32];
        rfc3339_format_ms(u.home_read_ms, at, sizeof at);
        json_object_set_new(home, "updated_at", json_string(at));
    }
    *out = json_pack("{s:o}", "home", home);
    return *out ? FEED_OK : FEED_ERROR;
}
