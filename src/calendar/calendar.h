/* calendar.h -- calendars, events, recurring series, per-instance overrides,
 * attendees, and the expansion of series into instances over a range.
 *
 * A series is one events row; its instances are computed by src/time's
 * rrule_set, never stored. An override row, keyed by the instance's original
 * start (UTC), replaces one instance: moved, retitled or cancelled. Deleting
 * one instance adds an EXDATE. Times: *_ms are UTC milliseconds; wall times
 * are civil_time in the event's zone, or in its calendar's zone when the
 * event is floating (time_zone ""). All-day events are floating dates.
 *
 * Bounds (documented in the README): a range query spans at most
 * CAL_MAX_RANGE_DAYS and returns at most CAL_MAX_PAGE items per page; a
 * series yields instances only until CAL_MAX_YEAR; COUNT is at most
 * CAL_MAX_COUNT; a series has at most CAL_MAX_DATES RDATEs and EXDATEs.
 */
#ifndef CHIME_CALENDAR_H
#define CHIME_CALENDAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "time/civil.h"
#include "time/rrule_set.h"
#include "time/tz.h"

#define CAL_SUMMARY_MAX 1024
#define CAL_DESCRIPTION_MAX 8192
#define CAL_LOCATION_MAX 1024
#define CAL_UID_MAX 255
#define CAL_ZONE_MAX 64
#define CAL_MAX_ATTENDEES 200
#define CAL_MAX_REMINDERS 5
#define CAL_MAX_REMINDER_MINUTES 40320
#define CAL_MAX_DATES 1000
#define CAL_MAX_COUNT 100000
#define CAL_MAX_RANGE_DAYS 3660
#define CAL_DEFAULT_PAGE 250
#define CAL_MAX_PAGE 2500
#define CAL_MAX_CALENDARS 100

enum { CAL_OK = 0, CAL_NOT_FOUND = 1, CAL_CONFLICT = 2, CAL_FORBIDDEN = 3, CAL_ERROR = -1 };

typedef enum cal_response { CAL_NEEDS_ACTION, CAL_ACCEPTED, CAL_DECLINED, CAL_TENTATIVE } cal_response;
const char *cal_response_name(cal_response r);
int cal_response_parse(const char *s, cal_response *out);

typedef struct cal_calendar {
    int64_t id, owner_id, created_ms;
    char summary[CAL_SUMMARY_MAX + 1];
    char time_zone[CAL_ZONE_MAX];
    bool primary;
} cal_calendar;

typedef struct cal_reminder {
    char method[8]; /* push | email | webhook */
    int32_t minutes_before;
} cal_reminder;

typedef struct cal_attendee {
    int64_t user_id;
    char email[256];
    cal_response response;
    bool has_reminders; /* the attendee's own list replaces the event's */
    int nreminders;
    cal_reminder reminders[CAL_MAX_REMINDERS];
} cal_attendee;

/* One event or series. Strings are heap-owned by the event. */
typedef struct cal_event {
    int64_t id, calendar_id, created_by, created_ms, updated_ms;
    char *ical_uid, *summary, *description, *location;
    char status[12];          /* confirmed | tentative | cancelled */
    bool all_day;
    char time_zone[CAL_ZONE_MAX]; /* "" = floating (the calendar's zone) */
    civil_time start_local, end_local;
    int64_t start_ms;         /* UTC instant of the first start */
    int64_t duration_s;       /* end - start (exact) */
    char *rrule;              /* canonical RRULE text, or NULL; two rules
                                 (RRULE_SET_MAX_RULES), one per line, when a
                                 file had two (cal_rules_parse) */
    int64_t *rdates, *exdates;/* local seconds, sorted */
    size_t nrdates, nexdates;
    bool has_series_end;
    int64_t series_end_ms;    /* UTC end of the last instance */
    int nreminders;
    cal_reminder reminders[CAL_MAX_REMINDERS];
    char etag[24];
    /* Filled when loaded for a viewer. */
    char calendar_zone[CAL_ZONE_MAX];
    char organizer_email[256];
    cal_attendee *attendees;
    int nattendees;
    /* Rendering cache for listings: the event's JSON members that are the
     * same for all its instances (filled and freed by the JSON writer). */
    char *json_const, *json_shown;
    size_t json_const_len, json_shown_len;
} cal_event;

void cal_event_free(cal_event *e);
/* The zone an event's wall times are in (its own, else its calendar's). */
const char *cal_event_zone_name(const cal_event *e);

/* An override of one instance (NULL strings inherit from the series). */
typedef struct cal_override {
    int64_t event_id, original_ms;
    bool cancelled;
    char *summary, *description, *location;
    char status[12];          /* "" = inherit */
    bool moved;
    civil_time start_local, end_local; /* when moved */
    int64_t start_ms, end_ms;
} cal_override;

void cal_override_free(cal_override *o);

