/* feed_memo.c -- see feed_unread_memo in feed.h. Direct-mapped by user:
 * a slot holds the last user that hashed to it, so memory is fixed and a
 * miss costs only the count it would have cost anyway. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "feed/feed.h"

#define STRIPES 64 /* a power of two */
#define SEEN 4     /* connections a slot remembers (one per event loop) */

typedef struct memo_slot {
    int64_t user; /* 0: empty */
    feed_unread_key key;
    int64_t count, active_until;
    feed_unread_seen seen[SEEN];
    unsigned next_seen; /* the one to replace next */
} memo_slot;

struct feed_unread_memo {
    memo_slot *slots;
    size_t mask;
    pthread_mutex_t locks[STRIPES];
};

feed_unread_memo *feed_unread_memo_new(size_t slots)
{
    feed_unread_memo *m = calloc(1, sizeof *m);
    size_t n = 1;
    while (n < slots) n <<= 1;
    if (!m || !(m->slots = calloc(n, sizeof *m->slots))) {
        free(m);
        return NULL;
    }
    m->mask = n - 1;
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&m->locks[i], NULL);
    return m;
}

void feed_unread_memo_free(feed_unread_memo *m)
{
    if (!m) return;
    for (int i = 0; i < STRIPES; i++) pthread_mutex_destroy(&m->locks[i]);
    free(m->slots);
    free(m);
}

/* User ids are random 63-bit values (base_id_new), so their low bits
 * already spread; a multiply mixes in the rest for ids that are not. */
static size_t slot_of(const feed_unread_memo *m, int64_t user)
{
    return (size_t)(((uint64_t)user * 0x9E3779B97F4A7C15ULL) >> 20) & m->mask;
}

static bool key_equal(const feed_unread_key *a, const feed_unread_key *b)
{
    return a->home_read == b->home_read && a->trimmed_below == b->trimmed_below && a->tl_version == b->tl_version &&
           a->newest_pushed == b->newest_pushed && a->watermark == b->watermark &&
           a->newest_pulled == b->newest_pulled && a->deletes == b->deletes;
}

static bool stamp_equal(const store_stamp *a, const store_stamp *b)
{
    return a->others == b->others && a->mine == b->mine;
}

/* The slot's record of conn, or NULL. */
static feed_unread_seen *seen_of(memo_slot *s, const store *conn)
{
    for (int i = 0; i < SEEN; i++)
        if (s->seen[i].conn == conn) return &s->seen[i];
    return NULL;
}

static void seen_record(memo_slot *s, const feed_unread_seen *seen)
{
    if (!seen || !seen->conn) return;
    feed_unread_seen *at = seen_of(s, seen->conn);
    if (!at) at = &s->seen[s->next_seen++ % SEEN];
    *at = *seen;
}

bool feed_unread_memo_stamped(feed_unread_memo *m, int64_t user, const feed_unread_seen *seen, int64_t now,
                              int64_t *count)
{
    if (!m || !seen || !seen->conn) return false;
    size_t i = slot_of(m, user);
    pthread_mutex_t *lock = &m->locks[i & (STRIPES - 1)];
    pthread_mutex_lock(lock);
    memo_slot *s = &m->slots[i];
    const feed_unread_seen *at = s->user == user ? seen_of(s, seen->conn) : NULL;
    bool hit = at && stamp_equal(&at->stamp, &seen->stamp) && now < s->active_until;
    if (hit) *count = s->count;
    pthread_mutex_unlock(lock);
    return hit;
}

bool feed_unread_memo_get(feed_unread_memo *m, int64_t user, const feed_unread_key *k, const feed_unread_seen *seen,
                          int64_t active_until, int64_t *count)
{
    if (!m) return false;
    size_t i = slot_of(m, user);
    pthread_mutex_t *lock = &m->locks[i & (STRIPES - 1)];
    pthread_mutex_lock(lock);
    memo_slot *s = &m->slots[i];
    bool hit = s->user == user && key_equal(&s->key, k);
    if (hit) {
        *count = s->count;
        s->active_until = active_until;
        seen_record(s, seen);
    }
    pthread_mutex_unlock(lock);
    return hit;
}

void feed_unread_memo_put(feed_unread_memo *m, int64_t user, const feed_unread_key *k, int64_t count,
                          const feed_unread_seen *seen, int64_t active_until)
{
    if (!m) return;
    size_t i = slot_of(m, user);
    pthread_mutex_t *lock = &m->locks[i & (STRIPES - 1)];
    pthread_mutex_lock(lock);
    memo_slot *s = &m->slots[i];
    *s = (memo_slot){.user = user, .key = *k, .count = count, .active_until = active_until};
    seen_record(s, seen);
    pthread_mutex_unlock(lock);
}
