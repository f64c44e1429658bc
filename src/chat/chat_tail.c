/* chat_tail.c -- each user's newest changes in memory (see chat_tail.h). */
#include "chat/chat_tail.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TAIL_SHARDS 64

struct chat_part {
    atomic_int refs;
    size_t len;
    char members[];
};

chat_part *chat_part_new(const char *members, size_t len)
{
    chat_part *p = malloc(sizeof *p + len);
    if (!p) return NULL;
    atomic_init(&p->refs, 1);
    p->len = len;
    memcpy(p->members, members, len);
    return p;
}

static chat_part *part_retain(chat_part *p)
{
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void chat_part_release(chat_part *p)
{
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) free(p);
}

/* A user's changes lo..hi: change s at ring[s % CHAT_TAIL_KEEP]. */
typedef struct tail_user {
    struct tail_user *next;
    int64_t user, lo, hi, written_ms;
    size_t bytes; /* what it holds, as counted in the tail's bytes */
    chat_part *ring[CHAT_TAIL_KEEP];
} tail_user;

typedef struct tail_shard {
    pthread_mutex_t mu;
    tail_user **buckets;
    size_t nbuckets, n; /* nbuckets: a power of two */
} tail_shard;

struct chat_tail {
    tail_shard shards[TAIL_SHARDS];
    atomic_size_t bytes;
};

