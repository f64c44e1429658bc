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

/* Moves the first CHAT_SETTLE_ROWS changes of chat_recent in (user, seq)
 * order (all, when there are fewer) into chat_changes, in a transaction
 * of its own; *more: whether any are left. STORE_OK or an error (nothing
 * moved). */
int chat_settle(store *db, bool *more);

#endif
