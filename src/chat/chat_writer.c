/* chat_writer.c -- every chat write of a node goes through one thread,
 * which commits the writes of many requests in one transaction.
 *
 * Why: a message must be durable before its 201, and a durable commit
 * costs a flush (0.35 ms on the benchmark's disk); committed one by one
 * that caps a node at about 3,000 messages a second whatever the CPU. The
 * writer takes whatever requests are queued (up to CHAT_BATCH), runs each
 * one's op in one transaction and commits once; then it tells the
 * gateway which users' sequences moved and answers every request. Under
 * light load a batch is one request and nothing waits; under heavy load
 * the batches grow, and the flush is shared. On SQLite the flush comes
 * after the telling and before the answers, on a thread of its own (the
 * syncer, below): a push goes out once the batch is written, a 201 once
 * it is on disk.
 *
 * On PostgreSQL several nodes' writers run at once. To keep their batches
 * from deadlocking, a batch first locks every conversation it touches and
 * then every user sequence those conversations' members need, each set in
 * id order. On SQLite the transaction holds the one write lock anyway.
 *
 * If a batch fails (a lost connection, a lock timeout), each of its ops is
 * run again alone, so one request's trouble cannot fail the others; an op
 * that fails alone is answered 503. */
#include "chat/chat_writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "chat/chat_settle.h"
#include "store/store_checkpoint.h"

#define CHAT_BATCH 256
#define CHAT_SYNC_GAP_NS 1000000 /* between the starts of two syncs (see the syncer) */
/* When the changes in chat_recent move to chat_changes (chat_settle.c):
 * once CHAT_SETTLE_MIN of them wait and no write has come for
 * CHAT_SETTLE_IDLE_MS (many of each user's are moved together, and not
 * while the loops push and answer the pulls of the last write), or past
 * CHAT_RECENT_MAX, whether or not, after each batch is answered: a
 * server whose writes never pause keeps chat_recent there. The larger
 * chat_recent, the more pages of its index a fan-out writes and of its
 * table a settle's delete, so the bound is low. After a failed settle,
 * none for CHAT_SETTLE_BACKOFF_MS. */
#define CHAT_SETTLE_MIN 8192
#define CHAT_SETTLE_IDLE_MS 50
#define CHAT_RECENT_MAX 16384
#define CHAT_SETTLE_BACKOFF_MS 1000

struct chat_writer {
    chat_writer_opts o;
    store *db;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    chat_op *head, **tail;
    bool stopping;
    int64_t batches, ops; /* for the log at exit */
    int64_t swept_ms;     /* the tail's last sweep */
    int64_t recent;       /* about how many changes are there */
    int64_t settle_ms;    /* no settle before this (monotonic; a failure's back-off) */
    chat_settle_at settle_at; /* where the settles' walk over the users is */
    /* SQLite: the syncer thread (syncer_main) and the batches it waits
     * to sync and answer, under its own lock. */
    store *sync_db;
    pthread_t sync_thread;
    bool sync_started, sync_stopping;
    pthread_mutex_t sync_mu;
    pthread_cond_t sync_cv;
    chat_op *synced_head, **synced_tail;
};

void chat_op_free(chat_op *op)
{
    if (!op) return;
    chat_result_free(&op->res);
    free(op->users);
    free(op->text);
    free(op->client_id);
    free(op->title);
    free(op);
}

/* ---- one op --------------------------------------------------------------- */

static int presence_run(store *db, const chat_op *op, int64_t now)
{
    store_stmt *st;
    if (op->online) {
        st = store_prepare(db, "INSERT INTO presence (node_id, user_id, since_ms) VALUES ($1, $2, $3) "
                               "ON CONFLICT (node_id, user_id) DO NOTHING");
        store_bind_str(st, 1, op->node);
        store_bind_int64(st, 2, op->me);
        store_bind_int64(st, 3, now);
    } else {
        st = store_prepare(db, "DELETE FROM presence WHERE node_id = $1 AND user_id = $2");
        store_bind_str(st, 1, op->node);
        store_bind_int64(st, 2, op->me);
    }
    int rc = store_step(st);
    store_reset(st);
    if (rc != STORE_DONE || op->online) return rc == STORE_DONE ? STORE_OK : rc;
    st = store_prepare(db, "INSERT INTO last_seen (user_id, seen_ms) SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM "
                           "users WHERE id = $1) ON CONFLICT (user_id) DO UPDATE SET seen_ms = $2");
    store_bind_int64(st, 1, op->me);
    store_bind_int64(st, 2, now);
    rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc;
}

