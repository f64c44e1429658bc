/* jobs_schema.c -- the job scheduler's schema step. It also made the
 * cluster room's tables (leases, nodes: src/cluster), which every domain
 * now shares; a shipped step is never split, so they stay here. See
 * store.h for the rules of a step. */
#include "jobs/jobs.h"

static const store_migration jobs_steps[] = {
    {3, "jobs",
     /* Leases: owner NULL = free. The epoch only ever grows, also across
      * releases, so an epoch names one tenure-and-renewal for good. */
     "CREATE TABLE leases ("
     " name TEXT PRIMARY KEY,"
     " owner TEXT,"
     " epoch BIGINT NOT NULL,"
     " expires_ms BIGINT NOT NULL);"
     "CREATE TABLE nodes ("
     " id TEXT PRIMARY KEY,"
     " address TEXT NOT NULL,"
     " started_ms BIGINT NOT NULL,"
     " heartbeat_ms BIGINT NOT NULL);"
     /* One row per registered job; next_run_ms is written only under the
      * job's lease (fenced), run_requested_ms by POST .../run. */
     "CREATE TABLE jobs ("
     " name TEXT PRIMARY KEY,"
     " schedule TEXT NOT NULL,"
     " time_zone TEXT NOT NULL,"
     " enabled INTEGER NOT NULL,"
     " next_run_ms BIGINT,"
     " run_requested_ms BIGINT);"
     "CREATE TABLE job_runs ("
     " id BIGINT PRIMARY KEY,"
     " job TEXT NOT NULL,"
     " scheduled_ms BIGINT NOT NULL,"
     " started_ms BIGINT NOT NULL,"
     " finished_ms BIGINT NOT NULL,"
     " node TEXT NOT NULL,"
     " epoch BIGINT NOT NULL,"
     " outcome TEXT NOT NULL,"
     " error TEXT);"
     "CREATE INDEX job_runs_job ON job_runs(job, started_ms);"
     /* The proof job's output (--test-tick-job); deliberately no unique key
      * on tick, so a tick run twice would show rather than fail. */
     "CREATE TABLE job_ticks ("
     " id BIGINT PRIMARY KEY,"
     " tick BIGINT NOT NULL,"
     " node TEXT NOT NULL,"
     " epoch BIGINT NOT NULL,"
     " recorded_ms BIGINT NOT NULL)",
     NULL},
};

int jobs_schema_add(store_schema *s)
{
    return store_schema_add(s, jobs_steps, sizeof jobs_steps / sizeof jobs_steps[0]);
}
