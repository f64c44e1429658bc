/* feed_follow.c -- the follow graph and what hangs on it: counts on
 * profiles, back-fill on follow, removal on unfollow, and whether a user
 * is active (pushed to) or stale (its timeline to be rebuilt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "feed/feed_int.h"

static int exec(store_stmt *st, int64_t *changes)
{
    int rc = store_step(st);
    if (changes) *changes = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

int feed_user_row(store *db, int64_t user)
{
    store_stmt *st = store_prepare(db, "INSERT INTO feed_users (user_id) VALUES ($1) ON CONFLICT (user_id) DO NOTHING");
    store_bind_int64(st, 1, user);
    return exec(st, NULL);
}

int feed_group_of(int64_t author)
{
    uint64_t x = (uint64_t)author * 0x9E3779B97F4A7C15ull;
    return (int)((x >> 40) % FEED_GROUPS);
}

int feed_outbox_add(store *db, const char *kind, int64_t post_id, int64_t author, int64_t now)
{
    store_stmt *st = store_prepare(db, "INSERT INTO feed_outbox (id, kind, post_id, author_id, grp, next_attempt_ms, "
                                       "created_ms) VALUES ($1, $2, $3, $4, $5, $6, $6)");
    store_bind_int64(st, 1, base_id_new());
    store_bind_str(st, 2, kind);
    store_bind_int64(st, 3, post_id);
    store_bind_int64(st, 4, author);
    store_bind_int64(st, 5, feed_group_of(author));
    store_bind_int64(st, 6, now);
    return exec(st, NULL);
}

int feed_backfill_one(store *db, int64_t user, int64_t followee, int n)
{
    store_stmt *st = store_prepare(db, "INSERT INTO timelines (user_id, post_id, author_id) SELECT $1, id, author_id "
                                       "FROM posts WHERE author_id = $2 AND deleted = 0 ORDER BY id DESC LIMIT $3 "
                                       "ON CONFLICT DO NOTHING");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, followee);
    store_bind_int64(st, 3, n);
    return exec(st, NULL);
}

/* The follower's timeline changes below its watermark (a back-fill, or
 * the followee's entries leaving): tl_version says so to the nodes'
 * remembered unread counts (feed_unread). */
static int counts(store *db, int64_t follower, int64_t followee, int delta)
{
    store_stmt *st = store_prepare(db, "UPDATE feed_users SET following = following + $2, tl_version = tl_version + 1 "
                                       "WHERE user_id = $1");
    store_bind_int64(st, 1, follower);
    store_bind_int64(st, 2, delta);
    int rc = exec(st, NULL);
    if (rc != STORE_OK) return rc;
    st = store_prepare(db, "UPDATE feed_users SET followers = followers + $2 WHERE user_id = $1");
    store_bind_int64(st, 1, followee);
    store_bind_int64(st, 2, delta);
    return exec(st, NULL);
}

static int follow_tx(store *db, int64_t me, int64_t followee, int64_t now, bool *created)
{
    int rc = feed_user_row(db, me);
    if (rc == STORE_OK) rc = feed_user_row(db, followee);
    store_stmt *st = store_prepare(db, "INSERT INTO follows (follower_id, followee_id, created_ms) VALUES ($1, $2, $3) "
                                       "ON CONFLICT DO NOTHING");
    store_bind_int64(st, 1, me);
    store_bind_int64(st, 2, followee);
    store_bind_int64(st, 3, now);
    int64_t n = 0;
    if (rc == STORE_OK) rc = exec(st, &n);
    else store_reset(st);
    *created = n == 1;
    if (rc == STORE_OK && *created) rc = counts(db, me, followee, 1);
    /* Their recent posts join the timeline at once (pulled accounts' are
     * merged in at read time anyway). */
    if (rc == STORE_OK && *created) rc = feed_backfill_one(db, me, followee, FEED_BACKFILL);
    return rc;
}

int feed_follow(store *db, int64_t me, int64_t followee, const feed_limits *lim, int64_t now, bool *created)
{
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = follow_tx(db, me, followee, now, created);
    if (rc == STORE_OK) rc = store_commit(db);
    else store_rollback(db);
    if (rc == STORE_OK && *created) feed_trim(db, me, lim->timeline_max);
    return rc == STORE_OK ? FEED_OK : FEED_ERROR;
}

