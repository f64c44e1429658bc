/* users_app_http.h -- app passwords over HTTP (POST, GET and DELETE
 * /v1/me/app-passwords) and the HTTP Basic check behind HTTP_ROUTE_BASIC:
 * the account's email and one of its app passwords, never the account
 * password, with failures rate limited like sign-ins. users_http_register
 * adds them. */
#ifndef CHIME_USERS_APP_HTTP_H
#define CHIME_USERS_APP_HTTP_H

#include <stddef.h>

#include "http/server.h"
#include "users/users_http.h"

/* o must outlive the server. */
void users_app_http_register(const users_http_opts *o, http_server *s);

/* The limiter's keys of a request: "<prefix>account:<email, lower case>"
 * and "<prefix>addr:<client address>" (users_http.c). */
void users_limit_keys(const http_req *r, const char *prefix, const char *email, char *account, size_t asize,
                      char *addr, size_t bsize);

#endif
