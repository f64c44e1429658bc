/* scheduler.c -- the threads that hold job leases and run jobs.
 *
 * One heartbeat thread per node, with its own connection: registers the
 * node and the jobs, renews every lease it holds each heartbeat, a
 * thousand to a statement (failed renewals are retried with jitter; after
 * LEASE_RENEW_TRIES failures in a row the lease is dropped and its work
 * told to stop), takes free or
 * expired leases up to a fair share of the jobs (waking exactly when a
 * lease it waits for expires), and releases them all on stop.
 *
 * Runner threads, each with its own connection, run the due jobs of held
 * leases. A run's records are written under the job's lease (fenced), so
 * the heartbeat thread never waits on a handler and a handler never runs
 * on an HTTP loop thread.
 */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "time/rfc3339.h"
#include "jobs/jobs.h"
#include "cluster/lease.h"
#include "cluster/nodes.h"

#define LEASE_RENEW_TRIES 3
#define JOBS_HOLD_OFF_MS 1000      /* an unrecorded run's job waits this long, */
#define JOBS_HOLD_OFF_MAX_MS 60000 /* doubling up to this */

typedef struct sched_job {
    const jobs_job *job;
    lease_hold hold;
    /* The rest is guarded by the scheduler's mu. */
    bool active;          /* held, and the state below loaded for `tenure` */
    uint64_t tenure;
    int64_t next_run_ms;  /* -1: never again */
    int64_t requested_ms; /* a pending manual run, 0 none */
    int64_t done_request_ms;
    bool running;
    int unpruned; /* runs recorded since the history was last trimmed; only
                     the runner that set `running` touches it */
    int64_t held_off_ms; /* not run before this (scheduler clock): its last run went unrecorded */
    int hold_offs;       /* unrecorded runs in a row */
} sched_job;

struct jobs_scheduler {
    jobs_registry *reg;
    char db_url[1024];
    char node_id[LEASE_OWNER_MAX + 1];
    char address[NODES_ADDRESS_MAX + 1];
    int64_t heartbeat_ms, ttl_ms;
    void (*on_beat)(void *arg);
    void *beat_arg;
    int nrunners;
    sched_job *jobs; /* sorted by name, so by lease name */
    size_t n;

    pthread_mutex_t mu;
    pthread_cond_t hb_cv, run_cv; /* CLOCK_MONOTONIC */
    pthread_cond_t reg_cv;        /* CLOCK_MONOTONIC: reg_tried set */
    bool reg_tried; /* the heartbeat thread tried to register the node once */
    bool stopping; /* runners: finish and exit */
    bool hb_stop;  /* heartbeat: release everything and exit */
    int64_t skew_ms; /* database clock minus this node's wall clock */
    pthread_t hb;
    pthread_t *runners;
    int runners_started;
    bool hb_started;
};

struct jobs_run {
    jobs_scheduler *s;
    store *db;
    sched_job *sj;
    uint64_t tenure;
    jobs_plan plan;
    bool manual;
    int64_t requested_ms;
    int64_t started_ms;
    int64_t deadline_ns; /* 0: none */
    int64_t epoch;
    bool in_fence, completed;
    char error[JOBS_ERROR_MAX];
};

/* ---- small helpers -------------------------------------------------------- */

static int64_t mono_ms(void)
{
    return base_mono_ns() / 1000000;
}

