/* notify_engine.c -- one node's reminder engine: its lifecycle (new,
 * start, free), its delivery worker threads, and its connections.
 *
 * The scanner thread renews and rebalances the group leases, drains dirty
 * marks, re-claims outbox rows whose next attempt is due, and claims what
 * is due within the window in the shards of the groups it holds (in-app
 * ones already due are delivered by the claim itself). Claimed deliveries
 * go into a timer heap; worker threads pop them at their exact due time,
 * write in-app ones to the inbox in batches and hand webhook and email
 * ones to the channels, whose answers come back through a result list.
 * On PostgreSQL each thread has its own connection; on SQLite they share
 * one through a store_gate, and a store_checkpoint thread keeps the WAL
 * short.
 *
 * A claimed delivery row carries next_attempt_ms = due + NOTIFY_HOLD_MS
 * (claimed late: now + NOTIFY_HOLD_MS):
 * if this node dies holding it, any node's outbox poll takes it over then.
 * Every state change of a delivery row is guarded by state = 'pending', so
 * a row delivered twice (a takeover racing a slow node) is recorded once,
 * and the inbox gets a row only with that change (on SQLite also under a
 * unique delivery id), so the user never sees it twice.
 *
 * The files, by the stage they serve:
 *   notify_int.h      the engine struct, constants, what the files share
 *   notify_queue.c    the timer heap and the table of sends in flight
 *   notify_scan.c     the scanner thread: leases, outbox takeover
 *   notify_claim.c    claiming due reminder rows (both backends' SQL)
 *   notify_budget.c   each recipient's deliveries per hour and day (claims)
 *   notify_engine.c   this: lifecycle, workers, connections
 *   notify_inapp.c    in-app delivery to the inbox
 *   notify_send.c     webhook and email sends, their answers, the holds
 *   notify_payload.c  the webhook body and the email text
 *   notify_cleanup.c  the notify.cleanup job: the inbox cap
 * and in store/: store_gate.c (the SQLite write lock), store_checkpoint.c
 * (the WAL checkpointer). */
#include "notify/notify_int.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "deliver/channels.h"

/* ---- the heap, under mu ------------------------------------------------- */

void notify_enqueue(notify_engine *e, const notify_item *items, size_t n)
{
    if (n == 0) return;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < n; i++)
        if (!notify_heap_push(&e->heap, &items[i])) break; /* the outbox keeps it; a poll finds it */
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

size_t notify_queued(notify_engine *e)
{
    pthread_mutex_lock(&e->mu);
    size_t n = notify_heap_size(&e->heap);
    pthread_mutex_unlock(&e->mu);
    return n;
}

bool notify_claiming(notify_engine *e)
{
    pthread_mutex_lock(&e->mu);
    bool claiming = !e->draining;
    pthread_mutex_unlock(&e->mu);
    return claiming;
}

/* Under e->mu: nothing claimed is left to this node -- the scanner claims
 * no more, and nothing waits in the heap, is in a worker's hands, out at
 * a channel, or answered and not yet recorded. */
static bool drained(const notify_engine *e)
{
    return (e->claims_over || !e->scanner_started) && notify_heap_size(&e->heap) == 0 && e->busy == 0 &&
           e->in_flight == 0 && !e->results;
}

void notify_claims_over(notify_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->claims_over = true;
    if (drained(e)) pthread_cond_broadcast(&e->idle);
    pthread_mutex_unlock(&e->mu);
}

/* ---- connections --------------------------------------------------------- */

