/* router.c -- segment-wise matching of paths against route patterns. A
 * linear scan: with a few dozen routes it costs less than a hash lookup of
 * the decoded path would. */
#include "http/router.h"

#include <string.h>

int router_add(router *rt, unsigned methods, const char *pattern, http_handler_fn fn, void *arg, unsigned flags)
{
    if (rt->nroutes == ROUTER_MAX_ROUTES || pattern[0] != '/' || strlen(pattern) >= 128) return -1;
    router_route *r = &rt->routes[rt->nroutes];
    memset(r, 0, sizeof *r);
    strcpy(r->pattern, pattern);
    r->methods = methods;
    r->flags = flags;
    r->fn = fn;
    r->arg = arg;
    const char *p = r->pattern + 1;
    int nparams = 0;
    while (*p) {
        if (r->nseg == ROUTER_MAX_SEGMENTS) return -1;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool param = len >= 2 && p[0] == '{' && p[len - 1] == '}';
        if (param && ++nparams > HTTP_MAX_PARAMS) return -1;
        r->seg[r->nseg].ptr = p;
        r->seg[r->nseg].len = len;
        r->seg[r->nseg].param = param;
        r->nseg++;
        p += len;
        if (*p == '/') p++;
    }
    rt->nroutes++;
    return 0;
}

/* Splits path into segments; a trailing slash is not a segment. */
static int split(const char *path, size_t len, http_str *segs)
{
    int n = 0;
    size_t i = 1;
    if (len == 0 || path[0] != '/') return -1;
    while (i < len) {
        size_t j = i;
        while (j < len && path[j] != '/') j++;
        if (j == i) return -1; /* empty segment: "//" */
        if (n == ROUTER_MAX_SEGMENTS) return -1;
        segs[n].ptr = path + i;
        segs[n].len = j - i;
        n++;
        i = j + 1;
    }
    return n;
}

static bool route_fits(const router_route *rt, const http_str *segs, int n)
{
    if (rt->nseg != n) return false;
    for (int i = 0; i < n; i++) {
        if (rt->seg[i].param) continue;
        if (rt->seg[i].len != segs[i].len || memcmp(rt->seg[i].ptr, segs[i].ptr, segs[i].len) != 0)
            return false;
    }
    return true;
}

int router_match(const router *rt, http_method m, const char *path, size_t len, http_req *r,
                 unsigned *allowed)
{
    http_str segs[ROUTER_MAX_SEGMENTS];
    int n = split(path, len, segs);
    *allowed = 0;
    if (n < 0) return -1;
    for (int i = 0; i < rt->nroutes; i++) {
        const router_route *route = &rt->routes[i];
        if (!route_fits(route, segs, n)) continue;
        unsigned methods = route->methods | (route->methods & HTTP_GET ? HTTP_HEAD : 0);
        if (!(methods & m)) {
            *allowed |= methods;
            continue;
        }
        r->nparams = 0;
        for (int k = 0; k < n; k++)
            if (route->seg[k].param) r->params[r->nparams++] = segs[k];
        return i;
    }
    return *allowed ? -2 : -1;
}
