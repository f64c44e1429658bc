/* notify_send.c -- webhook and email delivery. A batch of due items is
 * planned (what is missed, unavailable, gone or to send), read outside the
 * write lock, written in one transaction if anything needs writing, and
 * handed to the channels after the commit. Their answers come back on the
 * channels' threads (send_done), wait in a list, and are recorded in
 * batches. While sends are out -- or items wait behind -- their rows'
 * holds are pushed back so no other node takes them over. */
#include "notify/notify_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "deliver/channels.h"

/* What a channel hands back to send_done with its answer: the send's row,
 * and what its payload said (when it went out, whether it was late). */
typedef struct notify_send_ctx {
    notify_engine *e;
    char id[NOTIFY_ID_LEN + 1];
    bool late;
    int64_t fired_ms;
} notify_send_ctx;

/* A channel's answer, on the channel's thread: queued for a worker to
 * record (notify_take_results). */
static void send_done(void *ctx, bool ok, int http_status, const char *error)
{
    notify_send_ctx *sc = ctx;
    notify_engine *e = sc->e;
    notify_result *r = calloc(1, sizeof *r);
    pthread_mutex_lock(&e->mu);
    if (r) {
        snprintf(r->id, sizeof r->id, "%s", sc->id);
        r->ok = ok;
        r->late = sc->late;
        r->fired_ms = sc->fired_ms;
        if (!ok) snprintf(r->error, sizeof r->error, "%s (status %d)", error ? error : "failed", http_status);
        r->next = e->results;
        if (!e->results) e->results_since = base_now_ms();
        e->results = r;
        e->nresults++;
    }
    if (--e->in_flight == 0) pthread_cond_broadcast(&e->idle);
    /* A worker is woken for the first answer (to time the batch), a full
     * batch, or room for a batch of the sends it waits to make -- not for
     * every answer: woken per answer, it sent one at a time, a
     * transaction each, and a backlog at the cap never drained (the
     * write lock, busy 90% of the time, went to batches of seven). */
    bool room = e->send_waiting && e->in_flight + e->sending <= e->send_cap - e->send_room;
    if (room) e->send_waiting = false;
    if (room || e->nresults == 1 || e->nresults == NOTIFY_RESULT_BATCH) pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    free(sc);
}

/* Records a failed attempt: back off (doubling, with up to half again of
 * jitter so failing receivers are not hit in lockstep) or dead-letter. */
/* permanent: no retry can succeed (say, email is not configured), so the
 * delivery goes to the dead letters at once, visibly, with the reason.
 * sent: the attempt's answer, whose send time and lateness the row
 * records; NULL when nothing went out. */
static int record_failure_ex(notify_engine *e, store *db, const char *id, const char *error, bool permanent,
                             const notify_result *sent)
{
    int64_t attempts = 0;
    store_stmt *st = store_prepare(db, "SELECT attempts FROM deliveries WHERE id = $1 AND state = 'pending'");
    store_bind_str(st, 1, id);
    int rc = store_step(st);
    if (rc == STORE_ROW) attempts = store_col_int64(st, 0) + 1;
    store_reset(st);
    if (rc != STORE_ROW) return rc == STORE_DONE ? STORE_OK : rc;
    int64_t now = base_now_ms();
    int shift = attempts - 1 < 20 ? (int)attempts - 1 : 20;
    int64_t delay = e->o.backoff_ms << shift;
    if (delay > 3600000) delay = 3600000;
    unsigned char j[4];
    base_random(j, sizeof j);
    uint32_t jr = (uint32_t)j[0] | (uint32_t)j[1] << 8 | (uint32_t)j[2] << 16 | (uint32_t)j[3] << 24;
    delay += (int64_t)(jr % (uint32_t)(delay / 2 + 1));
    bool dead = permanent || attempts >= e->o.max_attempts;
    st = store_prepare(db, "UPDATE deliveries SET attempts = $2, state = $3, next_attempt_ms = $4, last_error = $5, "
                           "updated_ms = $6, fired_ms = COALESCE($7, fired_ms), late = COALESCE($8, late) "
                           "WHERE id = $1 AND state = 'pending'");
    store_bind_str(st, 1, id);
    store_bind_int64(st, 2, attempts);
    store_bind_str(st, 3, dead ? "dead" : "pending");
    store_bind_int64(st, 4, now + delay);
    store_bind_str(st, 5, error);
    store_bind_int64(st, 6, now);
    if (sent) {
        store_bind_int64(st, 7, sent->fired_ms);
        store_bind_int64(st, 8, sent->late);
    } else {
        store_bind_null(st, 7);
        store_bind_null(st, 8);
    }
    rc = store_step(st);
    store_reset(st);
    if (dead) log_warn("reminders: delivery %s dead after %lld attempts: %s", id, (long long)attempts, error);
    return rc == STORE_DONE ? STORE_OK : rc;
}

