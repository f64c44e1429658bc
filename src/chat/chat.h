/* chat.h -- conversations, messages and multi-device sync (the WeChat
 * notes: push a count, pull the content).
 *
 * The model:
 *  - Every user has one gap-free sequence (chat_seqs.seq). Every change
 *    the user must see -- a message in any of their conversations (their
 *    own from another device too), being added or removed, a read mark
 *    moved on another device -- takes the user's next number and is one
 *    row of chat_changes (user, seq), or, for a while, of chat_recent
 *    (chat_settle.c). A device syncs by "everything after
 *    seq N", never by time. The numbers are handed out under the row lock
 *    of the user's chat_seqs row, in the writing transaction, so a user's
 *    changes commit in seq order: whoever reads seq N+1 can read N.
 *  - Groups fan out on write: a message is one messages row plus one
 *    change row per member, written in the sender's transaction.
 *  - A conversation's messages have their own numbers (1, 2, 3...);
 *    unread = the conversation's last number minus the member's read mark
 *    (an offset, never a counter). A user's total over all conversations
 *    is kept beside their number (chat_seqs.unread), moved by the writes
 *    that move those offsets in the same statement as the number, so the
 *    writer knows both for the WebSocket frame and no one reads them
 *    again; GET /v1/unread still sums the offsets.
 *  - A removed member keeps the history up to its removal (left_seq) and
 *    gets nothing after; an added member sees messages sent after it
 *    joined (joined_seq).
 *  - Nothing acknowledged is lost: every write commits (durably) before
 *    its answer. Writes go through one writer thread per node
 *    (chat_writer.c), which commits many requests' writes in one
 *    transaction: one fsync for a batch of messages.
 *
 * Changes older than --sync-retention-days are pruned by the chat.cleanup
 * job; a cursor before what is kept gets 410 sync_too_old and the device
 * starts again from GET /v1/conversations. */
#ifndef CHIME_CHAT_H
#define CHIME_CHAT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/chat_tail.h"
#include "http/jsonw.h"
#include "store/store.h"

#define CHAT_TEXT_MAX 8000
#define CHAT_TITLE_MAX 200
#define CHAT_CLIENT_ID_MAX 128
#define CHAT_PAGE_DEFAULT 50
#define CHAT_PAGE_MAX 200
#define CHAT_SYNC_DEFAULT 100
#define CHAT_SYNC_MAX 1000

enum { CHAT_OK = 0, CHAT_NOT_FOUND = 1, CHAT_ERROR = -1 };

/* ---- writes (chat_ops.c), each inside the writer's open transaction ---- */

/* A user's number moved to seq; unread is their unread count with it;
 * part: the change as chat_tail keeps it (borrowed from the result that
 * owns it), or NULL when the writer keeps no tail or could not make it. */
typedef struct chat_news {
    int64_t user, seq, unread;
    chat_part *part;
} chat_news;

/* What a write answers, and whom it tells. */
typedef struct chat_result {
    int status;          /* HTTP status */
    const char *code;    /* error code, when status >= 400 */
    char field[32];
    char message[200];
    json_t *body;        /* the answer's JSON (owned), when status < 400 */
    char *rendered;      /* or that JSON as text already (owned), for the
                          * 201 of a send: made on the writer's thread with
                          * jsonw, it costs a tenth of a jansson tree built
                          * there and dumped on the loop */
    size_t rendered_len;
    chat_news *signal;   /* users whose sequence moved (owned) */
    size_t nsignal, signal_cap;
    int64_t self;        /* a fan-out's writer: whose change number... */
    int64_t self_seq;    /* ...is kept here (0: none) */
    bool want_parts;     /* set by the writer when it keeps a tail: each
                          * change is rendered for it (chat_tail.h) */
    chat_part **parts;   /* those renderings (owned: one reference each) */
    size_t nparts, parts_cap;
    chat_part *part;     /* the change being fanned out's (borrowed) */
    size_t nrecent;      /* changes written to chat_recent (chat_settle.c) */
} chat_result;

void chat_result_free(chat_result *r);
/* Sets an error answer; returns STORE_OK (a refusal is not a failure of
 * the transaction). */
