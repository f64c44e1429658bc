/* feed_fanout.c -- the fan-out engine of one node: it holds its share of
 * the feed's lease groups (cluster/groups.h; an author's work is in group
 * feed_group_of(author)), takes the due outbox rows of its groups and
 * pushes each post to the author's active followers, FANOUT_BATCH
 * followers a transaction. Each batch is fenced by its group's lease and
 * records how far it got (the outbox row's cursor) in the same
 * transaction, so a node that dies mid-post leaves the rest to whoever
 * takes the group, and a batch done twice inserts nothing twice (the
 * timeline's key). The last batch deletes the outbox row: from then on
 * the post is below its readers' watermark (feed.h), and online followers
 * get a {"type":"feed","unread":K} frame. */
#include "feed/feed_fanout.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/groups.h"
#include "feed/feed_int.h"

#define FANOUT_BATCH 1000   /* followers a transaction */
#define FANOUT_ROWS 8       /* outbox rows taken from a group at a time */
#define FANOUT_IDLE_MS 50   /* between looks when nothing is due (other nodes' posts) */
#define FANOUT_RETRY_MS 1000
#define FANOUT_NOTIFY_MAX 10000 /* online followers told of one post */
#define FANOUT_PARTITIONS_MS 3600000 /* months' partitions made ahead, hourly */

struct feed_fanout {
    feed_fanout_opts o;
    lease_groups *groups;
    store *db;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping, woken;
    int64_t posts, rows; /* for the log at exit */
};

typedef struct fanout_row {
    int64_t id, post_id, author, cursor;
    bool backfill;
    int attempts;
} fanout_row;

typedef struct fanout_ids {
    int64_t *v;
    size_t n, cap;
} fanout_ids;

static bool ids_add(fanout_ids *s, int64_t id)
{
    if (s->n == s->cap) {
        int64_t *grown = base_grow(s->v, sizeof *grown, &s->cap);
        if (!grown) return false;
        s->v = grown;
    }
    s->v[s->n++] = id;
    return true;
}

static int run(store_stmt *st, int64_t *changes)
{
    int rc = store_step(st);
    if (changes) *changes = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* ---- one batch --------------------------------------------------------------- */

/* The next batch of followers after the row's cursor: their ids. */
static int next_followers(store *db, const fanout_row *r, fanout_ids *out)
{
    store_stmt *st = store_prepare(db, "SELECT follower_id FROM follows WHERE followee_id = $1 AND follower_id > $2 "
                                       "ORDER BY follower_id LIMIT $3");
    store_bind_int64(st, 1, r->author);
    store_bind_int64(st, 2, r->cursor);
    store_bind_int64(st, 3, FANOUT_BATCH);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW)
        if (!ids_add(out, store_col_int64(st, 0))) break;
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : STORE_ERROR;
}

/* Entries for the batch's active followers: the post, or (a backfill) the
 * author's recent pulled posts. A pulled post is pushed to nobody. */
static int push_batch(feed_fanout *f, store *db, const fanout_row *r, int64_t last, bool pulled)
{
    if (pulled && !r->backfill) return STORE_OK;
    int64_t since = base_now_ms() - f->o.lim.active_ms;
    store_stmt *st = store_prepare(
        db, r->backfill
                ? "INSERT INTO timelines (user_id, post_id, author_id) SELECT fl.follower_id, p.id, p.author_id FROM "
                  "follows fl JOIN feed_users u ON u.user_id = fl.follower_id CROSS JOIN (SELECT id, author_id FROM "
                  "posts WHERE author_id = $1 AND pulled = 1 AND deleted = 0 ORDER BY id DESC LIMIT 100) p WHERE "
                  "fl.followee_id = $1 AND fl.follower_id > $2 AND fl.follower_id <= $3 AND u.active_ms > $4 AND "
                  "u.stale = 0 ON CONFLICT DO NOTHING"
                : "INSERT INTO timelines (user_id, post_id, author_id) SELECT fl.follower_id, $5, $1 FROM follows fl "
                  "JOIN feed_users u ON u.user_id = fl.follower_id WHERE fl.followee_id = $1 AND fl.follower_id > $2 "
                  "AND fl.follower_id <= $3 AND u.active_ms > $4 AND u.stale = 0 ON CONFLICT DO NOTHING");
    store_bind_int64(st, 1, r->author);
    store_bind_int64(st, 2, r->cursor);
    store_bind_int64(st, 3, last);
    store_bind_int64(st, 4, since);
    if (!r->backfill) store_bind_int64(st, 5, r->post_id);
    int64_t n = 0;
    int rc = run(st, &n);
    f->rows += n;
    return rc;
}