static int record_failure(notify_engine *e, store *db, const char *id, const char *error)
{
    return record_failure_ex(e, db, id, error, false, NULL);
}

static void send_job_free(notify_send_job *j)
{
    free(j->body);
    free(j->target);
    free(j->secret);
    free(j->summary);
}

/* Inside the transaction: reads what to send -- set statements for the
 * whole batch. A claim has already made each row private to this node
 * until due + NOTIFY_HOLD_MS, time enough for an on-time send to be
 * answered; so only sends that go out near or past their hold (a
 * backlog) push it back here, and notify_extend_holds sees to sends still
 * out when it nears. (A hold written for every send cost each row a
 * rewrite and two index changes.) */
#define ASYNC_CANCEL(BATCH) "UPDATE deliveries SET state = 'cancelled', updated_ms = $2 WHERE " BATCH
#define ASYNC_HOLD(BATCH) "UPDATE deliveries SET next_attempt_ms = $2 WHERE " BATCH
/* The 2xx answers to sends that went out at $3: done, recording when the
 * attempt went out and whether it was late ($4 the grace) -- what its
 * payload said, and what the admin view shows. $2 is now. (Answers are
 * recorded grouped by their send time, which a batch of sends shares: an
 * UPDATE ... FROM a list of per-row values cost SQLite a third more.) */
#define ASYNC_DONE(BATCH)                                                                                  \
    "UPDATE deliveries SET state = 'done', attempts = attempts + 1, updated_ms = $2, fired_ms = $3, "       \
    "late = CASE WHEN $3 - due_ms > $4 THEN 1 ELSE 0 END WHERE " BATCH
/* What to send, for the batch's pending rows: user, event, summary and
 * occurrence for the payload, then target, secret, id; live = its reminder
 * and endpoint (webhook, or the user for email) still exist. One pass
 * over the ids: a UNION of a webhook and an email part looked every id
 * up twice. */
#define ASYNC_READ(BATCH_D)                                                                                \
    "SELECT d.user_id, d.event_id, d.summary, d.occurrence_ms, "                                           \
    "CASE WHEN d.channel = 'webhook' THEN w.url ELSE u.email END, "                                        \
    "CASE WHEN d.channel = 'webhook' THEN w.secret ELSE '' END, d.id, "                                    \
    "CASE WHEN COALESCE(w.id, u.id) IS NOT NULL AND " ASYNC_LIVE " THEN 1 ELSE 0 END FROM deliveries d "   \
    "LEFT JOIN webhooks w ON d.channel = 'webhook' AND w.id = d.endpoint_id "                             \
    "LEFT JOIN users u ON d.channel = 'email' AND u.id = d.user_id "                                      \
    "WHERE d.channel IN ('webhook', 'email') AND " BATCH_D
#define ASYNC_LIVE "EXISTS (SELECT 1 FROM reminders r WHERE r.id = d.reminder_id)"

static bool is_late(notify_engine *e, const notify_item *it, int64_t now)
{
    return now - it->due_ms > e->o.grace_ms;
}

