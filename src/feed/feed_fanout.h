/* feed_fanout.h -- the feed's fan-out engine (see feed_fanout.c). */
#ifndef CHIME_FEED_FANOUT_H
#define CHIME_FEED_FANOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "feed/feed.h"

typedef struct feed_fanout_opts {
    const char *db_url;
    const char *node_id;  /* the lease owner */
    feed_limits lim;
    int64_t lease_ttl_ms, heartbeat_ms;
    /* Who has a device online (any thread), and a frame for a user's
     * devices; both may be NULL. */
    bool (*online)(void *arg, int64_t user);
    void (*push)(void *arg, int64_t user, const char *frame, size_t len);
    void *arg;
    feed_unread_memo *memo; /* borrowed: the unread counts the frames carry (may be NULL) */
} feed_fanout_opts;

typedef struct feed_fanout feed_fanout;

/* Makes this and the next two months' partitions (PostgreSQL) and starts
 * the thread. NULL (logged) on failure. */
feed_fanout *feed_fanout_start(const feed_fanout_opts *o);
/* A post was just written on this node: look now, not at the next tick. */
void feed_fanout_wake(feed_fanout *f);
/* Stops the thread (a fan-out in progress stops between batches) and
 * releases its groups. */
void feed_fanout_stop(feed_fanout *f);

#endif
