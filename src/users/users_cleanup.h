/* users_cleanup.h -- the users' scheduled job (see users_cleanup.c);
 * app.c registers it every ten minutes. */
#ifndef CHIME_USERS_CLEANUP_H
#define CHIME_USERS_CLEANUP_H

#include <stdint.h>

#include "jobs/jobs.h"

typedef struct users_cleanup_opts {
    int64_t signin_window_ms; /* auth_failures rows older than this are stale */
} users_cleanup_opts;

/* Deletes expired sessions and stale auth_failures rows in bounded,
 * fenced batches. arg: a users_cleanup_opts that outlives the scheduler. */
int users_cleanup_job(jobs_run *r, void *arg);

#endif