/* Settings of the engine's connections.
 *  - SQLite: a page cache that holds the hot ends of the big tables'
 *    indexes rather than the 2 MB default, and the file mapped rather than
 *    copied.
 *  - SQLite synchronous=NORMAL, PostgreSQL synchronous_commit=off: the
 *    engine's commits do not each wait for a flush (SQLite's checkpointer
 *    and PostgreSQL's WAL writer make them durable soon after). Every effect of the engine
 *    can be redone from the reminder rows: should power fail, the last
 *    claims and deliveries roll back and are claimed and delivered again
 *    under the same delivery ids -- at least once, as promised. The API's
 *    connections keep the durable defaults: a user's write is durable when
 *    answered.
 *  - PostgreSQL plan_cache_mode=force_generic_plan: the engine runs a
 *    dozen fixed statements thousands of times a second. Left to choose,
 *    PostgreSQL planned the claim's SELECT afresh at every call (its
 *    generic plan looked dearer than the custom ones), and the custom
 *    plans hashed the whole events table for each group's few due rows;
 *    the generic plan seeks the due index and looks each event up. On
 *    bench/reminders (webhooks, three nodes) the SELECT went from 42 us a
 *    row to 12, p99 lateness from 3.9-8.2 s to 1.2 s. */
static store *engine_db_open(notify_engine *e, const char *who)
{
    char err[256];
    store *db = store_open(e->o.db_url, err, sizeof err);
    if (!db) {
        log_error("reminders: %s cannot open the database: %s", who, err);
        return NULL;
    }
    if (store_backend_of(db) == STORE_PG && (store_exec(db, "SET synchronous_commit = off") != STORE_OK ||
                                             store_exec(db, "SET plan_cache_mode = force_generic_plan") != STORE_OK))
        log_warn("reminders: %s: cannot set up the connection: %s", who, store_errmsg(db));
    if (store_backend_of(db) == STORE_SQLITE &&
        (store_exec(db, "PRAGMA cache_size = -131072") != STORE_OK ||
         store_exec(db, "PRAGMA synchronous = NORMAL") != STORE_OK ||
         store_exec(db, "PRAGMA mmap_size = 1073741824") != STORE_OK))
        log_warn("reminders: %s: cannot set up the connection: %s", who, store_errmsg(db));
    return db;
}

store *notify_thread_db(notify_engine *e, const char *who)
{
    return e->shared ? e->shared : engine_db_open(e, who);
}

void notify_thread_db_close(notify_engine *e, store *db)
{
    if (db != e->shared) store_close(db);
}

/* ---- the delivery workers ------------------------------------------------ */

/* Under e->mu: when the first due item may wait for company, the time
 * to wake up and take them, else 0. PostgreSQL only: there each batch is
 * a transaction and round trips of its own, and at 1M reminders a minute
 * on three nodes batches of six rows cost more in commits than in rows
 * (on SQLite the write lock already gathers them). */
static int64_t linger_until(notify_engine *e, int64_t now)
{
    const notify_item *top = notify_heap_peek(&e->heap);
    if (store_gate_serializes(&e->gate) || !top || top->due_ms > now) return 0;
    int64_t until = top->due_ms + NOTIFY_LINGER_MS;
    if (now >= until || notify_heap_due_count(&e->heap, now, NOTIFY_LINGER_BATCH) >= NOTIFY_LINGER_BATCH) return 0;
    return until;
}

/* Under e->mu: pops the due items into batch, webhook and email ones only
 * while the channels have room (the rest wait in the heap: a send the
 * channel refuses would be a failed attempt). Returns how many; *async
 * counts the channel ones, *full says the channels stopped it. */
static size_t take_due(notify_engine *e, notify_item *batch, int64_t now, int *async, bool *full)
{
    size_t n = 0;
    *async = 0;
    *full = false;
    /* Once full, nothing until a batch's worth is free (see send_done in
     * notify_send.c). */
    int room = e->send_cap - e->in_flight - e->sending;
    if (e->send_waiting && room < e->send_room) room = 0;
    while (n < NOTIFY_DELIVER_BATCH) {
        const notify_item *top = notify_heap_peek(&e->heap);
        if (!top || top->due_ms > now) break;
        if (top->channel != NOTIFY_CHAN_INAPP) {
            if (*async >= room) {
                *full = e->send_waiting = true;
                break;
            }
            ++*async;
        }
        batch[n++] = notify_heap_pop(&e->heap);
    }
    e->sending += *async;
    return n;
}

/* Outside e->mu: in-app items at the front, the channels' behind; each
 * kind goes as one batch. */
