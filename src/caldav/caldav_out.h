/* caldav_out.h -- the XML chime answers with: a growing buffer with
 * escaping, hrefs percent-encoded, and the multistatus skeleton. On
 * allocation failure the buffer stops growing and co_failed says so. */
#ifndef CHIME_CALDAV_OUT_H
#define CHIME_CALDAV_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "caldav/caldav_xml.h"

typedef struct caldav_out {
    char *buf;
    size_t len, cap;
    bool failed;
} caldav_out;

void co_init(caldav_out *o, size_t cap);
void co_free(caldav_out *o);
bool co_failed(const caldav_out *o);
void co_raw(caldav_out *o, const char *s);
void co_rawn(caldav_out *o, const char *s, size_t n);
void co_fmt(caldav_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text content or an attribute value, escaped (& < > " and controls). */
void co_text(caldav_out *o, const char *s);
void co_textn(caldav_out *o, const char *s, size_t n);
/* One path segment, percent-encoded but for unreserved characters and '@'
 * (what clients such as vdirsyncer normalise hrefs to). */
void co_segment(caldav_out *o, const char *seg);

/* <?xml ...?><D:multistatus xmlns:D=... C CS A> and its end. */
void co_multistatus_open(caldav_out *o);
void co_multistatus_close(caldav_out *o);
/* <D:status>HTTP/1.1 404 Not Found</D:status> */
void co_status(caldav_out *o, int status);
/* A property element: known ones with the root's prefixes (D:, C:, CS:,
 * A:), others with a namespace declaration of their own. */
void co_prop_open(caldav_out *o, const caldav_prop *p);
void co_prop_close(caldav_out *o, const caldav_prop *p);
void co_prop_empty(caldav_out *o, const caldav_prop *p);
/* A known property by id (for answers built without a request). */
caldav_prop co_known(caldav_prop_id id);

/* A whole DAV:error body naming a precondition (cond_ns/cond, may be
 * NULL) with a human message in chime's own namespace. */
void co_error_body(caldav_out *o, const char *cond_ns, const char *cond, const char *message);

#endif