/* Moves the cursor, or ends the row (the last batch). */
static int advance(store *db, const fanout_row *r, int64_t last, bool done)
{
    store_stmt *st;
    if (done && r->backfill) { /* its posts are pushed now: readers stop pulling them */
        st = store_prepare(db, "UPDATE posts SET pulled = 0 WHERE author_id = $1 AND pulled = 1 AND id IN (SELECT id "
                               "FROM posts WHERE author_id = $1 AND pulled = 1 ORDER BY id DESC LIMIT 100)");
        store_bind_int64(st, 1, r->author);
        int rc = run(st, NULL);
        if (rc != STORE_OK) return rc;
    }
    st = store_prepare(db, done ? "DELETE FROM feed_outbox WHERE id = $1" : "UPDATE feed_outbox SET cursor = $2 WHERE id = $1");
    store_bind_int64(st, 1, r->id);
    if (!done) store_bind_int64(st, 2, last);
    return run(st, NULL);
}

/* One fenced batch; *done when the row is finished. The batch's online
 * followers are added to online. */
static int batch(feed_fanout *f, int gi, fanout_row *r, bool pulled, fanout_ids *online, bool *done)
{
    lease_hold *hold;
    uint64_t tenure;
    fanout_ids followers = {0};
    if (!lease_groups_get(f->groups, gi, &hold, &tenure)) return STORE_ERROR;
    int rc = store_begin(f->db), fenced = rc == STORE_OK ? lease_hold_fence_in(f->db, hold, tenure, NULL) : rc;
    if (fenced == LEASE_LOST) lease_groups_lost(f->groups, gi);
    rc = fenced == LEASE_OK ? next_followers(f->db, r, &followers) : STORE_ERROR;
    int64_t last = followers.n ? followers.v[followers.n - 1] : r->cursor;
    *done = followers.n < FANOUT_BATCH;
    if (rc == STORE_OK) rc = push_batch(f, f->db, r, last, pulled);
    if (rc == STORE_OK) rc = advance(f->db, r, last, *done);
    if (rc == STORE_OK) rc = store_commit(f->db);
    else store_rollback(f->db);
    if (fenced == LEASE_OK) lease_hold_unfence(hold);
    for (size_t i = 0; rc == STORE_OK && f->o.online && i < followers.n && online->n < FANOUT_NOTIFY_MAX; i++)
        if (f->o.online(f->o.arg, followers.v[i])) ids_add(online, followers.v[i]);
    if (rc == STORE_OK) r->cursor = last;
    free(followers.v);
    return rc;
}

/* ---- one row ----------------------------------------------------------------- */

static int post_state(store *db, int64_t post_id, bool *pulled, bool *gone)
{
    store_stmt *st = store_prepare(db, "SELECT pulled, deleted FROM posts WHERE month = $1 AND id = $2");
    store_bind_int64(st, 1, feed_month_of(post_id));
    store_bind_int64(st, 2, post_id);
    int rc = store_step(st);
    *pulled = rc == STORE_ROW && store_col_int64(st, 0);
    *gone = rc != STORE_ROW || store_col_int64(st, 1);
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : STORE_ERROR;
}

