/* chat_cleanup.h -- the chat's scheduled job (see chat_cleanup.c); app.c
 * registers it every minute. */
#ifndef CHIME_CHAT_CLEANUP_H
#define CHIME_CHAT_CLEANUP_H

#include <stdint.h>

#include "chat/chat_tail.h"
#include "jobs/jobs.h"
#include "store/store.h"

typedef struct chat_cleanup_opts {
    int64_t retention_ms;  /* --sync-retention-days */
    int64_t dead_after_ms; /* a node silent this long is dead (its presence goes) */
    int64_t checked_to;    /* the job's own: the last user whose unread total it checked
                            * (0: none yet, start at random; -1: start from the first) */
    chat_tail *tail;       /* borrowed: forgotten when changes are pruned (NULL: none) */
    int64_t pruned_from;   /* the job's own: the last user the prune looked at (0: a new round) */
} chat_cleanup_opts;

/* arg: a chat_cleanup_opts that outlives the scheduler (the job moves its
 * checked_to; one run at a time). */
int chat_cleanup_job(jobs_run *r, void *arg);

/* The prune, in two steps so that no write transaction is open while the
 * users' changes are walked. A user whose changes pruned_to+1 .. to can go: */
typedef struct chat_prune_cut {
    int64_t user, from, to; /* from: pruned_to as read */
} chat_prune_cut;

/* Reads the (at most limit) users after *from in id order; those with
 * changes older than bound_ms after their pruned_to go into cuts (room for
 * limit; *n of them): the changes before their first one at or after
 * bound_ms. *from moves to the last user read, or to 0 when there were
 * fewer than limit (the round is over). STORE_OK or an error. */
int chat_prune_read(store *db, int64_t *from, int64_t bound_ms, int limit, chat_prune_cut *cuts, size_t *n);
/* Moves each user's pruned_to to its cut's end and deletes the changes
 * cut, in the caller's transaction. */
int chat_prune_cut_apply(store *db, const chat_prune_cut *cuts, size_t n);

/* The check of the kept unread totals (chat.h), in two steps so that no
 * write transaction is open while the sums are read. A user whose kept
 * total is not the sum GET /v1/unread computes, at number seq: */
typedef struct chat_unread_fix {
    int64_t user, seq, kept, unread;
} chat_unread_fix;

/* Reads the (at most limit) users after *from, up to user to (0: no
 * bound), in one statement, the wrong ones into fix (room for limit; *n of
 * them), *read users in all (read may be NULL); *from moves to the last
 * user read, or to 0 when there are no more (a round is over). STORE_OK
 * or an error (*from unmoved). */
int chat_unread_wrong(store *db, int64_t *from, int64_t to, int limit, chat_unread_fix *fix, size_t *n, int *read);
/* Sets each fix's total where the user's number is still its seq: every
 * write that moves a term of the sum moves the number in the same
 * transaction, so a write since the read leaves the user to the next
 * round. *set: how many were set. In the caller's transaction. */
int chat_unread_set(store *db, const chat_unread_fix *fix, size_t n, int64_t *set);

/* Deletes what a node's connections left (presence, connection counts): a
 * node starts with nobody connected, also when it restarts under the id of
 * its dead self (cluster/identity.h). STORE_OK or an error. */
int chat_forget_node(store *db, const char *node_id);

#endif
