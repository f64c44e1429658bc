/* store_pool.h -- one database connection per event loop.
 *
 * A connection belongs to one thread (store.h), and the HTTP server runs a
 * handler on the loop thread that accepted it; so each loop gets its own
 * connection, opened and closed on that loop's own thread, and a handler
 * reaches it by its loop's index: store_pool_at(pool, r->loop). The pool
 * is made by the wiring (app.c) and borrowed by every domain's handlers;
 * no domain opens connections of its own for requests. */
#ifndef CHIME_STORE_POOL_H
#define CHIME_STORE_POOL_H

#include <stddef.h>

#include "store/store.h"

typedef struct store_pool store_pool;

/* n slots for url, none open yet. NULL when out of memory. */
store_pool *store_pool_new(const char *url, int n);
/* Closes whatever is still open. */
void store_pool_free(store_pool *p);
/* Opens slot i (call on the thread that will use it). 0, or -1 with a
 * message in err. */
int store_pool_open(store_pool *p, int i, char *err, size_t errlen);
void store_pool_close(store_pool *p, int i);
/* Slot i's connection (NULL when not open). */
store *store_pool_at(const store_pool *p, int i);
int store_pool_size(const store_pool *p);

#endif
