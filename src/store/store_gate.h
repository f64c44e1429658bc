/* store_gate.h -- one writer at a time on a connection threads share.
 *
 * SQLite has one writer at a time; a writer that finds the lock taken
 * sleeps in SQLite's busy handler (up to 100 ms a nap), which is what
 * lateness is made of. Threads that write through one shared connection
 * queue on this gate instead and wake the moment the previous transaction
 * ends. (Who goes next is the callers' to steer -- the reminder scanner
 * stands back while deliveries are behind: a mutex handed over in strict
 * turns cost a thread wakeup per transaction and halved the throughput.)
 *
 * A gate that does not serialize (PostgreSQL: each thread has its own
 * connection) makes store_gate_lock and store_gate_unlock no-ops.
 *
 * store_gate_lock_first lets one thread (the WAL checkpointer) in ahead
 * of the writers queued: while it waits for the lock, other writers wait
 * at the gate, so it gets the lock after the transaction in progress
 * rather than after a queue.
 *
 * Usage, on the shared connection:
 *     store_gate_init(&g, is_sqlite);
 *     store_set_guard(db, store_gate_held, &g);  // a call without the lock aborts
 *     store_gate_lock(&g); ... store_begin(db) ... store_commit(db); store_gate_unlock(&g);
 */
#ifndef CHIME_STORE_GATE_H
#define CHIME_STORE_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct store_gate {
    bool serialize; /* false: lock and unlock do nothing */
    pthread_mutex_t mu;
    /* Shut while a lock_first waits or holds: writers wait on cv. */
    atomic_bool shut;
    pthread_mutex_t shut_mu;
    pthread_cond_t shut_cv;
} store_gate;

void store_gate_init(store_gate *g, bool serialize);
void store_gate_destroy(store_gate *g);

/* Whether writes through this gate are serialized (SQLite). */
static inline bool store_gate_serializes(const store_gate *g)
{
    return g->serialize;
}

void store_gate_lock(store_gate *g);
void store_gate_unlock(store_gate *g);

/* store_gate_lock ahead of the writers queued for it; always locks, the
 * gate serializing or not (only a serializing gate's user needs it). */
void store_gate_lock_first(store_gate *g);
void store_gate_unlock_first(store_gate *g);

/* Whether the calling thread holds gate ctx (a store_gate *): the
 * held() of store_set_guard. */
bool store_gate_held(void *ctx);

#endif
