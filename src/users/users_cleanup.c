/* users_cleanup.c -- the cleanup job: expired sessions and stale sign-in
 * failure records go, in bounded batches, each fenced by the job's lease
 * (so a node that lost it mid-run deletes nothing more). */
#include "users/users_cleanup.h"

#include "base/base.h"
#include "users/users.h"

#define CLEANUP_BATCH 1000

int users_cleanup_job(jobs_run *r, void *arg)
{
    const users_cleanup_opts *o = arg;
    int64_t now, sessions = 0, failures = 0, devices = 0;
    if (store_now_ms(jobs_run_db(r), &now) < 0) {
        jobs_run_errorf(r, "database clock: %s", store_errmsg(jobs_run_db(r)));
        return -1;
    }
    if (jobs_run_batches(r,
                   "DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM sessions"
                   " WHERE expires_ms <= $1 LIMIT $2)",
                   now, CLEANUP_BATCH, &sessions) != 0)
        return -1;
    /* Stale: the counting window is over and no lock is in force. */
    if (jobs_run_batches(r,
                   "DELETE FROM auth_failures WHERE key IN (SELECT key FROM auth_failures"
                   " WHERE window_start_ms <= $1 AND locked_until_ms <= $1 LIMIT $2)",
                   now - o->signin_window_ms, CLEANUP_BATCH, &failures) != 0)
        return -1;
    /* A device unseen for a year signs in as a stranger again. */
    if (jobs_run_batches(r,
                   "DELETE FROM known_devices WHERE token_hash IN (SELECT token_hash FROM known_devices"
                   " WHERE last_used_ms <= $1 LIMIT $2)",
                   now - USERS_DEVICE_TTL_MS, CLEANUP_BATCH, &devices) != 0)
        return -1;
    if (sessions || failures || devices)
        log_info("job %s: deleted %lld expired session(s), %lld stale sign-in failure record(s), %lld device(s) "
                 "unseen for a year", jobs_run_job(r), (long long)sessions, (long long)failures, (long long)devices);
    return 0;
}

