/* nodes.h -- the registry of running chime processes (nodes).
 *
 * Each node writes its row at start, bumps heartbeat_ms on every heartbeat
 * and deletes its row on clean shutdown. "Live" means a heartbeat within
 * the last lease length, by the database clock. Rows of nodes that died
 * are deleted by any live node once they are long dead. */
#ifndef CHIME_CLUSTER_NODES_H
#define CHIME_CLUSTER_NODES_H

#include <stdint.h>

#include "store/store.h"

#define NODES_ID_MAX 64
#define NODES_ADDRESS_MAX 256

typedef struct node_info {
    char id[NODES_ID_MAX + 1];
    char address[NODES_ADDRESS_MAX + 1];
    int64_t started_ms;
    int64_t heartbeat_ms;
} node_info;

/* Writes (or rewrites) the node's row; started and heartbeat are now. */
int nodes_register(store *db, const char *id, const char *address);
/* Bumps the heartbeat; re-registers if the row was deleted meanwhile. */
int nodes_heartbeat(store *db, const char *id, const char *address);
int nodes_unregister(store *db, const char *id);
/* Deletes rows whose heartbeat is older than dead_ms. */
int nodes_gc(store *db, int64_t dead_ms);
/* Live nodes (heartbeat within live_ms), oldest first; calls fn for each.
 * Returns the store result (STORE_OK or an error). */
int nodes_list(store *db, int64_t live_ms, void (*fn)(const node_info *n, void *arg), void *arg);
int nodes_live_count(store *db, int64_t live_ms, int64_t *count);

#endif
