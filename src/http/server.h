/* server.h -- the HTTP server: routes, event loops, workers, metrics.
 *
 * One h2o event loop per thread, each with its own SO_REUSEPORT listener on
 * the same address. A handler runs on the loop thread that accepted the
 * connection; http_req.loop says which (0 .. http_server_loops - 1), so a
 * domain keeps what each loop owns -- its database connection, its
 * WebSocket connections -- in an array indexed by it, and nothing of one
 * loop is touched by another. Slow work goes to the worker pool through
 * http_defer. Nothing outside src/http sees an h2o type.
 *
 * A route carries its own argument (the domain's context: what it needs
 * to answer, made and owned by the domain), handed to the handler with
 * the request, as Redis hands a command its client. Routes carry flags,
 * checked once here before any handler runs: AUTH (a signed-in user),
 * ADMIN (that user administers the server; implies AUTH) and SECRET (the
 * path holds a secret). Who is signed in and who is an admin is decided by
 * the hooks of http_server_set_auth (the users room installs them).
 */
#ifndef CHIME_HTTP_SERVER_H
#define CHIME_HTTP_SERVER_H

#include "http/http.h"

typedef void (*http_handler_fn)(http_req *r, void *arg);

enum {
    HTTP_ROUTE_AUTH = 1 << 0,   /* needs a signed-in user */
    HTTP_ROUTE_SECRET = 1 << 1, /* the path holds a secret: logs show the route pattern, not the path */
    HTTP_ROUTE_ADMIN = 1 << 2,  /* needs a signed-in admin (403 for other users) */
    HTTP_ROUTE_BASIC = 1 << 3,  /* needs a user named by HTTP Basic credentials (clients that
                                   cannot send bearer tokens: calendar apps) */
};

typedef struct http_server http_server;

typedef struct http_server_opts {
    const char *listen;     /* HOST:PORT; port 0 picks a free port */
    int threads;            /* event loops, >= 1 */
    int workers;            /* background workers, >= 1 */
    size_t max_body;        /* bytes; larger bodies get 413 */
    const char *access_log; /* "-" stderr, "off", or a path */
} http_server_opts;

http_server *http_server_new(const http_server_opts *opts);
void http_server_free(http_server *s);

/* Registers a route. Patterns are literal segments and {name} segments:
 * "/v1/events/{id}/instances/{start}". fn gets arg with every request.
 * Returns 0, or -1 when full/invalid. */
int http_route(http_server *s, unsigned methods, const char *pattern, http_handler_fn fn, void *arg,
               unsigned flags);

/* The handler of GET and HEAD requests that no route takes (the web
 * app's files), instead of a 404 or 405; it gets arg and answers as any
 * handler. Routes may match the path for other methods only (the CalDAV
 * root "/" takes PROPFIND and OPTIONS): when the fallback has nothing
 * there either, http_send_no_route answers what the router would have. */
void http_server_set_fallback(http_server *s, http_handler_fn fn, void *arg);
/* 405 with Allow when routes take other methods on the path, else 404. */
void http_send_no_route(http_req *r);

/* A guard against writes the whole node must stop taking (a failed disk):
 * every request whose method may write -- any but GET, HEAD, OPTIONS,
 * PROPFIND and REPORT -- asks refuse first (on its loop's thread), and
 * when it returns true the request is answered with e (which refuse
 * fills: a 503) before routing or authentication. */
typedef bool (*http_refuse_fn)(void *arg, int loop, http_err *e);
void http_server_set_write_guard(http_server *s, http_refuse_fn refuse, void *arg);

/* The checks behind HTTP_ROUTE_AUTH and HTTP_ROUTE_ADMIN: authenticate
 * sets r->user_id, or fills e (401, or 503) and returns -1; admin (run
 * after authenticate) returns 0 for an admin, or fills e (403, or 503)
 * and returns -1. */
typedef int (*http_auth_fn)(void *arg, http_req *r, http_err *e);
void http_server_set_auth(http_server *s, http_auth_fn authenticate, http_auth_fn admin, void *arg);
/* The AUTH check on demand, for a handler whose route may also be
 * reached another way (a WebSocket ticket): 0 with r->user_id set, or -1
 * with e filled. */
int http_authenticate(http_req *r, http_err *e);
/* The check behind HTTP_ROUTE_BASIC: sets r->user_id from the Basic
 * credentials, or fills e (401, 429 or 503) and returns -1. A 401 is sent
 * with a Basic challenge so that clients ask for the password. */
void http_server_set_basic_auth(http_server *s, http_auth_fn authenticate, void *arg);

/* Work each loop thread does when it starts (before it accepts anything)
 * and when it stops (after its last request): start hooks in the order
 * they were added, stop hooks in the reverse order. Add them before
 * http_server_start. Returns 0, or -1 when full. */
typedef void (*http_loop_fn)(void *arg, int loop);
int http_server_on_loop(http_server *s, http_loop_fn start, http_loop_fn stop, void *arg);
/* How many loops the server runs (opts.threads, at least 1). */
int http_server_loops(const http_server *s);

/* A gauge for /metrics, read on a loop thread (loop says which). */
typedef double (*http_gauge_fn)(void *arg, int loop);
int http_gauge(http_server *s, const char *name, const char *help, http_gauge_fn fn, void *arg);

/* Binds and starts the loops; returns 0 or -1 (logged). The bound address
 * is logged as "listening on http://HOST:PORT". */
int http_server_start(http_server *s);
int http_server_port(const http_server *s);
/* Stops accepting, lets in-flight requests finish, joins the loops. Call
 * from any thread but a loop thread. */
void http_server_stop(http_server *s);

#endif
