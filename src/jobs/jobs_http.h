/* jobs_http.h -- admin endpoints of the scheduler:
 *   GET  /v1/admin/nodes            live nodes
 *   GET  /v1/admin/leases           every lease
 *   GET  /v1/admin/jobs             jobs with next and last run and owner
 *   POST /v1/admin/jobs/{name}/run  ask the owner to run it now (202)
 * All need a signed-in admin: users.is_admin (the first user) or the user
 * whose email is --admin-email; anyone else gets 403. */
#ifndef CHIME_JOBS_HTTP_H
#define CHIME_JOBS_HTTP_H

#include "http/server.h"

void jobs_http_register(http_server *s);

#endif