static void deliver_batch(notify_engine *e, store *db, store *ro, notify_item *batch, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (batch[i].channel == NOTIFY_CHAN_INAPP) {
            notify_item t = batch[k];
            batch[k++] = batch[i];
            batch[i] = t;
        }
    notify_deliver_inapp_batch(e, db, batch, k);
    notify_deliver_async_batch(e, db, ro, batch + k, n - k);
}

/* SQLite: the worker's own connection for the reads of its sends, which
 * need not wait for the write lock (the engine's shared connection is
 * the writers'). PostgreSQL: the worker's connection does both. */
static store *reader_open(notify_engine *e, store *db)
{
    if (!store_gate_serializes(&e->gate)) return db;
    store *ro = engine_db_open(e, "delivery reader");
    if (ro && store_exec(ro, "PRAGMA query_only = 1") != STORE_OK) {
        store_close(ro);
        ro = NULL;
    }
    return ro;
}

/* Under e->mu, with nothing to do now: waits until the linger ends, the
 * first item is due (unless the channels are full: then until woken),
 * the answers waiting are to be recorded, or the holds are to be looked
 * at -- or until woken. */
static void worker_wait(notify_engine *e, int64_t now, int64_t linger, bool full)
{
    const notify_item *top = notify_heap_peek(&e->heap);
    int64_t wake = linger ? linger : top && !full ? top->due_ms : now + 1000;
    if (e->results && e->results_since + NOTIFY_RESULT_WAIT_MS < wake) wake = e->results_since + NOTIFY_RESULT_WAIT_MS;
    if (notify_holds_to_watch(e, now) && e->next_extend_ms < wake) wake = e->next_extend_ms;
    struct timespec ts = {.tv_sec = wake / 1000, .tv_nsec = (wake % 1000) * 1000000};
    pthread_cond_timedwait(&e->cv, &e->mu, &ts);
}

static void *worker_main(void *p)
{
    notify_engine *e = p;
    base_thread_name("rem-worker");
    store *db = notify_thread_db(e, "delivery worker");
    if (!db) return NULL;
    store *ro = reader_open(e, db);
    notify_item *batch = malloc(NOTIFY_DELIVER_BATCH * sizeof *batch);
    if (!batch || !ro) {
        free(batch);
        if (ro && ro != db) store_close(ro);
        notify_thread_db_close(e, db);
        return NULL;
    }
    pthread_mutex_lock(&e->mu);
    while (!e->stopping) {
        int64_t now = base_now_ms();
        if (notify_holds_to_watch(e, now) && now >= e->next_extend_ms) {
            e->next_extend_ms = now + NOTIFY_EXTEND_TICK_MS;
            pthread_mutex_unlock(&e->mu);
            notify_extend_holds(e, db, now);
            pthread_mutex_lock(&e->mu);
            continue;
        }
        /* Answers waiting do not cut a linger short: woken for the first
         * of them, workers took whatever was due, and webhook batches
         * (each a read, and a statement per send time when recorded)
         * were nine rows. While the due items linger, answers that are
         * ready are recorded alone. */
        int64_t linger = linger_until(e, now);
        notify_result *res = notify_take_results(e, now);
        int async = 0;
        bool full = false;
        size_t n = linger ? 0 : take_due(e, batch, now, &async, &full);
        if (!res && n == 0) {
            worker_wait(e, now, linger, full);
            continue;
        }
        e->busy++;
        pthread_mutex_unlock(&e->mu);
        notify_apply_results(e, db, res);
        deliver_batch(e, db, ro, batch, n);
        pthread_mutex_lock(&e->mu);
        e->busy--;
        e->sending -= async;
        if (async) pthread_cond_broadcast(&e->cv); /* room for another worker's sends */
        if (e->draining && drained(e)) pthread_cond_broadcast(&e->idle);
    }
    /* Answers already in are recorded: dropped, their rows would be sent
     * again after the hold. */
    notify_result *res = notify_take_results(e, base_now_ms());
    pthread_mutex_unlock(&e->mu);
    notify_apply_results(e, db, res);
    free(batch);
    if (ro != db) store_close(ro);
    notify_thread_db_close(e, db);
    return NULL;
}

/* ---- lifecycle ---------------------------------------------------------- */

