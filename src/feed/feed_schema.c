/* feed_schema.c -- the feed's schema steps (versions 50-59). See store.h
 * for the rules of a step.
 *
 * posts: contents, keyed by (month, id). PostgreSQL partitions them by
 *   month (declarative, RANGE on month; feed_partitions makes each month's
 *   ahead of time, and a DEFAULT partition catches the rest); SQLite keeps
 *   one table whose key starts with the month. `pulled`: the author was in
 *   pull mode when it posted (never pushed; merged in at read time).
 * post_clients: a client's own post ids (a retried post finds the
 *   original); outside `posts`, since a partitioned table's unique keys
 *   must hold the partition key.
 * author_months: each author's posts per month.
 * follows: both ways (follower, followee) and (followee, follower).
 * feed_users: the counts shown on a profile, when the user was last active,
 *   whether its timeline must be rebuilt (stale), pull mode, the read mark
 *   (home_read), and the id below which its pushed entries were trimmed.
 * timelines: pushed entries, ids only. On SQLite clustered by
 *   (user, post): a page is one range of one b-tree.
 * feed_outbox: posts being pushed (kind post) and pulled authors' recent
 *   posts being pushed after they left pull mode (kind backfill), with the
 *   follower (or post) the work has reached; grp: the lease group. */
#include "feed/feed.h"

#define FEED_TABLES(POSTS_TAIL, CLUSTERED)                                                                 \
    "CREATE TABLE posts ("                                                                                \
    " id BIGINT NOT NULL,"                                                                                \
    " month INTEGER NOT NULL,"                                                                            \
    " author_id BIGINT NOT NULL,"                                                                         \
    " text TEXT NOT NULL,"                                                                                \
    " created_ms BIGINT NOT NULL,"                                                                        \
    " pulled INTEGER NOT NULL DEFAULT 0,"                                                                 \
    " deleted INTEGER NOT NULL DEFAULT 0,"                                                                \
    " PRIMARY KEY (month, id))" POSTS_TAIL ";"                                                            \
    "CREATE INDEX posts_author ON posts(author_id, id);"                                                  \
    "CREATE TABLE post_clients ("                                                                         \
    " author_id BIGINT NOT NULL,"                                                                         \
    " client_post_id TEXT NOT NULL,"                                                                      \
    " post_id BIGINT NOT NULL,"                                                                           \
    " PRIMARY KEY (author_id, client_post_id));"                                                          \
    "CREATE TABLE author_months ("                                                                        \
    " author_id BIGINT NOT NULL,"                                                                         \
    " month INTEGER NOT NULL,"                                                                            \
    " posts BIGINT NOT NULL,"                                                                             \
    " PRIMARY KEY (author_id, month));"                                                                   \
    "CREATE TABLE follows ("                                                                              \
    " follower_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                \
    " followee_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                \
    " created_ms BIGINT NOT NULL,"                                                                        \
    " PRIMARY KEY (follower_id, followee_id));"                                                           \
    "CREATE INDEX follows_followee ON follows(followee_id, follower_id);"                                 \
    "CREATE TABLE feed_users ("                                                                           \
    " user_id BIGINT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,"                                 \
    " followers BIGINT NOT NULL DEFAULT 0,"                                                               \
    " following BIGINT NOT NULL DEFAULT 0,"                                                               \
    " posts BIGINT NOT NULL DEFAULT 0,"                                                                   \
    " active_ms BIGINT NOT NULL DEFAULT 0,"                                                               \
    " stale INTEGER NOT NULL DEFAULT 1,"                                                                  \
    " pull_mode INTEGER NOT NULL DEFAULT 0,"                                                              \
    " home_read BIGINT NOT NULL DEFAULT 0,"                                                               \
    " home_read_ms BIGINT NOT NULL DEFAULT 0,"                                                            \
    " trimmed_below BIGINT NOT NULL DEFAULT 0);"                                                          \
    "CREATE INDEX feed_users_pull ON feed_users(pull_mode) WHERE pull_mode = 1;"                          \
    "CREATE TABLE timelines ("                                                                            \
    " user_id BIGINT NOT NULL,"                                                                           \
    " post_id BIGINT NOT NULL,"                                                                           \
    " author_id BIGINT NOT NULL,"                                                                         \
    " PRIMARY KEY (user_id, post_id))" CLUSTERED ";"                                                      \
    "CREATE INDEX timelines_post ON timelines(post_id);"                                                  \
    "CREATE TABLE feed_outbox ("                                                                          \
    " id BIGINT PRIMARY KEY,"                                                                             \
    " kind TEXT NOT NULL,"                                                                                \
    " post_id BIGINT NOT NULL,"                                                                           \
    " author_id BIGINT NOT NULL,"                                                                         \
    " grp INTEGER NOT NULL,"                                                                              \
    " cursor BIGINT NOT NULL DEFAULT 0,"                                                                  \
    " attempts INTEGER NOT NULL DEFAULT 0,"                                                               \
    " next_attempt_ms BIGINT NOT NULL,"                                                                   \
    " created_ms BIGINT NOT NULL);"                                                                       \
    "CREATE INDEX feed_outbox_due ON feed_outbox(grp, next_attempt_ms);"                                  \
    "CREATE INDEX feed_outbox_author ON feed_outbox(author_id, post_id)"

/* What a node's remembered unread count is checked against (feed_unread):
 * tl_version moves when a user's timeline changes below its watermark
 * (follow, unfollow, trim, rebuild); feed_meta.deletes when any post is
 * deleted; posts_pulled finds the newest pulled post at once. */
#define FEED_UNREAD_MEMO                                                                                   \
    "ALTER TABLE feed_users ADD COLUMN tl_version BIGINT NOT NULL DEFAULT 0;"                              \
    "CREATE TABLE feed_meta (id INTEGER PRIMARY KEY, deletes BIGINT NOT NULL DEFAULT 0);"                  \
    "INSERT INTO feed_meta (id, deletes) VALUES (1, 0);"                                                   \
    "CREATE INDEX posts_pulled ON posts(id) WHERE pulled = 1"

static const store_migration feed_steps[] = {
    {50, "feed", FEED_TABLES("", " WITHOUT ROWID"),
     FEED_TABLES(" PARTITION BY RANGE (month)", "") ";CREATE TABLE posts_default PARTITION OF posts DEFAULT"},
    {51, "feed unread memo", FEED_UNREAD_MEMO, FEED_UNREAD_MEMO},
};

int feed_schema_add(store_schema *s)
{
    return store_schema_add(s, feed_steps, sizeof feed_steps / sizeof feed_steps[0]);
}
