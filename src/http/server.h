/* server.h -- the HTTP server: routes, event loops, workers, metrics.
 *
 * One h2o event loop per thread, each with its own SO_REUSEPORT listener on
 * the same address. A handler runs on the loop thread that accepted the
 * connection, with that thread's application state (http_req.thread), so a
 * thread's database connection is never shared. Slow work goes to the worker
 * pool through http_defer. Nothing outside src/http sees an h2o type.
 */
#ifndef CHIME_HTTP_SERVER_H
#define CHIME_HTTP_SERVER_H

#include "http/http.h"

typedef void (*http_handler_fn)(http_req *r);

enum {
    HTTP_ROUTE_AUTH = 1 << 0,   /* needs a signed-in user */
    HTTP_ROUTE_SECRET = 1 << 1, /* the path holds a secret: logs show the route pattern, not the path */
};

typedef struct http_server http_server;

typedef struct http_server_opts {
    const char *listen;     /* HOST:PORT; port 0 picks a free port */
    int threads;            /* event loops, >= 1 */
    int workers;            /* background workers, >= 1 */
    size_t max_body;        /* bytes; larger bodies get 413 */
    const char *access_log; /* "-" stderr, "off", or a path */
    void *app;
    /* Per-loop application state, made on and owned by the loop thread. */
    void *(*thread_init)(void *app, int index);
    void (*thread_fini)(void *state);
    /* Sets r->user_id, or fills e (401) and returns -1. */
    int (*authenticate)(http_req *r, http_err *e);
} http_server_opts;

http_server *http_server_new(const http_server_opts *opts);
void http_server_free(http_server *s);

/* Registers a route. Patterns are literal segments and {name} segments:
 * "/v1/events/{id}/instances/{start}". Returns 0, or -1 when full/invalid. */
int http_route(http_server *s, unsigned methods, const char *pattern, http_handler_fn fn, unsigned flags);

/* A gauge for /metrics, read on a loop thread with that thread's state. */
typedef double (*http_gauge_fn)(void *thread_state);
int http_gauge(http_server *s, const char *name, const char *help, http_gauge_fn fn);

/* Binds and starts the loops; returns 0 or -1 (logged). The bound address
 * is logged as "listening on http://HOST:PORT". */
int http_server_start(http_server *s);
int http_server_port(const http_server *s);
/* Stops accepting, lets in-flight requests finish, joins the loops. Call
 * from any thread but a loop thread. */
void http_server_stop(http_server *s);

#endif
