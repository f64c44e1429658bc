/* users_cleanup.c -- the cleanup job: expired sessions and stale sign-in
 * failure records go, in bounded batches, each fenced by the job's lease
 * (so a node that lost it mid-run deletes nothing more). */
#include "users/users_cleanup.h"

#include "base/base.h"
#include "cluster/lease.h"

#define CLEANUP_BATCH 1000

/* One fenced batch of a bounded DELETE; sets *n to the rows deleted. */
static int delete_batch(jobs_run *r, const char *sql, int64_t bound, int64_t *n)
{
    int rc = jobs_run_fence_begin(r, NULL);
    if (rc != LEASE_OK) {
        jobs_run_errorf(r, rc == LEASE_LOST ? "fenced off: the lease moved on" : "database: %s",
                        store_errmsg(jobs_run_db(r)));
        return -1;
    }
    store_stmt *st = store_prepare(jobs_run_db(r), sql);
    store_bind_int64(st, 1, bound);
    store_bind_int64(st, 2, CLEANUP_BATCH);
    rc = store_step(st);
    *n = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    if (rc != STORE_DONE) {
        jobs_run_errorf(r, "database: %s", store_errmsg(jobs_run_db(r)));
        jobs_run_fence_abort(r);
        return -1;
    }
    if (jobs_run_fence_end(r) != 0) {
        jobs_run_errorf(r, "commit: %s", store_errmsg(jobs_run_db(r)));
        return -1;
    }
    return 0;
}

/* Runs sql (params: bound, batch size) until a batch comes back short. */
static int delete_all(jobs_run *r, const char *sql, int64_t bound, int64_t *total)
{
    int64_t n = CLEANUP_BATCH;
    while (n == CLEANUP_BATCH) {
        if (jobs_run_should_stop(r)) return -1;
        if (delete_batch(r, sql, bound, &n) != 0) return -1;
        *total += n;
    }
    return 0;
}

int users_cleanup_job(jobs_run *r, void *arg)
{
    const users_cleanup_opts *o = arg;
    int64_t now, sessions = 0, failures = 0;
    if (store_now_ms(jobs_run_db(r), &now) < 0) {
        jobs_run_errorf(r, "database clock: %s", store_errmsg(jobs_run_db(r)));
        return -1;
    }
    if (delete_all(r,
                   "DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM sessions"
                   " WHERE expires_ms <= $1 LIMIT $2)",
                   now, &sessions) != 0)
        return -1;
    /* Stale: the counting window is over and no lock is in force. */
    if (delete_all(r,
                   "DELETE FROM auth_failures WHERE key IN (SELECT key FROM auth_failures"
                   " WHERE window_start_ms <= $1 AND locked_until_ms <= $1 LIMIT $2)",
                   now - o->signin_window_ms, &failures) != 0)
        return -1;
    if (sessions || failures)
        log_info("job %s: deleted %lld expired session(s), %lld stale sign-in failure record(s)", jobs_run_job(r),
                 (long long)sessions, (long long)failures);
    return 0;
}

