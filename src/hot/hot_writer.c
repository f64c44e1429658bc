/* hot_writer.c -- the action writer: views, likes and unlikes, many in a
 * transaction. A request is parked, and one writer thread commits every
 * action that arrived meanwhile (up to a batch) in one transaction -- one
 * fsync for all of them, not one per action -- then answers them: an
 * action is durable before its answer, so a SIGKILL never loses an
 * acknowledged one, and the counts stay exact. An HTTP loop never waits
 * for the disk here: before, a like was its own transaction on the loop's
 * thread, and every connection of that loop (WebSocket pushes too) waited
 * out its fsync.
 *
 * A batch is written in two passes, both in (post, user) order (a
 * pair's view before its likes and unlikes):
 *   1. each action's own row -- a view counts when its (post, user) row
 *      was last counted an hour ago or more (the upsert's WHERE says so,
 *      and its change count says whether this one counted); a like is an
 *      insert that may find its row taken, an unlike a delete that may
 *      find none -- with each post's count changes added up;
 *   2. one statement a post for its counts.
 * The order is the same on every node, and no count row is taken before
 * every action row is: two nodes' batches on PostgreSQL wait for each
 * other at worst, never both at once (PostgreSQL would end a deadlock by
 * failing one of the batches). The sort keeps arrival order otherwise,
 * so one user's like then unlike of a post keep their order. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "hot/hot_int.h"

#define WRITER_HOUR_MS 3600000
#define WRITER_BATCH_MAX 4096 /* actions a transaction */
#define WRITER_TRIES 2        /* writes of a batch that keeps finding a lock */

typedef struct act_req {
    struct act_req *next;
    http_parked *parked;
    hot_writer *w;
    hot_act act;
    size_t arrival; /* position in its batch: the sort's tie-break */
    int64_t views, likes; /* on a post's first action: its count changes */
    bool failed;
} act_req;

struct hot_writer {
    char db_url[1024];
    store *db; /* the writer's own */
    hot_answer_fn answer;
    void *answer_arg;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    act_req *head, **tail;
    bool stopping;
    act_req **sorted; /* the writer thread's: a batch in write order */
};

hot_writer *hot_writer_new(const char *db_url, hot_answer_fn answer, void *arg)
{
    hot_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->sorted = malloc(WRITER_BATCH_MAX * sizeof *w->sorted))) {
        free(w);
        return NULL;
    }
    snprintf(w->db_url, sizeof w->db_url, "%s", db_url);
    w->answer = answer;
    w->answer_arg = arg;
    w->tail = &w->head;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    return w;
}

static void act_done(http_req *r, void *arg)
{
    act_req *q = arg;
    if (r) q->w->answer(r, &q->act, !q->failed, q->w->answer_arg);
    free(q);
}

