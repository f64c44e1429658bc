/* jobs.h -- cron jobs that run on exactly one node at a time.
 *
 * The module that owns some periodic work registers a job -- a name, a
 * cron schedule in an IANA zone, and a C handler -- in a jobs_registry
 * that the caller owns and hands to the scheduler (no global registry).
 * Every node registers the same jobs; each job has its own lease
 * ("job:NAME", see lease.h), and the node holding it runs the job.
 *
 * State in the database: `jobs` (one row per job: schedule, next_run_ms,
 * a pending manual run), `job_runs` (a bounded history), `leases`, `nodes`.
 * next_run_ms is only ever written under the job's lease, in the same
 * fenced transaction that records the run, so a run is either recorded and
 * the schedule advanced, or neither: a node that dies mid-run leaves the
 * run to be done again by the next owner.
 *
 * Misfires: a job whose fire time passed more than misfire_after_ms ago
 * (the scheduler was down, or its owner died) is handled by its policy:
 * JOBS_MISFIRE_RUN_ONCE runs once now for all the missed times,
 * JOBS_MISFIRE_SKIP records a "skipped" run naming them and waits for the
 * next time. Less late than that, each missed time is run in turn.
 */
#ifndef CHIME_JOBS_H
#define CHIME_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "time/cron.h"
#include "time/tz.h"

#define JOBS_NAME_MAX 64
#define JOBS_ERROR_MAX 256
/* Runs kept per job in job_runs: each node trims a job's history back to
 * JOBS_HISTORY_MAX after every JOBS_HISTORY_SLACK runs it records. */
#define JOBS_HISTORY_MAX 200
#define JOBS_HISTORY_SLACK 16
/* Missed fire times counted one by one before saying "more than". */
#define JOBS_MISSED_MAX 10000

typedef enum { JOBS_MISFIRE_RUN_ONCE, JOBS_MISFIRE_SKIP } jobs_misfire;

typedef struct jobs_run jobs_run;
/* Returns 0 on success, -1 on failure (say why with jobs_run_errorf). */
typedef int (*jobs_handler)(jobs_run *run, void *arg);

typedef struct jobs_def {
    const char *name;      /* [a-z0-9_.-], at most JOBS_NAME_MAX */
    const char *schedule;  /* cron expression, see time/cron.h; ignored when every_ms > 0 */
    int64_t every_ms;      /* > 0: fire every this many ms instead (at multiples of it since
                              the epoch), for periods cron cannot say (500 ms, 2.5 s) */
    const char *time_zone; /* IANA name; NULL or "" means UTC */
    jobs_handler handler;
    void *arg;             /* passed to handler; owned by the registering module */
    bool enabled;
    jobs_misfire misfire;
    int64_t misfire_after_ms; /* lateness that counts as a misfire; 0: 60 s */
    int64_t max_run_ms;       /* 0: no limit. Past it the run is asked to stop
                                 and is recorded as "timeout". */
} jobs_def;

/* A registered job: the definition, parsed. */
typedef struct jobs_job {
    char name[JOBS_NAME_MAX + 1];
    char schedule[CRON_TEXT_MAX + 1];
    char time_zone[64];
    cron_expr cron;
    int64_t every_ms;    /* > 0: an interval job (cron unused) */
    const tz_zone *zone; /* NULL = UTC */
    jobs_handler handler;
    void *arg;
    bool enabled;
    jobs_misfire misfire;
    int64_t misfire_after_ms;
    int64_t max_run_ms;
} jobs_job;

typedef struct jobs_registry jobs_registry;

/* tz is borrowed and must outlive the registry. */
jobs_registry *jobs_registry_new(tz_db *tz);
void jobs_registry_free(jobs_registry *r);
/* Parses and adds a job. Returns 0, or -1 with a message naming the field
 * ("schedule: minute: 61 is out of range 0-59", "name: already registered"). */
int jobs_register(jobs_registry *r, const jobs_def *def, char *err, size_t errlen);
size_t jobs_registry_count(const jobs_registry *r);
const jobs_job *jobs_registry_at(const jobs_registry *r, size_t i);
const jobs_job *jobs_registry_find(const jobs_registry *r, const char *name);

/* ---- next-run logic (pure) ------------------------------------------------ */

/* The first fire time strictly after t_ms (whole seconds), or -1 if none. */
int64_t jobs_fire_after(const jobs_job *j, int64_t t_ms);

typedef enum { JOBS_WAIT, JOBS_RUN, JOBS_SKIP } jobs_action;