static int conns_run(store *db, const chat_op *op, int64_t now)
{
    store_stmt *st = store_prepare(db, "INSERT INTO ws_nodes (node_id, connections, updated_ms) VALUES ($1, $2, $3) "
                                       "ON CONFLICT (node_id) DO UPDATE SET connections = $2, updated_ms = $3");
    store_bind_str(st, 1, op->node);
    store_bind_int64(st, 2, op->up_to);
    store_bind_int64(st, 3, now);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc;
}

/* A new message's id, from the node's generator: ids made in order put
 * each message's entry in messages.id's UNIQUE index beside the last
 * one's, where a random id wrote one more index page, at a random place,
 * for every message (about a tenth of the WAL's frames at 5,000 messages
 * a second, bench/chat). Random while the node holds no generator number;
 * the index still keeps them unique. */
static int64_t message_id(chat_writer *w)
{
    int64_t id = w->o.ids ? idgen_next(w->o.ids) : -1;
    return id > 0 ? id : base_id_new();
}

static int op_run(chat_writer *w, store *db, chat_op *op)
{
    int64_t now = base_now_ms();
    chat_result_free(&op->res);
    op->res.want_parts = w->o.tail != NULL;
    chat_limits lim = {.group_max_members = w->o.group_max_members};
    switch (op->kind) {
    case CHAT_OP_DIRECT: return chat_create_direct(db, op->me, op->other, now, &op->res);
    case CHAT_OP_GROUP: return chat_create_group(db, op->me, op->title, op->client_id, op->users, op->nusers, &lim, now, &op->res);
    case CHAT_OP_ADD: return chat_add_members(db, op->me, op->conv, op->users, op->nusers, &lim, now, &op->res);
    case CHAT_OP_REMOVE: return chat_remove_member(db, op->me, op->conv, op->other, now, &op->res);
    case CHAT_OP_SEND:
        return chat_send(db, op->me, op->conv, op->client_id, op->text, message_id(w), now, &op->res);
    case CHAT_OP_READ: return chat_read(db, op->me, op->conv, op->up_to, now, &op->res);
    case CHAT_OP_PRESENCE: return presence_run(db, op, now);
    case CHAT_OP_CONNS: return conns_run(db, op, now);
    }
    return STORE_ERROR;
}

/* ---- PostgreSQL: locks in one order ---------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct chat_ids {
    int64_t *v;
    size_t n, cap;
} chat_ids;

static bool ids_add(chat_ids *s, int64_t id)
{
    if (s->n == s->cap) {
        int64_t *grown = base_grow(s->v, sizeof *grown, &s->cap);
        if (!grown) return false;
        s->v = grown;
    }
    s->v[s->n++] = id;
    return true;
}

/* Sorted, distinct, as a JSON array text. */
static char *ids_text(chat_ids *s)
{
    qsort(s->v, s->n, sizeof *s->v, cmp_i64);
    return store_ids_json(s->v, s->n);
}

#define PG_LIST STORE_IDS_PG("$1")

static int exec_list(store *db, const char *sql, chat_ids *ids, chat_ids *out)
{
    char *text = ids_text(ids);
    if (!text) return STORE_ERROR;
    store_stmt *st = store_prepare(db, sql);
    store_bind_str(st, 1, text);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW)
        if (out && !ids_add(out, store_col_int64(st, 0))) rc = STORE_ERROR;
    store_reset(st);
    free(text);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

