/* groups.h -- a set of lease groups one node holds its share of: work is
 * split into micro-shards, shards into N groups, and each group is a lease
 * (cluster/lease.h) named PREFIX + its number. Every heartbeat a node
 * renews what it holds and moves toward an equal share, ceil(N / live
 * nodes): it takes only groups nobody holds (a try at a held one waits on
 * its holder's row lock on PostgreSQL), releases its surplus at once (a
 * joining node finds free groups at its next heartbeat), and a dead node's
 * groups are free once their leases expire. A group's work is fenced by
 * its lease (lease_hold_fence_in), so a node that lost a group writes
 * nothing more for it. The owner of a lease_groups is one thread: every
 * call comes from it. */
#ifndef CHIME_CLUSTER_GROUPS_H
#define CHIME_CLUSTER_GROUPS_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/lease.h"
#include "store/store.h"

typedef struct lease_groups lease_groups;

/* n groups named prefix + "%03d", held by owner. NULL when out of memory. */
lease_groups *lease_groups_new(const char *prefix, int n, const char *owner, int64_t ttl_ms);
void lease_groups_free(lease_groups *g);
/* Renews, then rebalances (at most heartbeat_ms of acquiring). Logs what
 * it holds when that changes; who names the work in the logs. */
void lease_groups_rebalance(lease_groups *g, store *db, int64_t heartbeat_ms, const char *who);
/* Releases every group held (clean shutdown). */
void lease_groups_release(lease_groups *g, store *db);
int lease_groups_count(const lease_groups *g);
int lease_groups_held(const lease_groups *g);
/* Whether group i is held; *hold and *tenure for fencing its work. */
bool lease_groups_get(lease_groups *g, int i, lease_hold **hold, uint64_t *tenure);
/* A held group found lost (its fence failed): not held any more. */
void lease_groups_lost(lease_groups *g, int i);

#endif