static int item_cmp_id(const void *a, const void *b)
{
    return strcmp(((const notify_item *)a)->id, ((const notify_item *)b)->id);
}

/* One set statement over a subset of items (nothing to do when empty). */
static int items_exec(store *db, const char *sql, const notify_item *its, size_t n, int64_t at, const int64_t *arg3)
{
    if (n == 0) return STORE_OK;
    char *ids = notify_ids_json(its, n);
    if (!ids) return STORE_ERROR;
    int rc = notify_batch_exec(db, sql, ids, at, arg3);
    free(ids);
    return rc;
}

/* A send read by ASYNC_READ: what its payload says and where it goes. */
static bool send_job_fill(notify_engine *e, store_stmt *st, const notify_item *it, int64_t now, notify_send_job *j)
{
    memset(j, 0, sizeof *j);
    j->it = *it;
    j->late = is_late(e, it, now);
    j->fired_ms = now;
    j->webhook = it->channel == NOTIFY_CHAN_WEBHOOK;
    j->user_id = store_col_int64(st, 0);
    j->event_id = store_col_int64(st, 1);
    j->occurrence_ms = store_col_int64(st, 3);
    j->target = strdup(store_col_text(st, 4));
    j->secret = strdup(store_col_text(st, 5));
    j->summary = strdup(store_col_text(st, 2));
    if (j->target && j->secret && j->summary) return true;
    send_job_free(j);
    return false; /* stays pending: retried after the hold */
}

/* A batch of sends as it is worked out: what each item comes to, first
 * without the database (late under the skip policy: missed; no channel
 * for it: a failed attempt), then from a read of the rest (still pending
 * and live: a job; its reminder or endpoint gone: cancelled; else nothing
 * to do), then the writes that follow, if any. */
typedef struct notify_send_plan {
    notify_engine *e;
    int64_t now;
    notify_item *missed, *unavailable, *no_email, *cands, *cancel, *hold;
    size_t nmissed, nunavailable, nno_email, ncands, ncancel, nhold;
    char *fate; /* SEND_* per candidate (sorted by id) */
    notify_send_job *jobs;
    size_t k;
} notify_send_plan;

enum { SEND_UNSEEN, SEND_GONE, SEND_TAKEN };

static void plan_free(notify_send_plan *p)
{
    free(p->missed);
    free(p->unavailable);
    free(p->no_email);
    free(p->cands);
    free(p->cancel);
    free(p->hold);
    free(p->fate);
}

/* Sorts the items by what needs no database. */
static bool plan_sort(notify_send_plan *p, const notify_item *its, size_t n)
{
    notify_engine *e = p->e;
    p->missed = malloc(n * sizeof *p->missed);
    p->unavailable = malloc(n * sizeof *p->unavailable);
    p->no_email = malloc(n * sizeof *p->no_email);
    p->cands = malloc(n * sizeof *p->cands);
    p->cancel = malloc(n * sizeof *p->cancel);
    p->hold = malloc(n * sizeof *p->hold);
    p->fate = calloc(n, 1);
    if (!p->missed || !p->unavailable || !p->no_email || !p->cands || !p->cancel || !p->hold || !p->fate)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool webhook = its[i].channel == NOTIFY_CHAN_WEBHOOK;
        if (is_late(e, &its[i], p->now) && e->o.late_policy == NOTIFY_LATE_SKIP) p->missed[p->nmissed++] = its[i];
        else if (!e->o.channels || (webhook && !e->has_webhooks)) p->unavailable[p->nunavailable++] = its[i];
        else if (!webhook && !channels_email_enabled(e->o.channels)) p->no_email[p->nno_email++] = its[i];
        else p->cands[p->ncands++] = its[i];
    }
    qsort(p->cands, p->ncands, sizeof *p->cands, item_cmp_id);
    return true;
}

