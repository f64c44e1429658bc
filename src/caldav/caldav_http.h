/* caldav_http.h -- CalDAV (RFC 4791), WebDAV sync (RFC 6578) and
 * discovery (RFC 6764) over HTTP, for phone and desktop calendar apps.
 *
 *   /.well-known/caldav                      -> /dav/ (301)
 *   /  and /dav/                             PROPFIND: current-user-principal
 *   /dav/principals/{user}/                  the user's principal
 *   /dav/calendars/{user}/                   the calendar home: one collection per calendar,
 *                                            and "invited/" (read-only) for invitations
 *   /dav/calendars/{user}/{calendar}/        a calendar collection
 *   /dav/calendars/{user}/{calendar}/{name}  one series: master + overrides, as iCalendar
 *
 * Every path but the well-known one and OPTIONS needs HTTP Basic with the
 * account's email and an app password (HTTP_ROUTE_BASIC); a path of
 * another user is 404. The calendar's data stay in the calendar's tables:
 * a PUT is an import of one series (cal_import_save), a GET is the
 * calendar's own writer, and every write is announced through the
 * calendar's change hook like the JSON API's. */
#ifndef CHIME_CALDAV_HTTP_H
#define CHIME_CALDAV_HTTP_H

#include <stdint.h>

#include "calendar/cal_http.h"
#include "http/server.h"
#include "jobs/jobs.h"

typedef struct caldav_http {
    cal_http *cal;        /* borrowed: the calendar's pool, zones and change hook */
    int64_t max_resource; /* largest iCalendar body a PUT may send (--max-body) */
    char zone_tag[9];     /* set by caldav_http_register: see caldav_ctx */
} caldav_http;

/* Readies libxml2: call once on the main thread, before the server starts. */
void caldav_http_init(void);
/* Adds every CalDAV route; c must outlive the server. */
void caldav_http_register(caldav_http *c, http_server *s);

/* The job that prunes sync tombstones older than ttl_ms (tokens older than
 * the newest pruned one then get 403 valid-sync-token). arg: a
 * caldav_prune_opts that outlives the scheduler. */
typedef struct caldav_prune_opts {
    int64_t ttl_ms;
} caldav_prune_opts;
int caldav_prune_job(jobs_run *r, void *arg);

#endif
