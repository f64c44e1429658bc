/* caldav_store.h -- what CalDAV keeps beside the calendar's own tables
 * (caldav_schema.c): which name each resource has in each collection, the
 * collections' sequence numbers and tombstones for sync-collection, the
 * names clients gave calendars and resources, and calendar properties the
 * JSON API has no field for (colour, description, order).
 *
 * A collection is keyed by a calendar's id, or by minus a user's id for the
 * events that user is invited to (CALDAV_INVITED). */
#ifndef CHIME_CALDAV_STORE_H
#define CHIME_CALDAV_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calendar/calendar.h"
#include "store/store.h"

#define CALDAV_NAME_MAX 300    /* a resource name: "{uid}-{16 hex}.ics" at most */
#define CALDAV_SEGMENT_MAX 64  /* a calendar's path segment */
#define CALDAV_COLOR_MAX 32
#define CALDAV_INVITED(user_id) (-(user_id))

enum { CALDAV_OK = 0, CALDAV_NOT_FOUND = 1, CALDAV_ERROR = -1 };

/* One resource of a collection, or a tombstone in a change list. */
typedef struct caldav_member {
    char name[CALDAV_NAME_MAX + 1];
    int64_t event_id;
    int64_t seq;
    bool deleted;
    char etag[24];          /* the event's (live members only) */
    int64_t updated_ms;
} caldav_member;

typedef struct caldav_members {
    caldav_member *v;
    size_t n, cap;
} caldav_members;

void caldav_members_free(caldav_members *m);

/* The collection's sequence (0 before its first change) and floor. */
int caldav_collection_state(store *db, int64_t coll, int64_t *seq, int64_t *floor);
/* Every live resource, by name. */
int caldav_members_list(store *db, int64_t coll, caldav_members *out);
/* Resources changed in (since, upto], oldest change first, at most limit
 * (0: no limit); with since 0 only live ones (an initial sync). */
int caldav_changes(store *db, int64_t coll, int64_t since, int64_t upto, size_t limit, caldav_members *out);
/* The live resource with this name: its event. CALDAV_NOT_FOUND if none. */
int caldav_member_find(store *db, int64_t coll, const char *name, caldav_member *out);
/* The live resource of an event in a collection. */
int caldav_member_of_event(store *db, int64_t coll, int64_t event_id, caldav_member *out);

/* The name a resource gets when nobody chose one: "{uid}.ics", '/' as %2F. */
void caldav_default_name(const char *uid, char *out, size_t size);
/* Records that the resource of `uid` in the calendar is called `name`
 * (forgotten when it is the default); before the event is written, in the
 * same transaction, so the triggers file it under that name. */
int caldav_name_set(store *db, int64_t calendar_id, const char *uid, const char *name);

/* A calendar's CalDAV side. segment "" means its id is its segment. */
typedef struct caldav_calprops {
    char segment[CALDAV_SEGMENT_MAX + 1];
    char color[CALDAV_COLOR_MAX + 1];
    char order[16];
    char *description; /* heap, or NULL */
} caldav_calprops;

void caldav_calprops_free(caldav_calprops *p);
/* The user's calendar that a path segment names: a segment a client gave
 * it (MKCALENDAR), or its id. CALDAV_NOT_FOUND for anything else. */
int caldav_calendar_find(store *db, int64_t owner, const char *segment, cal_calendar *cal, caldav_calprops *props);
int caldav_calprops_get(store *db, int64_t calendar_id, caldav_calprops *out);
/* Writes every field of props (NULL description: none). */
int caldav_calprops_save(store *db, int64_t calendar_id, int64_t owner, const caldav_calprops *props);

/* Tombstones changed before before_ms go, and each collection's floor
 * rises to the newest sequence pruned (tokens older than that expire).
 * *n gets how many went. */
int caldav_prune(store *db, int64_t before_ms, int64_t *n);

/* Adds CalDAV's schema steps (caldav_schema.c) to the one list. */
int caldav_schema_add(store_schema *s);

#endif