static int pg_lock(store *db, chat_op *ops)
{
    chat_ids convs = {0}, users = {0};
    bool ok = true;
    for (chat_op *op = ops; op && ok; op = op->next) {
        if (op->kind == CHAT_OP_PRESENCE || op->kind == CHAT_OP_CONNS) continue;
        if (op->conv) ok = ids_add(&convs, op->conv);
        ok = ok && ids_add(&users, op->me) && (!op->other || ids_add(&users, op->other));
        for (size_t i = 0; ok && i < op->nusers; i++) ok = ids_add(&users, op->users[i]);
    }
    int rc = ok ? STORE_OK : STORE_ERROR;
    if (rc == STORE_OK && convs.n)
        rc = exec_list(db, "SELECT id FROM conversations WHERE id IN " PG_LIST " ORDER BY id FOR UPDATE", &convs, NULL);
    if (rc == STORE_OK && convs.n)
        rc = exec_list(db, "SELECT user_id FROM conv_members WHERE conversation_id IN " PG_LIST " AND left_seq IS NULL",
                       &convs, &users);
    if (rc == STORE_OK && users.n)
        rc = exec_list(db, "INSERT INTO chat_seqs (user_id, seq) SELECT u, 0 FROM " PG_LIST " AS l(u) WHERE EXISTS "
                           "(SELECT 1 FROM users WHERE id = u) ORDER BY u ON CONFLICT (user_id) DO NOTHING",
                       &users, NULL);
    if (rc == STORE_OK && users.n)
        rc = exec_list(db, "SELECT user_id FROM chat_seqs WHERE user_id IN " PG_LIST " ORDER BY user_id FOR UPDATE",
                       &users, NULL);
    free(convs.v);
    free(users.v);
    return rc;
}

/* ---- batches --------------------------------------------------------------- */

static int batch_run(chat_writer *w, chat_op *ops)
{
    int rc = store_begin(w->db);
    if (rc == STORE_OK && store_backend_of(w->db) == STORE_PG) rc = pg_lock(w->db, ops);
    for (chat_op *op = ops; op && rc == STORE_OK; op = op->next) rc = op_run(w, w->db, op);
    if (rc == STORE_OK) return store_commit(w->db);
    store_rollback(w->db);
    return rc;
}

/* The batch failed: each op on its own. */
static void run_alone(chat_writer *w, chat_op *ops)
{
    for (chat_op *op = ops; op; op = op->next) {
        chat_op *next = op->next;
        op->next = NULL;
        if (batch_run(w, op) != STORE_OK) {
            log_warn("chat: a write failed: %s", store_errmsg(w->db));
            chat_result_free(&op->res);
            chat_refuse(&op->res, 503, "unavailable", NULL, "the database did not answer; try again");
        }
        op->next = next;
    }
}

/* Appends r's news to *all (n of cap); false when out of memory. */
static bool news_add(chat_news **all, size_t *n, size_t *cap, const chat_result *r)
{
    while (*n + r->nsignal > *cap) {
        chat_news *grown = base_grow(*all, sizeof *grown, cap);
        if (!grown) return false;
        *all = grown;
    }
    if (r->nsignal) memcpy(*all + *n, r->signal, r->nsignal * sizeof **all);
    *n += r->nsignal;
    return true;
}

/* The changes committed go to the tail, before any device hears of them
 * (so the pull a frame sets off finds them there); every change, so the
 * tail never has a gap (chat_tail.h). Users idle for a while leave it,
 * looked for once a second. */
static void tail_put(chat_writer *w, chat_op *ops)
{
    int64_t now = base_now_ms();
    for (chat_op *op = ops; op; op = op->next)
        for (size_t i = 0; i < op->res.nsignal; i++) {
            const chat_news *s = &op->res.signal[i];
            chat_tail_put(w->o.tail, s->user, s->seq, s->part, now);
        }
    if (now - w->swept_ms >= 1000) {
        chat_tail_sweep(w->o.tail, now);
        w->swept_ms = now;
    }
}

/* The users whose sequences moved, for the gateway to tell. Out of
 * memory, some are not told: their devices catch up at the next frame. */
static void tell(chat_writer *w, chat_op *ops)
{
    size_t n = 0, cap = 0;
    chat_news *all = NULL;
    if (w->o.tail) tail_put(w, ops);
    for (chat_op *op = ops; op && w->o.on_told; op = op->next)
        if (op->conn && op->res.status == 201 && op->res.self_seq > 0)
            w->o.on_told(w->o.arg, op->me, op->conn, op->res.self_seq);
    for (chat_op *op = ops; op && news_add(&all, &n, &cap, &op->res); op = op->next) continue;
    if (n && w->o.on_commit) w->o.on_commit(w->o.arg, all, n);
    free(all);
}

