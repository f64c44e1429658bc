/* notify_queue.c -- the timer heap and the table of sends in flight (see
 * notify_queue.h). Kept apart from the engine, which holds them under its
 * mu, so that their invariants can be tested alone; nothing here locks,
 * allocates per item, or knows the database. */
#include "notify/notify_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

bool notify_item_buf_add(notify_item_buf *b, const notify_item *it)
{
    if (b->n == b->cap) {
        notify_item *grown = base_grow(b->v, sizeof *grown, &b->cap);
        if (!grown) return false;
        b->v = grown;
    }
    b->v[b->n++] = *it;
    return true;
}

/* ---- the timer heap ------------------------------------------------------ */

static void heap_swap(notify_item *h, size_t a, size_t b)
{
    notify_item t = h[a];
    h[a] = h[b];
    h[b] = t;
}

bool notify_heap_push(notify_heap *h, const notify_item *it)
{
    if (h->n == h->cap) {
        notify_item *grown = base_grow(h->v, sizeof *grown, &h->cap);
        if (!grown) return false;
        h->v = grown;
    }
    h->v[h->n++] = *it;
    size_t i = h->n - 1;
    while (i > 0 && h->v[(i - 1) / 2].due_ms > h->v[i].due_ms) {
        heap_swap(h->v, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return true;
}

notify_item notify_heap_pop(notify_heap *h)
{
    notify_item top = h->v[0];
    h->v[0] = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->v[l].due_ms < h->v[m].due_ms) m = l;
        if (r < h->n && h->v[r].due_ms < h->v[m].due_ms) m = r;
        if (m == i) break;
        heap_swap(h->v, i, m);
        i = m;
    }
    return top;
}

/* Below index i (see notify_heap_due_count). */
static size_t heap_due_from(const notify_heap *h, size_t i, int64_t now, size_t cap)
{
    if (i >= h->n || cap == 0 || h->v[i].due_ms > now) return 0;
    size_t n = 1;
    n += heap_due_from(h, 2 * i + 1, now, cap - n);
    n += heap_due_from(h, 2 * i + 2, now, cap - n);
    return n;
}

size_t notify_heap_due_count(const notify_heap *h, int64_t now, size_t cap)
{
    return heap_due_from(h, 0, now, cap);
}

/* The hold walk below index i. In-app items are left to lapse: a second
 * delivery of one finds it done and writes nothing, so pushing its hold
 * would cost as much as the takeover it saves -- and after a restart,
 * under SQLite's one writer, those writes slowed the backlog's drain.
 * The engine's every item's hold is at least its due time plus
 * NOTIFY_HOLD_MS (claims and polls set it so), so only items due before
 * hold_before - NOTIFY_HOLD_MS (its due_before) can be among them, and
 * the heap's order cuts the walk there. */
static void heap_holds_from(notify_heap *h, size_t i, int64_t due_before, int64_t hold_before, int64_t held_to,
                            size_t max, notify_item_buf *out)
{
    if (i >= h->n || out->n >= max || h->v[i].due_ms >= due_before) return;
    if (h->v[i].channel != NOTIFY_CHAN_INAPP && h->v[i].hold_ms < hold_before) {
        if (!notify_item_buf_add(out, &h->v[i])) return;
        h->v[i].hold_ms = held_to;
    }
    heap_holds_from(h, 2 * i + 1, due_before, hold_before, held_to, max, out);
    heap_holds_from(h, 2 * i + 2, due_before, hold_before, held_to, max, out);
}

void notify_heap_holds_near(notify_heap *h, int64_t due_before, int64_t hold_before, int64_t held_to, size_t max,
                            notify_item_buf *out)
{
    heap_holds_from(h, 0, due_before, hold_before, held_to, max, out);
}

void notify_heap_free(notify_heap *h)
{
    free(h->v);
    *h = (notify_heap){0};
}

/* ---- sends in flight ----------------------------------------------------- */

bool notify_flights_init(notify_flights *t, size_t bound)
{
    size_t slots = 16;
    while (slots < 4 * bound) slots *= 2;
    *t = (notify_flights){.v = calloc(slots, sizeof *t->v), .mask = slots - 1};
    return t->v != NULL;
}

void notify_flights_free(notify_flights *t)
{
    free(t->v);
    *t = (notify_flights){0};
}

static size_t flight_home(const notify_flights *t, const char *id)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = id; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)h & t->mask;
}

static size_t flight_slot(const notify_flights *t, const char *id)
{
    size_t i = flight_home(t, id);
    while (t->v[i].id[0] && strcmp(t->v[i].id, id) != 0) i = (i + 1) & t->mask;
    return i;
}

notify_flight *notify_flights_slot(notify_flights *t, const char *id)
{
    return &t->v[flight_slot(t, id)];
}

/* Should answers pile up unrecorded until the table is three quarters
 * full (it has room for four times the bound it was made for), there is
 * no room: the engine's row then stays pending and is retried after its
 * hold, rather than probing a full table forever. */
bool notify_flights_take(notify_flights *t, const char *id, int64_t hold_ms)
{
    if (t->n * 4 >= (t->mask + 1) * 3) return false;
    notify_flight *f = &t->v[flight_slot(t, id)];
    if (f->id[0]) return false;
    snprintf(f->id, sizeof f->id, "%s", id);
    f->hold_ms = hold_ms;
    t->n++;
    return true;
}

/* Moves back the entries after the freed slot that probed past it
 * (deletion without tombstones). */
void notify_flights_drop(notify_flights *t, const char *id)
{
    size_t i = flight_slot(t, id);
    if (!t->v[i].id[0]) return;
    t->n--;
    for (size_t j = (i + 1) & t->mask; t->v[j].id[0]; j = (j + 1) & t->mask) {
        size_t home = flight_home(t, t->v[j].id);
        /* j's entry may move to i if its home is not in (i, j] (cyclically). */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            t->v[i] = t->v[j];
            i = j;
        }
    }
    t->v[i].id[0] = '\0';
}

void notify_flights_holds_near(notify_flights *t, int64_t hold_before, int64_t held_to, notify_item_buf *out)
{
    for (size_t i = 0; i <= t->mask; i++) {
        notify_flight *f = &t->v[i];
        if (!f->id[0] || f->hold_ms >= hold_before) continue;
        notify_item it = {.hold_ms = held_to};
        snprintf(it.id, sizeof it.id, "%s", f->id);
        if (!notify_item_buf_add(out, &it)) return;
        f->hold_ms = held_to;
    }
}
