/* feed_int.h -- what the feed's files share. Not for other rooms. */
#ifndef CHIME_FEED_INT_H
#define CHIME_FEED_INT_H

#include "feed/feed.h"

/* The user's feed_users row, made if missing (counts 0, stale). */
int feed_user_row(store *db, int64_t user);
/* A fan-out task (kind "post" or "backfill") for an author's post, in the
 * caller's transaction. */
int feed_outbox_add(store *db, const char *kind, int64_t post_id, int64_t author, int64_t now);
/* The lease group of an author's work. */
int feed_group_of(int64_t author);
/* PostgreSQL: the partitions of this month and the next months-1. */
int feed_partitions(store *db, int64_t now, int months);
/* Recent posts of followee into user's timeline (at most n). */
int feed_backfill_one(store *db, int64_t user, int64_t followee, int n);

#endif
