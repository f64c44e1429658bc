/* store_pool.c -- see store_pool.h. */
#include "store/store_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct store_pool {
    char *url;
    int n;
    store **conns;
};

store_pool *store_pool_new(const char *url, int n)
{
    store_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n > 0 ? n : 1;
    p->url = strdup(url);
    p->conns = calloc((size_t)p->n, sizeof *p->conns);
    if (!p->url || !p->conns) {
        store_pool_free(p);
        return NULL;
    }
    return p;
}

void store_pool_free(store_pool *p)
{
    if (!p) return;
    for (int i = 0; p->conns && i < p->n; i++) store_close(p->conns[i]);
    free(p->conns);
    free(p->url);
    free(p);
}

int store_pool_open(store_pool *p, int i, char *err, size_t errlen)
{
    if (i < 0 || i >= p->n) {
        snprintf(err, errlen, "no slot %d in a pool of %d", i, p->n);
        return -1;
    }
    if (p->conns[i]) return 0;
    p->conns[i] = store_open(p->url, err, errlen);
    return p->conns[i] ? 0 : -1;
}

void store_pool_close(store_pool *p, int i)
{
    if (i < 0 || i >= p->n) return;
    store_close(p->conns[i]);
    p->conns[i] = NULL;
}

store *store_pool_at(const store_pool *p, int i)
{
    return i >= 0 && i < p->n ? p->conns[i] : NULL;
}

int store_pool_size(const store_pool *p)
{
    return p->n;
}
