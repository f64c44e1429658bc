/* chat_settle.h -- moving new changes from chat_recent to their users'
 * places in chat_changes, on SQLite (see chat_settle.c for why). The
 * chat writer calls it when it has nothing else to do. */
#ifndef CHIME_CHAT_SETTLE_H
#define CHIME_CHAT_SETTLE_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

#define CHAT_SETTLE_ROWS 512   /* changes moved a transaction */
#define CHAT_FANOUT_RECENT 16 /* a fan-out to this many members or more goes to chat_recent */

/* Where a walk of settles over chat_recent is: the last (user, seq) moved
 * ({0, 0}: at the start). */
typedef struct chat_settle_at {
    int64_t user, seq;
} chat_settle_at;

/* Moves the CHAT_SETTLE_ROWS changes of chat_recent after *at in (user,
 * seq) order (those to the end when there are fewer, and *at goes back to
 * the start; from the start when none is after *at) into chat_changes, in
 * a transaction of its own, and moves *at on; *more: whether any change is
 * left in chat_recent. STORE_OK, or an error (nothing moved, *at kept). */
int chat_settle(store *db, chat_settle_at *at, bool *more);

#endif
