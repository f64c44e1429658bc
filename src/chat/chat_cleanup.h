/* chat_cleanup.h -- the chat's scheduled job (see chat_cleanup.c); app.c
 * registers it every minute. */
#ifndef CHIME_CHAT_CLEANUP_H
#define CHIME_CHAT_CLEANUP_H

#include <stdint.h>

#include "jobs/jobs.h"
#include "store/store.h"

typedef struct chat_cleanup_opts {
    int64_t retention_ms;  /* --sync-retention-days */
    int64_t dead_after_ms; /* a node silent this long is dead (its presence goes) */
    int64_t checked_to;    /* the job's own: the last user whose unread total it checked */
} chat_cleanup_opts;

/* arg: a chat_cleanup_opts that outlives the scheduler (the job moves its
 * checked_to; one run at a time). */
int chat_cleanup_job(jobs_run *r, void *arg);

/* Deletes what a node's connections left (presence, connection counts): a
 * node starts with nobody connected, also when it restarts under the id of
 * its dead self (cluster/identity.h). STORE_OK or an error. */
int chat_forget_node(store *db, const char *node_id);

#endif