notify_engine *notify_engine_new(const notify_opts *o)
{
    notify_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->o = *o;
    if (e->o.shards < 1) e->o.shards = 1024;
    if (e->o.groups < 1) e->o.groups = 64;
    if (e->o.groups > e->o.shards) e->o.groups = e->o.shards;
    if (e->o.window_ms < 1) e->o.window_ms = 2000;
    if (e->o.workers < 1) e->o.workers = 2;
    if (e->o.max_attempts < 1) e->o.max_attempts = 8;
    if (e->o.backoff_ms < 1) e->o.backoff_ms = 1000;
    if (e->o.lease_ttl_ms < 30) e->o.lease_ttl_ms = 15000;
    if (e->o.heartbeat_ms < 10 || e->o.heartbeat_ms >= e->o.lease_ttl_ms) e->o.heartbeat_ms = e->o.lease_ttl_ms / 3;
    e->per_group = (e->o.shards + e->o.groups - 1) / e->o.groups;
    snprintf(e->owner, sizeof e->owner, "%s", o->node_id);
    e->groups = calloc((size_t)e->o.groups, sizeof *e->groups);
    e->claimed_to = INT64_MIN;
    e->groups_valid_ns = INT64_MAX; /* none held yet */
    e->workers = calloc((size_t)e->o.workers, sizeof *e->workers);
    if (!e->groups || !e->workers) {
        free(e->groups);
        free(e->workers);
        free(e);
        return NULL;
    }
    for (int i = 0; i < e->o.groups; i++) {
        char name[64];
        snprintf(name, sizeof name, NOTIFY_GROUP_PREFIX "%03d", i);
        lease_hold_init(&e->groups[i].hold, name, e->owner);
    }
    store_gate_init(&e->gate, strncmp(o->db_url, "sqlite:", 7) == 0);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_cond_init(&e->idle, NULL);
    return e;
}

/* Webhook endpoints live in the channels branch's migration (version 5);
 * until it is applied there is nothing to read. */
static bool webhooks_present(const char *url)
{
    char err[256];
    store *db = store_open(url, err, sizeof err);
    if (!db) return false;
    int64_t n = 0;
    int rc = store_query_int64(db, "SELECT count(*) FROM schema_migrations WHERE name = 'webhooks'", &n);
    store_close(db);
    return rc == STORE_ROW && n > 0;
}

/* The inbox id key, for the ids the listener is shown. */
static bool inbox_key_load(notify_engine *e)
{
    char err[256];
    store *db = store_open(e->o.db_url, err, sizeof err);
    e->has_inbox_key = db && notify_inbox_key(db, e->inbox_key) == STORE_OK;
    if (!e->has_inbox_key) log_error("reminders: cannot read the inbox id key: %s", db ? store_errmsg(db) : err);
    store_close(db);
    return e->has_inbox_key;
}

int notify_engine_start(notify_engine *e)
{
    e->has_webhooks = webhooks_present(e->o.db_url);
    if (e->o.on_inbox && !inbox_key_load(e)) return -1;
    if (e->o.on_inbox && !store_gate_serializes(&e->gate) &&
        !(e->visible = notify_visible_start(e->o.db_url, e->o.on_inbox, e->o.on_inbox_arg))) {
        log_error("reminders: cannot start the reminder frames' visibility hold");
        return -1;
    }
    e->send_cap = e->o.channels ? channels_capacity(e->o.channels) : INT_MAX;
    e->send_room = e->send_cap / 4 < 1 ? 1 : e->send_cap / 4 > 256 ? 256 : e->send_cap / 4;
    /* Sends being made: at most the channels' capacity (without channels,
     * the batches the workers hold), each until its answer is recorded. */
    size_t bound = (size_t)(e->o.channels ? e->send_cap : NOTIFY_DELIVER_BATCH * e->o.workers);
    if (!notify_flights_init(&e->flights, bound)) return -1;
    if (store_gate_serializes(&e->gate)) {
        if (!(e->shared = engine_db_open(e, "engine"))) return -1;
        if (store_exec(e->shared, "PRAGMA wal_autocheckpoint = 0") != STORE_OK ||
            !(e->checkpoint = store_checkpoint_start(e->o.db_url, &e->gate, "reminders", "rem-checkpoint", 0, 0))) {
            log_error("reminders: cannot start the checkpointer");
            return -1;
        }
        store_set_guard(e->shared, store_gate_held, &e->gate);
    }
    if (pthread_create(&e->scanner, NULL, notify_scanner_main, e) != 0) {
        log_error("reminders: cannot start the scanner");
        return -1;
    }
    e->scanner_started = true;
    for (int i = 0; i < e->o.workers; i++) {
        if (pthread_create(&e->workers[i], NULL, worker_main, e) != 0) {
            log_error("reminders: cannot start delivery worker %d", i);
            return -1;
        }
        e->nworkers_started++;
    }
    log_info("reminders: %d shards in %d lease groups, window %lld ms, %d delivery workers", e->o.shards,
             e->o.groups, (long long)e->o.window_ms, e->o.workers);
    return 0;
}