/* Answers every op of a list (each finish owns its op from then on). */
static void finish_all(chat_op *ops)
{
    while (ops) {
        chat_op *next = ops->next;
        ops->next = NULL;
        ops->finish(ops);
        ops = next;
    }
}

/* ---- the syncer (SQLite) ----------------------------------------------------
 *
 * On SQLite the writer commits with synchronous=NORMAL: a commit writes
 * the WAL but does not wait for the disk. The writer tells the devices of
 * a batch at once and hands it here; this thread syncs the WAL (one
 * fdatasync covers every batch written before it: those that queued up
 * while the last sync ran share the next) and then answers the batch's
 * requests, so a 201 still means on disk. The writer meanwhile goes on
 * with the next batch: at 5,000 messages a second a sync took 3-26 ms
 * (bench/chat), and a writer that waited for each one held every message
 * that came meanwhile away from its push.
 *
 * A sync starts at most CHAT_SYNC_GAP_NS after the last one started. Back
 * to back, the syncs took well under a millisecond each at 5,000 messages
 * a second, so each covered about two messages: 2,000 fdatasyncs a
 * second, a seventh of the server's CPU (the sync's writeback, its
 * interrupt, the wake-ups of the syncer and of the loops that answer).
 * Held a millisecond apart, each covers more: the syncer's CPU fell by
 * 40%, and the server's by 6% in every one of seven paired runs
 * (bench/RESULTS.md, chat, session 34). A batch that comes a millisecond
 * or more after the last sync started (at 200 messages a second, nearly
 * every one) is synced at once; under load a 201 waits up to that
 * millisecond more.
 *
 * A failed sync answers 503 in place of what was written: the commit may
 * not survive a power cut (a retried send that finds the message answers
 * 200 with it). And it is the last write: frames the disk lost leave a
 * hole in the WAL, and after a power cut SQLite replays the WAL only up
 * to its first bad frame, so every later commit, however well synced,
 * would be lost with it. So the failed sync fails the file for the whole
 * process (store_disk_failed, store.h): from then on the syncer refuses
 * what it is handed and the writer runs nothing (503, "until it
 * restarts"), whichever connection's sync saw the failure, as PostgreSQL
 * stops at a failed fsync; a restart reads what the disk has. */

/* ops: a list whose last op's next is *end. */
static void syncer_hand(chat_writer *w, chat_op *ops, chat_op **end)
{
    pthread_mutex_lock(&w->sync_mu);
    *w->synced_tail = ops;
    w->synced_tail = end;
    pthread_cond_signal(&w->sync_cv);
    pthread_mutex_unlock(&w->sync_mu);
}

/* 503 for what a failed sync left unsure and everything after it (see
 * above); the ops refused already keep their answers. */
static void sync_refuse(chat_op *ops)
{
    for (chat_op *op = ops; op; op = op->next) {
        if (op->res.status >= 400) continue;
        chat_result_free(&op->res);
        chat_refuse(&op->res, 503, "disk_failed", NULL, STORE_DISK_FAILED_MSG);
    }
}

static void *syncer_main(void *p)
{
    chat_writer *w = p;
    base_thread_name("chat-syncer");
    int64_t last_ns = 0; /* when the last sync started */
    for (;;) {
        pthread_mutex_lock(&w->sync_mu);
        while (!w->synced_head && !w->sync_stopping) pthread_cond_wait(&w->sync_cv, &w->sync_mu);
        int64_t early_ns = last_ns + CHAT_SYNC_GAP_NS - base_mono_ns();
        if (early_ns > 0 && !w->sync_stopping) { /* batches that come meanwhile share this sync */
            pthread_mutex_unlock(&w->sync_mu);
            struct timespec ts = {.tv_sec = 0, .tv_nsec = early_ns};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&w->sync_mu);
        }
        last_ns = base_mono_ns();
        chat_op *ops = w->synced_head;
        w->synced_head = NULL;
        w->synced_tail = &w->synced_head;
        pthread_mutex_unlock(&w->sync_mu);
        if (!ops) return NULL; /* stopping, and nothing left */
        /* (Refused without a sync once the file has failed: the store
         * logged it.) */
        if (store_sync_log(w->sync_db) != STORE_OK) sync_refuse(ops);
        finish_all(ops);
    }
}

