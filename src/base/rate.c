/* rate.c -- per-user token buckets (see rate.h): a fixed hash of chains
 * under one mutex; a take is a hash, a short walk and a few flops. */
#include "base/rate.h"

#include <pthread.h>
#include <stdlib.h>

#define RATE_BUCKETS 4096

typedef struct rate_user {
    struct rate_user *next;
    int64_t user, at_ms;
    double tokens;
} rate_user;

struct rate_limiter {
    double per_s, burst;
    pthread_mutex_t mu;
    rate_user *users[RATE_BUCKETS];
};

rate_limiter *rate_new(double per_s, double burst)
{
    rate_limiter *rl = calloc(1, sizeof *rl);
    if (!rl) return NULL;
    rl->per_s = per_s;
    rl->burst = burst;
    pthread_mutex_init(&rl->mu, NULL);
    return rl;
}

void rate_free(rate_limiter *rl)
{
    if (!rl) return;
    for (size_t i = 0; i < RATE_BUCKETS; i++)
        while (rl->users[i]) {
            rate_user *u = rl->users[i];
            rl->users[i] = u->next;
            free(u);
        }
    pthread_mutex_destroy(&rl->mu);
    free(rl);
}

/* The user's record, made full when new; NULL when out of memory. */
static rate_user *user_of(rate_limiter *rl, int64_t user, int64_t now_ms)
{
    size_t b = (size_t)((uint64_t)user * 0x9E3779B97F4A7C15ull >> 52) % RATE_BUCKETS;
    rate_user *u = rl->users[b];
    while (u && u->user != user) u = u->next;
    if (u || !(u = calloc(1, sizeof *u))) return u;
    u->user = user;
    u->tokens = rl->burst;
    u->at_ms = now_ms;
    u->next = rl->users[b];
    rl->users[b] = u;
    return u;
}

double rate_per_s(const rate_limiter *rl)
{
    return rl->per_s;
}

bool rate_take(rate_limiter *rl, int64_t user, int64_t now_ms)
{
    pthread_mutex_lock(&rl->mu);
    rate_user *u = user_of(rl, user, now_ms);
    bool ok = true;
    if (u) {
        if (now_ms > u->at_ms) u->tokens += (double)(now_ms - u->at_ms) * rl->per_s / 1000.0;
        if (u->tokens > rl->burst) u->tokens = rl->burst;
        u->at_ms = now_ms > u->at_ms ? now_ms : u->at_ms;
        ok = u->tokens >= 1.0;
        if (ok) u->tokens -= 1.0;
    }
    pthread_mutex_unlock(&rl->mu);
    return ok;
}
