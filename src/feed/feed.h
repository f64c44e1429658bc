/* feed.h -- the follow feed (the Weibo notes): follows, posts, home
 * timelines built by push and by pull, read marks as offsets.
 *
 * Posts: ids from cluster/idgen.h (time-ordered, unique across nodes);
 * contents in `posts`, keyed by (month, id) -- monthly partitions on
 * PostgreSQL, a month key on SQLite -- so a post is found from its id
 * alone (the id says its month) and old months go as a whole. A per-month
 * count of each author's posts (author_months) finds a page deep in an
 * author's history without walking from the newest.
 *
 * Timelines: `timelines` holds pushed entries (user, post id, author): ids
 * only, at most --feed-timeline-max a user (older ones are trimmed; reading
 * past them pulls). A post's transaction writes it, the author's own
 * entry and an outbox row (feed_outbox); the fan-out engine
 * (feed_fanout.c) pushes it to each active follower in fenced batches and
 * deletes the outbox row when done (at least once; a redo inserts nothing
 * twice). Authors with more than --feed-push-max-followers followers are
 * never pushed: their posts are marked pulled, the author is in pull mode,
 * and readers merge them in at read time. Followers inactive (no sign-in
 * and no timeline read within --feed-active-days) get nothing pushed; a
 * returning one is marked stale, and the first read rebuilds the timeline
 * from the accounts followed before answering.
 *
 * No gaps: a reader sees only posts older than every post still being
 * pushed to it (the oldest pending outbox row among the accounts it
 * follows): an entry that arrives later is never older than what a page
 * already showed. Unread = entries newer than the read mark, counted from
 * ids (never a counter). */
#ifndef CHIME_FEED_H
#define CHIME_FEED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define FEED_TEXT_MAX 2000
#define FEED_CLIENT_ID_MAX 128
#define FEED_PAGE_DEFAULT 20
#define FEED_PAGE_MAX 200
#define FEED_BACKFILL 100 /* posts of an account copied into a timeline on follow */
#define FEED_GROUPS 16    /* lease groups of the fan-out */

enum { FEED_OK = 0, FEED_NOT_FOUND = 1, FEED_CONFLICT = 2, FEED_ERROR = -1 };

typedef struct feed_limits {
    int64_t active_ms;          /* --feed-active-days */
    int64_t push_max_followers; /* --feed-push-max-followers */
    int64_t timeline_max;       /* --feed-timeline-max */
} feed_limits;

/* The month key of an id ("202611": UTC year * 100 + month). */
int feed_month_of(int64_t post_id);

/* ---- follows (feed_follow.c) ---- */

/* PUT /v1/me/following/{user}: idempotent; *created says whether it was
 * new. Back-fills the followee's recent posts into the follower's timeline. */
int feed_follow(store *db, int64_t me, int64_t followee, const feed_limits *lim, int64_t now, bool *created);
int feed_unfollow(store *db, int64_t me, int64_t followee, bool *removed);
/* Followers (or followees) of a user after cursor (0: from the start), as
 * [{id, name}]; *next is the cursor of the next page or 0. */
int feed_follow_list(store *db, int64_t user, bool followers, int64_t cursor, int limit, json_t **out, int64_t *next);
/* GET /v1/users/{id}: {id, name, followers, following, posts, followed}. */
int feed_profile(store *db, int64_t viewer, int64_t user, json_t **out);
/* A sign-in or a timeline read: the user is active (pushes reach it); one
 * inactive until now is marked stale (its timeline is rebuilt). */
int feed_touch(store *db, int64_t user, const feed_limits *lim, int64_t now);

/* ---- posts (feed_posts.c) ---- */

typedef struct feed_post_in {
    int64_t id; /* from idgen */
    int64_t author;
    const char *text, *client_id; /* client_id may be NULL */
} feed_post_in;

/* POST /v1/posts, in one transaction: the post, the author's own entry,
 * the outbox row. FEED_CONFLICT when client_id was used before: *out is
 * then the original. */
int feed_post(store *db, const feed_post_in *in, const feed_limits *lim, int64_t now, json_t **out);
/* feed_post's writes inside the caller's transaction (a share writes its
 * repost with its own rows): STORE_OK with *original 0, or the original's
 * id when client_id was used before (nothing written), or a store error.
 * Wake the fan-out after the commit. */
