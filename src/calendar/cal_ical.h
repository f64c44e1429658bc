/* cal_ical.h -- iCalendar (RFC 5545) import and export for calendars.
 *
 * Three steps, the first two free of any database so the fuzzer can run them:
 *
 *   ical_parse   text -> a tree of components and properties. Strict about
 *                the content-line shape (folding, NAME[;params]:value, UTF-8,
 *                BEGIN/END balance) so a broken file is refused with the line
 *                number, where libical's parser would guess and go on.
 *   ical_read    tree -> events ready to save: VEVENTs with RRULE/EXDATE/
 *                RDATE, RECURRENCE-ID overrides folded into their series,
 *                all-day and floating times, TZIDs mapped to IANA zones.
 *   (ical_http.c saves the result in one transaction.)
 *
 *   ical_write   a calendar's events -> text: VTIMEZONE blocks built from
 *                the zone data, overrides as RECURRENCE-ID VEVENTs,
 *                cancelled instances as EXDATE, attendees with PARTSTAT.
 *
 * Recurrence is never expanded with libical; src/time does it all.
 */
#ifndef CHIME_CAL_ICAL_H
#define CHIME_CAL_ICAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calendar/calendar.h"

#define ICAL_MAX_EVENTS 5000        /* VEVENTs (series and overrides) per file */
#define ICAL_MAX_DEPTH 8            /* nesting of BEGIN/END */
#define ICAL_MAX_TOTAL_COUNT 500000 /* sum of COUNT over a file's rules */
#define ICAL_MAX_SKIPS 100          /* skipped components listed one by one */

/* A refusal: the line (1-based, of the physical line where the offending
 * content line starts; 0 when it concerns the whole file) and why. */
typedef struct ical_err {
    int line;
    char msg[256];
} ical_err;

/* ---- content lines ------------------------------------------------------ */

typedef struct ical_param {
    const char *name;        /* upper case */
    const char *value;       /* quotes removed; a list stays comma-separated */
    struct ical_param *next;
} ical_param;

typedef struct ical_prop {
    const char *name;        /* upper case */
    const char *value;       /* raw (still escaped) value */
    ical_param *params;
    int line;
    struct ical_prop *next;
} ical_prop;

typedef struct ical_comp {
    const char *name;        /* upper case: VCALENDAR, VEVENT, ... */
    int line;
    ical_prop *props;
    struct ical_comp *subs;  /* nested components, in order */
    struct ical_comp *next;
} ical_comp;

typedef struct ical_arena ical_arena;

/* A parsed file. Everything hangs off the arena, freed by ical_doc_free. */
typedef struct ical_doc {
    ical_comp *roots;        /* the VCALENDAR components */
    ical_arena *arena;
} ical_doc;

int ical_parse(const char *text, size_t len, ical_doc *out, ical_err *err);
void ical_doc_free(ical_doc *d);
const char *ical_param_get(const ical_prop *p, const char *name);
const ical_prop *ical_prop_get(const ical_comp *c, const char *name);
/* Replaces bytes that are not valid UTF-8 with '?' in place: messages quote
 * cut-off pieces of the input and must still be valid JSON strings. */
void ical_utf8_sanitize(char *s);
/* Unescapes a TEXT value (\n \, \; \\) into a new heap string. */
char *ical_text_unescape(const char *v);

/* ---- from a file to events ---------------------------------------------- */

/* One series (or single event) of a file with its overrides. ev has no id,
 * calendar or creator yet; its attendees carry emails only (user_id 0). */
typedef struct ical_series_in {
    cal_event ev;
    int line;                /* of its BEGIN:VEVENT */
    cal_override *ovs;       /* sorted by original_ms, event_id 0 */
    size_t novs;
    bool lone_instance;      /* a RECURRENCE-ID VEVENT whose series is not in the file */
} ical_series_in;

typedef struct ical_skip {
    int line;
    char uid[64];
    char reason[160];
} ical_skip;

