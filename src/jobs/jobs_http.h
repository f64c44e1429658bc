/* jobs_http.h -- the scheduler's admin routes (all HTTP_ROUTE_ADMIN):
 *     GET  /v1/admin/nodes            live nodes
 *     GET  /v1/admin/leases           every lease and who holds it
 *     GET  /v1/admin/jobs             jobs, next and last runs
 *     POST /v1/admin/jobs/{name}/run  ask the owner to run it now (202)
 * An admin is users.is_admin (the first user) or the --admin-email
 * account; anyone else gets 403. Everything is read from the database, so
 * any node answers for the whole cluster. */
#ifndef CHIME_JOBS_HTTP_H
#define CHIME_JOBS_HTTP_H

#include <stdint.h>

#include "http/server.h"
#include "store/store_pool.h"

/* The routes' context; the caller owns it and keeps it for the server's
 * life. */
typedef struct jobs_http {
    store_pool *dbs;      /* borrowed */
    int64_t lease_ttl_ms; /* a node is live while its heartbeat is this recent */
} jobs_http;

void jobs_http_register(jobs_http *j, http_server *s);

#endif