void hot_writer_submit(hot_writer *w, http_req *r, const hot_act *a)
{
    act_req *q = calloc(1, sizeof *q);
    if (!q) return http_send_error(r, 503, "unavailable", NULL, "out of memory");
    q->w = w;
    q->act = *a;
    if (!(q->parked = http_park(r, act_done, q))) {
        free(q);
        return;
    }
    pthread_mutex_lock(&w->mu);
    *w->tail = q;
    w->tail = &q->next;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* ---- a batch ------------------------------------------------------------------------ */

/* (post, user), then a view before a like or an unlike of the pair (its
 * row is in another table: two batches taking the pair's two rows in
 * opposite orders would deadlock), then arrival. */
static int by_post_user(const void *pa, const void *pb)
{
    const act_req *a = *(act_req *const *)pa, *b = *(act_req *const *)pb;
    if (a->act.post_id != b->act.post_id) return a->act.post_id < b->act.post_id ? -1 : 1;
    if (a->act.user_id != b->act.user_id) return a->act.user_id < b->act.user_id ? -1 : 1;
    bool va = a->act.kind == HOT_ACT_VIEW, vb = b->act.kind == HOT_ACT_VIEW;
    if (va != vb) return va ? -1 : 1;
    return a->arrival < b->arrival ? -1 : a->arrival > b->arrival;
}

/* One action's own row; *counted says whether it moves its post's count. */
static int write_row(store *db, const hot_act *a, int64_t now, int64_t *counted)
{
    store_stmt *st;
    switch (a->kind) {
    case HOT_ACT_VIEW:
        st = store_prepare(db, "INSERT INTO hot_views (post_id, user_id, counted_ms) VALUES ($1, $2, $3) "
                               "ON CONFLICT (post_id, user_id) DO UPDATE SET counted_ms = excluded.counted_ms "
                               "WHERE hot_views.counted_ms <= $4");
        store_bind_int64(st, 4, now - WRITER_HOUR_MS);
        break;
    case HOT_ACT_LIKE:
        st = store_prepare(db, "INSERT INTO hot_likes (post_id, user_id, created_ms) VALUES ($1, $2, $3) "
                               "ON CONFLICT DO NOTHING");
        break;
    default:
        st = store_prepare(db, "DELETE FROM hot_likes WHERE post_id = $1 AND user_id = $2");
        break;
    }
    store_bind_int64(st, 1, a->post_id);
    store_bind_int64(st, 2, a->user_id);
    if (a->kind != HOT_ACT_UNLIKE) store_bind_int64(st, 3, now);
    return hot_exec(st, counted);
}

/* A post's count changes: views only go up; likes may net out either
 * way, and never below zero. A post that only lost likes has its row
 * already (its likes made it). */
static int write_counts(store *db, int64_t post_id, int64_t created_ms, int64_t views, int64_t likes)
{
    if (!views && !likes) return STORE_OK;
    store_stmt *st;
    if (views > 0 || likes > 0) {
        st = store_prepare(db, "INSERT INTO hot_counts (post_id, created_ms, likes, views) VALUES ($1, $2, $3, $4) "
                               "ON CONFLICT (post_id) DO UPDATE SET views = hot_counts.views + $4, "
                               "likes = CASE WHEN hot_counts.likes + $5 > 0 THEN hot_counts.likes + $5 ELSE 0 END");
        store_bind_int64(st, 2, created_ms);
        store_bind_int64(st, 3, likes > 0 ? likes : 0);
        store_bind_int64(st, 4, views);
        store_bind_int64(st, 5, likes);
    } else {
        st = store_prepare(db, "UPDATE hot_counts SET likes = CASE WHEN likes + $2 > 0 THEN likes + $2 ELSE 0 END "
                               "WHERE post_id = $1");
        store_bind_int64(st, 2, likes);
    }
    store_bind_int64(st, 1, post_id);
    return hot_exec(st, NULL);
}

/* One transaction for the n sorted actions. An action seen twice within
 * it acts as it would one after the other (the second finds the first's
 * row). */
static int write_batch(store *db, act_req **a, size_t n, int64_t now)
{
    int rc = store_begin(db);
    for (size_t i = 0, first = 0; i < n && rc == STORE_OK; i = first) {
        int64_t views = 0, likes = 0;
        for (; first < n && a[first]->act.post_id == a[i]->act.post_id && rc == STORE_OK; first++) {
            int64_t counted = 0;
            rc = write_row(db, &a[first]->act, now, &counted);
            if (!counted) continue;
            if (a[first]->act.kind == HOT_ACT_VIEW) views++;
            else likes += a[first]->act.kind == HOT_ACT_LIKE ? 1 : -1;
        }
        /* Stash the post's sums on its first action for the second pass. */
        a[i]->views = views;
        a[i]->likes = likes;
    }
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        if (i > 0 && a[i]->act.post_id == a[i - 1]->act.post_id) continue;
        rc = write_counts(db, a[i]->act.post_id, a[i]->act.created_ms, a[i]->views, a[i]->likes);
    }
    if (rc == STORE_OK) return store_commit(db);
    store_rollback(db);
    return rc;
}

/* The batch's list into w->sorted, in write order; returns its length. */
static size_t sort_batch(hot_writer *w, act_req *batch)
{
    size_t n = 0;
    for (act_req *q = batch; q; q = q->next) {
        q->arrival = n;
        w->sorted[n++] = q;
    }
    qsort(w->sorted, n, sizeof *w->sorted, by_post_user);
    return n;
}

/* A batch that waited out a lock (STORE_BUSY: the lock timeout, or the
 * loser of a deadlock with a transaction of someone else's, such as the
 * prune of old view rows) is written once more before its actions are
 * answered 503: the other side has let go by then. */
static int write_tries(hot_writer *w, size_t n)
{
    int64_t now = base_now_ms();
    int rc = STORE_ERROR;
    for (int tries = 0; w->db && tries < WRITER_TRIES; tries++) {
        if ((rc = write_batch(w->db, w->sorted, n, now)) != STORE_BUSY) break;
        log_warn("hot writer: a batch of %zu waited out a lock: %s", n, store_errmsg(w->db));
    }
    return rc;
}

static void run_batch(hot_writer *w, act_req *batch)
{
    char err[256];
    if (!w->db && !(w->db = store_open(w->db_url, err, sizeof err)))
        log_warn("hot writer: cannot open the database: %s", err);
    size_t n = sort_batch(w, batch);
    int rc = write_tries(w, n);
    if (rc != STORE_OK && w->db) log_warn("hot writer: a batch failed: %s", store_errmsg(w->db));
    while (batch) {
        act_req *q = batch;
        batch = q->next;
        q->failed = rc != STORE_OK;
        http_unpark(q->parked); /* q belongs to act_done from here */
    }
}

static void *writer_main(void *p)
{
    hot_writer *w = p;
    base_thread_name("hot-writer");
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stopping) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->head) break; /* stopping and drained */
        /* Take up to a batch's worth; the rest waits for the next one. */
        act_req *batch = w->head, **end = &w->head;
        for (int n = 0; *end && n < WRITER_BATCH_MAX; n++) end = &(*end)->next;
        w->head = *end;
        *end = NULL;
        if (!w->head) w->tail = &w->head;
        pthread_mutex_unlock(&w->mu);
        run_batch(w, batch);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int hot_writer_start(hot_writer *w)
{
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) return -1;
    w->started = true;
    return 0;
}

void hot_writer_free(hot_writer *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->started) pthread_join(w->thread, NULL);
    /* Not started: nothing was parked (the server never ran). */
    store_close(w->db);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->sorted);
    free(w);
}