typedef struct jobs_plan {
    jobs_action action;
    int64_t scheduled_ms; /* RUN/SKIP: the fire time acted for (the first missed) */
    int64_t next_ms;      /* RUN/SKIP: next_run_ms once done; -1 = never again */
    int64_t missed;       /* fire times up to now covered by this action */
    bool missed_more;     /* more than JOBS_MISSED_MAX */
    bool misfired;        /* later than misfire_after_ms */
} jobs_plan;

/* What to do at now_ms for a job whose next fire time is next_run_ms (-1:
 * never again). Catch-up: a late-but-not-misfired run advances by one fire
 * time, so the following call may say RUN again at once. */
void jobs_plan_next(const jobs_job *j, int64_t next_run_ms, int64_t now_ms, jobs_plan *p);

/* ---- what a handler may do ------------------------------------------------ */

/* The runner's own connection; use it outside of any fenced transaction
 * for unguarded reads, or between fence_begin and fence_commit. */
store *jobs_run_db(jobs_run *r);
const char *jobs_run_node(const jobs_run *r);
const char *jobs_run_job(const jobs_run *r);
int64_t jobs_run_scheduled_ms(const jobs_run *r);
/* True once the lease is lost, the node is stopping, or max_run_ms has
 * passed: return soon, writing nothing more. Check between units of work. */
bool jobs_run_should_stop(jobs_run *r);
/* Opens a transaction fenced by the job's lease (lease.h). LEASE_OK with
 * *epoch set, LEASE_LOST, or a store error; nothing is open on failure. */
int jobs_run_fence_begin(jobs_run *r, int64_t *epoch);
/* Records this run as done (outcome "ok") and advances the schedule in the
 * same transaction, then commits. 0, or -1 (rolled back; say why). Use it
 * for the last write of a run that must happen exactly once. */
int jobs_run_fence_commit(jobs_run *r);
/* Commits a fenced transaction without recording the run (for work done
 * in several fenced batches). 0 or -1. */
int jobs_run_fence_end(jobs_run *r);
void jobs_run_fence_abort(jobs_run *r);
/* One batch of a run's work in its own fenced transaction: begins it,
 * calls work(db, arg) (STORE_OK, or a store error: rolled back), commits
 * without recording the run. 0, or -1 said with jobs_run_errorf ("fenced
 * off", the database's error, or the commit's). */
int jobs_run_fenced(jobs_run *r, int (*work)(store *db, void *arg), void *arg);
void jobs_run_errorf(jobs_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs a bounded statement in fenced batches until one comes back short:
 * sql takes $1 = bound and $2 = the batch size (a DELETE ... IN (SELECT
 * ... LIMIT $2)). *total gets the rows changed. Each batch is its own
 * fenced transaction, so a node that lost the lease mid-run changes
 * nothing more. 0, or -1 (said with jobs_run_errorf). */
int jobs_run_batches(jobs_run *r, const char *sql, int64_t bound, int64_t batch, int64_t *total);

/* ---- admin ---------------------------------------------------------------- */

enum { JOBS_OK = 0, JOBS_NOT_FOUND = 1 };
/* Asks the job's owner to run it once as soon as it can (POST .../run). */
int jobs_request_run(store *db, const char *name, int64_t *requested_ms);

/* ---- the scheduler -------------------------------------------------------- */

typedef struct jobs_scheduler jobs_scheduler;

typedef struct jobs_scheduler_opts {
    const char *db_url;  /* each scheduler thread opens its own connection */
    const char *node_id; /* unique among live nodes */
    const char *address; /* shown in /v1/admin/nodes */
    int64_t heartbeat_ms;
    int64_t ttl_ms;
    int runners;         /* threads running handlers, >= 1 */
    /* Called on the heartbeat thread at every heartbeat (may be NULL):
     * app.c checks there that the node still holds its id. */
    void (*on_beat)(void *arg);
    void *beat_arg;
} jobs_scheduler_opts;

/* reg is borrowed and must outlive the scheduler. */
jobs_scheduler *jobs_scheduler_new(jobs_registry *reg, const jobs_scheduler_opts *o);
/* Starts the heartbeat and runner threads. 0 or -1. */
int jobs_scheduler_start(jobs_scheduler *s);
/* Asks runs to stop, waits for them, releases every lease this node holds
 * and removes the node's row. Safe to call when not started. */
void jobs_scheduler_stop(jobs_scheduler *s);
void jobs_scheduler_free(jobs_scheduler *s);

/* "job:NAME", the lease guarding a job. */
void jobs_lease_name(const char *job, char *buf, size_t size);

/* Adds the scheduler's schema step (jobs_schema.c) to the one list. */
int jobs_schema_add(store_schema *s);

#endif
