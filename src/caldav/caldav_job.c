/* caldav_job.c -- the tombstone pruning job. A deleted resource stays a
 * tombstone so that sync-collection can report it; after --caldav-sync-ttl
 * it goes, and the tokens that could still have needed it expire (their
 * clients get 403 valid-sync-token and sync again from the start). One
 * fenced transaction per run. */
#include "caldav/caldav_http.h"

#include "base/base.h"
#include "caldav/caldav_store.h"

typedef struct prune_args {
    int64_t bound, *n;
} prune_args;

static int prune(store *db, void *arg)
{
    const prune_args *a = arg;
    return caldav_prune(db, a->bound, a->n) == CALDAV_OK ? STORE_OK : STORE_ERROR;
}

int caldav_prune_job(jobs_run *r, void *arg)
{
    const caldav_prune_opts *o = arg;
    store *db = jobs_run_db(r);
    int64_t now, n = 0;
    if (store_now_ms(db, &now) < 0) {
        jobs_run_errorf(r, "database clock: %s", store_errmsg(db));
        return -1;
    }
    if (jobs_run_fenced(r, prune, &(prune_args){.bound = now - o->ttl_ms, .n = &n}) != 0) return -1;
    if (n) log_info("job %s: pruned %lld sync tombstone(s)", jobs_run_job(r), (long long)n);
    return 0;
}
