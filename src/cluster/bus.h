/* bus.h -- hints between nodes: "these users have news", "this reminder
 * fired". PostgreSQL's LISTEN/NOTIFY by default (nothing more to run),
 * Redis pub/sub when a Redis URL is given. On SQLite there is one node and
 * no bus: bus_new returns a bus that publishes nowhere.
 *
 * A hint is only a hint: delivery is at most once and not replayed (a node
 * that was down or reconnecting misses what was said meanwhile), so
 * nothing may depend on it but latency; the data itself is always in the
 * database, and devices catch up by pulling it. A node does not hear its
 * own hints (it acts on them locally, before publishing).
 *
 * Both directions run on threads of the bus's own, each with its own
 * connection, so no caller ever waits for the network: bus_publish only
 * queues. */
#ifndef CHIME_CLUSTER_BUS_H
#define CHIME_CLUSTER_BUS_H

#include <stddef.h>

/* PostgreSQL refuses NOTIFY payloads of 8000 bytes and more. */
#define BUS_PAYLOAD_MAX 7900

typedef struct bus bus;

/* Runs on the bus's listener thread, once per hint from another node. */
typedef void (*bus_fn)(void *arg, const char *payload, size_t len);

typedef struct bus_opts {
    const char *db_url;    /* sqlite:... (no bus) or postgresql://... */
    const char *redis_host; /* Redis's address (bus_redis_address), or NULL for PostgreSQL's */
    int redis_port;
    const char *node_id;   /* who we are (hints of our own are dropped) */
    const char *channel;   /* default "chime" */
} bus_opts;

/* NULL when out of memory. Nothing runs until bus_start. */
bus *bus_new(const bus_opts *o, bus_fn fn, void *arg);
/* Starts the threads (none without a shared database). 0, or -1 (logged).
 * Connections that fail are retried in the background. */
int bus_start(bus *b);
/* Queues a hint for the other nodes (from any thread); payloads longer
 * than BUS_PAYLOAD_MAX are dropped (logged). */
void bus_publish(bus *b, const char *payload, size_t len);
/* Whether hints cross nodes at all (a shared database). */
int bus_enabled(const bus *b);
/* Stops the threads and frees. */
void bus_free(bus *b);
/* redis://HOST:PORT (or HOST:PORT) -> *host (malloc'd, the caller frees)
 * and *port (6379 when absent). 0, or -1 when it is not one. A host name
 * comes back as the address it has now (looked up here: the server does it
 * once, at start, and hands the address to the bus and the hot list). */
int bus_redis_address(const char *url, char **host, int *port);

#endif
