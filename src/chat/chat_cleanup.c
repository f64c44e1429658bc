/* chat_cleanup.c -- the chat's scheduled job (chat.cleanup, every minute):
 * changes older than the retention go (a user's pruned_to moves first, so
 * a cursor from before it gets 410 rather than a silent gap), and so do
 * spent or expired WebSocket tickets and the presence rows of dead nodes.
 * Every batch is fenced by the job's lease. */
#include "chat/chat_cleanup.h"

#include "base/base.h"
#include "cluster/lease.h"

#define CHAT_CLEANUP_BATCH 500

/* One fenced batch of users: their pruned_to moves to the newest change
 * older than bound, and those changes go. *users: how many. */
static int prune_batch(jobs_run *r, int64_t bound, int64_t *users)
{
    store *db = jobs_run_db(r);
    int rc = jobs_run_fence_begin(r, NULL);
    if (rc != LEASE_OK) {
        jobs_run_errorf(r, rc == LEASE_LOST ? "fenced off: the lease moved on" : "database: %s", store_errmsg(db));
        return -1;
    }
    store_stmt *st = store_prepare(
        db, "UPDATE chat_seqs SET pruned_to = (SELECT max(seq) FROM chat_changes c WHERE c.user_id = chat_seqs.user_id "
            "AND c.created_ms < $1) WHERE user_id IN (SELECT user_id FROM chat_changes WHERE created_ms < $1 "
            "GROUP BY user_id LIMIT $2)");
    store_bind_int64(st, 1, bound);
    store_bind_int64(st, 2, CHAT_CLEANUP_BATCH);
    rc = store_step(st);
    *users = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    if (rc == STORE_DONE) {
        st = store_prepare(db, "DELETE FROM chat_changes WHERE created_ms < $1 AND seq <= (SELECT pruned_to FROM "
                               "chat_seqs s WHERE s.user_id = chat_changes.user_id)");
        store_bind_int64(st, 1, bound);
        rc = store_step(st);
        store_reset(st);
    }
    if (rc != STORE_DONE) {
        jobs_run_errorf(r, "database: %s", store_errmsg(db));
        jobs_run_fence_abort(r);
        return -1;
    }
    if (jobs_run_fence_end(r) != 0) {
        jobs_run_errorf(r, "commit: %s", store_errmsg(db));
        return -1;
    }
    return 0;
}

int chat_cleanup_job(jobs_run *r, void *arg)
{
    const chat_cleanup_opts *o = arg;
    store *db = jobs_run_db(r);
    int64_t now, users = CHAT_CLEANUP_BATCH, pruned = 0, tickets = 0, gone = 0, nodes = 0;
    if (store_now_ms(db, &now) < 0) {
        jobs_run_errorf(r, "database clock: %s", store_errmsg(db));
        return -1;
    }
    while (users == CHAT_CLEANUP_BATCH) {
        if (jobs_run_should_stop(r) || prune_batch(r, now - o->retention_ms, &users) != 0) return -1;
        pruned += users;
    }
    if (jobs_run_batches(r, "DELETE FROM ws_tickets WHERE hash IN (SELECT hash FROM ws_tickets WHERE expires_ms <= $1 "
                            "LIMIT $2)", now, CHAT_CLEANUP_BATCH, &tickets) != 0 ||
        jobs_run_batches(r, "DELETE FROM presence WHERE node_id IN (SELECT DISTINCT node_id FROM presence WHERE "
                            "node_id NOT IN (SELECT id FROM nodes WHERE heartbeat_ms > $1) LIMIT $2)",
                         now - o->dead_after_ms, CHAT_CLEANUP_BATCH, &gone) != 0 ||
        jobs_run_batches(r, "DELETE FROM ws_nodes WHERE node_id IN (SELECT node_id FROM ws_nodes WHERE node_id NOT IN "
                            "(SELECT id FROM nodes WHERE heartbeat_ms > $1) LIMIT $2)",
                         now - o->dead_after_ms, CHAT_CLEANUP_BATCH, &nodes) != 0)
        return -1;
    if (pruned || gone)
        log_info("job %s: pruned the old changes of %lld user(s); %lld presence row(s) of dead nodes gone",
                 jobs_run_job(r), (long long)pruned, (long long)gone);
    return 0;
}

int chat_forget_node(store *db, const char *node_id)
{
    store_stmt *st = store_prepare(db, "DELETE FROM presence WHERE node_id = $1");
    store_bind_str(st, 1, node_id);
    int rc = store_step(st);
    store_reset(st);
    if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    st = store_prepare(db, "DELETE FROM ws_nodes WHERE node_id = $1");
    store_bind_str(st, 1, node_id);
    rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}
