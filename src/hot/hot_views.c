/* hot_views.c -- counting views: once per (post, user) per hour, and
 * cheap. A view request is parked, and one writer thread commits every
 * view that arrived meanwhile in one transaction (one fsync for all of
 * them, not one per view), then answers them: a view is durable before
 * its 204, so a SIGKILL never loses an acknowledged one, and the counts
 * stay exact. A view counts when its (post, user) row was last counted
 * an hour ago or more: the upsert's WHERE says so, and its change count
 * says whether this one counted. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "hot/hot_int.h"

#define VIEWS_HOUR_MS 3600000
#define VIEWS_BATCH_MAX 4096 /* views a transaction */

typedef struct view_req {
    struct view_req *next;
    http_parked *parked;
    int64_t post_id, user_id, created_ms;
    bool failed;
} view_req;

struct hot_views {
    char db_url[1024];
    store *db; /* the writer's own */
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    view_req *head, **tail;
    bool stopping;
};

hot_views *hot_views_new(const char *db_url)
{
    hot_views *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    snprintf(v->db_url, sizeof v->db_url, "%s", db_url);
    v->tail = &v->head;
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
    return v;
}

static void views_done(http_req *r, void *arg)
{
    view_req *q = arg;
    if (r && q->failed) http_send_error(r, 503, "unavailable", NULL, "the view was not recorded; try again");
    else if (r) http_send_empty(r, 204);
    free(q);
}

void hot_views_submit(hot_views *v, http_req *r, int64_t post_id, int64_t user_id, int64_t created_ms)
{
    view_req *q = calloc(1, sizeof *q);
    if (!q) return http_send_error(r, 503, "unavailable", NULL, "out of memory");
    q->post_id = post_id;
    q->user_id = user_id;
    q->created_ms = created_ms;
    if (!(q->parked = http_park(r, views_done, q))) {
        free(q);
        return;
    }
    pthread_mutex_lock(&v->mu);
    *v->tail = q;
    v->tail = &q->next;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
}

/* One transaction for the batch. A view seen twice within it counts once
 * (the second finds the first's row). */
static int write_batch(store *db, view_req *batch, int64_t now)
{
    int rc = store_begin(db);
    for (view_req *q = batch; q && rc == STORE_OK; q = q->next) {
        int64_t counted = 0;
        store_stmt *st = store_prepare(db, "INSERT INTO hot_views (post_id, user_id, counted_ms) VALUES ($1, $2, $3) "
                                           "ON CONFLICT (post_id, user_id) DO UPDATE SET counted_ms = excluded.counted_ms "
                                           "WHERE hot_views.counted_ms <= $4");
        store_bind_int64(st, 1, q->post_id);
        store_bind_int64(st, 2, q->user_id);
        store_bind_int64(st, 3, now);
        store_bind_int64(st, 4, now - VIEWS_HOUR_MS);
        rc = hot_exec(st, &counted);
        if (rc != STORE_OK || !counted) continue;
        st = store_prepare(db, "INSERT INTO hot_counts (post_id, created_ms, views) VALUES ($1, $2, 1) "
                               "ON CONFLICT (post_id) DO UPDATE SET views = hot_counts.views + 1");
        store_bind_int64(st, 1, q->post_id);
        store_bind_int64(st, 2, q->created_ms);
        rc = hot_exec(st, NULL);
    }
    if (rc == STORE_OK) return store_commit(db);
    store_rollback(db);
    return rc;
}

static void *writer_main(void *p)
{
    hot_views *v = p;
    base_thread_name("hot-views");
    pthread_mutex_lock(&v->mu);
    for (;;) {
        while (!v->head && !v->stopping) pthread_cond_wait(&v->cv, &v->mu);
        if (!v->head) break; /* stopping and drained */
        /* Take up to a batch's worth; the rest waits for the next one. */
        view_req *batch = v->head, **end = &v->head;
        for (int n = 0; *end && n < VIEWS_BATCH_MAX; n++) end = &(*end)->next;
        v->head = *end;
        *end = NULL;
        if (!v->head) v->tail = &v->head;
        pthread_mutex_unlock(&v->mu);
        char err[256];
        if (!v->db && !(v->db = store_open(v->db_url, err, sizeof err)))
            log_warn("hot views: cannot open the database: %s", err);
        int rc = v->db ? write_batch(v->db, batch, base_now_ms()) : STORE_ERROR;
        if (rc != STORE_OK && v->db) log_warn("hot views: a batch failed: %s", store_errmsg(v->db));
        while (batch) {
            view_req *q = batch;
            batch = q->next;
            q->failed = rc != STORE_OK;
            http_unpark(q->parked); /* q belongs to views_done from here */
        }
        pthread_mutex_lock(&v->mu);
    }
    pthread_mutex_unlock(&v->mu);
    return NULL;
}

int hot_views_start(hot_views *v)
{
    if (pthread_create(&v->thread, NULL, writer_main, v) != 0) return -1;
    v->started = true;
    return 0;
}

void hot_views_free(hot_views *v)
{
    if (!v) return;
    pthread_mutex_lock(&v->mu);
    v->stopping = true;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
    if (v->started) pthread_join(v->thread, NULL);
    /* Not started: nothing was parked (the server never ran). */
    store_close(v->db);
    pthread_cond_destroy(&v->cv);
    pthread_mutex_destroy(&v->mu);
    free(v);
}