int feed_post_tx(store *db, const feed_post_in *in, const feed_limits *lim, int64_t now, int64_t *original);
int feed_post_get(store *db, int64_t id, json_t **out);
/* DELETE /v1/posts/{id}: the author only (FEED_NOT_FOUND otherwise);
 * the post leaves every timeline. */
int feed_post_delete(store *db, int64_t me, int64_t id);
/* GET /v1/users/{id}/posts: newest first, ids below max_id (0: none);
 * *next_max_id the max_id of the next page, 0 when this one is the last. */
int feed_user_posts(store *db, int64_t user, int64_t max_id, int limit, json_t **out, int64_t *next_max_id);
/* Posts by id, in the order given, deleted ones left out: [post...]. */
int feed_posts_load(store *db, const int64_t *ids, size_t n, json_t **out);

/* ---- timelines (feed_timeline.c) ---- */

/* GET /v1/timeline: newest first, ids in (since_id, max_id). */
int feed_timeline(store *db, int64_t me, int64_t max_id, int64_t since_id, int limit, const feed_limits *lim,
                  int64_t now, json_t **out);
/* What a node remembers of its readers' unread counts (feed_memo.c), so
 * the call clients poll costs one statement of index probes instead of
 * the count. A count is kept with everything it was computed from, read
 * in one statement on every call (from the shared database, so it holds
 * on every node without hints or timeouts): the read mark, the
 * watermark, the newest pushed entry, the newest pulled post anywhere,
 * the user's timeline version (moved by follow, unfollow, trim and
 * rebuild, which change entries under the watermark) and the number of
 * deletions. Below the watermark a timeline only grows at its top
 * (feed.h), so while all of these stand the count stands. Any thread. */
typedef struct feed_unread_key {
    int64_t home_read, trimmed_below, tl_version, newest_pushed, watermark, newest_pulled, deletes;
} feed_unread_key;
typedef struct feed_unread_memo feed_unread_memo;
#define FEED_UNREAD_MEMO_SLOTS 32768 /* 6 MiB */
/* NULL when out of memory. */
feed_unread_memo *feed_unread_memo_new(size_t slots);
void feed_unread_memo_free(feed_unread_memo *m);
/* Where the inputs were last found standing: a connection (the store)
 * and its store_change_stamp then. While that connection's stamp has not
 * moved, nothing was committed anywhere, so the inputs need not even be
 * read again (SQLite; PostgreSQL has no stamp and always reads them). */
typedef struct feed_unread_seen {
    const store *conn; /* NULL: none */
    store_stamp stamp;
} feed_unread_seen;
/* m may be NULL (always a miss). A hit by stamp alone: nothing committed
 * since the count's inputs were last read on this connection, and the
 * reader still active at now. */
bool feed_unread_memo_stamped(feed_unread_memo *m, int64_t user, const feed_unread_seen *seen, int64_t now,
                              int64_t *count);
/* A hit by the inputs just read (at seen, which is then recorded with
 * active_until). */
bool feed_unread_memo_get(feed_unread_memo *m, int64_t user, const feed_unread_key *k, const feed_unread_seen *seen,
                          int64_t active_until, int64_t *count);
/* active_until: when the reader must be marked active again (feed_touch). */
void feed_unread_memo_put(feed_unread_memo *m, int64_t user, const feed_unread_key *k, int64_t count,
                          const feed_unread_seen *seen, int64_t active_until);

/* GET /v1/timeline/unread_count; memo may be NULL. */
int feed_unread(store *db, feed_unread_memo *memo, int64_t me, const feed_limits *lim, int64_t now, int64_t *count);
/* POST /v1/markers (forward only) and GET /v1/markers. */
int feed_marker_set(store *db, int64_t me, int64_t last_read_id, int64_t now);
int feed_markers(store *db, int64_t me, json_t **out);
/* Keeps at most timeline_max pushed entries of a user. */
int feed_trim(store *db, int64_t user, int64_t timeline_max);

/* Adds the feed's schema steps (feed_schema.c) to the one list. */
int feed_schema_add(store_schema *s);

#endif
