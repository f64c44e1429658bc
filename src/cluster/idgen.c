/* idgen.c -- see idgen.h. */
#include "cluster/idgen.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "cluster/lease.h"

#define IDGEN_NODES 1024
#define IDGEN_SEQ_BITS 12
#define IDGEN_NODE_BITS 10

struct idgen {
    char *db_url;
    char owner[LEASE_OWNER_MAX + 1];
    int64_t ttl_ms, heartbeat_ms;
    lease_hold hold;
    uint64_t tenure;
    int number;
    pthread_t thread;
    pthread_mutex_t mu; /* guards below, and stopping */
    pthread_cond_t cv;
    bool stopping;
    int64_t last_ms;
    int seq;
    /* Until when (base_mono_ns) the number is surely ours: the hold's own
     * answer (lease_hold_valid) takes the hold's mutex, which a renewal
     * keeps across its round trip -- and a renewal may be queued behind
     * the very write transaction asking for an id (the chat writer's). */
    int64_t valid_until_ns;
};

/* Under mu: the hold's validity, as of its last renewal. */
static void note_validity(idgen *g)
{
    g->valid_until_ns = g->number < 0 ? 0 : lease_hold_valid_until_ns(&g->hold, g->tenure);
}

static uint32_t hash_of(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Takes the first free number from the node id's own; -1 when none. */
static int take_number(idgen *g, store *db)
{
    int start = (int)(hash_of(g->owner) % IDGEN_NODES);
    for (int k = 0; k < IDGEN_NODES; k++) {
        int n = (start + k) % IDGEN_NODES;
        char name[32];
        snprintf(name, sizeof name, "idgen/%04d", n);
        lease_hold_destroy(&g->hold);
        lease_hold_init(&g->hold, name, g->owner);
        if (lease_hold_acquire(db, &g->hold, g->ttl_ms, &g->tenure) == LEASE_OK) return n;
    }
    return -1;
}

static bool wait_ms(idgen *g, int64_t ms)
{
    int64_t until = base_now_ms() + ms;
    struct timespec ts = {.tv_sec = until / 1000, .tv_nsec = (until % 1000) * 1000000};
    pthread_mutex_lock(&g->mu);
    while (!g->stopping && base_now_ms() < until)
        if (pthread_cond_timedwait(&g->cv, &g->mu, &ts) == ETIMEDOUT) break;
    bool go = !g->stopping;
    pthread_mutex_unlock(&g->mu);
    return go;
}

/* Renews the number every heartbeat; takes one again when it was lost. */
static void *idgen_main(void *p)
{
    idgen *g = p;
    base_thread_name("idgen");
    char err[256];
    store *db = store_open(g->db_url, err, sizeof err);
    while (db && wait_ms(g, g->heartbeat_ms)) {
        if (lease_hold_renew(db, &g->hold, g->ttl_ms) != LEASE_LOST) {
            pthread_mutex_lock(&g->mu);
            note_validity(g); /* renewed, or not (then it runs out as it was) */
            pthread_mutex_unlock(&g->mu);
            continue;
        }
        /* Under mu: no id is made while the hold is remade. */
        pthread_mutex_lock(&g->mu);
        int was = g->number;
        g->number = take_number(g, db);
        note_validity(g);
        pthread_mutex_unlock(&g->mu);
        log_warn("idgen: lost node number %d; now %d", was, g->number);
    }
    if (db) lease_hold_release(db, &g->hold);
    store_close(db);
    return NULL;
}

idgen *idgen_start(const char *db_url, const char *node_id, int64_t ttl_ms, int64_t heartbeat_ms)
{
    idgen *g = calloc(1, sizeof *g);
    char err[256];
    if (!g || !(g->db_url = strdup(db_url))) {
        free(g);
        return NULL;
    }
    snprintf(g->owner, sizeof g->owner, "%s", node_id);
    g->ttl_ms = ttl_ms;
    g->heartbeat_ms = heartbeat_ms;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    lease_hold_init(&g->hold, "idgen/none", g->owner);
    store *db = store_open(db_url, err, sizeof err);
    g->number = db ? take_number(g, db) : -1;
    note_validity(g);
    store_close(db);
    if (g->number < 0 || pthread_create(&g->thread, NULL, idgen_main, g) != 0) {
        log_error("idgen: no node number: %s", db ? "all are taken" : err);
        lease_hold_destroy(&g->hold);
        free(g->db_url);
        free(g);
        return NULL;
    }
    log_info("idgen: node number %d", g->number);
    return g;
}

void idgen_stop(idgen *g)
{
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stopping = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    lease_hold_destroy(&g->hold);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->db_url);
    free(g);
}

int64_t idgen_next(idgen *g)
{
    pthread_mutex_lock(&g->mu);
    if (g->number < 0 || base_mono_ns() >= g->valid_until_ns) {
        pthread_mutex_unlock(&g->mu);
        return -1;
    }
    int64_t now = base_now_ms();
    if (now < g->last_ms) now = g->last_ms; /* the clock stepped back: carry on from where we were */
    if (now == g->last_ms && ++g->seq >= (1 << IDGEN_SEQ_BITS)) {
        while ((now = base_now_ms()) <= g->last_ms) continue; /* 4096 in a millisecond: the next one */
        g->seq = 0;
    } else if (now != g->last_ms) {
        g->seq = 0;
    }
    g->last_ms = now;
    int64_t id = ((now - IDGEN_EPOCH_MS) << (IDGEN_NODE_BITS + IDGEN_SEQ_BITS)) |
                 ((int64_t)g->number << IDGEN_SEQ_BITS) | g->seq;
    pthread_mutex_unlock(&g->mu);
    return id;
}

int64_t idgen_ms(int64_t id)
{
    return (id >> (IDGEN_NODE_BITS + IDGEN_SEQ_BITS)) + IDGEN_EPOCH_MS;
}

int64_t idgen_floor(int64_t ms)
{
    return ms <= IDGEN_EPOCH_MS ? 0 : (ms - IDGEN_EPOCH_MS) << (IDGEN_NODE_BITS + IDGEN_SEQ_BITS);
}
