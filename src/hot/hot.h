/* hot.h -- the hot list (the design notes' hot list): likes, comments,
 * shares and views of the feed's posts, and the top-K of those posts by a
 * time-decayed score, computed by a scheduled job on one node and served
 * from a local snapshot, then Redis, then the database.
 *
 * Actions (over HTTP in hot_http.c): each writes its own row and the
 * post's exact counts (hot_counts) in the same transaction. Comments and
 * shares are a transaction each (hot_actions.c); likes, unlikes and views
 * go through a writer thread that commits many in one transaction
 * (hot_writer.c), and a view counts once per user per hour.
 *
 * Ranking (hot_rank.h, pure) and computing (hot_compute.c): the job
 * hot.recompute, every --hot-every, reads the counts of the window's
 * posts, keeps the best K in a min-heap, checks them against the posts
 * (deleted ones and reposts never appear), and publishes the list with a
 * new version in the job's fenced transaction.
 *
 * Serving (hot_cache.c): an immutable snapshot per version, swapped
 * atomically; each node preloads it before serving and learns of a new
 * version within a second by checking Redis (every 250 ms, non-blocking,
 * on the cache's own event loop) and the database (every 500 ms).
 *
 * The hot list reads the feed's `posts` and `users` tables and makes a
 * share's repost through feed.h; the feed shows the counts through the
 * decoration hook app.c connects (hot_decorate_posts). */
#ifndef CHIME_HOT_H
#define CHIME_HOT_H

#include <jansson.h>
#include <stdint.h>

#include "feed/feed_http.h"
#include "hot/hot_rank.h"
#include "http/server.h"
#include "jobs/jobs.h"
#include "store/store.h"
#include "store/store_pool.h"

#define HOT_COMMENT_MAX 2000 /* bytes of a comment */
#define HOT_PAGE_DEFAULT 20
#define HOT_PAGE_MAX 200

typedef struct hot_opts {
    const char *db_url;    /* the pollers' and the view writer's own connections */
    const char *redis_host; /* Redis's address (bus_redis_address), or NULL: the database is the shared tier */
    int redis_port;
    const char *node_id;
    store_pool *dbs;       /* borrowed: the loops' connections */
    feed_http *feed;       /* borrowed: post ids, limits and the fan-out for shares */
    hot_rank_opts rank;
    int64_t window_ms;     /* --hot-window-days */
    int64_t every_ms;      /* --hot-every */
    int size;              /* --hot-size */
} hot_opts;

typedef struct hot_service hot_service;

/* Copies what it needs of o. NULL when out of memory or loops < 1. */
hot_service *hot_new(const hot_opts *o, int loops);
/* Routes (/v1/hot, the actions) and /metrics gauges. */
void hot_register(hot_service *h, http_server *s);
/* Adds hot.recompute to reg. 0, or -1 with err set. */
int hot_register_job(hot_service *h, jobs_registry *reg, char *err, size_t errlen);
/* Loads the last published list (Redis, then the database) and starts the
 * view writer and the cache's pollers: before the server takes requests.
 * 0, or -1 (logged). */
int hot_start(hot_service *h);
/* Stops the threads and frees: after the HTTP server has stopped (its
 * parked views were answered by the still running writer). */
void hot_free(hot_service *h);

/* The feed's decoration hook (arg: the hot_service): adds likes,
 * comments, shares, views, liked (viewer 0: false) and, for a repost,
 * repost_of to every post object in posts (an array). */
void hot_decorate_posts(void *arg, store *db, int64_t viewer, json_t *posts);

/* The job's handler (arg: the hot_service). */
int hot_compute_job(jobs_run *r, void *arg);

/* Adds the hot list's schema step (hot_schema.c) to the one list. */
int hot_schema_add(store_schema *s);

#endif
