/* chat_cleanup.c -- the chat's scheduled job (chat.cleanup, every minute):
 * changes older than the retention go (a user's pruned_to moves with them,
 * so a cursor from before it gets 410 rather than a silent gap), and so do
 * spent or expired WebSocket tickets and the presence rows of dead nodes.
 * Every batch of writes is fenced by the job's lease.
 *
 * The prune walks the users round in id order, CHAT_PRUNE_BATCHES x
 * CHAT_CLEANUP_BATCH of them a run (5,000 a minute), rather than reading
 * an index of every change by age: that index cost the chat writer 19% of
 * its instructions for a group message and 7% for a 1:1 one (one more
 * b-tree insert for each member's change; bench/chat/writer.sh), and a
 * walk costs one probe a user. A user's old changes are the prefix of
 * theirs, in number order, before the first one younger than the
 * retention: a change is kept at least the retention, and at most that
 * and one round more.
 *
 * It also checks the unread totals kept beside the users' numbers
 * (chat.h), CHAT_UNREAD_CHECK users a run, round the users in turn (each
 * process starts at a random user, so frequent restarts still cover them
 * all): a total that is not the sum GET /v1/unread computes is set to it
 * and logged as a warning, for it means a write that did not keep it (a
 * node of a build before schema 41 still running after the migration, or
 * a bug). The sums are read in one statement outside any write
 * transaction, and a total is set, in a fenced one, only if the user's
 * number has not moved since (chat_unread_set). */
#include "chat/chat_cleanup.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/base.h"

#define CHAT_CLEANUP_BATCH 500
#define CHAT_PRUNE_BATCHES 10   /* of CHAT_CLEANUP_BATCH users each, a run */
#define CHAT_UNREAD_CHECK 1000 /* users whose kept unread total a run checks */

int chat_prune_read(store *db, int64_t *from, int64_t bound, int limit, chat_prune_cut *cuts, size_t *n)
{
    /* The first change kept (young) is found by walking the user's
     * changes after pruned_to in order: as many rows as can go, and one;
     * in both the tables a change may be in (chat_settle.c). */
    store_stmt *st = store_prepare(
        db, "SELECT s.user_id, s.pruned_to, s.seq, (SELECT min(y.seq) FROM (SELECT * FROM (SELECT c.seq FROM "
            "chat_changes c WHERE c.user_id = s.user_id AND c.seq > s.pruned_to AND c.created_ms >= $3 "
            "ORDER BY c.seq LIMIT 1) settled UNION ALL SELECT * FROM (SELECT r.seq FROM chat_recent r WHERE "
            "r.user_id = s.user_id AND r.seq > s.pruned_to AND r.created_ms >= $3 ORDER BY r.seq LIMIT 1) recent) y) "
            "FROM chat_seqs s WHERE s.user_id > $1 ORDER BY s.user_id LIMIT $2");
    store_bind_int64(st, 1, *from);
    store_bind_int64(st, 2, limit);
    store_bind_int64(st, 3, bound);
    int rc, read = 0;
    int64_t last = *from;
    *n = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        read++;
        last = store_col_int64(st, 0);
        int64_t pruned = store_col_int64(st, 1), seq = store_col_int64(st, 2);
        int64_t to = store_col_is_null(st, 3) ? seq : store_col_int64(st, 3) - 1;
        if (to > pruned) cuts[(*n)++] = (chat_prune_cut){.user = last, .from = pruned, .to = to};
    }
    store_reset(st);
    if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    *from = read < limit ? 0 : last;
    return STORE_OK;
}

int chat_prune_cut_apply(store *db, const chat_prune_cut *cuts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        store_stmt *st = store_prepare(db, "UPDATE chat_seqs SET pruned_to = $2 WHERE user_id = $1 AND pruned_to < $2");
        store_bind_int64(st, 1, cuts[i].user);
        store_bind_int64(st, 2, cuts[i].to);
        int rc = store_step(st);
        store_reset(st);
        if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
        for (int t = 0; t < 2; t++) {
            st = store_prepare(db, t ? "DELETE FROM chat_recent WHERE user_id = $1 AND seq > $2 AND seq <= $3"
                                     : "DELETE FROM chat_changes WHERE user_id = $1 AND seq > $2 AND seq <= $3");
            store_bind_int64(st, 1, cuts[i].user);
            store_bind_int64(st, 2, cuts[i].from);
            store_bind_int64(st, 3, cuts[i].to);
            rc = store_step(st);
            store_reset(st);
            if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
        }
    }
    return STORE_OK;
}

