/* chat_cleanup.c -- the chat's scheduled job (chat.cleanup, every minute):
 * changes older than the retention go (a user's pruned_to moves first, so
 * a cursor from before it gets 410 rather than a silent gap), and so do
 * spent or expired WebSocket tickets and the presence rows of dead nodes.
 * Every batch is fenced by the job's lease.
 *
 * It also checks the unread totals kept beside the users' numbers
 * (chat.h), CHAT_UNREAD_CHECK users a run, round the users in turn: a
 * total that is not the sum GET /v1/unread computes is set to it and
 * logged as a warning, for it means a write that did not keep it (a node
 * of a build before schema 41 still running after the migration, or a
 * bug). A total is set only if the user's number has not moved since it
 * was computed: every write that moves a term of the sum moves the number
 * in the same transaction, so the two were read from one state, and a
 * write that came between is left to the next round. */
#include "chat/chat_cleanup.h"

#include <stdlib.h>

#include "base/base.h"
#include "cluster/lease.h"

#define CHAT_CLEANUP_BATCH 500
#define CHAT_UNREAD_CHECK 1000 /* users whose kept unread total a run checks */

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

/* A user whose kept total is not the computed one, and the number both
 * were read at. */
typedef struct chat_unread_fix {
    int64_t user, seq, unread;
} chat_unread_fix;

/* The next CHAT_UNREAD_CHECK users after *from: the wrong totals into fix
 * (*n of them), *from moved to the last user read (0: the end, start over). */
static int unread_read(store *db, int64_t *from, chat_unread_fix *fix, size_t *n)
{
    store_stmt *st = store_prepare(
        db, "SELECT s.user_id, s.seq, s.unread, (SELECT COALESCE(sum(COALESCE(m.left_seq, c.last_seq) - "
            "m.read_up_to), 0) FROM conv_members m JOIN conversations c ON c.id = m.conversation_id WHERE "
            "m.user_id = s.user_id) FROM chat_seqs s WHERE s.user_id > $1 ORDER BY s.user_id LIMIT $2");
    store_bind_int64(st, 1, *from);
    store_bind_int64(st, 2, CHAT_UNREAD_CHECK);
    int rc, rows = 0;
    *n = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        rows++;
        *from = store_col_int64(st, 0);
        if (store_col_int64(st, 2) != store_col_int64(st, 3))
            fix[(*n)++] = (chat_unread_fix){store_col_int64(st, 0), store_col_int64(st, 1), store_col_int64(st, 3)};
    }
    store_reset(st);
    if (rows < CHAT_UNREAD_CHECK) *from = 0;
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* Checks the next users' kept totals, and sets the wrong ones (fenced). */
static int unread_check(jobs_run *r, chat_cleanup_opts *o, int64_t *fixed)
{
    store *db = jobs_run_db(r);
    chat_unread_fix *fix = malloc(CHAT_UNREAD_CHECK * sizeof *fix);
    size_t n = 0;
    *fixed = 0;
    if (!fix) {
        jobs_run_errorf(r, "out of memory");
        return -1;
    }
    int rc = jobs_run_fence_begin(r, NULL);
    if (rc != LEASE_OK) {
        jobs_run_errorf(r, rc == LEASE_LOST ? "fenced off: the lease moved on" : "database: %s", store_errmsg(db));
        free(fix);
        return -1;
    }
    rc = unread_read(db, &o->checked_to, fix, &n);
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        store_stmt *st = store_prepare(db, "UPDATE chat_seqs SET unread = $3 WHERE user_id = $1 AND seq = $2");
        store_bind_int64(st, 1, fix[i].user);
        store_bind_int64(st, 2, fix[i].seq);
        store_bind_int64(st, 3, fix[i].unread);
        rc = store_step(st);
        *fixed += rc == STORE_DONE ? store_changes(st) : 0;
        store_reset(st);
        rc = rc == STORE_DONE ? STORE_OK : STORE_ERROR;
    }
    free(fix);
    if (rc != STORE_OK) {
        jobs_run_errorf(r, "database: %s", store_errmsg(db));
        jobs_run_fence_abort(r);
        return -1;
    }
    if (jobs_run_fence_end(r) != 0) {
        jobs_run_errorf(r, "commit: %s", store_errmsg(db));
        return -1;
    }
    if (*fixed)
        log_warn("job %s: the kept unread total of %lld user(s) was not the sum of their conversations' and is "
                 "set to it (a node of a build before schema 41 still writing, or a bug)",
                 jobs_run_job(r), (long long)*fixed);
    return 0;
}

int chat_cleanup_job(jobs_run *r, void *arg)
{
    chat_cleanup_opts *o = arg;
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
    int64_t fixed;
    if (unread_check(r, o, &fixed) != 0) return -1;
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