static void plan_read_row(notify_send_plan *p, store_stmt *st)
{
    notify_item key;
    snprintf(key.id, sizeof key.id, "%s", store_col_text(st, 6));
    notify_item *it = bsearch(&key, p->cands, p->ncands, sizeof key, item_cmp_id);
    if (!it || p->fate[it - p->cands] != SEND_UNSEEN) return;
    char *fate = &p->fate[it - p->cands];
    if (!store_col_int64(st, 7)) *fate = SEND_GONE;
    else if (send_job_fill(p->e, st, it, p->now, &p->jobs[p->k])) {
        *fate = SEND_TAKEN;
        p->k++;
    }
    /* else left UNSEEN: stays pending, retried after its hold */
}

/* Reads the candidates' sends -- on SQLite through a connection of the
 * worker's own, outside the write lock (readers do not wait for the
 * writer in WAL mode; the lock is the engine's bottleneck). Then lists
 * the rows to cancel and the sends going out near or past their hold. */
static int plan_read(notify_send_plan *p, store *ro)
{
    if (p->ncands == 0) return STORE_OK;
    bool pg = store_backend_of(ro) == STORE_PG;
    char *ids = notify_ids_json(p->cands, p->ncands);
    if (!ids) return STORE_ERROR;
    store_stmt *st =
        store_prepare(ro, pg ? ASYNC_READ(NOTIFY_BATCH_PG_OF("d.")) : ASYNC_READ(NOTIFY_BATCH_SQLITE_OF("d.")));
    store_bind_str(st, 1, ids);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) plan_read_row(p, st);
    store_reset(st);
    free(ids);
    if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    for (size_t i = 0; i < p->ncands; i++)
        if (p->fate[i] == SEND_GONE) p->cancel[p->ncancel++] = p->cands[i];
    int64_t held_to = p->now + NOTIFY_SEND_HOLD_MS;
    for (size_t i = 0; i < p->k; i++)
        if (p->jobs[i].it.hold_ms < p->now + NOTIFY_EXTEND_MARGIN_MS) {
            p->jobs[i].it.hold_ms = held_to;
            p->hold[p->nhold++] = p->jobs[i].it;
        }
    return STORE_OK;
}

/* Inside the transaction: the writes the plan calls for. */
static int plan_write(notify_send_plan *p, store *db)
{
    notify_engine *e = p->e;
    bool pg = store_backend_of(db) == STORE_PG;
    const char *missed = pg ? NOTIFY_LATE_MISSED(NOTIFY_BATCH_PG) : NOTIFY_LATE_MISSED(NOTIFY_BATCH_SQLITE);
    int rc = items_exec(db, missed, p->missed, p->nmissed, p->now, &e->o.grace_ms);
    /* A misconfiguration, so one by one. */
    for (size_t i = 0; i < p->nunavailable && rc == STORE_OK; i++)
        rc = record_failure(e, db, p->unavailable[i].id, "channel not available");
    for (size_t i = 0; i < p->nno_email && rc == STORE_OK; i++)
        rc = record_failure_ex(e, db, p->no_email[i].id, "email is not configured on this server (--smtp-url)", true,
                               NULL);
    if (rc == STORE_OK)
        rc = items_exec(db, pg ? ASYNC_HOLD(NOTIFY_BATCH_PG) : ASYNC_HOLD(NOTIFY_BATCH_SQLITE), p->hold, p->nhold,
                        p->now + NOTIFY_SEND_HOLD_MS, NULL);
    if (rc == STORE_OK)
        rc = items_exec(db, pg ? ASYNC_CANCEL(NOTIFY_BATCH_PG) : ASYNC_CANCEL(NOTIFY_BATCH_SQLITE), p->cancel,
                        p->ncancel, p->now, NULL);
    return rc;
}

static bool plan_writes(const notify_send_plan *p)
{
    return p->nmissed || p->nunavailable || p->nno_email || p->nhold || p->ncancel;
}

/* Works the batch out into jobs (*k of them), writing what it must in
 * one transaction -- for an on-time batch, nothing. On failure no job is
 * left: the rows stay pending and are retried after their hold. */
