/* caldav_int.h -- what CalDAV's handler files share: the request context,
 * the resolved target of a path, hrefs, answers, and the event loading and
 * matching the reports and PROPFIND use. Nothing outside src/caldav
 * includes it. */
#ifndef CHIME_CALDAV_INT_H
#define CHIME_CALDAV_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "caldav/caldav_http.h"
#include "caldav/caldav_out.h"
#include "caldav/caldav_store.h"
#include "caldav/caldav_xml.h"
#include "calendar/cal_ical.h"
#include "calendar/calendar.h"

#define CALDAV_INVITED_SEGMENT "invited"

/* One request. */
typedef struct caldav_ctx {
    http_req *r;
    caldav_http *dav;
    store *db;
    tz_db *tz;
    int64_t me;
    char me_hex[17];
    /* The zone data's fingerprint (caldav_http.c, zone_tag_of): a
     * resource's bytes hold its zones' VTIMEZONE, so its ETag, and every
     * collection's sync token and CTag, carry this too (caldav_etag). */
    char zone_tag[9];
} caldav_ctx;

typedef enum caldav_kind {
    CALDAV_ROOT,
    CALDAV_PRINCIPAL,
    CALDAV_HOME,
    CALDAV_CALENDAR,  /* one of the user's calendars, or the invitations */
    CALDAV_RESOURCE,
} caldav_kind;

/* What a path names, resolved for the signed-in user. */
typedef struct caldav_target {
    caldav_kind kind;
    bool invited;                /* the invitations collection (read-only) */
    cal_calendar cal;            /* the calendar (not for invited) */
    caldav_calprops props;
    int64_t coll;                /* the collection's key (caldav_store.h) */
    char segment[CALDAV_SEGMENT_MAX + 1]; /* the collection's path segment */
    char name[CALDAV_NAME_MAX + 1]; /* a resource's name (decoded) */
    bool exists;                 /* the resource is there: member is filled */
    caldav_member member;
} caldav_target;

caldav_ctx caldav_ctx_of(caldav_http *dav, http_req *r);
/* Resolves the route's parameters (user, calendar, resource name) up to
 * `kind`. false after answering (404 for anything not the user's, 503). A
 * missing resource is not an error: t->exists says. */
bool caldav_resolve(caldav_ctx *c, caldav_kind kind, caldav_target *t);
void caldav_target_free(caldav_target *t);
/* Fills a calendar collection target from a calendar row. */
void caldav_target_calendar(caldav_ctx *c, caldav_target *t, const cal_calendar *cal);
/* The invitations collection of the user. */
void caldav_target_invited(caldav_ctx *c, caldav_target *t);
/* Depth: 0, 1, or 2 for infinity (what the header says, else dflt). */
int caldav_depth(const http_req *r, int dflt);

/* hrefs, percent-encoded. */
void caldav_href_principal(caldav_ctx *c, caldav_out *o);
void caldav_href_home(caldav_ctx *c, caldav_out *o);
void caldav_href_collection(caldav_ctx *c, const caldav_target *t, caldav_out *o);
void caldav_href_resource(caldav_ctx *c, const caldav_target *t, const char *name, caldav_out *o);
/* An href (a path or an absolute URL) of a resource in collection t: its
 * name, or NULL when it names anything else. */
const char *caldav_href_member(caldav_ctx *c, const caldav_target *t, const char *href, char *name, size_t size);

