/* webhooks_http.h -- a signed-in user's webhook endpoints:
 *     POST   /v1/me/webhooks        {url, secret} -> 201 {id, url, created}
 *     GET    /v1/me/webhooks        -> 200 {"items": [{id, url, created}]}
 *     DELETE /v1/me/webhooks/{id}   -> 204
 *     POST   /v1/me/webhooks/{id}/test -> 200 {delivery, delivered, status, error}
 *            sends a signed {"type":"ping"} now and reports how it went
 * The secret is write-only: it signs deliveries and is never returned. */
#ifndef CHIME_NOTIFY_WEBHOOKS_HTTP_H
#define CHIME_NOTIFY_WEBHOOKS_HTTP_H

#include "http/server.h"
#include "store/store_pool.h"

struct channels;

#define WEBHOOKS_PER_USER 10
#define WEBHOOKS_SECRET_MIN 8
#define WEBHOOKS_SECRET_MAX 256

/* The routes' context; the caller owns it for the server's life. */
typedef struct webhooks_http {
    store_pool *dbs;           /* borrowed */
    struct channels *channels; /* borrowed: test sends go through it */
    int tests;                 /* test sends holding a worker now (__atomic) */
} webhooks_http;

void webhooks_http_register(webhooks_http *w, http_server *s);

#endif
