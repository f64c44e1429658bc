/* users_http.h -- sign-up, sign-in, sign-out, /v1/me, and the checks the
 * server runs on routes flagged HTTP_ROUTE_AUTH (a valid bearer token) and
 * HTTP_ROUTE_ADMIN (the admin flag, or --admin-email). */
#ifndef CHIME_USERS_HTTP_H
#define CHIME_USERS_HTTP_H

#include <stdint.h>

#include "http/server.h"
#include "cluster/bus.h"
#include "store/store_pool.h"
#include "users/users_sessions.h"

typedef struct users_http_opts {
    store_pool *dbs;          /* borrowed: one connection per loop */
    int64_t session_ttl_s;    /* --session-ttl */
    int64_t signin_limit;     /* --signin-limit */
    int64_t signin_ip_limit;  /* --signin-ip-limit */
    int64_t signin_window_s;  /* --signin-window */
    int64_t password_ops;     /* --password-ops */
    int64_t password_mem_kib; /* --password-mem */
    const char *admin_email;  /* --admin-email ("" for none); borrowed */
    /* After a successful sign-in (answered), on its loop with its
     * connection: other rooms learn the user is active. May be NULL. */
    void (*on_signin)(void *arg, store *db, int64_t user);
    void *on_signin_arg;
    users_sessions *sessions; /* borrowed: the tokens checked lately (NULL: none) */
} users_http_opts;

typedef struct users_http users_http;

/* Hashes a random password for the sign-ins of unknown emails to verify
 * against (so they take as long as real ones): call before threads start.
 * NULL when out of memory. */
users_http *users_http_new(const users_http_opts *o);
void users_http_free(users_http *u);
/* Adds the routes and installs the AUTH and ADMIN checks. */
void users_http_register(users_http *u, http_server *s);
/* The user path segment i of r names: an id or an email (any case; an
 * escaped @ decoded), as a request body's user fields may name one.
 * USERS_OK with *id, USERS_NOT_FOUND (also for what does not decode or
 * is longer than an address can be), or USERS_ERROR. */
int users_http_path_user(store *db, const http_req *r, int i, int64_t *id);
/* The bus sign-outs are hinted on (borrowed; NULL or unset: none). Any
 * time, from any thread. */
void users_http_set_bus(users_http *u, bus *b);

#endif