int notify_engine_groups_held(notify_engine *e)
{
    pthread_mutex_lock(&e->mu);
    int n = e->groups_held;
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* A clean stop finishes what this node claimed, as a server finishes the
 * requests in flight: the scanner claims nothing more (keeping and
 * renewing the groups it holds, so that no node adopts from them), the
 * workers deliver what waits in the heap at its due time, and the
 * answers of the sends out are recorded. Without this, what was claimed
 * -- due within the window -- waited out its holds (NOTIFY_HOLD_MS past
 * due; a group released is not adopted from, see adopt_groups), so each
 * restart made every reminder due in the next two seconds fire 3 s late.
 * The bound: everything claimed is due by the window's end from now (a
 * claim under way took its horizon before), and NOTIFY_DRAIN_SLACK_MS
 * more covers the last batch's writes and an answer from a receiver
 * that is not slow; a stop waits no longer for a slow one. Whatever is
 * left stays pending under its hold, as before, for the next holder. */
static void drain(notify_engine *e)
{
    int64_t until = base_now_ms() + e->o.window_ms + NOTIFY_DRAIN_SLACK_MS;
    struct timespec ts = {.tv_sec = until / 1000, .tv_nsec = (until % 1000) * 1000000};
    pthread_mutex_lock(&e->mu);
    e->draining = true;
    pthread_cond_broadcast(&e->cv); /* the scanner, asleep */
    while (e->nworkers_started > 0 && !drained(e) && base_now_ms() < until)
        pthread_cond_timedwait(&e->idle, &e->mu, &ts);
    bool done = drained(e);
    size_t waiting = notify_heap_size(&e->heap);
    int out = e->in_flight;
    pthread_mutex_unlock(&e->mu);
    if (!done)
        log_warn("reminders: stopping with %zu claimed deliveries waiting and %d sends out: they wait out their holds",
                 waiting, out);
}

void notify_engine_free(notify_engine *e)
{
    if (!e) return;
    drain(e);
    pthread_mutex_lock(&e->mu);
    e->stopping = true;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    store_checkpoint_stop(e->checkpoint);
    if (e->scanner_started) pthread_join(e->scanner, NULL);
    for (int i = 0; i < e->nworkers_started; i++) pthread_join(e->workers[i], NULL);
    notify_visible_stop(e->visible); /* after every thread that puts */
    /* Sends still out will call send_done; wait for them (channel
     * timeouts bound this). Their results are dropped: the rows stay
     * pending and are retried after the hold. */
    pthread_mutex_lock(&e->mu);
    while (e->in_flight > 0) pthread_cond_wait(&e->idle, &e->mu);
    pthread_mutex_unlock(&e->mu);
    while (e->results) {
        notify_result *next = e->results->next;
        free(e->results);
        e->results = next;
    }
    for (int i = 0; i < e->o.groups; i++) lease_hold_destroy(&e->groups[i].hold);
    store_close(e->shared);
    store_gate_destroy(&e->gate);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_cond_destroy(&e->idle);
    notify_heap_free(&e->heap);
    notify_flights_free(&e->flights);
    free(e->groups);
    free(e->workers);
    free(e);
}
