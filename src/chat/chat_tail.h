/* chat_tail.h -- each user's newest changes, kept in memory as the chat
 * writer committed them, so that the pull a push sets off is answered
 * without the database.
 *
 * Why: every message is pulled by every member's devices right after its
 * frame, and on SQLite each of those pulls read its pages again (SQLite
 * empties a reader's page cache whenever another connection commits):
 * 2.6 pread calls a 1:1 message at 5,000/s, and for a group message 500
 * pulls over 500 users' places in chat_changes, after the commit that
 * wrote them (bench/RESULTS.md, chat).
 *
 * What it holds: for a user written to in the last CHAT_TAIL_IDLE_MS, the
 * changes lo..hi (at most CHAT_TAIL_KEEP, gap-free), hi being the user's
 * newest number. Each change is kept as its JSON members without the
 * seq (a chat_part), one copy shared by every member of a group message.
 * A pull "after since" is answered from here when lo - 1 <= since <= hi;
 * anything else goes to the database, which stays the truth.
 *
 * Why the tail can be trusted: every change row is written by the chat
 * writer (chat_ops.c), which reports each one's user and number (the
 * result's signals) and puts them here after the commit, before any
 * device is told; a change the writer has no part for makes the tail
 * forget the user (chat_tail_put with NULL), so a gap is never served.
 * That holds on SQLite, which has one node (one process writes the
 * file); on PostgreSQL other nodes write too, and no tail is kept. The
 * cleanup job's prune (the one other writer of chat_changes and
 * chat_recent; the writer's own settles move rows without changing
 * them) makes it forget each user whose changes it cut.
 *
 * Thread-safe: the writer puts, the loops read, under per-shard locks. */
#ifndef CHIME_CHAT_TAIL_H
#define CHIME_CHAT_TAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/jsonw.h"

#define CHAT_TAIL_KEEP 8          /* changes kept a user */
#define CHAT_TAIL_IDLE_MS 10000   /* a user not written to this long is dropped */
#define CHAT_TAIL_MAX_BYTES (64 << 20)

/* A change as JSON members ("kind":...,"conversation_id":...), without
 * its seq; reference-counted, shared by the users it went to. */
typedef struct chat_part chat_part;

/* A part holding a copy of the members; NULL when out of memory. One
 * reference, the caller's. */
chat_part *chat_part_new(const char *members, size_t len);
void chat_part_release(chat_part *p); /* NULL: nothing */

typedef struct chat_tail chat_tail;

chat_tail *chat_tail_new(void);
void chat_tail_free(chat_tail *t);
/* After a commit, for each change in the order of its user's numbers:
 * user's change number seq is p (borrowed: the tail takes its own
 * reference), or NULL: a change the tail cannot show, so it forgets the
 * user. now_ms: when (for chat_tail_sweep). */
void chat_tail_put(chat_tail *t, int64_t user, int64_t seq, chat_part *p, int64_t now_ms);
/* Forgets the user (their old changes were pruned). */
void chat_tail_forget(chat_tail *t, int64_t user);
/* Drops the users not written to since now_ms - CHAT_TAIL_IDLE_MS. */
void chat_tail_sweep(chat_tail *t, int64_t now_ms);
/* GET /v1/sync from memory: when the tail holds everything after since
 * (see above), writes the answer as chat_sync would into w and returns
 * true; false: ask the database (w untouched). */
bool chat_tail_sync(chat_tail *t, int64_t user, int64_t since, int limit, jsonw *w);

#endif
