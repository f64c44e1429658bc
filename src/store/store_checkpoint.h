/* store_checkpoint.h -- a thread that keeps an SQLite WAL short and synced
 * for the writers of this process: those that share one connection under a
 * store_gate, and any other connection to the same file (the chat writer).
 *
 * The writers' connections must not checkpoint themselves (PRAGMA
 * wal_autocheckpoint = 0, or far past this thread's size, the caller's to
 * set): see store_checkpoint.c for why and for how this thread does it
 * instead. SQLite only. */
#ifndef CHIME_STORE_CHECKPOINT_H
#define CHIME_STORE_CHECKPOINT_H

#include <stdint.h>

#include "store/store_gate.h"

typedef struct store_checkpoint store_checkpoint;

/* The WAL size, in pages, at which the checkpointer lets the WAL start
 * over (512 MiB of 4 KiB pages; see store_checkpoint.c). */
#define STORE_CKPT_FRAMES 131072

/* Starts the checkpointer on a connection of its own to url. gate is the
 * writers'; who prefixes its log lines; thread_name names the thread (all
 * three borrowed: they must outlive store_checkpoint_stop). frames: the
 * WAL size at which it starts the WAL over (0: STORE_CKPT_FRAMES; tests
 * use less); calm_ms: how long the WAL must stay under a quarter of its
 * file before the file is emptied (0: 45 s; tests use less). NULL when the
 * thread cannot be started (not logged: the caller says what failed). */
store_checkpoint *store_checkpoint_start(const char *url, store_gate *gate, const char *who,
                                         const char *thread_name, int64_t frames, int64_t calm_ms);

/* Stops the thread (at once, not after its sleep) and waits for it.
 * NULL is a no-op. */
void store_checkpoint_stop(store_checkpoint *c);

#endif
