/* groups.c -- see groups.h. */
#include "cluster/groups.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/nodes.h"

typedef struct lease_group {
    lease_hold hold;
    uint64_t tenure;
    bool held;
} lease_group;

struct lease_groups {
    char prefix[64];
    int n;
    int64_t ttl_ms;
    lease_group *v;
};

lease_groups *lease_groups_new(const char *prefix, int n, const char *owner, int64_t ttl_ms)
{
    lease_groups *g = calloc(1, sizeof *g);
    if (!g || !(g->v = calloc((size_t)n, sizeof *g->v))) {
        free(g);
        return NULL;
    }
    snprintf(g->prefix, sizeof g->prefix, "%s", prefix);
    g->n = n;
    g->ttl_ms = ttl_ms;
    for (int i = 0; i < n; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s%03d", prefix, i);
        lease_hold_init(&g->v[i].hold, name, owner);
    }
    return g;
}

void lease_groups_free(lease_groups *g)
{
    if (!g) return;
    for (int i = 0; i < g->n; i++) lease_hold_destroy(&g->v[i].hold);
    free(g->v);
    free(g);
}

int lease_groups_count(const lease_groups *g)
{
    return g->n;
}

int lease_groups_held(const lease_groups *g)
{
    int n = 0;
    for (int i = 0; i < g->n; i++) n += g->v[i].held;
    return n;
}

bool lease_groups_get(lease_groups *g, int i, lease_hold **hold, uint64_t *tenure)
{
    if (!g->v[i].held) return false;
    *hold = &g->v[i].hold;
    *tenure = g->v[i].tenure;
    return true;
}

void lease_groups_lost(lease_groups *g, int i)
{
    lease_hold_drop(&g->v[i].hold);
    g->v[i].held = false;
}

/* Renews every held group in one statement. */
static void renew(lease_groups *g, store *db, const char *who)
{
    lease_hold **hs = malloc((size_t)g->n * sizeof *hs);
    int *res = malloc((size_t)g->n * sizeof *res);
    size_t n = 0;
    for (int i = 0; hs && res && i < g->n; i++)
        if (g->v[i].held) hs[n++] = &g->v[i].hold;
    if (hs && res && n && lease_hold_renew_many(db, hs, n, g->ttl_ms, res) != STORE_OK)
        log_warn("%s: lease renewals failed: %s", who, store_errmsg(db));
    for (size_t k = 0; hs && res && k < n; k++) {
        lease_group *lg = (lease_group *)((char *)hs[k] - offsetof(lease_group, hold)); /* reordered */
        if (res[k] == LEASE_LOST || !lease_hold_valid(&lg->hold, lg->tenure)) {
            log_warn("%s: lost lease group %d", who, (int)(lg - g->v));
            lease_groups_lost(g, (int)(lg - g->v));
        }
    }
    free(hs);
    free(res);
}

typedef struct lease_taken {
    const char *prefix;
    bool *v;
    int n;
} lease_taken;

static void mark_taken(void *ctx, const char *name)
{
    lease_taken *t = ctx;
    size_t plen = strlen(t->prefix);
    int i = atoi(name + plen);
    if (strncmp(name, t->prefix, plen) == 0 && i >= 0 && i < t->n) t->v[i] = true;
}

void lease_groups_rebalance(lease_groups *g, store *db, int64_t heartbeat_ms, const char *who)
{
    int was = lease_groups_held(g);
    renew(g, db, who);
    int64_t live = 1;
    if (nodes_live_count(db, g->ttl_ms, &live) < 0 || live < 1) live = 1;
    int target = (int)((g->n + live - 1) / live), held = lease_groups_held(g);
    lease_taken t = {g->prefix, held < target ? calloc((size_t)g->n, sizeof(bool)) : NULL, g->n};
    if (t.v && lease_list_held(db, g->prefix, mark_taken, &t) != STORE_OK) memset(t.v, 0, (size_t)g->n);
    unsigned char r[2];
    base_random(r, sizeof r);
    int64_t stop_at = base_now_ms() + heartbeat_ms;
    for (int k = 0, start = (r[0] | r[1] << 8) % g->n; k < g->n && held < target && base_now_ms() < stop_at; k++) {
        lease_group *lg = &g->v[(start + k) % g->n];
        if (lg->held || (t.v && t.v[(start + k) % g->n])) continue;
        if (lease_hold_acquire(db, &lg->hold, g->ttl_ms, &lg->tenure) == LEASE_OK) {
            lg->held = true;
            held++;
        }
    }
    free(t.v);
    for (int i = g->n - 1; i >= 0 && held > target; i--)
        if (g->v[i].held) {
            lease_hold_release(db, &g->v[i].hold);
            g->v[i].held = false;
            held--;
        }
    if (held != was)
        log_info("%s: holding %d of %d lease groups (%lld live nodes)", who, held, g->n, (long long)live);
}

void lease_groups_release(lease_groups *g, store *db)
{
    for (int i = 0; i < g->n; i++)
        if (g->v[i].held) {
            lease_hold_release(db, &g->v[i].hold);
            g->v[i].held = false;
        }
}
