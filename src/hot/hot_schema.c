/* hot_schema.c -- the hot list's schema steps (versions 60-69). See
 * store.h for the rules of a step.
 *
 * hot_counts: one row per post that has had any action: its exact counts
 *   (changed in the same transaction as the action's own row, so they
 *   survive a crash with it) and its creation time, copied from the post
 *   so the recompute reads only this table's window (created_ms index,
 *   covering the counts: an index-only range scan on SQLite).
 * hot_likes: one row per (post, user); (post, user) answers "liked".
 * hot_comments: ids from idgen (time-ordered), so pages go by id.
 * hot_shares: one per (post, user): the sharer's repost (a feed post).
 *   repost_id finds the original of a repost.
 * hot_views: the last time a view of (post, user) was counted; a view
 *   counts when that is an hour old or more. Rows an hour old are dead
 *   weight (the next view counts anyway) and the recompute job drops them.
 * hot_lists: the last published list (one row): version, when computed,
 *   the lease epoch that wrote it, and the list as served (JSON). */
#include "hot/hot.h"

#define HOT_TABLES                                                                                        \
    "CREATE TABLE hot_counts ("                                                                           \
    " post_id BIGINT PRIMARY KEY,"                                                                        \
    " created_ms BIGINT NOT NULL,"                                                                        \
    " likes BIGINT NOT NULL DEFAULT 0,"                                                                   \
    " comments BIGINT NOT NULL DEFAULT 0,"                                                                \
    " shares BIGINT NOT NULL DEFAULT 0,"                                                                  \
    " views BIGINT NOT NULL DEFAULT 0);"                                                                  \
    "CREATE INDEX hot_counts_window ON hot_counts(created_ms, post_id, likes, comments, shares, views);"  \
    "CREATE TABLE hot_likes ("                                                                            \
    " post_id BIGINT NOT NULL,"                                                                           \
    " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                    \
    " created_ms BIGINT NOT NULL,"                                                                        \
    " PRIMARY KEY (post_id, user_id));"                                                                   \
    "CREATE TABLE hot_comments ("                                                                         \
    " id BIGINT PRIMARY KEY,"                                                                             \
    " post_id BIGINT NOT NULL,"                                                                           \
    " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                    \
    " text TEXT NOT NULL,"                                                                                \
    " created_ms BIGINT NOT NULL);"                                                                       \
    "CREATE INDEX hot_comments_post ON hot_comments(post_id, id);"                                        \
    "CREATE TABLE hot_shares ("                                                                           \
    " post_id BIGINT NOT NULL,"                                                                           \
    " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                    \
    " repost_id BIGINT NOT NULL,"                                                                         \
    " created_ms BIGINT NOT NULL,"                                                                        \
    " PRIMARY KEY (post_id, user_id));"                                                                   \
    "CREATE INDEX hot_shares_repost ON hot_shares(repost_id);"                                            \
    "CREATE TABLE hot_views ("                                                                            \
    " post_id BIGINT NOT NULL,"                                                                           \
    " user_id BIGINT NOT NULL,"                                                                           \
    " counted_ms BIGINT NOT NULL,"                                                                        \
    " PRIMARY KEY (post_id, user_id));"                                                                   \
    "CREATE INDEX hot_views_counted ON hot_views(counted_ms);"                                            \
    "CREATE TABLE hot_lists ("                                                                            \
    " id INTEGER PRIMARY KEY,"                                                                            \
    " version BIGINT NOT NULL,"                                                                           \
    " computed_ms BIGINT NOT NULL,"                                                                       \
    " epoch BIGINT NOT NULL,"                                                                             \
    " node TEXT NOT NULL,"                                                                                \
    " body TEXT NOT NULL)"

static const store_migration hot_steps[] = {
    {60, "hot", HOT_TABLES, NULL},
};

int hot_schema_add(store_schema *s)
{
    return store_schema_add(s, hot_steps, sizeof hot_steps / sizeof hot_steps[0]);
}
