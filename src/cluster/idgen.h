/* idgen.h -- 64-bit ids that are unique across nodes and ordered by time
 * (posts): milliseconds since 2020-01-01 (41 bits), the node's number (10
 * bits), a sequence within the millisecond (12 bits). Ordering by id is
 * ordering by time, to the millisecond, as every node's clock has it.
 *
 * A node's number (0-1023) is a lease ("idgen/NNNN", cluster/lease.h),
 * renewed on a thread of the generator's own, so two live nodes never
 * share one; a node whose lease may have run out (paused past its TTL)
 * hands out no ids until it holds a number again. Within a node the ids
 * only grow, also when the wall clock steps back (they wait for it). */
#ifndef CHIME_CLUSTER_IDGEN_H
#define CHIME_CLUSTER_IDGEN_H

#include <stdint.h>

#define IDGEN_EPOCH_MS 1577836800000LL /* 2020-01-01T00:00:00Z */

typedef struct idgen idgen;

/* Starts the generator: takes a node number (trying the one the node id
 * hashes to first) and keeps it. NULL (logged) when the database cannot
 * be opened or every number is taken. */
idgen *idgen_start(const char *db_url, const char *node_id, int64_t ttl_ms, int64_t heartbeat_ms);
/* Releases the number and stops. */
void idgen_stop(idgen *g);
/* The next id, or -1 while the node holds no number (any thread). */
int64_t idgen_next(idgen *g);

/* The milliseconds (Unix time) an id was made at. */
int64_t idgen_ms(int64_t id);
/* The smallest id made at or after ms (for "ids since a time"). */
int64_t idgen_floor(int64_t ms);

#endif
