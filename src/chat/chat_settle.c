/* chat_settle.c -- the changes of a large fan-out (a message to a group
 * of CHAT_FANOUT_RECENT members or more) go first to chat_recent, in the
 * order of the chat writer's commits; chat_settle moves them, many
 * commits' worth at a time and sorted by (user, seq), to their users'
 * places in chat_changes.
 *
 * Why: on SQLite chat_changes is clustered by (user, seq), so that a
 * sync is one range of one b-tree. But a message makes a change for every
 * member, and each member's newest changes sit on a page of their own: a
 * message to a group of 500 dirtied about 500 pages, 580 WAL frames
 * (2.3 MB) a commit, and the writer's time for it grew with the group's
 * history as its members' changes spread over more pages, to 15 ms a
 * message after 300 (bench/chat/writer.sh group). Appended in commit
 * order, the same changes fill a few pages of chat_recent and of its
 * index: 24 frames, 3.4 ms. A settle writes each user's page of
 * chat_changes once for all the changes it moves, and off the path of any
 * request: the writer settles once CHAT_SETTLE_MIN changes wait and it has
 * been idle a while, or past CHAT_RECENT_MAX whether or not
 * (chat_writer.c). The changes of a 1:1 message (two users) and of a read
 * mark (one) go to chat_changes at once: there the detour saved nothing
 * and its index cost more (bench/chat at 5,000 messages a second).
 *
 * So a user's changes may be in either table, in any mix: chat_sync, a
 * retried send's number and the prune read both. A settle moves, of each
 * user, their oldest changes in chat_recent, in (user, seq) order.
 *
 * PostgreSQL's writers put every change in chat_changes (its heap appends
 * anyway; chat_ops.c), and chat_recent stays empty there. */
#include "chat/chat_settle.h"

#include <stdbool.h>

/* The key of the last change a settle moves: the CHAT_SETTLE_ROWS-th in
 * (user, seq) order, or the last of all; *any false when there is none.
 * *more: whether more are left after it. */
static int settle_bound(store *db, int64_t *user, int64_t *seq, bool *any, bool *more)
{
    store_stmt *st = store_prepare(db, "SELECT user_id, seq FROM chat_recent ORDER BY user_id, seq LIMIT 2 OFFSET $1");
    store_bind_int64(st, 1, CHAT_SETTLE_ROWS - 1);
    int rc = store_step(st);
    *any = *more = false;
    if (rc == STORE_ROW) {
        *any = true;
        *user = store_col_int64(st, 0);
        *seq = store_col_int64(st, 1);
        rc = store_step(st);
        *more = rc == STORE_ROW;
        if (rc == STORE_ROW) rc = store_step(st);
    }
    store_reset(st);
    if (rc != STORE_DONE || *any) return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
    /* fewer than CHAT_SETTLE_ROWS: all of them */
    st = store_prepare(db, "SELECT user_id, seq FROM chat_recent ORDER BY user_id DESC, seq DESC LIMIT 1");
    rc = store_step(st);
    if (rc == STORE_ROW) {
        *any = true;
        *user = store_col_int64(st, 0);
        *seq = store_col_int64(st, 1);
        rc = store_step(st);
    }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

static int run_upto(store *db, const char *sql, int64_t user, int64_t seq)
{
    store_stmt *st = store_prepare(db, sql);
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, seq);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

int chat_settle(store *db, bool *more)
{
    int64_t user = 0, seq = 0;
    bool any;
    *more = false;
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = settle_bound(db, &user, &seq, &any, more);
    if (rc == STORE_OK && any)
        rc = run_upto(db,
                      "INSERT INTO chat_changes (user_id, seq, kind, conversation_id, ref, created_ms) "
                      "SELECT user_id, seq, kind, conversation_id, ref, created_ms FROM chat_recent "
                      "WHERE (user_id, seq) <= ($1, $2) ORDER BY user_id, seq",
                      user, seq);
    if (rc == STORE_OK && any) rc = run_upto(db, "DELETE FROM chat_recent WHERE (user_id, seq) <= ($1, $2)", user, seq);
    if (rc == STORE_OK) rc = store_commit(db);
    else store_rollback(db);
    if (rc != STORE_OK) *more = false;
    return rc;
}