/* Answers. */
void caldav_send_xml(caldav_ctx *c, int status, caldav_out *o); /* frees o */
void caldav_send_error(caldav_ctx *c, int status, const char *cond_ns, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void caldav_send_xml_err(caldav_ctx *c, const caldav_xml_err *e);
void caldav_send_db_error(caldav_ctx *c);
/* A resource's ETag (unquoted): the event's stored etag, which changes
 * with every write, and the zone tag, which changes with the zone data
 * its VTIMEZONE text is written from. */
#define CALDAV_ETAG_MAX 40
void caldav_etag(const caldav_ctx *c, const char *stored, char out[CALDAV_ETAG_MAX]);
/* A write's If-Match / If-None-Match against a resource's state (stored:
 * the event's etag; an ETag under an older zone tag names the same
 * state); false after 412. */
bool caldav_preconditions(caldav_ctx *c, bool exists, const char *stored);
/* GET's If-None-Match: true when the client's copy is current (304). */
bool caldav_not_modified(caldav_ctx *c, const char *stored);

/* ---- events of a collection (caldav_events.c) ---- */

/* The events a request looks at, loaded once: all of a calendar's (with
 * attendees and overrides), or the invitations one by one. */
typedef struct caldav_events {
    cal_listing l;
    bool all;         /* l holds every event of the calendar that the
                         request can want: one not in l is not found */
} caldav_events;

void caldav_events_free(caldav_events *ev);
/* Loads every event of the collection t (cal_calendar_events, or the
 * invitations' events). */
int caldav_events_load_all(caldav_ctx *c, const caldav_target *t, caldav_events *ev);
/* Loads the events of t that may have an instance in [from_ms, to_ms)
 * (cal_list_load_events: by where they end, by index), for a query whose
 * every match must overlap that range: the others are then "not found",
 * which is "no match". */
int caldav_events_load_range(caldav_ctx *c, const caldav_target *t, int64_t from_ms, int64_t to_ms,
                             caldav_events *ev);
/* The event and its overrides, from ev when loaded, else from the store
 * (into *own, which the caller frees with cal_event_free and free). NULL
 * when it is gone. */
typedef struct caldav_event_ref {
    const cal_event *e;
    const cal_override *ovs;
    size_t novs;
    cal_event own;
    cal_override *own_ovs;
    bool owned;
} caldav_event_ref;
int caldav_event_get(caldav_ctx *c, caldav_events *ev, int64_t id, caldav_event_ref *out);
void caldav_event_ref_free(caldav_event_ref *ref);

/* The resource's iCalendar (heap, *len bytes): the series as stored, or
 * expanded over [from, to) when expand. NULL when out of memory or past
 * CALDAV_MAX_INSTANCES instances. */
#define CALDAV_MAX_INSTANCES 20000
char *caldav_render(caldav_ctx *c, const caldav_event_ref *ref, bool expand, int64_t from, int64_t to, size_t *len);
/* Does the series match the query's filter (RFC 4791 9.7)? -1 on error. */
int caldav_matches(caldav_ctx *c, const caldav_filter *f, const caldav_event_ref *ref);
/* Its instances in [from, to), overrides applied, cancelled ones and
 * EXDATEs left out: *items (the caller frees it), at most max of them.
 * Returns the count, or -1 past max / out of memory. */
int caldav_instances(caldav_ctx *c, const caldav_event_ref *ref, int64_t from, int64_t to, size_t max,
                     cal_item **items);

/* ---- answers built from properties (caldav_props.c) ---- */

/* One node of a multistatus. member: a resource's row (NULL otherwise). */
typedef struct caldav_node {
    const caldav_target *t;      /* the collection (or the root/principal/home) */
    caldav_kind kind;
    const caldav_member *member;
} caldav_node;

/* What a report or PROPFIND asks of each node, and what serves it. */
typedef struct caldav_answer {
    caldav_ctx *c;
    const caldav_request *rq;
    caldav_events *events;       /* for calendar-data (may be empty) */
    caldav_out out;
} caldav_answer;

/* Writes <D:response> for the node with the properties rq asks for. */
void caldav_write_response(caldav_answer *a, const caldav_node *n);
/* <D:response> for a resource that is not there (404). */
void caldav_write_missing(caldav_answer *a, const caldav_target *t, const char *name);
/* The collection's sync token (and CTag):
 * "urn:x-chime:sync:<collection>:<zone tag>:<seq>". */
void caldav_sync_token(const caldav_ctx *c, const caldav_target *t, int64_t seq, char *buf, size_t size);
/* Parses a token of this collection written with today's zone data; -1
 * when it is not one (the client then syncs again from the start). */
int caldav_sync_token_parse(const caldav_ctx *c, const caldav_target *t, const char *token, int64_t *seq);

/* Does the request ask for the resources' text (calendar-data or
 * getcontentlength)? Then loading a calendar's events at once pays. */
bool caldav_wants_text(const caldav_request *rq);

/* ---- handlers (caldav_propfind.c, caldav_report.c, caldav_write.c) ---- */
void caldav_handle_propfind(caldav_ctx *c, caldav_kind kind);
void caldav_handle_report(caldav_ctx *c);
void caldav_handle_get(caldav_ctx *c);
void caldav_handle_put(caldav_ctx *c);
void caldav_handle_delete(caldav_ctx *c, caldav_kind kind);
void caldav_handle_mkcol(caldav_ctx *c);
void caldav_handle_proppatch(caldav_ctx *c);

#endif
