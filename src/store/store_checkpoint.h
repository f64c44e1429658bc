/* store_checkpoint.h -- a thread that keeps an SQLite WAL short and synced
 * for writers that share one connection under a store_gate.
 *
 * The writers' connection must not checkpoint itself (PRAGMA
 * wal_autocheckpoint = 0, the caller's to set): see store_checkpoint.c
 * for why and for how this thread does it instead. SQLite only. */
#ifndef CHIME_STORE_CHECKPOINT_H
#define CHIME_STORE_CHECKPOINT_H

#include "store/store_gate.h"

typedef struct store_checkpoint store_checkpoint;

/* Starts the checkpointer on a connection of its own to url. gate is the
 * writers'; who prefixes its log lines; thread_name names the thread (all
 * three borrowed: they must outlive store_checkpoint_stop). NULL when the thread
 * cannot be started (not logged: the caller says what failed). */
store_checkpoint *store_checkpoint_start(const char *url, store_gate *gate, const char *who,
                                         const char *thread_name);

/* Stops the thread (at once, not after its sleep) and waits for it.
 * NULL is a no-op. */
void store_checkpoint_stop(store_checkpoint *c);

#endif
