/* identity.h -- a node's id, the same across its restarts, and the proof
 * that no live process has it.
 *
 * A node's leases are named by its id (owner). If a restarted node came
 * back under a new id it would wait out its dead self's leases (the lease
 * TTL, 15 s by default) before it could claim, fire or run anything. So an
 * id is claimed with a lock that only a live process holds:
 *   SQLite      an open-file-description lock on one byte (chosen by the
 *               id's hash) of "<database file>.nodes", beside the database;
 *   PostgreSQL  a session advisory lock, keyed by the id's hash, held by a
 *               connection of its own.
 * The kernel drops the first and the database the second when the process
 * dies, and never while it lives (a stopped process keeps both). With no
 * --node-id, a node takes the first free of "<host>-1", "<host>-2", ...: a
 * process restarted on the same machine finds its own id free again, so it
 * takes its leases back at once (lease_acquire lets an owner re-acquire
 * what it held, with a new epoch that fences off the dead incarnation's
 * writes). Two live processes can never share an id: --node-id naming an id
 * that a live node holds is refused. */
#ifndef CHIME_CLUSTER_IDENTITY_H
#define CHIME_CLUSTER_IDENTITY_H

#include <stddef.h>

#define NODE_IDENTITY_MAX 64
#define NODE_IDENTITY_SLOTS 256 /* "<host>-N" tried, N = 1.. */

typedef struct node_identity node_identity;

/* Claims requested (when not NULL or empty) or the first free
 * "<host>-N". NULL with a message in err when requested is held by a live
 * node, every slot is taken, or the lock cannot be had. */
node_identity *node_identity_claim(const char *db_url, const char *requested, char *err, size_t errlen);
const char *node_identity_id(const node_identity *n);
/* PostgreSQL: if the lock's connection was lost, reconnects and takes the
 * lock again; -1 (with err) when that fails, e.g. because another process
 * claimed the id meanwhile. SQLite: always 0. Call from one thread. */
int node_identity_keep(node_identity *n, char *err, size_t errlen);
/* Gives the id up (after every lease it named is released). */
void node_identity_release(node_identity *n);

#endif
