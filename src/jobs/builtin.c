/* builtin.c -- the scheduler's own jobs: the proof tick job and the no-op
 * job of bench/jobs. */
#include "jobs/builtin.h"

#include <errno.h>
#include <time.h>

#include "base/base.h"
#include "cluster/lease.h"

int jobs_tick_handler(jobs_run *r, void *arg)
{
    int64_t work_ms = *(const int64_t *)arg;
    for (int64_t left = work_ms; left > 0; left -= 10) {
        if (jobs_run_should_stop(r)) {
            jobs_run_errorf(r, "stopped before writing");
            return -1;
        }
        struct timespec ts = {0, (left < 10 ? left : 10) * 1000000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    int64_t epoch;
    int rc = jobs_run_fence_begin(r, &epoch);
    if (rc != LEASE_OK) {
        jobs_run_errorf(r, rc == LEASE_LOST ? "fenced off: the lease moved on" : "database: %s",
                        store_errmsg(jobs_run_db(r)));
        return -1;
    }
    store *db = jobs_run_db(r);
    int64_t now;
    rc = store_now_ms(db, &now);
    store_stmt *st = store_prepare(db, "INSERT INTO job_ticks (id, tick, node, epoch, recorded_ms)"
                                       " VALUES ($1, $2, $3, $4, $5)");
    store_bind_int64(st, 1, base_id_new());
    store_bind_int64(st, 2, jobs_run_scheduled_ms(r) / 1000);
    store_bind_str(st, 3, jobs_run_node(r));
    store_bind_int64(st, 4, epoch);
    store_bind_int64(st, 5, now);
    if (rc >= 0) rc = store_step(st);
    store_reset(st);
    if (rc != STORE_DONE) {
        jobs_run_errorf(r, "database: %s", store_errmsg(db));
        jobs_run_fence_abort(r);
        return -1;
    }
    return jobs_run_fence_commit(r);
}

int jobs_noop_handler(jobs_run *r, void *arg)
{
    return 0;
}
