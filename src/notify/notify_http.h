/* notify_http.h -- the in-app inbox and the admin view of the outbox:
 *     GET  /v1/notifications?after=CURSOR&limit=N   the signed-in user's inbox
 *     POST /v1/notifications/read {"up_to": CURSOR} read marks up to a cursor
 *     POST /v1/notifications/{id}/read              one read mark
 *     GET  /v1/admin/deliveries?state=S             outbox rows (admin)
 */
#ifndef CHIME_NOTIFY_HTTP_H
#define CHIME_NOTIFY_HTTP_H

#include "http/server.h"
#include "store/store_pool.h"

/* The routes' context; the caller owns it for the server's life. */
typedef struct notify_http {
    store_pool *dbs; /* borrowed */
} notify_http;

void notify_http_register(notify_http *n, http_server *s);

#endif