/* ---- calendars ---- */
/* The user's primary calendar, created (zone "UTC") on first use. */
int cal_primary(store *db, int64_t user_id, cal_calendar *out);
int cal_calendar_get(store *db, int64_t user_id, int64_t id, cal_calendar *out); /* owner only */
int cal_calendar_list(store *db, int64_t user_id, cal_calendar **out, size_t *n);
int cal_calendar_create(store *db, int64_t user_id, const char *summary, const char *zone, cal_calendar *out);
/* A new name for one of the user's calendars. CAL_NOT_FOUND otherwise. */
int cal_calendar_rename(store *db, int64_t user_id, int64_t id, const char *summary);
/* CAL_FORBIDDEN for the primary calendar. */
int cal_calendar_delete(store *db, int64_t user_id, int64_t id);

/* Subscription feed: the SHA-256 (hex) of the calendar's secret feed token,
 * or NULL to revoke it. CAL_NOT_FOUND unless the user owns the calendar. */
int cal_feed_set(store *db, int64_t user_id, int64_t id, const char *token_hash);
/* The calendar whose feed token has this hash. */
int cal_feed_lookup(store *db, const char *token_hash, cal_calendar *out);

/* ---- events ---- */
/* Loads an event the user may see (organizer or attendee) with attendees.
 * *is_organizer tells which. CAL_NOT_FOUND for everyone else. */
int cal_event_load(store *db, int64_t viewer, int64_t id, cal_event *out, bool *is_organizer);
/* Computes start_ms, duration and series_end from the wall times, zone and
 * recurrence. Returns 0, or -1 with a message naming what is wrong. */
int cal_event_resolve(cal_event *e, tz_db *tz, char *err, size_t errlen, char *field, size_t fieldlen);
/* Loads an event with its attendees whoever asks (for background work such
 * as reminders); *owner is its calendar's owner. CAL_NOT_FOUND if gone. */
int cal_event_load_any(store *db, int64_t id, cal_event *out, int64_t *owner);
/* Every override of one event, ordered by original start; caller frees
 * each (cal_override_free) and the array. */
int cal_overrides_load(store *db, int64_t event_id, cal_override **out, size_t *n);
/* Inserts (id 0: a new id) or replaces the row and its attendee list, in one
 * transaction; a new etag each time. CAL_CONFLICT on a duplicate ical_uid. */
int cal_event_save(store *db, cal_event *e, bool insert);
/* The same inside the caller's transaction. */
int cal_event_save_tx(store *db, cal_event *e, bool insert);
/* Moves overrides at or after original_ms to another series (a split). */
int cal_overrides_move(store *db, int64_t from_event, int64_t to_event, int64_t original_ms);
/* Drops overrides at or after original_ms (a series cut short). */
int cal_overrides_drop_from(store *db, int64_t event_id, int64_t original_ms);
int cal_event_delete(store *db, int64_t id);
/* Drops every override (the series' times or rule changed under them). */
int cal_overrides_clear(store *db, int64_t event_id);
int cal_override_load(store *db, int64_t event_id, int64_t original_ms, cal_override *out);
int cal_override_save(store *db, const cal_override *o, bool all_day);
int cal_override_delete(store *db, int64_t event_id, int64_t original_ms);
/* set_reminders: the attendee's own list becomes rem (nrem of them), or,
 * with rem NULL, goes: the event's reminders apply again. */
int cal_rsvp(store *db, int64_t event_id, int64_t user_id, cal_response r, const cal_reminder *rem, int nrem,
             bool set_reminders);
/* Bumps the etag and updated time (an override or answer changed it). */
int cal_event_touch(store *db, int64_t event_id);

/* The event with this iCalendar UID in a calendar: its id and creation time. */
int cal_event_find_uid(store *db, int64_t calendar_id, const char *uid, int64_t *id, int64_t *created_ms);

/* A registered user by email (any case) or, with email NULL, by id. */
int cal_user_lookup(store *db, const char *email, int64_t id, int64_t *out_id, char *email_out, size_t size);

/* ---- an event's rules ---- */
/* The rules of e->rrule text (NULL: none) into rs[RRULE_SET_MAX_RULES];
 * 0, or -1 with a message. */
int cal_rules_parse(const char *text, rrule *rs, int *n, char *err, size_t errlen);
/* Their canonical text, one rule per line, replacing *text (NULL for none);
 * -1 when out of memory (nothing changed). */
int cal_rules_store(const rrule *rs, int n, char **text);
/* Steps through the rule lines of e->rrule text: *cursor starts at the
 * text (may be NULL); each call gives the next rule and its length. */
bool cal_rules_next(const char **cursor, const char **rule, int *len);

/* ---- expansion ---- */
/* A series ready to expand: its rrule_set over its zone. */
typedef struct cal_series {
    const cal_event *ev;
    const tz_zone *zone;      /* NULL: floating in UTC (no calendar zone) */
    rrule_set set;
    bool recurring;
} cal_series;

int cal_series_init(cal_series *s, const cal_event *e, tz_db *tz, char *err, size_t errlen);
/* UTC ms of an instance's start/end given its local start (local seconds). */
int64_t cal_series_utc_ms(const cal_series *s, int64_t local);
int64_t cal_series_end_ms(const cal_series *s, int64_t local_start);
/* Is there an instance whose original start is utc_ms? Sets *local. */
bool cal_series_has_instance(cal_series *s, int64_t utc_ms, int64_t *local);

