/* notify_visible.c -- on PostgreSQL, the listener (on_inbox: the
 * WebSocket "reminder" frame) is told of an inbox row only once
 * GET /v1/notifications can list it.
 *
 * The inbox lists a row once every transaction older than the one that
 * wrote it has ended (its xid below the snapshot's xmin; see
 * notify_http.c), so that a cursor never passes a row still being
 * written. A frame sent right after the delivering commit could reach a
 * client before the row was listable, and a client that re-read its
 * inbox on the frame found nothing new. So the rows wait here, a batch
 * at a time, until a fresh snapshot's xmin passes their xid; xmin only
 * moves forward, so every later read lists them. One thread, its own
 * connection, one statement a tick while anything waits, nothing while
 * nothing does.
 *
 * A frame is a hint that carries its item: a transaction left open for
 * long (which stalls every inbox in the cluster) must not stall the
 * frames too, so a batch goes out after NOTIFY_VISIBLE_MAX_MS whatever
 * xmin says, and at once while the database cannot be asked (tried again
 * a second later; the connection's connect and statement timeouts are
 * short, so a database gone quiet holds frames a few seconds at most).
 * What still waits at a stop goes out then: a clean stop delivers what
 * its node claimed first, and the hub is still up. */
#include "notify/notify_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define NOTIFY_VISIBLE_TICK_MS 2
#define NOTIFY_VISIBLE_MAX_MS 2000
#define NOTIFY_VISIBLE_RETRY_MS 1000 /* after a failed look */

typedef struct visible_batch {
    struct visible_batch *next;
    notify_inbox_item *items; /* owned, summaries too */
    size_t n;
    int64_t xid;      /* the highest of its rows' */
    int64_t until_ms; /* out by then (monotonic) whatever xmin says */
} visible_batch;

struct notify_visible {
    char *db_url;
    notify_inbox_fn fn;
    void *arg;
    store *db; /* the thread's; NULL until opened, or after a failure */
    int64_t retry_ms; /* monotonic: no look before then (after a failure) */
    pthread_t thread;
    pthread_mutex_t mu; /* guards below */
    pthread_cond_t cv;
    visible_batch *head, **tail;
    bool stopping;
};

static void batch_free(visible_batch *b)
{
    notify_inbox_items_free(b->items, b->n);
    free(b);
}

/* The oldest running transaction's xid as a fresh snapshot sees it, or
 * -1 when it cannot be read (the connection is dropped and opened again
 * on the next look). */
static int64_t visible_xmin(notify_visible *v, int64_t now)
{
    char err[256];
    if (now < v->retry_ms) return -1;
    if (!v->db && (v->db = store_open(v->db_url, err, sizeof err)) &&
        store_exec(v->db, "SET statement_timeout = 1000") != STORE_OK) {
        snprintf(err, sizeof err, "%s", store_errmsg(v->db));
        store_close(v->db);
        v->db = NULL;
    }
    int64_t xmin = -1;
    if (v->db && store_query_int64(v->db, "SELECT CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS "
                                          "BIGINT)", &xmin) == STORE_ROW)
        return xmin;
    log_warn("reminders: cannot read the snapshot's xmin for the reminder frames (they go out at once for a "
             "second): %s", v->db ? store_errmsg(v->db) : err);
    store_close(v->db);
    v->db = NULL;
    v->retry_ms = now + NOTIFY_VISIBLE_RETRY_MS;
    return -1;
}

static int64_t mono_ms(void)
{
    return base_mono_ns() / 1000000;
}

/* Unlinks, under mu, the batches that may go now: listable, waited
 * long enough, or xmin not known. */
static visible_batch *visible_take(notify_visible *v, int64_t xmin, int64_t now)
{
    visible_batch *ready = NULL, **rt = &ready;
    for (visible_batch **p = &v->head; *p;) {
        visible_batch *b = *p;
        if (xmin < 0 || b->xid < xmin || now >= b->until_ms) {
            *p = b->next;
            b->next = NULL;
            *rt = b;
            rt = &b->next;
        } else {
            p = &b->next;
        }
    }
    v->tail = &v->head;
    while (*v->tail) v->tail = &(*v->tail)->next;
    return ready;
}