/* Waits on cv (monotonic) until mono_ms() >= until_ms; mu held. */
static void wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until_ms)
{
    struct timespec ts;
    if (until_ms < 0) until_ms = 0;
    ts.tv_sec = until_ms / 1000;
    ts.tv_nsec = (until_ms % 1000) * 1000000;
    pthread_cond_timedwait(cv, mu, &ts);
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Uniform in [lo, hi]. */
static int64_t jitter(int64_t lo, int64_t hi)
{
    uint32_t r;
    base_random(&r, sizeof r);
    return hi > lo ? lo + (int64_t)(r % (uint64_t)(hi - lo + 1)) : lo;
}

static int cmp_job_ptr(const void *a, const void *b)
{
    return strcmp((*(const jobs_job *const *)a)->name, (*(const jobs_job *const *)b)->name);
}

static sched_job *find_by_lease(jobs_scheduler *s, const char *lease)
{
    if (strncmp(lease, "job:", 4) != 0) return NULL;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(s->jobs[mid].job->name, lease + 4);
        if (c == 0) return &s->jobs[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static store *open_db(jobs_scheduler *s, const char *who)
{
    char err[256];
    store *db = store_open(s->db_url, err, sizeof err);
    if (!db) log_error("jobs %s: cannot open the database: %s", who, err);
    return db;
}

/* The heartbeat thread writes only soft state: node heartbeats, lease
 * renewals and takeovers, job registrations. On SQLite its commits need
 * not be synced one by one (synchronous=NORMAL): a power cut may lose the
 * last few, in order (the WAL is a log, and any synced commit after them
 * syncs them too, so no fenced run outlives its lease's epoch), and a node
 * back from a power cut registers anew. A synced commit holds SQLite's
 * write lock through the WAL's fsync, which under a reminder burst took
 * 40-180 ms a beat while every other writer waited (bench/reminders). */
static void soft_state(store *db)
{
    if (store_backend_of(db) == STORE_SQLITE && store_exec(db, "PRAGMA synchronous = NORMAL") != STORE_OK)
        log_warn("jobs heartbeat: cannot relax its commits' sync: %s", store_errmsg(db));
}

static void deactivate(jobs_scheduler *s, sched_job *sj)
{
    pthread_mutex_lock(&s->mu);
    sj->active = false;
    pthread_mutex_unlock(&s->mu);
}

/* ---- new / free ----------------------------------------------------------- */

jobs_scheduler *jobs_scheduler_new(jobs_registry *reg, const jobs_scheduler_opts *o)
{
    jobs_scheduler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->reg = reg;
    snprintf(s->db_url, sizeof s->db_url, "%s", o->db_url);
    snprintf(s->node_id, sizeof s->node_id, "%s", o->node_id);
    snprintf(s->address, sizeof s->address, "%s", o->address ? o->address : "");
    s->heartbeat_ms = o->heartbeat_ms > 0 ? o->heartbeat_ms : 5000;
    s->ttl_ms = o->ttl_ms > s->heartbeat_ms ? o->ttl_ms : 3 * s->heartbeat_ms;
    s->nrunners = o->runners > 0 ? o->runners : 1;
    s->on_beat = o->on_beat;
    s->beat_arg = o->beat_arg;
    s->n = jobs_registry_count(reg);
    const jobs_job **order = calloc(s->n ? s->n : 1, sizeof *order);
    s->jobs = calloc(s->n ? s->n : 1, sizeof *s->jobs);
    s->runners = calloc((size_t)s->nrunners, sizeof *s->runners);
    if (!order || !s->jobs || !s->runners) {
        free(order);
        free(s->jobs);
        free(s->runners);
        free(s);
        return NULL;
    }
    for (size_t i = 0; i < s->n; i++) order[i] = jobs_registry_at(reg, i);
    qsort(order, s->n, sizeof *order, cmp_job_ptr);
    for (size_t i = 0; i < s->n; i++) {
        char lease[LEASE_NAME_MAX + 1];
        jobs_lease_name(order[i]->name, lease, sizeof lease);
        s->jobs[i].job = order[i];
        lease_hold_init(&s->jobs[i].hold, lease, s->node_id);
    }
    free(order);
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->hb_cv, &ca);
    pthread_cond_init(&s->run_cv, &ca);
    pthread_cond_init(&s->reg_cv, &ca);
    pthread_condattr_destroy(&ca);
    return s;
}

void jobs_scheduler_free(jobs_scheduler *s)
{
    if (!s) return;
    jobs_scheduler_stop(s);
    for (size_t i = 0; i < s->n; i++) lease_hold_destroy(&s->jobs[i].hold);
    pthread_cond_destroy(&s->hb_cv);
    pthread_cond_destroy(&s->run_cv);
    pthread_cond_destroy(&s->reg_cv);
    pthread_mutex_destroy(&s->mu);
    free(s->jobs);
    free(s->runners);
    free(s);
}

/* ---- a run ---------------------------------------------------------------- */

store *jobs_run_db(jobs_run *r)
{
    return r->db;
}

const char *jobs_run_node(const jobs_run *r)
{
    return r->s->node_id;
}

const char *jobs_run_job(const jobs_run *r)
{
    return r->sj->job->name;
}

int64_t jobs_run_scheduled_ms(const jobs_run *r)
{
    return r->plan.scheduled_ms;
}

static bool past_deadline(const jobs_run *r)
{
    return r->deadline_ns && base_mono_ns() > r->deadline_ns;
}

bool jobs_run_should_stop(jobs_run *r)
{
    pthread_mutex_lock(&r->s->mu);
    bool stopping = r->s->stopping;
    pthread_mutex_unlock(&r->s->mu);
    /* Inside a fence the lease row is locked and was ours when locked (and
     * this thread holds the hold's mutex, so must not ask it again). */
    return stopping || past_deadline(r) || (!r->in_fence && !lease_hold_valid(&r->sj->hold, r->tenure));
}

void jobs_run_errorf(jobs_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}

int jobs_run_fence_begin(jobs_run *r, int64_t *epoch)
{
    if (r->in_fence || r->completed) return STORE_ERROR;
    int rc = lease_hold_fence_begin(r->db, &r->sj->hold, r->tenure, &r->epoch);
    if (rc == LEASE_OK) {
        r->in_fence = true;
        if (epoch) *epoch = r->epoch;
    }
    return rc;
}

void jobs_run_fence_abort(jobs_run *r)
{
    if (!r->in_fence) return;
    lease_hold_fence_end(r->db, &r->sj->hold, false);
    r->in_fence = false;
}

static int exec_stmt(store_stmt *st)
{
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* Inside the fence: advance the schedule (or clear the manual request),
 * add the run to the history and trim it. */
static int record_run(jobs_run *r, const char *outcome)
{
    store *db = r->db;
    const char *job = r->sj->job->name;
    int rc;
    store_stmt *st;
    if (r->manual) {
        st = store_prepare(db, "UPDATE jobs SET run_requested_ms = NULL WHERE name = $1 AND run_requested_ms = $2");
        store_bind_str(st, 1, job);
        store_bind_int64(st, 2, r->requested_ms);
    } else {
        st = store_prepare(db, "UPDATE jobs SET next_run_ms = $2 WHERE name = $1");
        store_bind_str(st, 1, job);
        store_bind_int64(st, 2, r->plan.next_ms);
    }
    if ((rc = exec_stmt(st)) < 0) return rc;
#define INSERT_RUN(NOW)                                                                            \
    "INSERT INTO job_runs (id, job, scheduled_ms, started_ms, finished_ms, node, epoch, outcome, error)" \
    " VALUES ($1, $2, $3, $4, " NOW ", $5, $6, $7, $8)"
    st = store_prepare(db, store_backend_of(db) == STORE_PG ? INSERT_RUN(LEASE_SQL_NOW_PG)
                                                            : INSERT_RUN(LEASE_SQL_NOW_SQLITE));
    store_bind_int64(st, 1, base_id_new());
    store_bind_str(st, 2, job);
    store_bind_int64(st, 3, r->plan.scheduled_ms);
    store_bind_int64(st, 4, r->started_ms);
    store_bind_str(st, 5, r->s->node_id);
    store_bind_int64(st, 6, r->epoch);
    store_bind_str(st, 7, outcome);
    store_bind_str(st, 8, r->error[0] ? r->error : NULL);
    if ((rc = exec_stmt(st)) < 0) return rc;
    /* Trimming every run would double the statements of a busy job; every
     * JOBS_HISTORY_SLACK runs keeps the history within that of the bound. */
    if (++r->sj->unpruned < JOBS_HISTORY_SLACK) return STORE_OK;
    r->sj->unpruned = 0;
    st = store_prepare(db, "DELETE FROM job_runs WHERE job = $1 AND started_ms < (SELECT started_ms FROM job_runs"
                           " WHERE job = $1 ORDER BY started_ms DESC LIMIT 1 OFFSET $2)");
    store_bind_str(st, 1, job);
    store_bind_int64(st, 2, JOBS_HISTORY_MAX - 1);
    return exec_stmt(st);
}

/* After a committed record: the in-memory schedule follows the database. */
static void advance(jobs_run *r)
{
    jobs_scheduler *s = r->s;
    sched_job *sj = r->sj;
    pthread_mutex_lock(&s->mu);
    if (sj->tenure == r->tenure) {
        if (r->manual) {
            sj->done_request_ms = r->requested_ms;
            if (sj->requested_ms == r->requested_ms) sj->requested_ms = 0;
        } else {
            sj->next_run_ms = r->plan.next_ms;
        }
    }
    pthread_mutex_unlock(&s->mu);
    r->completed = true;
}

static int finish_in_fence(jobs_run *r, const char *outcome)
{
    int rc = record_run(r, outcome);
    int ended = lease_hold_fence_end(r->db, &r->sj->hold, rc == STORE_OK);
    if (rc == STORE_OK) rc = ended; /* (a failed record's rollback is no success) */
    r->in_fence = false;
    if (rc != STORE_OK) {
        log_warn("job %s: cannot record the run: %s", r->sj->job->name, store_errmsg(r->db));
        return -1;
    }
    advance(r);
    return 0;
}

int jobs_run_fence_end(jobs_run *r)
{
    if (!r->in_fence) return -1;
    int rc = lease_hold_fence_end(r->db, &r->sj->hold, true);
    r->in_fence = false;
    return rc == STORE_OK ? 0 : -1;
}

int jobs_run_fence_commit(jobs_run *r)
{
    if (!r->in_fence) return -1;
    return finish_in_fence(r, past_deadline(r) ? "timeout" : "ok");
}

/* Records the run in a fence of its own. */
static void finish(jobs_run *r, const char *outcome)
{
    int rc = jobs_run_fence_begin(r, NULL);
    if (rc == LEASE_LOST) {
        char when[32];
        rfc3339_format_ms(r->plan.scheduled_ms, when, sizeof when);
        log_warn("job %s: the run for %s was fenced off: this node no longer holds the lease",
                 r->sj->job->name, when);
        deactivate(r->s, r->sj);
        return;
    }
    if (rc != LEASE_OK) {
        log_warn("job %s: cannot record the run: %s", r->sj->job->name, store_errmsg(r->db));
        return;
    }
    finish_in_fence(r, outcome);
}

/* True when the run ended but could not be recorded (the database refused
 * the write): its fire time is still due, so the runner holds the job off
 * (hold_off) rather than run it again at once, over and over. */
static bool run_job(jobs_scheduler *s, store *db, sched_job *sj)
{
    jobs_run r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.db = db;
    r.sj = sj;
    pthread_mutex_lock(&s->mu);
    r.tenure = sj->tenure;
    int64_t next_run = sj->next_run_ms;
    r.requested_ms = sj->requested_ms;
    pthread_mutex_unlock(&s->mu);
    const jobs_job *j = sj->job;
    if (store_now_ms(db, &r.started_ms) < 0) {
        log_warn("job %s: database clock: %s", j->name, store_errmsg(db));
        sleep_ms(100);
        return false;
    }
    if (r.requested_ms) {
        r.manual = true;
        r.plan.action = JOBS_RUN;
        r.plan.scheduled_ms = r.requested_ms;
        r.plan.missed = 1;
    } else {
        jobs_plan_next(j, next_run, r.started_ms, &r.plan);
    }
    if (r.plan.action == JOBS_WAIT) return false; /* our clock estimate ran ahead */
    if (r.plan.action == JOBS_SKIP) {
        char from[32];
        rfc3339_format_ms(r.plan.scheduled_ms, from, sizeof from);
        jobs_run_errorf(&r, "misfire policy skip: %s%lld fire time(s) from %s passed over",
                        r.plan.missed_more ? "more than " : "", (long long)r.plan.missed, from);
        log_warn("job %s: %s", j->name, r.error);
        finish(&r, "skipped");
        return !r.completed;
    }
    if (r.plan.misfired)
        log_warn("job %s: misfired (%s%lld fire times missed): running once now", j->name,
                 r.plan.missed_more ? "more than " : "", (long long)r.plan.missed);
    if (j->max_run_ms) r.deadline_ns = base_mono_ns() + j->max_run_ms * 1000000;
    int rc = j->handler(&r, j->arg);
    if (r.in_fence) jobs_run_fence_abort(&r); /* a handler that forgot to close its fence */
    if (r.completed) return false;
    if (rc != 0 && !past_deadline(&r) && jobs_run_should_stop(&r)) {
        /* Interrupted (shutdown or lost lease): not recorded, so the next
         * owner runs this fire time again rather than losing it. */
        log_warn("job %s: run interrupted (%s); left to the next owner", j->name,
                 r.error[0] ? r.error : "stopping");
        /* Not runnable until a renewal or a new acquire says it is ours,
         * or this runner would pick it again at once. */
        if (!lease_hold_valid(&sj->hold, r.tenure)) deactivate(s, sj);
        return false;
    }
    if (past_deadline(&r)) {
        if (!r.error[0]) jobs_run_errorf(&r, "ran past max_run of %lld ms", (long long)j->max_run_ms);
        finish(&r, "timeout");
    } else if (rc != 0) {
        if (!r.error[0]) jobs_run_errorf(&r, "the handler failed");
        log_warn("job %s: %s", j->name, r.error);
        finish(&r, "error");
    } else {
        finish(&r, "ok");
    }
    return !r.completed;
}

/* The next hold-off of a job whose runs go unrecorded: 1 s, doubling to
 * a minute; mu held. */
static void hold_off(jobs_scheduler *s, sched_job *sj, bool unrecorded)
{
    if (!unrecorded) {
        sj->held_off_ms = 0;
        sj->hold_offs = 0;
        return;
    }
    int64_t wait = JOBS_HOLD_OFF_MS << (sj->hold_offs < 6 ? sj->hold_offs : 6);
    if (wait > JOBS_HOLD_OFF_MAX_MS) wait = JOBS_HOLD_OFF_MAX_MS;
    sj->hold_offs++;
    sj->held_off_ms = base_now_ms() + s->skew_ms + wait;
}

/* ---- runner threads ------------------------------------------------------- */

/* The due-soonest runnable job, or NULL; mu held. */
static sched_job *next_due(jobs_scheduler *s, int64_t *due)
{
    sched_job *best = NULL;
    for (size_t i = 0; i < s->n; i++) {
        sched_job *sj = &s->jobs[i];
        if (!sj->active || sj->running) continue;
        int64_t t = sj->requested_ms ? sj->requested_ms : sj->next_run_ms;
        if (t < 0) continue;
        if (t < sj->held_off_ms) t = sj->held_off_ms;
        if (!best || t < *due) {
            best = sj;
            *due = t;
        }
    }
    return best;
}

static void *runner_main(void *p)
{
    jobs_scheduler *s = p;
    base_thread_name("job-runner");
    store *db = NULL;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        if (!db) {
            /* The stop may come while the lock is down: look again before
             * any wait, or its wake-up is lost and the stop waits out the
             * heartbeat. */
            pthread_mutex_unlock(&s->mu);
            db = open_db(s, "runner");
            pthread_mutex_lock(&s->mu);
            if (!db && !s->stopping) wait_until(&s->run_cv, &s->mu, mono_ms() + s->heartbeat_ms);
            continue;
        }
        int64_t due = 0;
        sched_job *sj = next_due(s, &due);
        int64_t wait_ms = sj ? due - (base_now_ms() + s->skew_ms) : s->heartbeat_ms;
        if (sj && wait_ms <= 0) {
            sj->running = true;
            pthread_mutex_unlock(&s->mu);
            bool unrecorded = run_job(s, db, sj);
            pthread_mutex_lock(&s->mu);
            sj->running = false;
            hold_off(s, sj, unrecorded);
            /* Another runner may be waiting for this job's next time. */
            pthread_cond_broadcast(&s->run_cv);
            continue;
        }
        if (wait_ms > s->heartbeat_ms) wait_ms = s->heartbeat_ms;
        wait_until(&s->run_cv, &s->mu, mono_ms() + wait_ms);
    }
    pthread_mutex_unlock(&s->mu);
    store_close(db);
    return NULL;
}

/* ---- heartbeat thread ----------------------------------------------------- */

static int register_jobs(jobs_scheduler *s, store *db)
{
    int rc = nodes_register(db, s->node_id, s->address);
    if (rc < 0 || (rc = store_begin(db)) < 0) return rc;
    /* A changed schedule or zone restarts the job's timetable. */
    store_stmt *st = store_prepare(
        db, "INSERT INTO jobs (name, schedule, time_zone, enabled) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (name) DO UPDATE SET schedule = excluded.schedule, time_zone = excluded.time_zone,"
            " enabled = excluded.enabled, next_run_ms = CASE WHEN jobs.schedule = excluded.schedule"
            " AND jobs.time_zone = excluded.time_zone THEN jobs.next_run_ms ELSE NULL END");
    for (size_t i = 0; i < s->n && rc >= 0; i++) {
        const jobs_job *j = s->jobs[i].job;
        store_bind_str(st, 1, j->name);
        store_bind_str(st, 2, j->schedule);
        store_bind_str(st, 3, j->time_zone);
        store_bind_int64(st, 4, j->enabled);
        rc = exec_stmt(st);
    }
    if (rc < 0) {
        store_rollback(db);
        return rc;
    }
    return store_commit(db);
}

static void update_skew(jobs_scheduler *s, store *db)
{
    int64_t before = base_now_ms(), db_now;
    if (store_now_ms(db, &db_now) < 0) return;
    int64_t after = base_now_ms();
    pthread_mutex_lock(&s->mu);
    s->skew_ms = db_now - (before + after) / 2;
    pthread_mutex_unlock(&s->mu);
}

/* After a successful renewal: a job set aside because its lease looked
 * expired on this node's clock (renewals were late) is ours after all, in
 * the same tenure, with its timetable still loaded. Only this thread
 * acquires, so reading the hold's tenure here is safe. */
static void reactivate(jobs_scheduler *s, sched_job *sj)
{
    pthread_mutex_lock(&s->mu);
    if (!sj->active && !s->stopping && sj->tenure == sj->hold.tenure) {
        sj->active = true;
        pthread_cond_broadcast(&s->run_cv);
    }
    pthread_mutex_unlock(&s->mu);
}

/* Renews every held lease, RENEW_BATCH to a statement; what fails for a
 * passing error is retried with jitter, and what still fails after
 * LEASE_RENEW_TRIES is dropped. */
#define RENEW_BATCH 1000

static void renew_all(jobs_scheduler *s, store *db, size_t *pending, lease_hold **hs, int *res)
{
    size_t np = 0;
    for (size_t i = 0; i < s->n; i++)
        if (lease_hold_epoch(&s->jobs[i].hold) >= 0) pending[np++] = i;
    for (int attempt = 0; attempt < LEASE_RENEW_TRIES && np > 0; attempt++) {
        if (attempt > 0) sleep_ms(jitter(s->heartbeat_ms / 10, s->heartbeat_ms / 4 + 1));
        size_t keep = 0;
        for (size_t k0 = 0; k0 < np; k0 += RENEW_BATCH) {
            size_t m = np - k0 < RENEW_BATCH ? np - k0 : RENEW_BATCH;
            for (size_t k = 0; k < m; k++) hs[k] = &s->jobs[pending[k0 + k]].hold;
            if (lease_hold_renew_many(db, hs, m, s->ttl_ms, res) < 0)
                log_warn("jobs: lease renewal failed (attempt %d): %s", attempt + 1, store_errmsg(db));
            for (size_t k = 0; k < m; k++) {
                /* hs was sorted by name: back to the job from the hold */
                sched_job *sj = (sched_job *)((char *)hs[k] - offsetof(sched_job, hold));
                if (res[k] == LEASE_OK) {
                    reactivate(s, sj);
                    continue;
                }
                if (res[k] == LEASE_LOST) {
                    log_warn("job %s: lease lost (expired or taken over): stopping its work", sj->job->name);
                    deactivate(s, sj);
                    continue;
                }
                pending[keep++] = (size_t)(sj - s->jobs);
            }
        }
        np = keep;
    }
    for (size_t k = 0; k < np; k++) {
        sched_job *sj = &s->jobs[pending[k]];
        log_error("job %s: %d lease renewals failed in a row: stopping its work", sj->job->name,
                  LEASE_RENEW_TRIES);
        lease_hold_drop(&sj->hold);
        deactivate(s, sj);
    }
}

/* Manual run requests for the jobs we hold. */
static void poll_requests(jobs_scheduler *s, store *db)
{
    store_stmt *st = store_prepare(db, "SELECT name, run_requested_ms FROM jobs WHERE run_requested_ms IS NOT NULL");
    int rc;
    bool any = false;
    pthread_mutex_lock(&s->mu);
    while ((rc = store_step(st)) == STORE_ROW) {
        char lease[LEASE_NAME_MAX + 1];
        jobs_lease_name(store_col_text(st, 0), lease, sizeof lease);
        sched_job *sj = find_by_lease(s, lease);
        int64_t req = store_col_int64(st, 1);
        if (sj && sj->active && req != sj->done_request_ms && req != sj->requested_ms) {
            sj->requested_ms = req;
            any = true;
        }
    }
    if (any) pthread_cond_broadcast(&s->run_cv);
    pthread_mutex_unlock(&s->mu);
    store_reset(st);
}

static void beat(jobs_scheduler *s, store *db, size_t *pending, lease_hold **hs, int *res)
{
    if (s->on_beat) s->on_beat(s->beat_arg);
    update_skew(s, db);
    if (nodes_heartbeat(db, s->node_id, s->address) < 0)
        log_warn("jobs: node heartbeat failed: %s", store_errmsg(db));
    renew_all(s, db, pending, hs, res);
    /* Long-dead nodes leave the list; ten lease lengths is "long". */
    int64_t dead = 10 * s->ttl_ms > 60000 ? 10 * s->ttl_ms : 60000;
    if (nodes_gc(db, dead) < 0) log_warn("jobs: node cleanup failed: %s", store_errmsg(db));
    poll_requests(s, db);
}

/* Loads a newly acquired job's timetable and makes it runnable. */
static int activate(jobs_scheduler *s, store *db, sched_job *sj, uint64_t tenure)
{
    store_stmt *st = store_prepare(db, "SELECT next_run_ms, run_requested_ms FROM jobs WHERE name = $1");
    store_bind_str(st, 1, sj->job->name);
    int rc = store_step(st);
    bool have_next = rc == STORE_ROW && !store_col_is_null(st, 0);
    int64_t next = have_next ? store_col_int64(st, 0) : -1;
    int64_t req = rc == STORE_ROW ? store_col_int64(st, 1) : 0;
    store_reset(st);
    if (rc != STORE_ROW) return rc < 0 ? rc : STORE_ERROR;
    if (!have_next) {
        int64_t now;
        if ((rc = store_now_ms(db, &now)) < 0) return rc;
        next = jobs_fire_after(sj->job, now);
        int64_t epoch;
        rc = lease_hold_fence_begin(db, &sj->hold, tenure, &epoch);
        if (rc != LEASE_OK) return rc < 0 ? rc : STORE_ERROR;
        st = store_prepare(db, "UPDATE jobs SET next_run_ms = $2 WHERE name = $1");
        store_bind_str(st, 1, sj->job->name);
        store_bind_int64(st, 2, next);
        rc = exec_stmt(st);
        rc = lease_hold_fence_end(db, &sj->hold, rc == STORE_OK);
        if (rc < 0) return rc;
    }
    pthread_mutex_lock(&s->mu);
    sj->tenure = tenure;
    sj->next_run_ms = next;
    sj->requested_ms = req;
    sj->done_request_ms = 0;
    sj->held_off_ms = 0; /* a new tenure starts from the table */
    sj->hold_offs = 0;
    sj->active = true;
    pthread_cond_broadcast(&s->run_cv);
    pthread_mutex_unlock(&s->mu);
    return STORE_OK;
}

static size_t count_enabled(jobs_scheduler *s, size_t *held)
{
    size_t n = 0;
    *held = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->jobs[i].job->enabled) n++;
        if (lease_hold_epoch(&s->jobs[i].hold) >= 0) (*held)++;
    }
    return n;
}