int chat_refuse(chat_result *r, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

typedef struct chat_limits {
    int64_t group_max_members;
} chat_limits;

/* POST /v1/conversations: a direct conversation with other (the same
 * one for the pair, 200 after the first 201), or a group with members
 * (the creator is its admin). A group's client_id (NULL: none) makes a
 * retried create the same group: a repeat by the same creator answers
 * 200 with the original, as a retried send does. */
int chat_create_direct(store *db, int64_t me, int64_t other, int64_t now, chat_result *r);
int chat_create_group(store *db, int64_t me, const char *title, const char *client_id, const int64_t *members,
                      size_t n, const chat_limits *lim, int64_t now, chat_result *r);
/* POST /v1/conversations/{id}/members (group admin) */
int chat_add_members(store *db, int64_t me, int64_t conv, const int64_t *users, size_t n, const chat_limits *lim,
                     int64_t now, chat_result *r);
/* DELETE /v1/conversations/{id}/members/{user} (admin: anyone; a member: itself) */
int chat_remove_member(store *db, int64_t me, int64_t conv, int64_t user, int64_t now, chat_result *r);
/* POST /v1/conversations/{id}/messages; a repeat of client_id answers 200
 * with the original. id: the new message's (unused by a repeat). */
int chat_send(store *db, int64_t me, int64_t conv, const char *client_id, const char *text, int64_t id,
              int64_t now, chat_result *r);
/* POST /v1/conversations/{id}/read: forward only. */
int chat_read(store *db, int64_t me, int64_t conv, int64_t up_to, int64_t now, chat_result *r);

/* ---- reads (chat_read.c), on a loop's connection ---- */

/* GET /v1/conversations (most recent activity first) or one (conv != 0). */
int chat_conversations(store *db, int64_t me, int64_t conv, json_t **out);
/* GET /v1/conversations/{id}/messages: before_seq/after_seq 0 when
 * absent (newest page). CHAT_NOT_FOUND when not a member. */
int chat_messages(store *db, int64_t me, int64_t conv, int64_t before, int64_t after, int limit, json_t **out);
/* GET /v1/sync: the user's sequence and what is pruned (*seq, *pruned_to:
 * 0 for a user with none) and, when since is within them (pruned_to <=
 * since <= seq; otherwise nothing is written and the caller answers 400
 * or 410), the changes after since as the answer's JSON into w
 * (jw_failed: out of memory). */
int chat_sync(store *db, int64_t me, int64_t since, int limit, int64_t *seq, int64_t *pruned_to, jsonw *w);
/* GET /v1/unread: unread messages in all, conversations with any. */
int chat_unread(store *db, int64_t me, int64_t *total, int64_t *conversations);
/* Seq and unread of many users at once (the WebSocket hello, and sync
 * frames of news from elsewhere): seq/unread get one value per user. */
int chat_seq_unread(store *db, const int64_t *users, size_t n, int64_t *seq, int64_t *unread);
/* Whether two users share a conversation (presence is shown to them). */
int chat_share(store *db, int64_t a, int64_t b, bool *shared);

/* A message as the API shows it, from columns at: conversation, seq, id,
 * sender, client id, text, sent. */
json_t *chat_message_json(store_stmt *st, int at);
/* The same, written into w. */
void chat_message_write(jsonw *w, store_stmt *st, int at);

/* A message's fields, for the writers below. */
typedef struct chat_msg {
    int64_t conv, seq, id, sender, sent_ms;
    const char *client_id, *text;
    size_t text_len;
} chat_msg;

/* A message's members (id ... sent) into w's open object: the one form
 * of a message in a pull, a 201 and the tail. */
void chat_message_members(jsonw *w, const chat_msg *m);
/* A change's members after its seq ("kind", "conversation_id", and the
 * message, read mark or member it names) into w's open object; m: the
 * message of a "message" change (NULL: gone, shown as null). */
void chat_change_members(jsonw *w, const char *kind, int64_t conv, int64_t ref, const chat_msg *m);

/* Adds the chat's schema steps (chat_schema.c) to the one list. */
int chat_schema_add(store_schema *s);

#endif