/* The news for online followers, once the post is visible to them. */
static void tell(feed_fanout *f, const fanout_ids *online)
{
    for (size_t i = 0; f->o.push && i < online->n; i++) {
        int64_t unread;
        if (feed_unread(f->db, f->o.memo, online->v[i], &f->o.lim, base_now_ms(), &unread) != FEED_OK) continue;
        char frame[64];
        int len = snprintf(frame, sizeof frame, "{\"type\":\"feed\",\"unread\":%lld}", (long long)unread);
        f->o.push(f->o.arg, online->v[i], frame, (size_t)len);
    }
}

static void retry_later(feed_fanout *f, const fanout_row *r)
{
    store_stmt *st = store_prepare(f->db, "UPDATE feed_outbox SET attempts = attempts + 1, next_attempt_ms = $2 "
                                          "WHERE id = $1");
    store_bind_int64(st, 1, r->id);
    store_bind_int64(st, 2, base_now_ms() + FANOUT_RETRY_MS * (r->attempts < 6 ? 1 << r->attempts : 64));
    if (run(st, NULL) != STORE_OK) log_warn("feed: cannot put a fan-out off: %s", store_errmsg(f->db));
}

static void do_row(feed_fanout *f, int gi, fanout_row *r)
{
    bool pulled = false, gone = false, done = false;
    fanout_ids online = {0};
    int rc = r->backfill ? STORE_OK : post_state(f->db, r->post_id, &pulled, &gone);
    if (gone && !r->backfill) pulled = true; /* deleted meanwhile: nothing to push, the row just ends */
    while (rc == STORE_OK && !done) rc = batch(f, gi, r, pulled, &online, &done);
    if (rc != STORE_OK) {
        log_warn("feed: fan-out of post %lld stopped at follower %llx: %s", (long long)r->post_id,
                 (unsigned long long)r->cursor, store_errmsg(f->db));
        retry_later(f, r);
    } else {
        f->posts++;
        if (!gone) tell(f, &online);
    }
    free(online.v);
}

/* The due rows of group gi, oldest post first. */
static int due_rows(feed_fanout *f, int gi, fanout_row *rows, int *n)
{
    store_stmt *st = store_prepare(f->db, "SELECT id, kind, post_id, author_id, cursor, attempts FROM feed_outbox "
                                          "WHERE grp = $1 AND next_attempt_ms <= $2 ORDER BY post_id LIMIT $3");
    store_bind_int64(st, 1, gi);
    store_bind_int64(st, 2, base_now_ms());
    store_bind_int64(st, 3, FANOUT_ROWS);
    int rc;
    *n = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        fanout_row *r = &rows[(*n)++];
        r->id = store_col_int64(st, 0);
        r->backfill = strcmp(store_col_text(st, 1), "backfill") == 0;
        r->post_id = store_col_int64(st, 2);
        r->author = store_col_int64(st, 3);
        r->cursor = store_col_int64(st, 4);
        r->attempts = (int)store_col_int64(st, 5);
    }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : STORE_ERROR;
}

/* Which groups have due rows: one statement (an index probe a group)
 * rather than a look a group, since the thread looks every
 * FANOUT_IDLE_MS for other nodes' posts and nearly always finds none
 * (16 statements a look were most of an idle node's queries). On a
 * failure every group is looked at, as before. */
#define FANOUT_GROUP_VALUES "(0),(1),(2),(3),(4),(5),(6),(7),(8),(9),(10),(11),(12),(13),(14),(15)"
_Static_assert(FEED_GROUPS == 16, "FANOUT_GROUP_VALUES lists every group");
static void due_groups(feed_fanout *f, bool due[FEED_GROUPS])
{
    store_stmt *st = store_prepare(f->db, "WITH g(grp) AS (VALUES " FANOUT_GROUP_VALUES ") SELECT grp FROM g "
                                          "WHERE EXISTS (SELECT 1 FROM feed_outbox o WHERE o.grp = g.grp AND "
                                          "o.next_attempt_ms <= $1)");
    store_bind_int64(st, 1, base_now_ms());
    for (int gi = 0; gi < FEED_GROUPS; gi++) due[gi] = false;
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        int64_t gi = store_col_int64(st, 0);
        if (gi >= 0 && gi < FEED_GROUPS) due[gi] = true;
    }
    store_reset(st);
    if (rc != STORE_DONE)
        for (int gi = 0; gi < FEED_GROUPS; gi++) due[gi] = true;
}

