/* chat_int.h -- what the chat's HTTP handlers (chat_http.c) and its
 * WebSocket gateway (chat_gateway.c) share. Not for other rooms. */
#ifndef CHIME_CHAT_INT_H
#define CHIME_CHAT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/rate.h"
#include "chat/chat.h"
#include "chat/chat_http.h"
#include "chat/chat_writer.h"

struct chat_service {
    chat_opts o;
    /* Set once started: the server listens before the chat starts (its
     * writer's commits unpark requests on running loops), so a request
     * can come first and is told to retry. Read from every loop. */
    _Atomic(chat_writer *) writer;
    /* Each user's newest changes (SQLite: one node writes; else NULL),
     * put by the writer, read by the pulls. */
    chat_tail *tail;
    ws_hub *hub;
    push *push;
    /* The presence ticker: writes this node's connection count. */
    pthread_t ticker;
    bool ticker_started, stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Users online on other live nodes (sorted), as the ticker last read
     * them; under mu. */
    int64_t *remote;
    size_t nremote;
    /* Send budgets: rate a second, twice that in a burst. */
    rate_limiter *sends;
};

store *chat_db(chat_service *c, int loop);
/* Submits op and parks the request until the writer finishes it; the
 * answer is op's result. Answers 503 itself when it cannot. */
void chat_submit(chat_service *c, http_req *r, chat_op *op);
/* Presence: queued to the writer (no request waits). */
void chat_presence(chat_service *c, int64_t user, bool online);

/* The gateway's routes (chat_gateway.c). */
void chat_gateway_register(chat_service *c, http_server *s);
int chat_gateway_start(chat_service *c);
void chat_gateway_stop(chat_service *c);

#endif
