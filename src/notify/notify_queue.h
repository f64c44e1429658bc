/* notify_queue.h -- the reminder engine's two in-memory structures: the
 * timer heap of claimed deliveries waiting for their due time, and the
 * table of webhook/email sends in flight.
 *
 * Standalone (no engine, no locks, no database) so that they can be tested
 * alone (tests/unit/test-notify-queue.c); the engine holds both under its
 * mu. Both are plain structs to embed, zeroed or initialised as said
 * below, and every call is cheap: no allocation except to grow. */
#ifndef CHIME_NOTIFY_QUEUE_H
#define CHIME_NOTIFY_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "notify/notify.h"

/* A delivery's channel as an item carries it (rows name it in text). */
typedef enum notify_chan { NOTIFY_CHAN_INAPP, NOTIFY_CHAN_WEBHOOK, NOTIFY_CHAN_EMAIL } notify_chan;

/* A claimed delivery row, as the engine holds it until it is delivered. */
typedef struct notify_item {
    int64_t due_ms;   /* when to deliver (the heap's key); a backlog goes oldest first */
    int64_t hold_ms;  /* its row's next_attempt_ms as this node set it: private until then */
    char id[NOTIFY_ID_LEN + 1];
    notify_chan channel;
} notify_item;

/* A growing array of items (batches; zero it to start, free v). */
typedef struct notify_item_buf {
    notify_item *v;
    size_t n, cap;
} notify_item_buf;

/* Appends a copy of *it; false when out of memory (b unchanged). */
bool notify_item_buf_add(notify_item_buf *b, const notify_item *it);

/* ---- the timer heap: a binary min-heap of items on due_ms ---------------
 * Zero it to start; notify_heap_free releases it. Items with equal due_ms
 * come out in no particular order. */
typedef struct notify_heap {
    notify_item *v; /* v[0] is due first; v[i]'s children are v[2i+1], v[2i+2] */
    size_t n, cap;
} notify_heap;

static inline size_t notify_heap_size(const notify_heap *h)
{
    return h->n;
}

/* The item due first, or NULL when the heap is empty. */
static inline const notify_item *notify_heap_peek(const notify_heap *h)
{
    return h->n ? &h->v[0] : NULL;
}

/* False when out of memory (the heap unchanged). */
bool notify_heap_push(notify_heap *h, const notify_item *it);
/* Removes and returns the item due first; the heap must not be empty. */
notify_item notify_heap_pop(notify_heap *h);
/* How many items are due by now (due_ms <= now), counting to cap at most:
 * a walk that leaves a subtree at its first item not due, so it costs
 * what it counts, not the heap's size. */
size_t notify_heap_due_count(const notify_heap *h, int64_t now, size_t cap);
/* The hold walk: webhook and email items due before due_before whose
 * hold_ms is before hold_before get hold_ms = held_to (in the heap) and a
 * copy of each, as it was, appended to out -- at most max in out
 * (counting what it held before). In-app items are left alone. */
void notify_heap_holds_near(notify_heap *h, int64_t due_before, int64_t hold_before, int64_t held_to, size_t max,
                            notify_item_buf *out);
void notify_heap_free(notify_heap *h);

/* ---- sends in flight: an open-addressing table of ids -------------------
 * A webhook or email send the engine is making, from the moment a worker
 * takes its item until the channel's answer is recorded. A second copy of
 * the same row (an outbox poll took it again while it waited) finds it
 * here and is not sent twice. hold_ms is the row's next_attempt_ms: sends
 * still out near it get it pushed back (notify_flights_holds_near), so no
 * other node's poll takes a row that is being sent. Linear probing, a
 * power-of-two size; deletion moves entries back (no tombstones). */
typedef struct notify_flight {
    char id[NOTIFY_ID_LEN + 1]; /* "" when free */
    int64_t hold_ms;
} notify_flight;

typedef struct notify_flights {
    notify_flight *v;
    size_t mask; /* table size - 1 */
    size_t n;    /* entries */
} notify_flights;

/* A table for up to bound entries: at least 16 slots and four times bound
 * (a power of two). False when out of memory. */
bool notify_flights_init(notify_flights *t, size_t bound);
void notify_flights_free(notify_flights *t);

static inline size_t notify_flights_count(const notify_flights *t)
{
    return t->n;
}

/* Takes id with its hold; false when id is already in (a send of it is
 * being made) or the table is three quarters full (see notify_queue.c). */
bool notify_flights_take(notify_flights *t, const char *id, int64_t hold_ms);
/* Frees id's slot, if it has one. */
void notify_flights_drop(notify_flights *t, const char *id);
/* The slot of id, or -- id not in -- the free slot where it would go. */
notify_flight *notify_flights_slot(notify_flights *t, const char *id);
/* Entries whose hold_ms is before hold_before get hold_ms = held_to, and
 * an item of each (id and the new hold only) appended to out; stops early
 * should out fail to grow. */
void notify_flights_holds_near(notify_flights *t, int64_t hold_before, int64_t held_to, notify_item_buf *out);

#endif