static void send_prepare(notify_engine *e, store *db, store *ro, const notify_item *its, size_t n,
                         notify_send_job *jobs, size_t *k)
{
    notify_send_plan p = {.e = e, .now = base_now_ms(), .jobs = jobs};
    int rc = plan_sort(&p, its, n) ? plan_read(&p, ro) : STORE_ERROR;
    if (rc != STORE_OK) log_warn("reminders: reading a send batch failed: %s", store_errmsg(ro));
    if (rc == STORE_OK && plan_writes(&p)) {
        store_gate_lock(&e->gate);
        rc = store_begin(db);
        if (rc == STORE_OK) rc = plan_write(&p, db);
        if (rc == STORE_OK) rc = store_commit(db);
        if (rc != STORE_OK) {
            log_warn("reminders: send batch failed: %s", store_errmsg(db));
            store_rollback(db);
        }
        store_gate_unlock(&e->gate);
    }
    if (rc != STORE_OK) {
        for (size_t i = 0; i < p.k; i++) send_job_free(&jobs[i]);
        p.k = 0;
    }
    *k = p.k;
    plan_free(&p);
}

/* After the commit: hands the send to its channel. False when the channel
 * would not take it (its queue is full). */
static bool send_dispatch(notify_engine *e, notify_send_job *j)
{
    notify_send_ctx *sc = calloc(1, sizeof *sc);
    if (!sc) return false;
    sc->e = e;
    snprintf(sc->id, sizeof sc->id, "%s", j->it.id);
    sc->late = j->late;
    sc->fired_ms = j->fired_ms;
    pthread_mutex_lock(&e->mu);
    e->in_flight++;
    notify_flights_slot(&e->flights, j->it.id)->hold_ms = j->it.hold_ms;
    pthread_mutex_unlock(&e->mu);
    int sent;
    if (j->webhook) {
        sent = (j->body = notify_payload_of(j)) ? channels_webhook(e->o.channels, j->target, j->secret, j->it.id,
                                                                   j->body, strlen(j->body), send_done, sc)
                                                : -1;
    } else {
        notify_email_text m;
        notify_email_text_of(j, &m);
        sent = channels_email(e->o.channels, j->target, m.subject, m.text, m.html, j->it.id, send_done, sc);
    }
    if (sent == 0) return true; /* sc is the channel's now */
    pthread_mutex_lock(&e->mu);
    if (--e->in_flight == 0) pthread_cond_broadcast(&e->idle);
    pthread_mutex_unlock(&e->mu);
    free(sc);
    return false;
}

/* Marks the batch's rows as being sent by this node, dropping (in place)
 * the items whose row a send of this node already has. Returns how many
 * are left: none once the lease groups may have run out unrenewed (a
 * process stopped for longer than the lease TTL, now woken): another
 * node may have taken them and adopted their rows (adopt_groups in
 * notify_scan.c), and sending them here too would send them twice. They
 * stay pending; whoever holds their group now delivers them. Sends are
 * what need it: an in-app row delivered twice gives one inbox row. */
static size_t flights_begin(notify_engine *e, notify_item *its, size_t n)
{
    size_t k = 0;
    pthread_mutex_lock(&e->mu);
    bool fenced = base_mono_ns() >= e->groups_valid_ns;
    for (size_t i = 0; i < n && !fenced; i++)
        if (notify_flights_take(&e->flights, its[i].id, its[i].hold_ms)) its[k++] = its[i];
    pthread_mutex_unlock(&e->mu);
    if (fenced) log_warn("reminders: %zu sends not made: the lease groups ran out unrenewed", n);
    return k;
}

/* Webhook and email items of a batch: one transaction reads them all,
 * then each goes to its channel; the few a full channel refuses are
 * recorded as failed attempts together. An item handed to a channel
 * stays this node's send until its answer is recorded
 * (notify_apply_results); any other stops being one here (left pending,
 * it is retried after its hold). */
