/* builtin.h -- the scheduler's own jobs: the proof job of the multi-node
 * tests and the no-op job of bench/jobs. Registered by app.c. (Domains'
 * jobs live with their domains: the sign-in cleanup in src/users.) */
#ifndef CHIME_JOBS_BUILTIN_H
#define CHIME_JOBS_BUILTIN_H

#include <stdint.h>

#include "jobs/jobs.h"

/* Proof job: after *(int64_t *)arg ms of pretend work (checking
 * jobs_run_should_stop as real work would), records (tick = the fire time
 * in seconds, node, epoch) in job_ticks, fenced, in the same transaction
 * that records the run -- so each tick is written exactly once. */
int jobs_tick_handler(jobs_run *r, void *arg);

/* Does nothing; the scheduler's own record of the run is the work
 * (bench/jobs measures the scheduler, not a handler). */
int jobs_noop_handler(jobs_run *r, void *arg);

#endif