static uint64_t mix(int64_t user)
{
    uint64_t x = (uint64_t)user;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static tail_shard *shard_of(chat_tail *t, int64_t user, uint64_t *h)
{
    *h = mix(user);
    return &t->shards[*h % TAIL_SHARDS];
}

chat_tail *chat_tail_new(void)
{
    chat_tail *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    for (int i = 0; i < TAIL_SHARDS; i++) pthread_mutex_init(&t->shards[i].mu, NULL);
    atomic_init(&t->bytes, 0);
    return t;
}

/* ---- one user ------------------------------------------------------------ */

static void user_empty(chat_tail *t, tail_user *u)
{
    for (int64_t s = u->lo; s <= u->hi && s > 0; s++) {
        chat_part_release(u->ring[s % CHAT_TAIL_KEEP]);
        u->ring[s % CHAT_TAIL_KEEP] = NULL;
    }
    atomic_fetch_sub(&t->bytes, u->bytes);
    u->bytes = 0;
    u->lo = 0;
    u->hi = -1;
}

/* Under the shard's lock: the user's slot in its bucket's chain. */
static tail_user **user_slot(tail_shard *sh, int64_t user, uint64_t h)
{
    if (!sh->nbuckets) return NULL;
    tail_user **at = &sh->buckets[(h / TAIL_SHARDS) & (sh->nbuckets - 1)];
    while (*at && (*at)->user != user) at = &(*at)->next;
    return at;
}

static void user_drop(chat_tail *t, tail_shard *sh, tail_user **slot)
{
    tail_user *u = *slot;
    *slot = u->next;
    user_empty(t, u);
    atomic_fetch_sub(&t->bytes, sizeof *u);
    free(u);
    sh->n--;
}

/* Doubles the buckets once they hold more users than buckets; a failed
 * growth leaves longer chains, nothing worse. */
static void shard_grow(tail_shard *sh)
{
    if (sh->n < sh->nbuckets) return;
    size_t n = sh->nbuckets ? 2 * sh->nbuckets : 16;
    tail_user **b = calloc(n, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < sh->nbuckets; i++)
        while (sh->buckets[i]) {
            tail_user *u = sh->buckets[i];
            sh->buckets[i] = u->next;
            tail_user **to = &b[(mix(u->user) / TAIL_SHARDS) & (n - 1)];
            u->next = *to;
            *to = u;
        }
    free(sh->buckets);
    sh->buckets = b;
    sh->nbuckets = n;
}

static tail_user *user_add(chat_tail *t, tail_shard *sh, int64_t user, uint64_t h)
{
    shard_grow(sh);
    tail_user **slot = user_slot(sh, user, h);
    tail_user *u = slot ? calloc(1, sizeof *u) : NULL;
    if (!u) return NULL;
    u->user = user;
    u->hi = -1;
    *slot = u;
    sh->n++;
    atomic_fetch_add(&t->bytes, sizeof *u);
    return u;
}

/* ---- the API --------------------------------------------------------------- */

void chat_tail_put(chat_tail *t, int64_t user, int64_t seq, chat_part *p, int64_t now_ms)
{
    uint64_t h;
    tail_shard *sh = shard_of(t, user, &h);
    pthread_mutex_lock(&sh->mu);
    tail_user **slot = user_slot(sh, user, h);
    tail_user *u = slot ? *slot : NULL;
    if (!p || seq < 1 || atomic_load(&t->bytes) > CHAT_TAIL_MAX_BYTES) {
        /* Nothing to show for this change, or no room: the user's pulls
         * go to the database until their changes come here again. */
        if (u) user_drop(t, sh, slot);
        pthread_mutex_unlock(&sh->mu);
        return;
    }
    if (!u) u = user_add(t, sh, user, h);
    if (u) {
        if (seq != u->hi + 1 || u->hi < u->lo) { /* new, or not the next: start again at seq */
            user_empty(t, u);
            u->lo = seq;
        }
        chat_part **at = &u->ring[seq % CHAT_TAIL_KEEP];
        if (seq - u->lo >= CHAT_TAIL_KEEP) { /* full: the oldest goes */
            u->bytes -= (*at)->len;
            atomic_fetch_sub(&t->bytes, (*at)->len);
            chat_part_release(*at);
            u->lo++;
        }
        *at = part_retain(p);
        u->hi = seq;
        u->bytes += p->len;
        atomic_fetch_add(&t->bytes, p->len);
        u->written_ms = now_ms;
    }
    pthread_mutex_unlock(&sh->mu);
}

void chat_tail_forget(chat_tail *t, int64_t user)
{
    chat_tail_put(t, user, 0, NULL, 0); /* no part: the user goes */
}

static void shard_sweep(chat_tail *t, tail_shard *sh, int64_t before_ms)
{
    pthread_mutex_lock(&sh->mu);
    for (size_t i = 0; i < sh->nbuckets; i++)
        for (tail_user **at = &sh->buckets[i]; *at;)
            if ((*at)->written_ms < before_ms) user_drop(t, sh, at);
            else at = &(*at)->next;
    pthread_mutex_unlock(&sh->mu);
}

void chat_tail_sweep(chat_tail *t, int64_t now_ms)
{
    for (int i = 0; i < TAIL_SHARDS; i++) shard_sweep(t, &t->shards[i], now_ms - CHAT_TAIL_IDLE_MS);
}

/* Forgets everyone. */
static void tail_clear(chat_tail *t)
{
    for (int i = 0; i < TAIL_SHARDS; i++) shard_sweep(t, &t->shards[i], INT64_MAX);
}

bool chat_tail_sync(chat_tail *t, int64_t user, int64_t since, int limit, jsonw *w)
{
    uint64_t h;
    tail_shard *sh = shard_of(t, user, &h);
    pthread_mutex_lock(&sh->mu);
    tail_user **slot = user_slot(sh, user, h);
    tail_user *u = slot ? *slot : NULL;
    if (!u || u->hi < u->lo || since < u->lo - 1 || since > u->hi) {
        pthread_mutex_unlock(&sh->mu);
        return false;
    }
    int64_t end = u->hi - since > limit ? since + limit : u->hi;
    bool more = end < u->hi;
    /* As chat_sync writes it. */
    jw_obj(w);
    jw_key(w, "changes");
    jw_arr(w);
    for (int64_t s = since + 1; s <= end; s++) {
        const chat_part *p = u->ring[s % CHAT_TAIL_KEEP];
        jw_obj(w);
        jw_kint(w, "seq", s);
        jw_members(w, p->members, p->len);
        jw_obj_end(w);
    }
    pthread_mutex_unlock(&sh->mu);
    jw_arr_end(w);
    jw_kint(w, "seq", end);
    jw_key(w, "has_more");
    jw_bool(w, more);
    jw_obj_end(w);
    return true;
}

void chat_tail_free(chat_tail *t)
{
    if (!t) return;
    tail_clear(t);
    for (int i = 0; i < TAIL_SHARDS; i++) {
        free(t->shards[i].buckets);
        pthread_mutex_destroy(&t->shards[i].mu);
    }
    free(t);
}
