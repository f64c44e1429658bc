/* notify_cleanup.h -- the reminders' scheduled job, notify.cleanup (see
 * notify_cleanup.c); app.c registers it every ten minutes. */
#ifndef CHIME_NOTIFY_CLEANUP_H
#define CHIME_NOTIFY_CLEANUP_H

#include <stdint.h>

#include "jobs/jobs.h"
#include "notify/notify.h"

typedef struct notify_cleanup_opts {
    int64_t inbox_max;          /* inbox rows kept per user (0: no cap) */
    int64_t keep_ms;            /* finished deliveries kept this long (0: forever) */
    notify_counters *counters;  /* borrowed; NULL: not counted */
} notify_cleanup_opts;

/* Prunes the oldest read inbox rows of users over the cap, finished
 * deliveries older than keep_ms, and budget rows of days gone, in fenced
 * batches. arg: a notify_cleanup_opts that
 * outlives the scheduler. */
int notify_cleanup_job(jobs_run *r, void *arg);

#endif