/* The first instance that starts at or after t_ms, overrides applied
 * (ovs sorted by original start): moved instances count at their new start,
 * cancelled ones and EXDATEs not at all; a cancelled event has none.
 * Returns true and fills *original_ms and *start_ms, or false when the
 * series has no such instance. Bounded: the series iterator jumps to t. */
bool cal_next_instance(cal_series *s, const cal_override *ovs, size_t novs, int64_t t_ms, int64_t *original_ms,
                       int64_t *start_ms);

/* ---- editing part of a series (cal_edit.c) ---- */
/* Deleting one instance: its original start (local seconds) becomes an
 * EXDATE, kept sorted. CAL_OK (also when already there), CAL_CONFLICT
 * past CAL_MAX_DATES, CAL_ERROR when out of memory (nothing changed). */
int cal_event_add_exdate(cal_event *ev, int64_t local);
/* "This and following" deleted: the series ends before the instance
 * (original_local, original_ms its original start). COUNT keeps its
 * meaning (the instances before the cut); otherwise an UNTIL just before
 * it. RDATEs and EXDATEs from the cut on go. 0, or -1 (a rule that does
 * not parse, or out of memory). */
int cal_series_truncate(cal_event *ev, const cal_series *s, int64_t original_local, int64_t original_ms);
/* "This and following" edited: *next (zeroed first; the caller frees it)
 * becomes a copy of old starting at the instance, with id next_id, a UID
 * derived from old's, the RDATEs and EXDATEs after the cut and the rest
 * of a COUNT; old is truncated there. The caller then applies the edits
 * to next, resolves both and saves them (cal_series_split_save). 0, or -1
 * (out of memory, or a rule that does not parse). */
int cal_series_split(cal_event *old, const cal_series *s, int64_t original_local, int64_t original_ms,
                     int64_t next_id, cal_event *next);
/* Saves a split in one transaction: both series, and the overrides from
 * the cut on moved to next -- or dropped when the edit moved the times or
 * changed the rule. */
int cal_series_split_save(store *db, cal_event *old, cal_event *next, int64_t original_ms, bool moved_times);

/* One item of a listing: an instance (or a single event). */
typedef struct cal_item {
    const cal_event *ev;
    const cal_override *ov;   /* NULL when not overridden */
    bool recurring;
    int64_t original_ms;      /* the instance's original start, UTC */
    int64_t original_local;
    int64_t start_ms, end_ms;
} cal_item;

/* Everything a viewer sees overlapping [from_ms, to_ms): events they
 * organize or attend (optionally one calendar), instances expanded,
 * overrides applied, sorted by (start, event id, original start). Items
 * strictly after the cursor key are returned, at most limit of them; *more says
 * whether another page exists. The listing owns the events and overrides
 * the items point into. */
typedef struct cal_listing {
    cal_event *events;
    size_t nevents;
    cal_override *overrides;
    size_t noverrides;
    cal_item *items;
    size_t nitems;
    bool more;
} cal_listing;

typedef struct cal_query {
    int64_t viewer;
    int64_t calendar_id;      /* 0: all of the viewer's */
    int64_t event_id;         /* 0: every event; else one series */
    int64_t from_ms, to_ms;
    bool has_cursor;          /* resume after the item with this key */
    int64_t cursor_ms, cursor_event, cursor_orig;
    size_t limit;
    bool busy_only;           /* free/busy: skip declined, cancelled, all-day */
} cal_query;

int cal_list(store *db, tz_db *tz, const cal_query *q, cal_listing *out);
/* cal_list's first half (cal_store.c): the rows, overrides and attendees. */
int cal_list_load_events(store *db, const cal_query *q, cal_listing *l);
void cal_listing_free(cal_listing *l);
/* Busy time: the instances of a busy_only query merged where they overlap
 * or touch, clipped to [from_ms, to_ms); at most q->limit instances are
 * looked at. *out (the caller frees it) holds *n pairs (start, end). */
typedef struct cal_interval {
    int64_t start_ms, end_ms;
} cal_interval;
int cal_busy(store *db, tz_db *tz, const cal_query *q, cal_interval **out, size_t *n);

/* Every event of one calendar (ordered by id) with attendees and overrides,
 * into a listing with no items (for export). */
int cal_calendar_events(store *db, int64_t calendar_id, cal_listing *out);

/* The item's id: the event id, or "{event}_{original start}" for instances
 * (UTC basic format, or the date for all-day series). buf >= 48 bytes. */
void cal_item_id(const cal_item *it, char *buf, size_t size);

/* Parses "{original_start}" of an instance path: "20261109T140000Z" or, for
 * all-day series, "20261109". Returns the UTC ms, or -1 if malformed. */
int64_t cal_parse_instance_key(const cal_series *s, const char *text, size_t len);

/* Adds the calendar's schema steps (cal_schema.c) to the one list. */
int cal_schema_add(store_schema *s);

#endif
