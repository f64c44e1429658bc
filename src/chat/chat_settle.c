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

/* One (user, seq) key of chat_recent into *k; *found false when the
 * statement gives none. */
static int key_of(store_stmt *st, chat_settle_at *k, bool *found)
{
    int rc = store_step(st);
    *found = rc == STORE_ROW;
    if (*found) {
        k->user = store_col_int64(st, 0);
        k->seq = store_col_int64(st, 1);
        rc = store_step(st); /* to its end: one row */
    }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* The last change the settle after *from moves: the CHAT_SETTLE_ROWS-th
 * after it in (user, seq) order, or the last of all (*wrap: the walk
 * starts over after this one); *any false when nothing comes after from. */
static int settle_bound(store *db, const chat_settle_at *from, chat_settle_at *to, bool *any, bool *wrap)
{
    store_stmt *st = store_prepare(db, "SELECT user_id, seq FROM chat_recent WHERE (user_id, seq) > ($1, $2) "
                                       "ORDER BY user_id, seq LIMIT 1 OFFSET $3");
    store_bind_int64(st, 1, from->user);
    store_bind_int64(st, 2, from->seq);
    store_bind_int64(st, 3, CHAT_SETTLE_ROWS - 1);
    int rc = key_of(st, to, any);
    *wrap = false;
    if (rc != STORE_OK || *any) return rc;
    st = store_prepare(db, "SELECT user_id, seq FROM chat_recent WHERE (user_id, seq) > ($1, $2) "
                           "ORDER BY user_id DESC, seq DESC LIMIT 1");
    store_bind_int64(st, 1, from->user);
    store_bind_int64(st, 2, from->seq);
    *wrap = true;
    return key_of(st, to, any);
}

static int run_range(store *db, const char *sql, const chat_settle_at *from, const chat_settle_at *to)
{
    store_stmt *st = store_prepare(db, sql);
    store_bind_int64(st, 1, from->user);
    store_bind_int64(st, 2, from->seq);
    store_bind_int64(st, 3, to->user);
    store_bind_int64(st, 4, to->seq);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* Moves the changes after from, up to and with to. */
static int settle_range(store *db, const chat_settle_at *from, const chat_settle_at *to)
{
    int rc = run_range(db,
                       "INSERT INTO chat_changes (user_id, seq, kind, conversation_id, ref, created_ms) "
                       "SELECT user_id, seq, kind, conversation_id, ref, created_ms FROM chat_recent "
                       "WHERE (user_id, seq) > ($1, $2) AND (user_id, seq) <= ($3, $4) ORDER BY user_id, seq",
                       from, to);
    if (rc == STORE_OK)
        rc = run_range(db, "DELETE FROM chat_recent WHERE (user_id, seq) > ($1, $2) AND (user_id, seq) <= ($3, $4)",
                       from, to);
    return rc;
}

int chat_settle(store *db, chat_settle_at *at, bool *more)
{
    chat_settle_at to = {0, 0}, start = {0, 0};
    bool any = false, wrap = false;
    int64_t left = 0;
    *more = false;
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = settle_bound(db, at, &to, &any, &wrap);
    if (rc == STORE_OK && !any && (at->user || at->seq)) { /* nothing after at: from the start */
        *at = start;
        rc = settle_bound(db, at, &to, &any, &wrap);
    }
    if (rc == STORE_OK && any) rc = settle_range(db, at, &to);
    if (rc == STORE_OK) rc = store_query_int64(db, "SELECT count(*) FROM (SELECT 1 FROM chat_recent LIMIT 1) x", &left);
    if (rc == STORE_ROW) rc = store_commit(db);
    else store_rollback(db);
    if (rc != STORE_OK) return rc;
    *at = any && !wrap ? to : start;
    *more = left > 0;
    return STORE_OK;
}
