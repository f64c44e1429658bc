/* store_gate.c -- the write gate of a shared SQLite connection (see
 * store_gate.h): a mutex, a "first" gate in front of it for the
 * checkpointer, and the thread-local record of who holds it that
 * store_set_guard checks on every call. */
#include "store/store_gate.h"

#include <stddef.h>

/* The gate this thread holds, if any: a fact about the thread, so
 * thread-local. The shared connection's guard reads it. */
static __thread const store_gate *gate_held;

void store_gate_init(store_gate *g, bool serialize)
{
    g->serialize = serialize;
    pthread_mutex_init(&g->mu, NULL);
    atomic_init(&g->shut, false);
    pthread_mutex_init(&g->shut_mu, NULL);
    pthread_cond_init(&g->shut_cv, NULL);
}

void store_gate_destroy(store_gate *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_mutex_destroy(&g->shut_mu);
    pthread_cond_destroy(&g->shut_cv);
}

bool store_gate_held(void *ctx)
{
    return gate_held == ctx;
}

void store_gate_lock(store_gate *g)
{
    if (!g->serialize) return;
    if (atomic_load(&g->shut)) {
        pthread_mutex_lock(&g->shut_mu);
        while (atomic_load(&g->shut)) pthread_cond_wait(&g->shut_cv, &g->shut_mu);
        pthread_mutex_unlock(&g->shut_mu);
    }
    pthread_mutex_lock(&g->mu);
    gate_held = g;
}

void store_gate_unlock(store_gate *g)
{
    if (!g->serialize) return;
    gate_held = NULL;
    pthread_mutex_unlock(&g->mu);
}

void store_gate_lock_first(store_gate *g)
{
    atomic_store(&g->shut, true);
    pthread_mutex_lock(&g->mu);
    gate_held = g;
}

void store_gate_unlock_first(store_gate *g)
{
    gate_held = NULL;
    pthread_mutex_lock(&g->shut_mu);
    atomic_store(&g->shut, false);
    pthread_cond_broadcast(&g->shut_cv);
    pthread_mutex_unlock(&g->shut_mu);
    pthread_mutex_unlock(&g->mu);
}
