/* builtin.h -- jobs of chime's own: cleanup of expired sign-in state, and
 * the proof job for the multi-node tests. Registered by app.c. */
#ifndef CHIME_JOBS_BUILTIN_H
#define CHIME_JOBS_BUILTIN_H

#include <stdint.h>

#include "jobs/jobs.h"

typedef struct jobs_cleanup_opts {
    int64_t signin_window_ms; /* auth_failures rows older than this are stale */
} jobs_cleanup_opts;

/* Deletes expired sessions and stale auth_failures rows in bounded,
 * fenced batches. arg: a jobs_cleanup_opts that outlives the scheduler. */
int jobs_cleanup_handler(jobs_run *r, void *arg);

/* Proof job: after *(int64_t *)arg ms of pretend work (checking
 * jobs_run_should_stop as real work would), records (tick = the fire time
 * in seconds, node, epoch) in job_ticks, fenced, in the same transaction
 * that records the run -- so each tick is written exactly once. */
int jobs_tick_handler(jobs_run *r, void *arg);

/* Does nothing; the scheduler's own record of the run is the work
 * (bench/jobs measures the scheduler, not a handler). */
int jobs_noop_handler(jobs_run *r, void *arg);

#endif
