/* rate.h -- per-user token buckets: how often one account may do a thing
 * (send a chat message, publish a post, a comment or a share).
 *
 * A bucket holds up to `burst` tokens and gains `per_s` a second; each
 * action takes one. A user's bucket is made full on its first action and
 * stays for the limiter's life (one small record per user who acted on
 * this node). Limits are per node: behind a balancer that spreads one
 * user over n nodes, that user gets up to n times the rate. Thread-safe. */
#ifndef CHIME_BASE_RATE_H
#define CHIME_BASE_RATE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rate_limiter rate_limiter;

/* NULL when out of memory. */
rate_limiter *rate_new(double per_s, double burst);
void rate_free(rate_limiter *rl);
/* Takes a token of user's at now_ms (a monotonic clock's: a wall clock
 * stepped back would stop the refill that long): true when there was
 * one. Out of memory, it lets the action through. */
bool rate_take(rate_limiter *rl, int64_t user, int64_t now_ms);
/* The tokens a user gains a second, as made (for the answer that says so). */
double rate_per_s(const rate_limiter *rl);

#endif