static void tick_wait(notify_visible *v)
{
    int64_t wake = base_now_ms() + NOTIFY_VISIBLE_TICK_MS; /* cv's clock: realtime, as the engine's */
    struct timespec ts = {.tv_sec = wake / 1000, .tv_nsec = (wake % 1000) * 1000000};
    pthread_cond_timedwait(&v->cv, &v->mu, &ts);
}

static void *visible_main(void *arg)
{
    notify_visible *v = arg;
    base_thread_name("rem-visible");
    pthread_mutex_lock(&v->mu);
    while (!v->stopping) {
        if (!v->head) {
            pthread_cond_wait(&v->cv, &v->mu);
            continue;
        }
        pthread_mutex_unlock(&v->mu);
        int64_t xmin = visible_xmin(v, mono_ms());
        pthread_mutex_lock(&v->mu);
        visible_batch *ready = visible_take(v, xmin, mono_ms());
        pthread_mutex_unlock(&v->mu);
        for (visible_batch *b = ready, *next; b; b = next) {
            next = b->next;
            v->fn(v->arg, b->items, b->n);
            batch_free(b);
        }
        pthread_mutex_lock(&v->mu);
        if (v->head && !v->stopping) tick_wait(v);
    }
    pthread_mutex_unlock(&v->mu);
    return NULL;
}

/* The database URL with a short connect timeout of its own (a later
 * keyword wins in libpq's URIs). */
static char *visible_url(const char *db_url)
{
    size_t n = strlen(db_url) + 32;
    char *url = malloc(n);
    if (url) snprintf(url, n, "%s%cconnect_timeout=2", db_url, strchr(db_url, '?') ? '&' : '?');
    return url;
}

notify_visible *notify_visible_start(const char *db_url, notify_inbox_fn fn, void *arg)
{
    notify_visible *v = calloc(1, sizeof *v);
    if (!v || !(v->db_url = visible_url(db_url))) {
        free(v);
        return NULL;
    }
    v->fn = fn;
    v->arg = arg;
    v->tail = &v->head;
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
    if (pthread_create(&v->thread, NULL, visible_main, v) != 0) {
        pthread_mutex_destroy(&v->mu);
        pthread_cond_destroy(&v->cv);
        free(v->db_url);
        free(v);
        return NULL;
    }
    return v;
}

bool notify_visible_put(notify_visible *v, notify_inbox_item *items, size_t n)
{
    visible_batch *b = calloc(1, sizeof *b);
    notify_inbox_item *copy = b ? malloc(n * sizeof *copy) : NULL;
    if (!copy) {
        free(b);
        return false;
    }
    memcpy(copy, items, n * sizeof *copy);
    for (size_t i = 0; i < n; i++) {
        items[i].summary = NULL; /* moved */
        if (copy[i].xid > b->xid) b->xid = copy[i].xid;
    }
    b->items = copy;
    b->n = n;
    b->until_ms = mono_ms() + NOTIFY_VISIBLE_MAX_MS;
    pthread_mutex_lock(&v->mu);
    *v->tail = b;
    v->tail = &b->next;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
    return true;
}

void notify_visible_stop(notify_visible *v)
{
    if (!v) return;
    pthread_mutex_lock(&v->mu);
    v->stopping = true;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
    pthread_join(v->thread, NULL);
    while (v->head) {
        visible_batch *next = v->head->next;
        v->fn(v->arg, v->head->items, v->head->n);
        batch_free(v->head);
        v->head = next;
    }
    store_close(v->db);
    pthread_mutex_destroy(&v->mu);
    pthread_cond_destroy(&v->cv);
    free(v->db_url);
    free(v);
}
