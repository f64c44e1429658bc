/* chat_http.h -- the chat over HTTP and WebSocket (all under /v1, bearer
 * auth unless said):
 *     POST   /conversations                      direct (201 once, then 200) or group (201)
 *     GET    /conversations, /conversations/{id}
 *     POST   /conversations/{id}/members         {"users":[...]} (group admin)
 *     DELETE /conversations/{id}/members/{user}  admin: anyone; a member: itself
 *     POST   /conversations/{id}/messages        {"client_msg_id","text"}
 *     GET    /conversations/{id}/messages        ?before_seq=&after_seq=&limit=
 *     POST   /conversations/{id}/read            {"up_to":SEQ}
 *     GET    /sync?since=N&limit=M               the user's changes after N
 *     GET    /unread                             {"total","conversations"}
 *     POST   /ws/tickets                         a single-use ticket for browsers
 *     GET    /ws                                 the WebSocket (Bearer or ?ticket=)
 *     GET    /users/{id}/presence                for users who share a conversation
 *     GET    /admin/stats                        (admin) users registered and online
 * The chat owns the WebSocket gateway: the hello frame, the coalesced
 * sync frames, presence. */
#ifndef CHIME_CHAT_HTTP_H
#define CHIME_CHAT_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include "chat/chat_tail.h"
#include "deliver/push.h"
#include "http/server.h"
#include "cluster/idgen.h"
#include "http/ws.h"
#include "store/store_pool.h"

typedef struct chat_opts {
    store_pool *dbs;            /* borrowed: the loops' connections */
    const char *db_url;         /* the writer opens its own */
    const char *node_id;        /* borrowed: presence rows are this node's */
    int64_t group_max_members;  /* --group-max-members */
    int64_t retention_days;     /* --sync-retention-days */
    int64_t rate;               /* --chat-rate: messages a user may send a second */
    int64_t lease_ttl_ms;       /* a node whose heartbeat is older is dead */
} chat_opts;

typedef struct chat_service chat_service;

/* The routes' context; nothing runs yet. NULL when out of memory. */
chat_service *chat_new(const chat_opts *o);
/* Each user's newest changes, as the writer keeps them (chat_tail.h);
 * NULL when none are kept (PostgreSQL). */
chat_tail *chat_tail_of(chat_service *c);
/* The hub's events (arg: c), to make the hub with. */
ws_hub_events chat_ws_events(chat_service *c);
/* Borrows the hub the gateway serves and the push channel it tells. */
void chat_attach(chat_service *c, ws_hub *hub, push *p);
void chat_register(chat_service *c, http_server *s);
/* Whether the user has a WebSocket open on any live node (this node's
 * at once; others' as of the presence ticker's last look, a second ago at
 * most). Any thread. */
bool chat_online_anywhere(chat_service *c, int64_t user);

/* Starts the writer and the presence ticker; the writer takes new
 * messages' ids from ids (borrowed; NULL: random ids). 0, or -1 (logged). */
int chat_start(chat_service *c, idgen *ids);
/* Stops them (after the HTTP server: no request may submit any more). */
void chat_stop(chat_service *c);
void chat_free(chat_service *c);

#endif