/* Above our fair share while other nodes are live: give the excess back
 * (idle jobs only), so they spread without waiting for anything to expire.
 * Returns how many were released. */
static size_t shed(jobs_scheduler *s, store *db, size_t excess)
{
    size_t n = 0;
    for (size_t i = s->n; i-- > 0 && n < excess;) {
        sched_job *sj = &s->jobs[i];
        pthread_mutex_lock(&s->mu);
        bool ok = sj->active && !sj->running;
        if (ok) sj->active = false;
        pthread_mutex_unlock(&s->mu);
        if (!ok) continue;
        lease_hold_release(db, &sj->hold);
        n++;
    }
    if (n) log_info("jobs: released %zu lease(s) to balance the jobs across nodes", n);
    return n;
}

/* Takes free and expired leases up to our share. Returns when (mono ms) to
 * look again: the earliest expiry of a lease someone else holds. */
static int64_t acquire_pass(jobs_scheduler *s, store *db, bool *seen, bool *orphan)
{
    int64_t wake = mono_ms() + s->heartbeat_ms, live = 1, now;
    if (nodes_live_count(db, s->ttl_ms, &live) < 0 || store_now_ms(db, &now) < 0) return wake;
    if (live < 1) live = 1;
    size_t held, enabled = count_enabled(s, &held);
    size_t share = (enabled + (size_t)live - 1) / (size_t)live;
    if (held > share && live > 1) held -= shed(s, db, held - share);
    memset(seen, 0, s->n * sizeof *seen);
    memset(orphan, 0, s->n * sizeof *orphan);
    store_stmt *st = store_prepare(db, "SELECT name, owner, expires_ms FROM leases WHERE name LIKE 'job:%'");
    size_t *cand = calloc(s->n ? s->n : 1, sizeof *cand), ncand = 0;
    if (!cand) return wake;
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        sched_job *sj = find_by_lease(s, store_col_text(st, 0));
        if (!sj) continue;
        size_t i = (size_t)(sj - s->jobs);
        seen[i] = true;
        if (!sj->job->enabled || lease_hold_epoch(&sj->hold) >= 0) continue;
        int64_t expires = store_col_int64(st, 2);
        /* An expired lease's owner died or stalled: take it whatever our
         * share, so takeover never waits for the node count to catch up.
         * One still under our own id was our dead incarnation's (a
         * restart) or a tenure ended on our side: ours again at once. */
        bool mine = !store_col_is_null(st, 1) && strcmp(store_col_text(st, 1), s->node_id) == 0;
        if (!store_col_is_null(st, 1) && (expires <= now || mine)) orphan[i] = true;
        if (store_col_is_null(st, 1) || expires <= now || mine) cand[ncand++] = i;
        else if (mono_ms() + (expires - now) + 5 < wake) wake = mono_ms() + (expires - now) + 5;
    }
    store_reset(st);
    if (rc == STORE_DONE)
        for (size_t i = 0; i < s->n; i++)
            if (!seen[i] && s->jobs[i].job->enabled && lease_hold_epoch(&s->jobs[i].hold) < 0) cand[ncand++] = i;
    for (size_t k = 0; k < ncand; k++) {
        sched_job *sj = &s->jobs[cand[k]];
        if (held >= share && !orphan[cand[k]]) continue;
        pthread_mutex_lock(&s->mu);
        bool busy = sj->running; /* a stale run of an old tenure is still winding down */
        pthread_mutex_unlock(&s->mu);
        if (busy) continue;
        uint64_t tenure;
        rc = lease_hold_acquire(db, &sj->hold, s->ttl_ms, &tenure);
        if (rc != LEASE_OK) continue;
        if ((rc = activate(s, db, sj, tenure)) < 0) {
            log_warn("job %s: cannot load its state: %s", sj->job->name, store_errmsg(db));
            lease_hold_release(db, &sj->hold);
            continue;
        }
        held++;
        log_info("job %s: lease acquired at epoch %lld", sj->job->name, (long long)lease_hold_epoch(&sj->hold));
    }
    free(cand);
    return wake;
}

