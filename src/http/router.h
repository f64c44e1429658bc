/* router.h -- method + path pattern matching for the server (internal). */
#ifndef CHIME_HTTP_ROUTER_H
#define CHIME_HTTP_ROUTER_H

#include "http/server.h"

#define ROUTER_MAX_ROUTES 256
#define ROUTER_MAX_SEGMENTS 8

typedef struct router_route {
    unsigned methods;
    unsigned flags;
    http_handler_fn fn;
    void *arg;
    char pattern[128];
    int nseg;
    struct { const char *ptr; size_t len; bool param; } seg[ROUTER_MAX_SEGMENTS];
} router_route;

typedef struct router {
    router_route routes[ROUTER_MAX_ROUTES];
    int nroutes;
} router;

int router_add(router *rt, unsigned methods, const char *pattern, http_handler_fn fn, void *arg, unsigned flags);
/* Returns the route index, -1 when no pattern matches (404), or -2 when a
 * pattern matches but not the method (405; *allowed gets the methods). */
int router_match(const router *rt, http_method m, const char *path, size_t len, http_req *r,
                 unsigned *allowed);

#endif