void notify_deliver_async_batch(notify_engine *e, store *db, store *ro, notify_item *its, size_t n)
{
    n = flights_begin(e, its, n);
    if (n == 0) return;
    notify_send_job *jobs = calloc(n, sizeof *jobs);
    size_t k = 0, refused = 0;
    if (jobs) send_prepare(e, db, ro, its, n, jobs, &k);
    for (size_t i = 0; i < k; i++)
        if (!send_dispatch(e, &jobs[i])) {
            notify_item it = jobs[i].it; /* keep the item only, at the front */
            send_job_free(&jobs[i]);
            jobs[i] = jobs[refused];
            jobs[refused++] = (notify_send_job){.it = it};
        }
    if (refused) {
        store_gate_lock(&e->gate);
        bool tx = store_begin(db) == STORE_OK;
        for (size_t i = 0; i < refused; i++) record_failure(e, db, jobs[i].it.id, "channel queue full");
        if (tx && store_commit(db) != STORE_OK) store_rollback(db);
        store_gate_unlock(&e->gate);
    }
    /* (A job starts with its item: the jobs sort and search as items.) */
    if (k > refused) qsort(jobs + refused, k - refused, sizeof *jobs, item_cmp_id);
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < n; i++)
        if (k == refused || !bsearch(&its[i], jobs + refused, k - refused, sizeof *jobs, item_cmp_id))
            notify_flights_drop(&e->flights, its[i].id);
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; i < k; i++) send_job_free(&jobs[i]);
    free(jobs);
}

static int result_cmp_fired(const void *a, const void *b)
{
    int64_t x = (*(const notify_result *const *)a)->fired_ms, y = (*(const notify_result *const *)b)->fired_ms;
    return x < y ? -1 : x > y;
}

