/* framing.h -- request framing checks and the lingering close (framing.c);
 * internal to src/http, used by server.c. */
#ifndef CHIME_HTTP_FRAMING_H
#define CHIME_HTTP_FRAMING_H

#include <h2o.h>
#include <stdbool.h>

typedef enum {
    HTTP_FRAMING_OK,
    HTTP_FRAMING_CLOSE, /* serve it, then close the connection */
    HTTP_FRAMING_BAD,   /* 400 naming *field, *why; then close */
} http_framing;

/* Looks at the request head as the client sent it (HTTP/1 only). */
http_framing http_framing_check(h2o_req_t *req, const char **field, const char **why);

/* What a refused client may still send is read and thrown away for at most
 * this many bytes, this long in all, and this long in silence. At most
 * HTTP_LINGER_MAX_CONNS connections linger per loop; beyond, h2o's plain
 * close stands. */
#define HTTP_LINGER_MAX_BYTES ((size_t)64 << 20)
#define HTTP_LINGER_MAX_MS 10000
#define HTTP_LINGER_IDLE_MS 2000
#define HTTP_LINGER_MAX_CONNS 256

typedef struct http_linger_loop http_linger_loop;
http_linger_loop *http_linger_loop_new(h2o_evloop_t *loop);
/* Closes what still lingers. */
void http_linger_loop_free(http_linger_loop *l);
/* Call before the response that ends req's connection is sent: once h2o
 * has written it and closed, the connection lingers as described. */
void http_linger_arm(http_linger_loop *l, h2o_req_t *req);

#endif