static void release_all(jobs_scheduler *s, store *db)
{
    int n = 0;
    for (size_t i = 0; i < s->n; i++) {
        deactivate(s, &s->jobs[i]);
        if (lease_hold_epoch(&s->jobs[i].hold) < 0) continue;
        if (lease_hold_release(db, &s->jobs[i].hold) == LEASE_OK) n++;
    }
    if (nodes_unregister(db, s->node_id) < 0) log_warn("jobs: cannot unregister the node: %s", store_errmsg(db));
    log_info("jobs: released %d lease(s)", n);
}

static void *hb_main(void *p)
{
    jobs_scheduler *s = p;
    base_thread_name("job-heartbeat");
    store *db = NULL;
    bool registered = false;
    int64_t next_beat = 0;
    size_t *pending = calloc(s->n ? s->n : 1, sizeof *pending);
    bool *seen = calloc(s->n ? s->n : 1, sizeof *seen);
    bool *orphan = calloc(s->n ? s->n : 1, sizeof *orphan);
    lease_hold **hs = calloc(RENEW_BATCH, sizeof *hs);
    int *res = calloc(RENEW_BATCH, sizeof *res);
    if (!pending || !seen || !orphan || !hs || !res) abort();
    pthread_mutex_lock(&s->mu);
    while (!s->hb_stop) {
        bool stopping = s->stopping;
        pthread_mutex_unlock(&s->mu);
        int64_t wake = mono_ms() + s->heartbeat_ms;
        if (!db && (db = open_db(s, "heartbeat"))) soft_state(db);
        if (db && !registered) {
            registered = register_jobs(s, db) == STORE_OK;
            if (!registered) log_warn("jobs: cannot register the node: %s", store_errmsg(db));
        }
        pthread_mutex_lock(&s->mu);
        s->reg_tried = true;
        pthread_cond_broadcast(&s->reg_cv);
        pthread_mutex_unlock(&s->mu);
        if (db && registered) {
            if (mono_ms() >= next_beat) {
                beat(s, db, pending, hs, res);
                next_beat = mono_ms() + s->heartbeat_ms;
            }
            wake = next_beat;
            if (!stopping) {
                int64_t t = acquire_pass(s, db, seen, orphan);
                if (t < wake) wake = t;
            }
        }
        pthread_mutex_lock(&s->mu);
        if (!s->hb_stop) wait_until(&s->hb_cv, &s->mu, wake);
    }
    pthread_mutex_unlock(&s->mu);
    if (db) release_all(s, db);
    store_close(db);
    free(pending);
    free(seen);
    free(orphan);
    free(hs);
    free(res);
    return NULL;
}

