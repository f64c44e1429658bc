/* chat_writer.h -- the thread that commits the chat's writes in batches
 * (see chat_writer.c for why). */
#ifndef CHIME_CHAT_WRITER_H
#define CHIME_CHAT_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/chat.h"
#include "cluster/idgen.h"

typedef enum chat_op_kind {
    CHAT_OP_DIRECT,   /* me, other */
    CHAT_OP_GROUP,    /* me, title, users */
    CHAT_OP_ADD,      /* me, conv, users */
    CHAT_OP_REMOVE,   /* me, conv, other (the member) */
    CHAT_OP_SEND,     /* me, conv, client_id, text */
    CHAT_OP_READ,     /* me, conv, up_to */
    CHAT_OP_PRESENCE, /* me online/offline on node */
    CHAT_OP_CONNS,    /* node's connection count (up_to) */
} chat_op_kind;

/* One request's write. Made by its submitter; owned by the writer from
 * chat_writer_submit until it calls finish (after the commit: on
 * PostgreSQL on the writer's thread, on SQLite on the syncer's once the
 * WAL is synced), which owns it from then on (and frees it,
 * chat_op_free). */
typedef struct chat_op {
    struct chat_op *next;
    chat_op_kind kind;
    int64_t me, conv, other, up_to;
    int64_t conn;       /* a send: the sender's WebSocket (Chime-Connection), or 0 */
    int64_t *users;     /* owned */
    size_t nusers;
    char *text, *client_id, *title; /* owned */
    bool online;
    char node[64];
    chat_result res;    /* filled by the writer */
    void (*finish)(struct chat_op *op);
    void *ctx;          /* the submitter's */
} chat_op;

void chat_op_free(chat_op *op);

typedef struct chat_writer_opts {
    const char *db_url;
    int64_t group_max_members;
    idgen *ids; /* borrowed: new messages' ids (NULL: random ones) */
    chat_tail *tail; /* borrowed: where committed changes go (NULL: none kept) */
    /* After each commit, on the writer's thread: first, for each send
     * that named its sender's WebSocket, that the connection knows the
     * sender's new number from the 201 (on_told); then the users whose
     * sequences moved, with their new numbers and unread counts
     * (on_commit; a user may repeat, the highest number newest). */
    void (*on_told)(void *arg, int64_t user, int64_t conn, int64_t seq);
    void (*on_commit)(void *arg, const chat_news *news, size_t n);
    void *arg;
} chat_writer_opts;

typedef struct chat_writer chat_writer;

chat_writer *chat_writer_new(const chat_writer_opts *o);
/* Opens its connection and starts the thread. 0, or -1 (logged). */
int chat_writer_start(chat_writer *w);
/* Queues op. -1 when the writer is not running (op stays the caller's). */
int chat_writer_submit(chat_writer *w, chat_op *op);
/* Runs what is queued, stops the thread, frees. */
void chat_writer_free(chat_writer *w);

#endif
