/* jobs.c -- the job registry, the next-run and misfire rules, and the
 * admin request for an immediate run. The threads are in scheduler.c. */
#include "jobs/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/lease.h"

struct jobs_registry {
    tz_db *tz;
    jobs_job *jobs;
    size_t n, cap;
};

jobs_registry *jobs_registry_new(tz_db *tz)
{
    jobs_registry *r = calloc(1, sizeof *r);
    if (r) r->tz = tz;
    return r;
}

void jobs_registry_free(jobs_registry *r)
{
    if (!r) return;
    free(r->jobs);
    free(r);
}

size_t jobs_registry_count(const jobs_registry *r)
{
    return r->n;
}

const jobs_job *jobs_registry_at(const jobs_registry *r, size_t i)
{
    return i < r->n ? &r->jobs[i] : NULL;
}

const jobs_job *jobs_registry_find(const jobs_registry *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->jobs[i].name, name) == 0) return &r->jobs[i];
    return NULL;
}

static bool name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > JOBS_NAME_MAX) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr("_.-", *s))) return false;
    return true;
}

int jobs_register(jobs_registry *r, const jobs_def *def, char *err, size_t errlen)
{
    jobs_job j;
    memset(&j, 0, sizeof j);
    if (!def->name || !name_valid(def->name)) {
        snprintf(err, errlen, "name: 1 to %d of a-z 0-9 _ . -", JOBS_NAME_MAX);
        return -1;
    }
    if (jobs_registry_find(r, def->name)) {
        snprintf(err, errlen, "name: '%s' is already registered", def->name);
        return -1;
    }
    if (!def->handler) {
        snprintf(err, errlen, "handler: missing");
        return -1;
    }
    char cerr[200], every[32];
    if (def->every_ms > 0) {
        /* The jobs table shows the interval where a cron text would be; a
         * changed interval restarts the timetable as a changed cron does. */
        snprintf(every, sizeof every, "@every %lldms", (long long)def->every_ms);
        j.every_ms = def->every_ms;
    } else if (!def->schedule || cron_parse(def->schedule, &j.cron, cerr, sizeof cerr) != 0) {
        snprintf(err, errlen, "schedule: %s", def->schedule ? cerr : "missing");
        return -1;
    }
    const char *zone = def->time_zone && *def->time_zone ? def->time_zone : "UTC";
    if (strlen(zone) >= sizeof j.time_zone || !(j.zone = tz_db_get(r->tz, zone))) {
        snprintf(err, errlen, "time_zone: unknown zone '%.60s'", zone);
        return -1;
    }
    snprintf(j.name, sizeof j.name, "%s", def->name);
    snprintf(j.schedule, sizeof j.schedule, "%s", j.every_ms ? every : def->schedule);
    snprintf(j.time_zone, sizeof j.time_zone, "%s", zone);
    j.handler = def->handler;
    j.arg = def->arg;
    j.enabled = def->enabled;
    j.misfire = def->misfire;
    j.misfire_after_ms = def->misfire_after_ms > 0 ? def->misfire_after_ms : 60000;
    j.max_run_ms = def->max_run_ms > 0 ? def->max_run_ms : 0;
    if (r->n == r->cap) {
        jobs_job *nj = base_grow(r->jobs, sizeof *nj, &r->cap);
        if (!nj) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        r->jobs = nj;
    }
    r->jobs[r->n++] = j;
    return 0;
}

/* ---- next-run logic ------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int64_t jobs_fire_after(const jobs_job *j, int64_t t_ms)
{
    if (j->every_ms > 0) return (floor_div(t_ms, j->every_ms) + 1) * j->every_ms;
    int64_t s = cron_next(&j->cron, j->zone, floor_div(t_ms, 1000));
    return s < 0 ? -1 : s * 1000;
}

void jobs_plan_next(const jobs_job *j, int64_t next_run_ms, int64_t now_ms, jobs_plan *p)
{
    memset(p, 0, sizeof *p);
    p->action = JOBS_WAIT;
    if (next_run_ms < 0 || next_run_ms > now_ms) return;
    p->scheduled_ms = next_run_ms;
    if (now_ms - next_run_ms <= j->misfire_after_ms) {
        p->action = JOBS_RUN;
        p->missed = 1;
        p->next_ms = jobs_fire_after(j, next_run_ms);
        return;
    }
    /* Count what was missed, boundedly: a per-second job down for a year
     * must not cost a year of cron_next calls. */
    int64_t t = next_run_ms;
    while (t >= 0 && t <= now_ms && p->missed < JOBS_MISSED_MAX) {
        p->missed++;
        t = jobs_fire_after(j, t);
    }
    p->missed_more = t >= 0 && t <= now_ms;
    p->misfired = true;
    p->next_ms = jobs_fire_after(j, now_ms);
    p->action = j->misfire == JOBS_MISFIRE_SKIP ? JOBS_SKIP : JOBS_RUN;
}

/* ---- admin ---------------------------------------------------------------- */

int jobs_request_run(store *db, const char *name, int64_t *requested_ms)
{
    int64_t now;
    int rc = store_now_ms(db, &now);
    if (rc < 0) return rc;
    /* A request already pending stays as it is: one run answers both. */
    store_stmt *st = store_prepare(db, "UPDATE jobs SET run_requested_ms = COALESCE(run_requested_ms, $2)"
                                       " WHERE name = $1 RETURNING run_requested_ms");
    store_bind_str(st, 1, name);
    store_bind_int64(st, 2, now);
    rc = store_step(st);
    bool found = rc == STORE_ROW;
    if (found) {
        if (requested_ms) *requested_ms = store_col_int64(st, 0);
        rc = store_step(st);
    }
    store_reset(st);
    if (rc < 0) return rc;
    return found ? JOBS_OK : JOBS_NOT_FOUND;
}

void jobs_lease_name(const char *job, char *buf, size_t size)
{
    snprintf(buf, size, "job:%s", job);
}

int jobs_run_fenced(jobs_run *r, int (*work)(store *db, void *arg), void *arg)
{
    store *db = jobs_run_db(r);
    int rc = jobs_run_fence_begin(r, NULL);
    if (rc != LEASE_OK) {
        jobs_run_errorf(r, rc == LEASE_LOST ? "fenced off: the lease moved on" : "database: %s", store_errmsg(db));
        return -1;
    }
    if (work(db, arg) != STORE_OK) {
        jobs_run_errorf(r, "database: %s", store_errmsg(db));
        jobs_run_fence_abort(r);
        return -1;
    }
    if (jobs_run_fence_end(r) != 0) {
        jobs_run_errorf(r, "commit: %s", store_errmsg(db));
        return -1;
    }
    return 0;
}

/* One batch of jobs_run_batches: the statement, its rows changed in n. */
typedef struct run_batch {
    const char *sql;
    int64_t bound, batch, n;
} run_batch;

static int run_batch_work(store *db, void *arg)
{
    run_batch *b = arg;
    store_stmt *st = store_prepare(db, b->sql);
    store_bind_int64(st, 1, b->bound);
    store_bind_int64(st, 2, b->batch);
    int rc = store_step(st);
    b->n = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

int jobs_run_batches(jobs_run *r, const char *sql, int64_t bound, int64_t batch, int64_t *total)
{
    run_batch b = {.sql = sql, .bound = bound, .batch = batch, .n = batch};
    while (b.n == batch) {
        if (jobs_run_should_stop(r)) return -1;
        if (jobs_run_fenced(r, run_batch_work, &b) != 0) return -1;
        *total += b.n;
    }
    return 0;
}