/* The cuts of a batch, for jobs_run_fenced. */
typedef struct prune_cuts {
    const chat_prune_cut *v;
    size_t n;
} prune_cuts;

static int prune_apply(store *db, void *arg)
{
    const prune_cuts *c = arg;
    return chat_prune_cut_apply(db, c->v, c->n);
}

/* One batch of users: what can go is read outside any write transaction,
 * then cut in a fenced one. *users: how many users' changes went. */
static int prune_batch(jobs_run *r, chat_cleanup_opts *o, int64_t bound, int64_t *users)
{
    store *db = jobs_run_db(r);
    chat_prune_cut cuts[CHAT_CLEANUP_BATCH];
    size_t n = 0;
    int64_t from = o->pruned_from;
    *users = 0;
    if (chat_prune_read(db, &from, bound, CHAT_CLEANUP_BATCH, cuts, &n) != STORE_OK) {
        jobs_run_errorf(r, "database: %s", store_errmsg(db));
        return -1;
    }
    int rc = n > 0 ? jobs_run_fenced(r, prune_apply, &(prune_cuts){.v = cuts, .n = n}) : 0;
    /* Pulls answered from memory must not show what is cut (after a
     * failed commit too: whether it took is not known). */
    for (size_t i = 0; i < n && o->tail; i++) chat_tail_forget(o->tail, cuts[i].user);
    if (rc != 0) return -1;
    /* A user whose number moved since the read lost less than it could
     * have: the changes cut were older than bound whatever came after. */
    *users = (int64_t)n;
    o->pruned_from = from;
    return 0;
}

int chat_unread_wrong(store *db, int64_t *from, int64_t to, int limit, chat_unread_fix *fix, size_t *n, int *read)
{
    store_stmt *st = store_prepare(
        db, "SELECT s.user_id, s.seq, s.unread, (SELECT COALESCE(sum(COALESCE(m.left_seq, c.last_seq) - "
            "m.read_up_to), 0) FROM conv_members m JOIN conversations c ON c.id = m.conversation_id WHERE "
            "m.user_id = s.user_id) FROM chat_seqs s WHERE s.user_id > $1 AND s.user_id <= $3 "
            "ORDER BY s.user_id LIMIT $2");
    store_bind_int64(st, 1, *from);
    store_bind_int64(st, 2, limit);
    store_bind_int64(st, 3, to > 0 ? to : INT64_MAX);
    int rc, rows = 0;
    int64_t last = *from;
    *n = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        rows++;
        last = store_col_int64(st, 0);
        if (store_col_int64(st, 2) != store_col_int64(st, 3))
            fix[(*n)++] = (chat_unread_fix){.user = last, .seq = store_col_int64(st, 1),
                                            .kept = store_col_int64(st, 2), .unread = store_col_int64(st, 3)};
    }
    store_reset(st);
    if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    *from = rows < limit ? 0 : last;
    if (read) *read = rows;
    return STORE_OK;
}

int chat_unread_set(store *db, const chat_unread_fix *fix, size_t n, int64_t *set)
{
    *set = 0;
    for (size_t i = 0; i < n; i++) {
        store_stmt *st = store_prepare(db, "UPDATE chat_seqs SET unread = $3 WHERE user_id = $1 AND seq = $2");
        store_bind_int64(st, 1, fix[i].user);
        store_bind_int64(st, 2, fix[i].seq);
        store_bind_int64(st, 3, fix[i].unread);
        int rc = store_step(st);
        *set += rc == STORE_DONE ? store_changes(st) : 0;
        store_reset(st);
        if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    }
    return STORE_OK;
}