static int syncer_start(chat_writer *w)
{
    char err[256];
    if (!(w->sync_db = store_open(w->o.db_url, err, sizeof err))) {
        log_error("chat: the syncer cannot open the database: %s", err);
        return -1;
    }
    if (pthread_create(&w->sync_thread, NULL, syncer_main, w) != 0) return -1;
    w->sync_started = true;
    return 0;
}

/* After the writer: answers what is still waiting, then stops. */
static void syncer_stop(chat_writer *w)
{
    pthread_mutex_lock(&w->sync_mu);
    w->sync_stopping = true;
    pthread_cond_broadcast(&w->sync_cv);
    pthread_mutex_unlock(&w->sync_mu);
    if (w->sync_started) pthread_join(w->sync_thread, NULL);
    store_close(w->sync_db);
}

static bool queued(chat_writer *w)
{
    pthread_mutex_lock(&w->mu);
    bool any = w->head || w->stopping;
    pthread_mutex_unlock(&w->mu);
    return any;
}

/* One settle transaction (chat_settle.c); false after a failure (logged:
 * the changes wait for the next try, CHAT_SETTLE_BACKOFF_MS on). */
static bool settle_once(chat_writer *w)
{
    bool more;
    if (base_mono_ns() / 1000000 < w->settle_ms) return false;
    if (chat_settle(w->db, &w->settle_at, &more) != STORE_OK) {
        log_warn("chat: new changes not settled: %s", store_errmsg(w->db));
        w->settle_ms = base_mono_ns() / 1000000 + CHAT_SETTLE_BACKOFF_MS;
        return false;
    }
    w->recent = more ? w->recent - CHAT_SETTLE_ROWS : 0;
    if (more && w->recent <= 0) w->recent = 1; /* the count was low: more to come */
    return true;
}

/* The next batch, or NULL when stopping. While writes are queued, the
 * changes in chat_recent wait; when none has come for CHAT_SETTLE_IDLE_MS
 * and CHAT_SETTLE_MIN or more wait, they are settled, one transaction at a
 * time while nothing is queued (a write that comes meanwhile waits for
 * one: a few ms). */
static chat_op *take(chat_writer *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->head && !w->stopping) {
        if (w->recent < CHAT_SETTLE_MIN) {
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += CHAT_SETTLE_IDLE_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT || w->head || w->stopping) continue;
        pthread_mutex_unlock(&w->mu);
        while (w->recent > 0 && !queued(w) && settle_once(w)) continue;
        pthread_mutex_lock(&w->mu);
        if (w->recent >= CHAT_SETTLE_MIN && !w->head && !w->stopping)
            pthread_cond_wait(&w->cv, &w->mu); /* a failure: until the next write */
    }
    chat_op *batch = w->head, **end = &w->head;
    for (int i = 0; *end && i < CHAT_BATCH; i++) end = &(*end)->next;
    w->head = *end;
    *end = NULL;
    if (!w->head) w->tail = &w->head;
    pthread_mutex_unlock(&w->mu);
    return batch;
}

/* The changes a batch put in chat_recent. */
static void settle_count(chat_writer *w, const chat_op *ops)
{
    for (const chat_op *op = ops; op; op = op->next) w->recent += (int64_t)op->res.nrecent;
}