/* ---- the thread ---------------------------------------------------------------- */

static bool work_once(feed_fanout *f)
{
    bool any = false, due[FEED_GROUPS];
    due_groups(f, due);
    for (int gi = 0; gi < FEED_GROUPS; gi++) {
        lease_hold *hold;
        uint64_t tenure;
        fanout_row rows[FANOUT_ROWS];
        int n = 0;
        if (!due[gi] || !lease_groups_get(f->groups, gi, &hold, &tenure) || due_rows(f, gi, rows, &n) != STORE_OK)
            continue;
        for (int i = 0; i < n; i++) do_row(f, gi, &rows[i]);
        any |= n > 0;
    }
    return any;
}

static bool wait_for_work(feed_fanout *f, int64_t ms)
{
    int64_t until = base_now_ms() + ms;
    struct timespec ts = {.tv_sec = until / 1000, .tv_nsec = (until % 1000) * 1000000};
    pthread_mutex_lock(&f->mu);
    while (!f->stopping && !f->woken)
        if (pthread_cond_timedwait(&f->cv, &f->mu, &ts) == ETIMEDOUT) break;
    f->woken = false;
    bool go = !f->stopping;
    pthread_mutex_unlock(&f->mu);
    return go;
}

static bool stopping(feed_fanout *f)
{
    pthread_mutex_lock(&f->mu);
    bool s = f->stopping;
    pthread_mutex_unlock(&f->mu);
    return s;
}

static void *fanout_main(void *p)
{
    feed_fanout *f = p;
    base_thread_name("feed-fanout");
    int64_t next_beat = 0, next_months = base_now_ms() + FANOUT_PARTITIONS_MS;
    bool more = false;
    do {
        int64_t now = base_now_ms();
        if (now >= next_beat) {
            lease_groups_rebalance(f->groups, f->db, f->o.heartbeat_ms, "feed");
            next_beat = now + f->o.heartbeat_ms;
        }
        if (now >= next_months) {
            feed_partitions(f->db, now, 3);
            next_months = now + FANOUT_PARTITIONS_MS;
        }
        more = work_once(f);
    } while (more ? !stopping(f) : wait_for_work(f, FANOUT_IDLE_MS));
    lease_groups_release(f->groups, f->db);
    return NULL;
}

feed_fanout *feed_fanout_start(const feed_fanout_opts *o)
{
    feed_fanout *f = calloc(1, sizeof *f);
    char err[256];
    if (!f) return NULL;
    f->o = *o;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->groups = lease_groups_new("feed/g", FEED_GROUPS, o->node_id, o->lease_ttl_ms);
    f->db = f->groups ? store_open(o->db_url, err, sizeof err) : NULL;
    if (!f->db || feed_partitions(f->db, base_now_ms(), 3) != FEED_OK ||
        pthread_create(&f->thread, NULL, fanout_main, f) != 0) {
        log_error("feed: cannot start the fan-out: %s", f->db ? store_errmsg(f->db) : err);
        feed_fanout_stop(f);
        return NULL;
    }
    f->started = true;
    return f;
}

void feed_fanout_wake(feed_fanout *f)
{
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    f->woken = true;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void feed_fanout_stop(feed_fanout *f)
{
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (f->started) pthread_join(f->thread, NULL);
    if (f->posts) log_info("feed: %lld posts fanned out, %lld timeline entries", (long long)f->posts, (long long)f->rows);
    store_close(f->db);
    lease_groups_free(f->groups);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}