/* Where a process starts its round: a user picked at random between the
 * lowest and highest ids, so restarts more frequent than a round still
 * reach every range in time. */
static int64_t unread_start(store *db)
{
    int64_t lo = 0, hi = 0, r;
    store_stmt *st = store_prepare(db, "SELECT COALESCE(min(user_id), 0), COALESCE(max(user_id), 0) FROM chat_seqs");
    if (store_step(st) == STORE_ROW) {
        lo = store_col_int64(st, 0);
        hi = store_col_int64(st, 1);
    }
    store_reset(st);
    if (hi <= lo) return 0;
    base_random(&r, sizeof r);
    return lo + (int64_t)((uint64_t)r % (uint64_t)(hi - lo));
}

/* The totals to set, for jobs_run_fenced. */
typedef struct unread_fixes {
    const chat_unread_fix *v;
    size_t n;
    int64_t *set;
} unread_fixes;

static int unread_set(store *db, void *arg)
{
    const unread_fixes *f = arg;
    return chat_unread_set(db, f->v, f->n, f->set);
}

/* The wrong totals of the next users, read in one statement outside any
 * write transaction (a chat writer is never held up by it), then set in a
 * fenced one when there are any; the round moves on once that is done. */
static int unread_check(jobs_run *r, chat_cleanup_opts *o)
{
    store *db = jobs_run_db(r);
    size_t n = 0, more = 0;
    int read = 0;
    int64_t set = 0, from = o->checked_to ? o->checked_to : (o->checked_to = unread_start(db));
    chat_unread_fix *fix = malloc(CHAT_UNREAD_CHECK * sizeof *fix);
    if (!fix) {
        jobs_run_errorf(r, "out of memory");
        return -1;
    }
    int64_t start = from;
    int rc = chat_unread_wrong(db, &from, 0, CHAT_UNREAD_CHECK, fix, &n, &read);
    if (rc == STORE_OK && from == 0 && read < CHAT_UNREAD_CHECK && start > 0) {
        /* The end, from the middle: the run goes on from the first user,
         * up to where it began. */
        rc = chat_unread_wrong(db, &from, start, CHAT_UNREAD_CHECK - read, fix + n, &more, NULL);
        n += more;
    }
    if (rc != STORE_OK) {
        jobs_run_errorf(r, "database: %s", store_errmsg(db));
        free(fix);
        return -1;
    }
    if (n > 0 && jobs_run_fenced(r, unread_set, &(unread_fixes){.v = fix, .n = n, .set = &set}) != 0) {
        free(fix);
        return -1;
    }
    if (set)
        log_warn("job %s: the kept unread total of %lld user(s) was not the sum of their conversations' and is set to "
                 "it (a node of a build before schema 41 still writing, or a bug); the first found: user %lld, %lld "
                 "kept, %lld by the sum", jobs_run_job(r), (long long)set, (long long)fix[0].user, (long long)fix[0].kept,
                 (long long)fix[0].unread);
    free(fix);
    o->checked_to = from ? from : -1; /* -1: the end; the next run starts over from the first */
    return 0;
}

int chat_cleanup_job(jobs_run *r, void *arg)
{
    chat_cleanup_opts *o = arg;
    store *db = jobs_run_db(r);
    int64_t now, users = 0, pruned = 0, tickets = 0, gone = 0, nodes = 0;
    if (store_now_ms(db, &now) < 0) {
        jobs_run_errorf(r, "database clock: %s", store_errmsg(db));
        return -1;
    }
    /* CHAT_PRUNE_BATCHES batches a run at most, and never past the end
     * of a round (the next run starts the next one). */
    for (int b = 0; b < CHAT_PRUNE_BATCHES; b++) {
        if (jobs_run_should_stop(r) || prune_batch(r, o, now - o->retention_ms, &users) != 0) return -1;
        pruned += users;
        if (o->pruned_from == 0) break; /* the round is over */
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
    if (jobs_run_should_stop(r) || unread_check(r, o) != 0) return -1;
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