/* ---- start / stop --------------------------------------------------------- */

int jobs_scheduler_start(jobs_scheduler *s)
{
    if (pthread_create(&s->hb, NULL, hb_main, s) != 0) return -1;
    s->hb_started = true;
    /* The node and its jobs are listed (admin API, other nodes' shares)
     * once start returns -- unless the database is slow to answer, which
     * the heartbeat keeps trying. */
    int64_t until = mono_ms() + s->ttl_ms;
    pthread_mutex_lock(&s->mu);
    while (!s->reg_tried && mono_ms() < until) wait_until(&s->reg_cv, &s->mu, until);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nrunners; i++) {
        if (pthread_create(&s->runners[i], NULL, runner_main, s) != 0) {
            jobs_scheduler_stop(s);
            return -1;
        }
        s->runners_started++;
    }
    log_info("jobs: node %s scheduling %zu job(s), heartbeat %lld ms, lease %lld ms", s->node_id, s->n,
             (long long)s->heartbeat_ms, (long long)s->ttl_ms);
    return 0;
}

void jobs_scheduler_stop(jobs_scheduler *s)
{
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->run_cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->runners_started; i++) pthread_join(s->runners[i], NULL);
    s->runners_started = 0;
    /* Leases are released only after the runs they guard have ended. */
    pthread_mutex_lock(&s->mu);
    s->hb_stop = true;
    pthread_cond_broadcast(&s->hb_cv);
    pthread_mutex_unlock(&s->mu);
    if (s->hb_started) pthread_join(s->hb, NULL);
    s->hb_started = false;
}
