/* hot_int.h -- what the hot list's files share. Not for other rooms. */
#ifndef CHIME_HOT_INT_H
#define CHIME_HOT_INT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "hot/hot.h"

enum { HOT_OK = 0, HOT_NOT_FOUND = 1, HOT_CONFLICT = 2, HOT_SELF = 3, HOT_ERROR = -1 };

/* ---- the cache (hot_cache.c) ----------------------------------------------------- */

/* One published list, immutable once made: the body as stored (a JSON
 * object {version, computed_at, items}) cut at each item, so a page of
 * the first N is three copies. Shared by reference count. */
typedef struct hot_snap {
    atomic_int refs;
    int64_t version, computed_ms;
    size_t n;       /* items */
    char *body;     /* the whole list, as served for limit >= n */
    size_t len;
    size_t head;    /* bytes of body before the first item */
    size_t *ends;   /* ends[i]: offset in body just past item i */
} hot_snap;

typedef struct hot_cache hot_cache;

hot_cache *hot_cache_new(int loops, const char *db_url, const char *redis_host, int redis_port);
void hot_cache_free(hot_cache *c); /* stops the threads first */
/* Redis, then the database; blocking, at start. 0 (an empty list when
 * nothing was ever published), or -1 when neither answered. */
int hot_cache_preload(hot_cache *c);
int hot_cache_start(hot_cache *c);
void hot_cache_stop(hot_cache *c);
/* Makes a snapshot of body (a published list) and swaps it in when its
 * version is newer than the one held. 1 swapped, 0 not newer, -1 not a
 * list. Any thread. */
int hot_cache_install(hot_cache *c, const char *body, size_t len);
/* The local copy changed on this node (it computed it): tell Redis now. */
void hot_cache_publish(hot_cache *c);
/* The snapshot for a loop thread: valid until that loop's next call. */
const hot_snap *hot_cache_get(hot_cache *c, int loop);
int64_t hot_cache_version(hot_cache *c);
int64_t hot_cache_computed_ms(hot_cache *c);
/* 1 when Redis answered within the last second, 0 when not, -1 no Redis. */
int hot_cache_redis_up(hot_cache *c);

/* ---- the action writer (hot_writer.c) ---------------------------------------------- */

typedef enum { HOT_ACT_VIEW, HOT_ACT_LIKE, HOT_ACT_UNLIKE } hot_act_kind;

typedef struct hot_act {
    hot_act_kind kind;
    int64_t post_id, user_id, created_ms; /* created_ms: the post's */
} hot_act;

/* Answers r on its own loop once its action is durable (ok) or failed. */
typedef void (*hot_answer_fn)(http_req *r, const hot_act *a, bool ok, void *arg);

typedef struct hot_writer hot_writer;

hot_writer *hot_writer_new(const char *db_url, hot_answer_fn answer, void *arg);
int hot_writer_start(hot_writer *w);
void hot_writer_free(hot_writer *w); /* drains, then stops */
/* Parks r until its action is durable (or failed), then answers it. */
void hot_writer_submit(hot_writer *w, http_req *r, const hot_act *a);
/* hot_http.c's answer (arg: the hot_service): 204 for a view, the counts
 * for a like or an unlike, 503 when the batch failed. */
void hot_answer_action(http_req *r, const hot_act *a, bool ok, void *arg);

/* ---- the service ------------------------------------------------------------------- */

struct hot_service {
    hot_opts o;
    char db_url[1024], node_id[64];
    hot_cache *cache;
    hot_writer *writer;
    /* The recompute on this node, for /metrics. */
    atomic_llong runs_ok, runs_failed, last_run_ms, last_items;
    int64_t views_pruned_ms; /* job thread only: when old view rows last went */
};

/* ---- actions (hot_actions.c) --------------------------------------------------------- */

/* Steps a bound statement that returns no rows and resets it: STORE_OK
 * (*changes, when asked, the rows changed) or an error. */
int hot_exec(store_stmt *st, int64_t *changes);
/* A post that exists and is not deleted: its creation time and author.
 * HOT_OK, HOT_NOT_FOUND or HOT_ERROR. */
int hot_post_find(store *db, int64_t post_id, int64_t *created_ms, int64_t *author);
int hot_comment_add(store *db, int64_t id, int64_t post_id, int64_t user_id, const char *text, int64_t created_ms,
                    int64_t now, json_t **out);
int hot_comment_delete(store *db, int64_t post_id, int64_t comment_id, int64_t user_id);
/* Oldest first, ids above after (0: from the start); *next: the cursor of
 * the next page or 0. */
int hot_comments_page(store *db, int64_t post_id, int64_t after, int limit, json_t **out, int64_t *next);
/* Reposts post_id into user's followers' timelines once: HOT_OK (new,
 * *out the repost), HOT_CONFLICT (shared before, *out the first repost),
 * HOT_SELF (one's own post), HOT_NOT_FOUND. */
int hot_share(store *db, feed_http *feed, int64_t repost_id, int64_t post_id, int64_t user_id, int64_t created_ms,
              const char *text, int64_t now, json_t **out);
/* One post's counts and whether viewer liked it, into obj. */
int hot_counts_into(store *db, int64_t post_id, int64_t viewer, json_t *obj);

#endif