/* The successes sent at one time, as one ASYNC_DONE. */
static int done_group(notify_engine *e, store *db, notify_result **ok, size_t n, int64_t now)
{
    notify_item *its = malloc(n * sizeof *its);
    if (!its) return STORE_ERROR;
    for (size_t i = 0; i < n; i++) snprintf(its[i].id, sizeof its->id, "%s", ok[i]->id);
    char *ids = notify_ids_json(its, n);
    free(its);
    if (!ids) return STORE_ERROR;
    bool pg = store_backend_of(db) == STORE_PG;
    store_stmt *st = store_prepare(db, pg ? ASYNC_DONE(NOTIFY_BATCH_PG) : ASYNC_DONE(NOTIFY_BATCH_SQLITE));
    store_bind_str(st, 1, ids);
    store_bind_int64(st, 2, now);
    store_bind_int64(st, 3, ok[0]->fired_ms);
    store_bind_int64(st, 4, e->o.grace_ms);
    int rc = store_step(st);
    store_reset(st);
    free(ids);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* The channels' answers, recorded in one transaction: the successes in a
 * set statement per send time, each failure with its own backoff. */
static int apply_results_in(notify_engine *e, store *db, notify_result *res)
{
    size_t n = 0, nok = 0;
    for (notify_result *r = res; r; r = r->next) n++;
    notify_result **ok = malloc(n * sizeof *ok);
    if (!ok) return STORE_ERROR;
    int rc = STORE_OK;
    for (notify_result *r = res; r && rc == STORE_OK; r = r->next) {
        if (r->ok) ok[nok++] = r;
        else rc = record_failure_ex(e, db, r->id, r->error, false, r);
    }
    qsort(ok, nok, sizeof *ok, result_cmp_fired);
    int64_t now = base_now_ms();
    for (size_t i = 0, j; i < nok && rc == STORE_OK; i = j) {
        for (j = i + 1; j < nok && ok[j]->fired_ms == ok[i]->fired_ms; j++) continue;
        rc = done_group(e, db, ok + i, j - i, now);
    }
    free(ok);
    return rc;
}

/* Records the answers; then their rows stop being this node's sends (on
 * failure to record they stay pending, and are retried after the hold). */
void notify_apply_results(notify_engine *e, store *db, notify_result *res)
{
    if (!res) return;
    store_gate_lock(&e->gate);
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = apply_results_in(e, db, res);
    if (rc == STORE_OK) rc = store_commit(db);
    if (rc != STORE_OK) {
        log_warn("reminders: cannot record delivery results: %s", store_errmsg(db));
        store_rollback(db);
    }
    store_gate_unlock(&e->gate);
    pthread_mutex_lock(&e->mu);
    for (notify_result *r = res; r; r = r->next) notify_flights_drop(&e->flights, r->id);
    pthread_mutex_unlock(&e->mu);
    while (res) {
        notify_result *next = res->next;
        free(res);
        res = next;
    }
}

/* Under e->mu: may notify_extend_holds have work -- sends out, or heap
 * items whose hold nears its end? (The heap's first item is the one due
 * first.) */
bool notify_holds_to_watch(const notify_engine *e, int64_t now)
{
    const notify_item *top = notify_heap_peek(&e->heap);
    return notify_flights_count(&e->flights) > 0 ||
           (top && top->due_ms < now + NOTIFY_EXTEND_MARGIN_MS - NOTIFY_HOLD_MS);
}

/* Pushes back the holds that near their end of this node's rows, so no
 * node's outbox poll takes them meanwhile: sends still out (a slow
 * receiver), and items still waiting in the heap (this node is behind:
 * taken over, each would be delivered again by a poll -- more work for a
 * node already behind, and on another node a second send). In-app items
 * are left to lapse, and the heap's walk stops early: see
 * notify_heap_holds_near. */
void notify_extend_holds(notify_engine *e, store *db, int64_t now)
{
    notify_item_buf sends = {0}, waiting = {0};
    int64_t send_to = now + NOTIFY_SEND_HOLD_MS, wait_to = now + NOTIFY_BEHIND_HOLD_MS;
    pthread_mutex_lock(&e->mu);
    notify_flights_holds_near(&e->flights, now + NOTIFY_EXTEND_MARGIN_MS, send_to, &sends);
    notify_heap_holds_near(&e->heap, now + NOTIFY_EXTEND_MARGIN_MS - NOTIFY_HOLD_MS, now + NOTIFY_EXTEND_MARGIN_MS,
                           wait_to, NOTIFY_BEHIND_BATCH, &waiting);
    pthread_mutex_unlock(&e->mu);
    if (sends.n + waiting.n > 0) {
        bool pg = store_backend_of(db) == STORE_PG;
        const char *sql = pg ? ASYNC_HOLD(NOTIFY_BATCH_PG) : ASYNC_HOLD(NOTIFY_BATCH_SQLITE);
        store_gate_lock(&e->gate);
        int rc = store_begin(db);
        if (rc == STORE_OK) rc = items_exec(db, sql, sends.v, sends.n, send_to, NULL);
        if (rc == STORE_OK) rc = items_exec(db, sql, waiting.v, waiting.n, wait_to, NULL);
        if (rc == STORE_OK) rc = store_commit(db);
        if (rc != STORE_OK) {
            /* Another node may then take some over after their hold: sent
             * twice, under one delivery id (at least once). */
            log_warn("reminders: cannot extend the holds of %zu rows: %s", sends.n + waiting.n, store_errmsg(db));
            store_rollback(db);
        }
        store_gate_unlock(&e->gate);
    }
    free(sends.v);
    free(waiting.v);
}

/* Under e->mu: the answers, when it is time to record them. */
notify_result *notify_take_results(notify_engine *e, int64_t now)
{
    if (!e->results) return NULL;
    if (e->nresults < NOTIFY_RESULT_BATCH && now < e->results_since + NOTIFY_RESULT_WAIT_MS && !e->stopping)
        return NULL;
    notify_result *res = e->results;
    e->results = NULL;
    e->nresults = 0;
    return res;
}