static void *writer_main(void *p)
{
    chat_writer *w = p;
    base_thread_name("chat-writer");
    chat_op *batch;
    while ((batch = take(w))) {
        if (store_disk_failed(w->db)) { /* see the syncer */
            sync_refuse(batch);
            finish_all(batch);
            continue;
        }
        if (batch_run(w, batch) != STORE_OK) {
            log_warn("chat: a batch of writes failed (%s); running them one by one", store_errmsg(w->db));
            run_alone(w, batch);
        }
        tell(w, batch);
        settle_count(w, batch);
        w->batches++;
        chat_op **end = &batch;
        for (; *end; end = &(*end)->next) w->ops++;
        if (w->sync_started)
            syncer_hand(w, batch, end);
        else
            finish_all(batch); /* PostgreSQL: the commit was durable */
        /* Writes that never stop coming: settle some now, the batch told. */
        while (w->recent > CHAT_RECENT_MAX && settle_once(w)) continue;
    }
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------- */

chat_writer *chat_writer_new(const chat_writer_opts *o)
{
    chat_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->o = *o;
    w->tail = &w->head;
    w->synced_tail = &w->synced_head;
    pthread_mutex_init(&w->mu, NULL);
    pthread_mutex_init(&w->sync_mu, NULL);
    pthread_cond_init(&w->sync_cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* take's idle wait */
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    return w;
}

int chat_writer_start(chat_writer *w)
{
    char err[256];
    if (!(w->db = store_open(w->o.db_url, err, sizeof err))) {
        log_error("chat: the writer cannot open the database: %s", err);
        return -1;
    }
    /* SQLite's default page cache (2 MiB) holds a fraction of the indexes
     * a stream of messages touches at random (messages by conversation,
     * changes and sequences by user): the writer read 6 pages a message
     * back from the file (perf, bench/chat at 5,000/s).
     *
     * SQLite checkpoints on the connection whose commit takes the WAL past
     * wal_autocheckpoint pages (default 1,000): here, inside the writer,
     * where every queued message waits for the copy and the database
     * file's fsync. At 5,000 messages a second that was 24 times a second
     * and 4 ms of fsync each (perf trace). The server's checkpointer
     * thread (store_checkpoint.c, started by the reminders on SQLite)
     * copies the WAL every 25 ms instead, and at STORE_CKPT_FRAMES it
     * finishes the copy between two of this writer's commits (it takes the
     * file's writers' queue for that), so the next commit here starts the
     * WAL over. This connection's own checkpoint stays as a backstop, at
     * twice that size: had it run at the same size, it would have done
     * the same job with every queued message waiting (20-25 ms every 3 s
     * at 5,000/s, bench/chat). A long WAL does not slow readers: they look
     * only at the frames the checkpointer has not copied yet. */
    char autockpt[64];
    snprintf(autockpt, sizeof autockpt, "PRAGMA wal_autocheckpoint = %d", 2 * STORE_CKPT_FRAMES);
    /* synchronous=NORMAL: a commit writes the WAL but does not sync it.
     * The devices are told of a batch once it is written (a crash of the
     * process keeps it), and its requests are answered once the syncer
     * has put it on disk (so does a power cut): the sync, 0.4-1.5 ms on
     * the benchmark's disk at 200 messages a second, no longer stands
     * between a send and its push, nor holds the file's write lock, which
     * every other writer of the process waits for. A settle
     * (chat_settle.c) is not synced on its own: lost to a power cut, its
     * changes are still in chat_recent. */
    if (store_backend_of(w->db) == STORE_SQLITE &&
        (store_exec(w->db, "PRAGMA cache_size = -65536") != STORE_OK || store_exec(w->db, autockpt) != STORE_OK ||
         store_exec(w->db, "PRAGMA synchronous = NORMAL") != STORE_OK))
        log_warn("chat: the writer's connection keeps SQLite's defaults: %s", store_errmsg(w->db));
    /* what a stop or a crash left in chat_recent (SQLite: chat_settle.c) */
    if (store_backend_of(w->db) == STORE_SQLITE && store_query_int64(w->db, "SELECT count(*) FROM chat_recent", &w->recent) != STORE_ROW)
        log_warn("chat: the changes waiting in chat_recent not counted: %s", store_errmsg(w->db));
    if (store_backend_of(w->db) == STORE_SQLITE && syncer_start(w) != 0) return -1;
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) return -1;
    w->started = true;
    return 0;
}

int chat_writer_submit(chat_writer *w, chat_op *op)
{
    op->next = NULL;
    pthread_mutex_lock(&w->mu);
    bool ok = w->started && !w->stopping;
    if (ok) {
        *w->tail = op;
        w->tail = &op->next;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return ok ? 0 : -1;
}

void chat_writer_free(chat_writer *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    /* The thread drains what is queued before it sees stopping. */
    if (w->started) pthread_join(w->thread, NULL);
    syncer_stop(w);
    if (w->batches) log_info("chat: %lld writes in %lld transactions", (long long)w->ops, (long long)w->batches);
    store_close(w->db);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->sync_mu);
    pthread_cond_destroy(&w->sync_cv);
    free(w);
}