typedef struct ical_import {
    ical_series_in *series;
    size_t nseries;
    ical_skip skips[ICAL_MAX_SKIPS];
    size_t nskips;           /* listed */
    size_t nskipped;         /* all of them, listed or not */
} ical_import;

/* Turns iCalendar text into series. calendar_zone is the zone floating and
 * all-day times belong to. Returns 0, or -1 with err naming the line. */
int ical_read(const char *text, size_t len, tz_db *tz, const char *calendar_zone, ical_import *out,
              ical_err *err);
void ical_import_free(ical_import *im);
/* Lists one more skipped component (the HTTP layer skips some too). */
void ical_import_skip(ical_import *im, int line, const char *uid, const char *reason);

/* What an import did (cal_import.c). */
typedef struct cal_import_counts {
    size_t imported, updated, ignored_attendees;
} cal_import_counts;

/* Saves every series of im into the calendar as user `me`, inside the
 * caller's transaction: matched by UID within the calendar (a match takes
 * the file's fields and its overrides are replaced by the file's), new
 * UIDs inserted, attendees mapped to registered users. A lone instance
 * whose series is already stored is skipped (listed in im). CAL_OK,
 * CAL_CONFLICT (a concurrent writer took a UID) or CAL_ERROR. */
int cal_import_save(store *db, int64_t me, const cal_calendar *cal, ical_import *im, cal_import_counts *n);

/* The IANA zone for a TZID as producers write them: an IANA name, a Windows
 * name, a prefixed IANA name ("/mozilla.org/20050126_1/America/New_York"),
 * an Outlook display name ("(UTC-05:00) Eastern Time (US & Canada)"), or the
 * X-LIC-LOCATION of its VTIMEZONE (location may be NULL). NULL if none. */
const char *ical_zone_map(tz_db *tz, const char *tzid, const char *location);

/* The zone a file's own VTIMEZONE with this TZID defines (its STANDARD and
 * DAYLIGHT onsets expanded through 2200), owned by the caller
 * (tz_zone_free); NULL when the file has no such VTIMEZONE or it cannot be
 * read. */
tz_zone *ical_vtimezone_zone(const ical_doc *doc, const char *tzid);
/* The IANA zone (of the Windows zone table's) whose offsets equal z's at
 * every instant of [from, to) (UTC seconds), or NULL. */
const char *ical_zone_match(tz_db *tz, const tz_zone *z, int64_t from, int64_t to);

/* ---- from events to a file ---------------------------------------------- */

/* Writes a VCALENDAR with the events (and their overrides, matched by
 * event_id; both arrays sorted by event id) into a new heap string of
 * *len bytes. Returns NULL when out of memory. */
char *ical_write(const cal_calendar *cal, const cal_event *events, size_t nevents, const cal_override *ovs,
                 size_t novs, tz_db *tz, int64_t now_ms, size_t *len);
/* One CalDAV calendar object resource (RFC 4791 4.1): the series with
 * its overrides, no METHOD and nothing of the calendar's; the same bytes
 * for as long as the event is unchanged. NULL when out of memory. */
char *ical_write_resource(const cal_event *e, const cal_override *ovs, size_t novs, tz_db *tz, size_t *len);
/* A VCALENDAR holding the VTIMEZONE of one zone (none for UTC), listing
 * its transitions from the year of now_ms on; CalDAV's calendar-timezone. */
char *ical_write_timezone(const char *zone, tz_db *tz, int64_t now_ms, size_t *len);
/* Instances as CalDAV's expand writes them (RFC 4791 9.6.5): one VEVENT
 * each, overrides applied, with RECURRENCE-ID (not for a single event) and
 * times in UTC (all-day ones keep their dates), no RRULE, RDATE, EXDATE or
 * VTIMEZONE. NULL when out of memory. */
char *ical_write_expanded(const cal_item *items, size_t n, size_t *len);

#endif