int feed_unfollow(store *db, int64_t me, int64_t followee, bool *removed)
{
    int rc = store_begin(db);
    store_stmt *st = store_prepare(db, "DELETE FROM follows WHERE follower_id = $1 AND followee_id = $2");
    store_bind_int64(st, 1, me);
    store_bind_int64(st, 2, followee);
    int64_t n = 0;
    if (rc == STORE_OK) rc = exec(st, &n);
    else store_reset(st);
    *removed = n == 1;
    if (rc == STORE_OK && *removed) rc = counts(db, me, followee, -1);
    if (rc == STORE_OK && *removed) {
        st = store_prepare(db, "DELETE FROM timelines WHERE user_id = $1 AND author_id = $2");
        store_bind_int64(st, 1, me);
        store_bind_int64(st, 2, followee);
        rc = exec(st, NULL);
    }
    if (rc == STORE_OK) rc = store_commit(db);
    else store_rollback(db);
    return rc == STORE_OK ? FEED_OK : FEED_ERROR;
}

int feed_follow_list(store *db, int64_t user, bool followers, int64_t cursor, int limit, json_t **out, int64_t *next)
{
    store_stmt *st = store_prepare(db, followers ? "SELECT f.follower_id, u.name FROM follows f JOIN users u ON "
                                                   "u.id = f.follower_id WHERE f.followee_id = $1 AND f.follower_id > $2 "
                                                   "ORDER BY f.follower_id LIMIT $3"
                                                 : "SELECT f.followee_id, u.name FROM follows f JOIN users u ON "
                                                   "u.id = f.followee_id WHERE f.follower_id = $1 AND f.followee_id > $2 "
                                                   "ORDER BY f.followee_id LIMIT $3");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, cursor);
    store_bind_int64(st, 3, limit + 1);
    *out = json_array();
    *next = 0;
    int n = 0, rc;
    int64_t last = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (n++ == limit) {
            *next = last;
            continue;
        }
        char id[17];
        last = store_col_int64(st, 0);
        base_id_format(last, id);
        json_array_append_new(*out, json_pack("{s:s,s:s}", "id", id, "name", store_col_text(st, 1)));
    }
    store_reset(st);
    if (rc == STORE_DONE) return FEED_OK;
    json_decref(*out);
    *out = NULL;
    return FEED_ERROR;
}

int feed_profile(store *db, int64_t viewer, int64_t user, json_t **out)
{
    store_stmt *st = store_prepare(db, "SELECT u.name, COALESCE(f.followers, 0), COALESCE(f.following, 0), "
                                       "COALESCE(f.posts, 0), EXISTS (SELECT 1 FROM follows WHERE follower_id = $2 "
                                       "AND followee_id = u.id) FROM users u LEFT JOIN feed_users f ON f.user_id = u.id "
                                       "WHERE u.id = $1");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, viewer);
    int rc = store_step(st);
    *out = NULL;
    if (rc == STORE_ROW) {
        char id[17];
        base_id_format(user, id);
        *out = json_pack("{s:s,s:s,s:I,s:I,s:I,s:b}", "id", id, "name", store_col_text(st, 0), "followers",
                         (json_int_t)store_col_int64(st, 1), "following", (json_int_t)store_col_int64(st, 2), "posts",
                         (json_int_t)store_col_int64(st, 3), "followed", store_col_int64(st, 4) != 0);
    }
    store_reset(st);
    return rc == STORE_ROW ? (*out ? FEED_OK : FEED_ERROR) : rc == STORE_DONE ? FEED_NOT_FOUND : FEED_ERROR;
}

int feed_touch(store *db, int64_t user, const feed_limits *lim, int64_t now)
{
    int rc = feed_user_row(db, user);
    /* Inactive until now: what was posted meanwhile was not pushed to it. */
    store_stmt *st = store_prepare(db, "UPDATE feed_users SET stale = CASE WHEN active_ms < $2 THEN 1 ELSE stale END, "
                                       "active_ms = $3 WHERE user_id = $1");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, now - lim->active_ms);
    store_bind_int64(st, 3, now);
    if (rc == STORE_OK) rc = exec(st, NULL);
    else store_reset(st);
    return rc == STORE_OK ? FEED_OK : FEED_ERROR;
}
