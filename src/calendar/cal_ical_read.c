/* cal_ical_read.c -- VEVENTs of a parsed file into series ready to save.
 *
 * Each VEVENT without RECURRENCE-ID is a series (or single event); one with
 * RECURRENCE-ID overrides one instance of the series with the same UID:
 * cancelled (STATUS:CANCELLED, stored as an EXDATE), moved, or retitled. An
 * override whose series is not in the file stands alone as a single event
 * (Google exports lone invitations that way). What cannot be represented is
 * skipped and listed, never silently dropped: VTODO/VJOURNAL, overrides of
 * instances the series does not have, RANGE=THISANDFUTURE, and any one
 * event that cannot be stored (it ends before it starts, its TZID is
 * unknown and the file does not define it, more than two RRULEs). What is
 * malformed refuses the whole file with its line.
 *
 * Zones: an IANA, Windows or Outlook name is the system's zone; a TZID no
 * one knows is read from the file's own VTIMEZONE (cal_ical_vtz.c) and
 * replaced by the IANA zone with the same offsets over the event's years,
 * or else the event is kept in UTC at the instants the file defines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "base/text.h"
#include "calendar/cal_ical.h"
#include "time/rrule.h"

#define ZONE_CACHE 64
#define SERIES_MATCH_YEARS 30 /* a series' zone must match IANA's this long */

/* What a reading step answers: go on, refuse the file (err set), or skip
 * this one event (why set). */
enum { READ_OK = 0, READ_FAIL = -1, READ_SKIP = 1 };

typedef struct ical_reader {
    tz_db *tz;
    const char *calendar_zone;
    const ical_doc *doc;
    ical_import *out;
    ical_err *err;
    uint64_t total_count;
    /* TZIDs already mapped: files repeat a handful of them thousands of
     * times. custom: the zone the file's VTIMEZONE defines (owned), when
     * the name is nobody's. */
    struct {
        const char *tzid, *iana;
        tz_zone *custom;
    } zones[ZONE_CACHE];
    int nzones;
    /* Why the event being read is skipped, and the line to blame. */
    char why[160];
    int why_line;
} ical_reader;

static int fail(ical_reader *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ical_reader *r, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->err->line = line;
    vsnprintf(r->err->msg, sizeof r->err->msg, fmt, ap);
    va_end(ap);
    ical_utf8_sanitize(r->err->msg);
    return -1;
}

/* This event cannot be stored: said in why, skipped by read_all. */
static int skip_event(ical_reader *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int skip_event(ical_reader *r, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    r->why_line = line;
    return READ_SKIP;
}

static void skip(ical_reader *r, int line, const char *uid, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void skip(ical_reader *r, int line, const char *uid, const char *fmt, ...)
{
    r->out->nskipped++;
    if (r->out->nskips == ICAL_MAX_SKIPS) return;
    ical_skip *s = &r->out->skips[r->out->nskips++];
    s->line = line;
    snprintf(s->uid, sizeof s->uid, "%s", uid ? uid : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
    ical_utf8_sanitize(s->uid);
    ical_utf8_sanitize(s->reason);
}

/* ---- time zones ---------------------------------------------------------- */

/* The X-LIC-LOCATION of the file's VTIMEZONE with this TZID, if any. */
static const char *vtimezone_location(const ical_reader *r, const char *tzid)
{
    for (const ical_comp *cal = r->doc->roots; cal; cal = cal->next)
        for (const ical_comp *c = cal->subs; c; c = c->next) {
            if (strcmp(c->name, "VTIMEZONE") != 0) continue;
            const ical_prop *id = ical_prop_get(c, "TZID");
            if (!id || strcmp(id->value, tzid) != 0) continue;
            const ical_prop *loc = ical_prop_get(c, "X-LIC-LOCATION");
            return loc ? loc->value : NULL;
        }
    return NULL;
}

/* A DATE or DATE-TIME value as written. */
typedef struct ical_time {
    civil_time t;
    bool is_date, utc;
    const tz_zone *zone;      /* its TZID's zone; NULL when floating or UTC */
    const char *zone_name;    /* "" when none, or the zone is the file's own */
} ical_time;

/* The cache entry for a TZID, made on first use; NULL when it is full. */
static int zone_entry(ical_reader *r, const char *tzid)
{
    for (int i = 0; i < r->nzones; i++)
        if (strcmp(r->zones[i].tzid, tzid) == 0) return i;
    if (r->nzones == ZONE_CACHE) return -1;
    int i = r->nzones++;
    r->zones[i].tzid = tzid; /* in the document's arena, alive while we read */
    r->zones[i].iana = ical_zone_map(r->tz, tzid, vtimezone_location(r, tzid));
    r->zones[i].custom = r->zones[i].iana ? NULL : ical_vtimezone_zone(r->doc, tzid);
    return i;
}

static int prop_zone(ical_reader *r, const ical_prop *p, ical_time *out)
{
    const char *tzid = ical_param_get(p, "TZID");
    out->zone = NULL;
    out->zone_name = "";
    if (!tzid) return READ_OK;
    int i = zone_entry(r, tzid);
    const char *iana = i >= 0 ? r->zones[i].iana : ical_zone_map(r->tz, tzid, vtimezone_location(r, tzid));
    if (iana) {
        out->zone = tz_db_get(r->tz, iana);
        out->zone_name = iana;
    } else if (i >= 0 && r->zones[i].custom) {
        out->zone = r->zones[i].custom;
    } else {
        return skip_event(r, p->line, "%s: unknown time zone '%.80s', not defined by the file either", p->name, tzid);
    }
    return READ_OK;
}

/* One value "20261109", "20261109T090000" or "20261109T090000Z". In date
 * lists, "20131210Z" as Google's exports write RDATEs is the date. */
static int parse_time_value(ical_reader *r, const ical_prop *p, const char *v, size_t len, bool want_date, ical_time *t)
{
    bool in_list = strcmp(p->name, "RDATE") == 0 || strcmp(p->name, "EXDATE") == 0;
    if (in_list && len == 9 && (v[8] == 'Z' || v[8] == 'z')) len = 8;
    t->utc = len == 16 && (v[15] == 'Z' || v[15] == 'z');
    bool is_date = false;
    if ((len != 8 && len != 15 && !t->utc) || civil_parse_basic(v, t->utc ? 15 : len, &t->t, &is_date) != 0 ||
        t->t.year < 1 || t->t.year > 9998)
        return fail(r, p->line, "%s: '%.*s' is not a date (YYYYMMDD) or date-time (YYYYMMDDTHHMMSS[Z])", p->name,
                    (int)(len > 40 ? 40 : len), v);
    if (want_date && !is_date) return fail(r, p->line, "%s: VALUE=DATE but '%.*s' is a date-time", p->name, (int)len, v);
    t->is_date = is_date;
    if (t->utc) t->zone = NULL, t->zone_name = "";
    return 0;
}

static bool value_is_date(const ical_prop *p)
{
    const char *v = ical_param_get(p, "VALUE");
    return v && strcasecmp(v, "DATE") == 0;
}

static int prop_time(ical_reader *r, const ical_prop *p, ical_time *t)
{
    int rc = prop_zone(r, p, t);
    if (rc != READ_OK) return rc;
    return parse_time_value(r, p, p->value, strlen(p->value), value_is_date(p), t);
}

/* UTC seconds of a date-time value (floating: in the calendar's zone). */
static int64_t time_utc(const ical_reader *r, const ical_time *t)
{
    int64_t s = civil_to_seconds(&t->t);
    if (t->utc) return s;
    const tz_zone *z = t->zone ? t->zone : tz_db_get(r->tz, r->calendar_zone);
    return tz_local_to_utc(z, s);
}

/* A value as local seconds on the wall clock of event e's zone. */
static int64_t to_event_local(const ical_reader *r, const cal_event *e, const ical_time *t)
{
    const tz_zone *ez = tz_db_get(r->tz, cal_event_zone_name(e));
    if (e->all_day) { /* the date is what matters */
        civil_time d = t->t;
        d.hour = d.minute = d.second = 0;
        return civil_to_seconds(&d);
    }
    if (t->is_date) { /* a date for a timed series: that day at DTSTART's time */
        civil_time d = t->t;
        d.hour = e->start_local.hour, d.minute = e->start_local.minute, d.second = e->start_local.second;
        return civil_to_seconds(&d);
    }
    if (!t->utc && (!t->zone || t->zone == ez)) return civil_to_seconds(&t->t);
    return tz_utc_to_local(ez, time_utc(r, t));
}

/* ---- values --------------------------------------------------------------- */

/* A TEXT property, unescaped and cut to max bytes on a character boundary. */
static char *text_prop(const ical_comp *c, const char *name, size_t max)
{
    const ical_prop *p = ical_prop_get(c, name);
    if (!p) return NULL;
    char *s = ical_text_unescape(p->value);
    if (s && strlen(s) > max) {
        size_t n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
        s[n] = '\0';
    }
    return s;
}

/* A TEXT property stored by the API's rule (base/text.h): a line break
 * in a one-line field becomes a space (producers write multi-line
 * LOCATIONs: refusing them would refuse their files); any other control
 * the field may not hold refuses the file, naming the line. The property
 * is optional: *out stays NULL without it. */
static int text_field(ical_reader *r, const ical_comp *c, const char *name, size_t max, text_kind kind, char **out)
{
    *out = text_prop(c, name, max);
    if (!*out) return 0;
    if (kind == TEXT_LINE)
        for (char *p = *out; *p; p++)
            if (*p == '\n') *p = ' ';
    uint32_t cp;
    if (text_find_control(*out, strlen(*out), kind, &cp) < 0) return 0;
    return fail(r, ical_prop_get(c, name)->line, "%s: control character U+%04X", name, (unsigned)cp);
}

/* RFC 5545 3.3.6 DURATION: [+-]P(nW | nD [T...] | T nH nM nS). Sets days
 * (nominal) and secs (exact). */
static int parse_duration(const char *s, int *sign, int64_t *days, int64_t *secs)
{
    *sign = 1;
    *days = *secs = 0;
    if (*s == '+' || *s == '-') *sign = *s++ == '-' ? -1 : 1;
    if (*s++ != 'P') return -1;
    bool in_time = false, any = false;
    while (*s) {
        if (*s == 'T') {
            if (in_time) return -1;
            in_time = true;
            s++;
            continue;
        }
        int64_t n = 0;
        const char *d0 = s;
        while (*s >= '0' && *s <= '9' && s - d0 < 7) n = n * 10 + (*s++ - '0');
        if (s == d0) return -1;
        char u = *s++;
        if (!in_time && u == 'W') *days += 7 * n;
        else if (!in_time && u == 'D') *days += n;
        else if (in_time && u == 'H') *secs += 3600 * n;
        else if (in_time && u == 'M') *secs += 60 * n;
        else if (in_time && u == 'S') *secs += n;
        else return -1;
        any = true;
    }
    return any ? 0 : -1;
}

/* "EXDATE;TZID=...:v1,v2" (any number of lines) into local seconds. */
static int read_dates(ical_reader *r, const ical_comp *c, const char *name, cal_event *e, int64_t **arr, size_t *n)
{
    for (const ical_prop *p = c->props; p; p = p->next) {
        if (strcmp(p->name, name) != 0) continue;
        ical_time t;
        int rc = prop_zone(r, p, &t);
        if (rc != READ_OK) return rc;
        const char *vt = ical_param_get(p, "VALUE");
        bool want_date = vt && strcasecmp(vt, "DATE") == 0;
        bool period = vt && strcasecmp(vt, "PERIOD") == 0;
        for (const char *v = p->value; *v;) {
            const char *comma = strchr(v, ',');
            size_t len = comma ? (size_t)(comma - v) : strlen(v);
            if (period) { /* a period's start is the date that counts */
                const char *slash = memchr(v, '/', len);
                if (slash) len = (size_t)(slash - v);
            }
            if (*n >= CAL_MAX_DATES) return fail(r, p->line, "%s: more than %d dates in one event", name, CAL_MAX_DATES);
            if (parse_time_value(r, p, v, len, want_date, &t) != 0) return -1;
            int64_t *grown = realloc(*arr, (*n + 1) * sizeof *grown);
            if (!grown) return fail(r, p->line, "out of memory");
            *arr = grown;
            (*arr)[(*n)++] = to_event_local(r, e, &t);
            v += len;
            if (period) v += strcspn(v, ",");
            if (*v == ',') v++;
        }
    }
    return 0;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int read_attendees(ical_reader *r, const ical_comp *c, cal_event *e)
{
    for (const ical_prop *p = c->props; p; p = p->next) {
        if (strcmp(p->name, "ATTENDEE") != 0) continue;
        const char *v = p->value;
        if (strncasecmp(v, "mailto:", 7) != 0) continue; /* not an email: nobody we could find */
        v += 7;
        if (!*v || strlen(v) > 254 || !strchr(v, '@') || e->nattendees >= CAL_MAX_ATTENDEES) continue;
        if ((e->nattendees & (e->nattendees - 1)) == 0) {
            int cap = e->nattendees ? e->nattendees * 2 : 1;
            cal_attendee *grown = realloc(e->attendees, (size_t)cap * sizeof *grown);
            if (!grown) return fail(r, p->line, "out of memory");
            e->attendees = grown;
        }
        cal_attendee *a = &e->attendees[e->nattendees++];
        memset(a, 0, sizeof *a);
        snprintf(a->email, sizeof a->email, "%s", v);
        const char *ps = ical_param_get(p, "PARTSTAT");
        a->response = !ps                                ? CAL_NEEDS_ACTION
                      : strcasecmp(ps, "ACCEPTED") == 0  ? CAL_ACCEPTED
                      : strcasecmp(ps, "DECLINED") == 0  ? CAL_DECLINED
                      : strcasecmp(ps, "TENTATIVE") == 0 ? CAL_TENTATIVE
                                                         : CAL_NEEDS_ACTION;
    }
    return 0;
}

/* VALARMs that fire a fixed time before the start become reminders; others
 * (absolute, after the start, relative to the end) have no equivalent. */
static void read_alarms(const ical_comp *c, cal_event *e)
{
    for (const ical_comp *a = c->subs; a; a = a->next) {
        if (strcmp(a->name, "VALARM") != 0 || e->nreminders == CAL_MAX_REMINDERS) continue;
        const ical_prop *trig = ical_prop_get(a, "TRIGGER"), *action = ical_prop_get(a, "ACTION");
        const char *rel = trig ? ical_param_get(trig, "RELATED") : NULL;
        int sign;
        int64_t days, secs;
        if (!trig || (rel && strcasecmp(rel, "START") != 0) || parse_duration(trig->value, &sign, &days, &secs) != 0)
            continue;
        int64_t minutes = (days * 86400 + secs) / 60;
        if ((sign > 0 && minutes != 0) || minutes > CAL_MAX_REMINDER_MINUTES) continue;
        cal_reminder *rem = &e->reminders[e->nreminders++];
        snprintf(rem->method, sizeof rem->method, "%s",
                 action && strcasecmp(action->value, "EMAIL") == 0 ? "email" : "push");
        rem->minutes_before = (int32_t)minutes;
    }
}

/* ---- one VEVENT ----------------------------------------------------------- */

typedef struct vevent {
    const ical_comp *c;
    const ical_prop *rid;     /* RECURRENCE-ID, or NULL */
    cal_event ev;
    bool skipped;             /* cannot be stored: why, at why_line */
    int why_line;
    char why[160];
    bool handled;             /* taken as a series or skipped */
} vevent;

/* A stable UID for a VEVENT that has none, so re-imports still match. */
static char *made_up_uid(const ical_comp *c)
{
    static const char *const keys[] = {"DTSTART", "DTEND", "DURATION", "SUMMARY", "RRULE", "RECURRENCE-ID"};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const ical_prop *p = ical_prop_get(c, keys[i]);
        fprintf(f, "%s=%s\n", keys[i], p ? p->value : "");
    }
    fclose(f);
    if (!text) return NULL;
    char hex[65], uid[80];
    base_sha256_hex(text, len, hex);
    free(text);
    snprintf(uid, sizeof uid, "%.32s@import.chime", hex);
    return strdup(uid);
}

/* DTSTART in a zone only the file defines: the IANA zone with the same
 * offsets over the event's years (its own and the next; a series' next
 * SERIES_MATCH_YEARS), else UTC at the instant the definition gives. */
static void adopt_file_zone(ical_reader *r, const ical_comp *c, cal_event *e, const ical_time *s)
{
    int64_t utc = tz_local_to_utc(s->zone, civil_to_seconds(&s->t));
    bool series = ical_prop_get(c, "RRULE") || ical_prop_get(c, "RDATE");
    civil_time from, to;
    civil_from_seconds(utc, &from);
    from.month = from.day = 1;
    from.hour = from.minute = from.second = 0;
    to = from;
    to.year += series ? SERIES_MATCH_YEARS : 2;
    const char *iana = ical_zone_match(r->tz, s->zone, civil_to_seconds(&from), civil_to_seconds(&to));
    snprintf(e->time_zone, sizeof e->time_zone, "%s", iana ? iana : "UTC");
    if (iana) e->start_local = s->t; /* the same wall time there */
    else civil_from_seconds(utc, &e->start_local);
}

static int read_times(ical_reader *r, vevent *v)
{
    const ical_comp *c = v->c;
    cal_event *e = &v->ev;
    const ical_prop *ps = ical_prop_get(c, "DTSTART"), *pe = ical_prop_get(c, "DTEND"),
                    *pd = ical_prop_get(c, "DURATION");
    if (!ps) ps = v->rid; /* an override may leave DTSTART out: the instance keeps its time */
    if (!ps) return fail(r, c->line, "VEVENT has no DTSTART");
    ical_time s, en;
    int rc = prop_time(r, ps, &s);
    if (rc != READ_OK) return rc;
    e->all_day = s.is_date;
    e->start_local = s.t;
    if (s.is_date) e->time_zone[0] = '\0';
    else if (s.zone && !s.zone_name[0]) adopt_file_zone(r, c, e, &s);
    else if (s.utc && !ical_prop_get(c, "RRULE") && !ical_prop_get(c, "RDATE") && r->calendar_zone[0]) {
        /* A single instant: shown in the calendar's zone, as the user expects. */
        snprintf(e->time_zone, sizeof e->time_zone, "%s", r->calendar_zone);
        civil_from_seconds(tz_utc_to_local(tz_db_get(r->tz, r->calendar_zone), civil_to_seconds(&s.t)),
                           &e->start_local);
    } else {
        snprintf(e->time_zone, sizeof e->time_zone, "%s", s.utc ? "UTC" : s.zone_name);
    }
    if (pe) {
        if ((rc = prop_time(r, pe, &en)) != READ_OK) return rc;
        if (en.is_date != s.is_date) return fail(r, pe->line, "DTEND: must be a %s like DTSTART", s.is_date ? "date" : "date-time");
        e->end_local = en.t;
        if (!s.is_date) civil_from_seconds(to_event_local(r, e, &en), &e->end_local);
    } else if (pd) {
        int sign;
        int64_t days, secs;
        if (parse_duration(pd->value, &sign, &days, &secs) != 0 || sign < 0 || (s.is_date && secs))
            return fail(r, pd->line, "DURATION: '%.40s' is not a positive duration like PT1H or P1D", pd->value);
        int64_t local = civil_to_seconds(&e->start_local) + days * 86400;
        if (secs) {
            const tz_zone *z = tz_db_get(r->tz, cal_event_zone_name(e));
            local = tz_utc_to_local(z, tz_local_to_utc(z, local) + secs);
        }
        civil_from_seconds(local, &e->end_local);
    } else if (s.is_date) { /* RFC 5545 3.6.1: an all-day event without an end lasts the day */
        civil_from_seconds(civil_to_seconds(&s.t) + 86400, &e->end_local);
    } else {
        e->end_local = e->start_local;
    }
    /* A timed event without DTEND or DURATION, or with DTEND at DTSTART's
     * instant, is an instant (zero length), which is stored as such. */
    int64_t a = civil_to_seconds(&e->start_local), b = civil_to_seconds(&e->end_local);
    if (b < a || (e->all_day && b == a))
        return skip_event(r, pe ? pe->line : pd->line, "%s: the event ends before it starts", pe ? "DTEND" : "DURATION");
    return READ_OK;
}

/* RRULEs: two are their union (RFC 2445 allowed several; some apps still
 * write two), kept as they came; a third is more than we keep. */
static int read_rule(ical_reader *r, const ical_comp *c, cal_event *e)
{
    rrule rules[RRULE_SET_MAX_RULES];
    int n = 0;
    for (const ical_prop *p = c->props; p; p = p->next) {
        if (strcmp(p->name, "RRULE") != 0) continue;
        char msg[200];
        rrule rule;
        if (strlen(p->value) > RRULE_TEXT_MAX) return fail(r, p->line, "RRULE: longer than %d bytes", RRULE_TEXT_MAX);
        if (rrule_parse(p->value, strlen(p->value), &rule, msg, sizeof msg) != 0)
            return fail(r, p->line, "RRULE: %s", msg);
        if (rule.has & RRULE_HAS_COUNT) {
            if (rule.count > CAL_MAX_COUNT) return fail(r, p->line, "RRULE: COUNT is at most %d", CAL_MAX_COUNT);
            if ((r->total_count += rule.count) > ICAL_MAX_TOTAL_COUNT)
                return fail(r, p->line, "RRULE: the file's COUNTs add up to more than %d", ICAL_MAX_TOTAL_COUNT);
        }
        if (n == RRULE_SET_MAX_RULES)
            return skip_event(r, p->line, "RRULE: more than %d RRULEs in one event", RRULE_SET_MAX_RULES);
        rules[n++] = rule;
    }
    if (cal_rules_store(rules, n, &e->rrule) != 0) return fail(r, c->line, "out of memory");
    return READ_OK;
}

static int read_vevent(ical_reader *r, vevent *v)
{
    const ical_comp *c = v->c;
    cal_event *e = &v->ev;
    snprintf(e->calendar_zone, sizeof e->calendar_zone, "%s", r->calendar_zone);
    const ical_prop *uid = ical_prop_get(c, "UID");
    e->ical_uid = uid && uid->value[0] ? ical_text_unescape(uid->value) : made_up_uid(c);
    if (!e->ical_uid) return fail(r, c->line, "out of memory");
    /* The stored (unescaped) length is what is bounded: it is what an export
     * escapes again, perhaps longer than the file had it. */
    if (strlen(e->ical_uid) > CAL_UID_MAX) return fail(r, uid->line, "UID: longer than %d bytes", CAL_UID_MAX);
    uint32_t cp;
    if (text_find_control(e->ical_uid, strlen(e->ical_uid), TEXT_IDENT, &cp) >= 0)
        return fail(r, uid ? uid->line : c->line, "UID: control character U+%04X", (unsigned)cp);
    v->rid = ical_prop_get(c, "RECURRENCE-ID");
    int rc = read_times(r, v);
    if (rc != READ_OK) return rc;
    if (text_field(r, c, "SUMMARY", CAL_SUMMARY_MAX, TEXT_LINE, &e->summary) != 0 ||
        text_field(r, c, "DESCRIPTION", CAL_DESCRIPTION_MAX, TEXT_MULTILINE, &e->description) != 0 ||
        text_field(r, c, "LOCATION", CAL_LOCATION_MAX, TEXT_LINE, &e->location) != 0)
        return READ_FAIL;
    const ical_prop *st = ical_prop_get(c, "STATUS");
    snprintf(e->status, sizeof e->status, "%s",
             st && strcasecmp(st->value, "CANCELLED") == 0   ? "cancelled"
             : st && strcasecmp(st->value, "TENTATIVE") == 0 ? "tentative"
                                                             : "confirmed");
    if ((rc = read_rule(r, c, e)) != READ_OK || (rc = read_dates(r, c, "EXDATE", e, &e->exdates, &e->nexdates)) ||
        (rc = read_dates(r, c, "RDATE", e, &e->rdates, &e->nrdates)) || (rc = read_attendees(r, c, e)))
        return rc;
    if (e->nrdates) qsort(e->rdates, e->nrdates, sizeof *e->rdates, cmp64);
    if (e->nexdates) qsort(e->exdates, e->nexdates, sizeof *e->exdates, cmp64);
    read_alarms(c, e);
    return READ_OK;
}

/* ---- series and their overrides ----------------------------------------- */

static int by_uid(const void *a, const void *b)
{
    const ical_series_in *x = a, *y = b;
    return strcmp(x->ev.ical_uid, y->ev.ical_uid);
}

/* The series with this UID among the first n (sorted by UID). */
static ical_series_in *find_series(ical_import *im, const char *uid, size_t n)
{
    ical_series_in key = {.ev = {.ical_uid = (char *)uid}};
    return n ? bsearch(&key, im->series, n, sizeof key, by_uid) : NULL;
}

/* Resolves the series just taken; one that cannot be stored is taken
 * back and skipped, naming the line that caused it. */
static void resolve_or_skip(ical_reader *r, const ical_comp *c)
{
    ical_series_in *s = &r->out->series[r->out->nseries - 1];
    char msg[200], field[64];
    if (cal_event_resolve(&s->ev, r->tz, msg, sizeof msg, field, sizeof field) == 0) return;
    const ical_prop *p = strcmp(field, "recurrence") == 0 ? ical_prop_get(c, "RRULE") : NULL;
    skip(r, p ? p->line : c->line, s->ev.ical_uid, "%s: %s", p ? "RRULE" : "VEVENT", msg);
    cal_event_free(&s->ev);
    r->out->nseries--;
}

static int add_exdate(ical_series_in *s, int64_t local)
{
    for (size_t i = 0; i < s->ev.nexdates; i++)
        if (s->ev.exdates[i] == local) return 0;
    if (s->ev.nexdates >= CAL_MAX_DATES) return -1;
    int64_t *grown = realloc(s->ev.exdates, (s->ev.nexdates + 1) * sizeof *grown);
    if (!grown) return -1;
    s->ev.exdates = grown;
    size_t i = s->ev.nexdates++;
    while (i > 0 && grown[i - 1] > local) grown[i] = grown[i - 1], i--;
    grown[i] = local;
    return 0;
}

static char *differs(const char *mine, const char *series)
{
    if (!mine || strcmp(mine, series ? series : "") == 0) return NULL;
    return strdup(mine);
}

/* Folds one RECURRENCE-ID VEVENT into its series. */
static int apply_override(ical_reader *r, ical_series_in *s, vevent *v)
{
    const cal_event *m = &s->ev;
    const char *uid = m->ical_uid;
    const char *range = ical_param_get(v->rid, "RANGE");
    if (range && strcasecmp(range, "THISANDFUTURE") == 0) {
        skip(r, v->c->line, uid, "RECURRENCE-ID;RANGE=THISANDFUTURE is not supported");
        return 0;
    }
    ical_time rt;
    int rc = prop_time(r, v->rid, &rt);
    if (rc == READ_SKIP) skip(r, r->why_line, uid, "%s", r->why);
    if (rc != READ_OK) return rc == READ_SKIP ? 0 : -1;
    cal_series series;
    char msg[200];
    if (cal_series_init(&series, m, r->tz, msg, sizeof msg) != 0) return fail(r, v->c->line, "RRULE: %s", msg);
    int64_t original_local = to_event_local(r, m, &rt), local;
    int64_t original_ms = cal_series_utc_ms(&series, original_local);
    if (!series.recurring || !cal_series_has_instance(&series, original_ms, &local)) {
        skip(r, v->rid->line, uid, "RECURRENCE-ID %.20s is not an instance of its series", v->rid->value);
        return 0;
    }
    if (strcmp(v->ev.status, "cancelled") == 0) {
        if (add_exdate(s, original_local) != 0) return fail(r, v->c->line, "more than %d EXDATEs", CAL_MAX_DATES);
        return 0;
    }
    if (v->ev.all_day != m->all_day) {
        skip(r, v->c->line, uid, "an instance of a%s series cannot be %s", m->all_day ? "n all-day" : " timed",
             m->all_day ? "timed" : "all-day");
        return 0;
    }
    cal_override o = {.original_ms = original_ms};
    o.summary = differs(v->ev.summary, m->summary);
    o.description = differs(v->ev.description, m->description);
    o.location = differs(v->ev.location, m->location);
    if (strcmp(v->ev.status, m->status) != 0) snprintf(o.status, sizeof o.status, "%s", v->ev.status);
    /* Times in the series' zone; moved when they differ from the original.
     * Without DTSTART the instance keeps its time; without DTEND or DURATION
     * it keeps the series' length. */
    int64_t os = cal_series_utc_ms(&series, original_local), oe = cal_series_end_ms(&series, original_local);
    bool has_start = ical_prop_get(v->c, "DTSTART") != NULL;
    bool has_end = ical_prop_get(v->c, "DTEND") || ical_prop_get(v->c, "DURATION");
    civil_time sl = v->ev.start_local, el = v->ev.end_local;
    int64_t ss = os, se = oe;
    if (!has_start) {
        civil_from_seconds(original_local, &sl);
        civil_from_seconds(m->all_day ? original_local + m->duration_s : tz_utc_to_local(series.zone, oe / 1000), &el);
    } else if (m->all_day) {
        if (!has_end) civil_from_seconds(civil_to_seconds(&sl) + m->duration_s, &el);
        ss = cal_series_utc_ms(&series, civil_to_seconds(&sl));
        se = cal_series_utc_ms(&series, civil_to_seconds(&el));
    } else {
        const tz_zone *vz = tz_db_get(r->tz, cal_event_zone_name(&v->ev));
        ss = tz_local_to_utc(vz, civil_to_seconds(&sl)) * 1000;
        se = has_end ? tz_local_to_utc(vz, civil_to_seconds(&el)) * 1000 : ss + m->duration_s * 1000;
        civil_from_seconds(tz_utc_to_local(series.zone, ss / 1000), &sl);
        civil_from_seconds(tz_utc_to_local(series.zone, se / 1000), &el);
    }
    if (se < ss || (m->all_day && se == ss)) { /* a timed instance may be an instant */
        skip(r, v->c->line, uid, "the instance ends before it starts");
        cal_override_free(&o);
        return 0;
    }
    o.start_ms = os, o.end_ms = oe;
    if (ss != os || se != oe) {
        o.moved = true;
        o.start_local = sl, o.end_local = el;
        o.start_ms = ss, o.end_ms = se;
    }
    for (size_t i = 0; i < s->novs; i++)
        if (s->ovs[i].original_ms == original_ms) { /* the later one wins */
            cal_override_free(&s->ovs[i]);
            s->ovs[i] = o;
            return 0;
        }
    cal_override *grown = s->ovs;
    if ((s->novs & (s->novs - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
        grown = realloc(s->ovs, (s->novs ? 2 * s->novs : 1) * sizeof *grown);
        if (!grown) {
            cal_override_free(&o);
            return fail(r, v->c->line, "out of memory");
        }
        s->ovs = grown;
    }
    size_t i = s->novs++;
    while (i > 0 && grown[i - 1].original_ms > original_ms) grown[i] = grown[i - 1], i--;
    grown[i] = o;
    return 0;
}

/* Gathers the file's VEVENTs; lists other components as skipped. */
static int collect(ical_reader *r, vevent **out, size_t *n)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    for (const ical_comp *cal = r->doc->roots; cal; cal = cal->next)
        for (const ical_comp *c = cal->subs; c; c = c->next) {
            if (strcmp(c->name, "VTIMEZONE") == 0) continue;
            if (strcmp(c->name, "VEVENT") != 0) {
                const ical_prop *uid = ical_prop_get(c, "UID");
                skip(r, c->line, uid ? uid->value : NULL, "%.20s components are not imported", c->name);
                continue;
            }
            if (*n == ICAL_MAX_EVENTS) return fail(r, c->line, "more than %d VEVENTs in one file", ICAL_MAX_EVENTS);
            if (*n == cap) {
                vevent *grown = base_grow(*out, sizeof *grown, &cap);
                if (!grown) return fail(r, c->line, "out of memory");
                *out = grown;
            }
            memset(&(*out)[*n], 0, sizeof **out);
            (*out)[(*n)++].c = c;
        }
    return 0;
}

/* Moves a VEVENT's event into the import as a series. */
static ical_series_in *take_series(ical_reader *r, vevent *v)
{
    ical_import *im = r->out;
    ical_series_in *grown = im->series;
    if ((im->nseries & (im->nseries - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
        grown = realloc(im->series, (im->nseries ? 2 * im->nseries : 1) * sizeof *grown);
        if (!grown) return NULL;
        im->series = grown;
    }
    ical_series_in *s = &grown[im->nseries++];
    memset(s, 0, sizeof *s);
    s->ev = v->ev;
    s->line = v->c->line;
    memset(&v->ev, 0, sizeof v->ev);
    return s;
}

/* Is the series with this UID one the file has but we skipped? */
static bool series_skipped(const vevent *vs, size_t n, const char *uid)
{
    for (size_t i = 0; i < n; i++)
        if (!vs[i].rid && vs[i].skipped && vs[i].ev.ical_uid && strcmp(vs[i].ev.ical_uid, uid) == 0) return true;
    return false;
}

/* Reads every VEVENT; one that cannot be stored is marked skipped. */
static int read_each(ical_reader *r, vevent *vs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = read_vevent(r, &vs[i]);
        if (rc == READ_FAIL) return -1;
        if (rc == READ_SKIP) {
            vs[i].skipped = true;
            vs[i].why_line = r->why_line;
            snprintf(vs[i].why, sizeof vs[i].why, "%s", r->why);
        }
    }
    return 0;
}

/* Drops the series that cannot be stored after their overrides and
 * EXDATEs from cancelled instances changed them. */
static void resolve_all(ical_reader *r)
{
    ical_import *im = r->out;
    size_t k = 0;
    for (size_t i = 0; i < im->nseries; i++) {
        ical_series_in *s = &im->series[i];
        char msg[200], field[64];
        if (cal_event_resolve(&s->ev, r->tz, msg, sizeof msg, field, sizeof field) != 0) {
            skip(r, s->line, s->ev.ical_uid, "VEVENT: %s", msg);
            cal_event_free(&s->ev);
            for (size_t o = 0; o < s->novs; o++) cal_override_free(&s->ovs[o]);
            free(s->ovs);
            continue;
        }
        im->series[k++] = *s;
    }
    im->nseries = k;
}

static int read_all(ical_reader *r, vevent *vs, size_t n)
{
    ical_import *im = r->out;
    if (read_each(r, vs, n) != 0) return -1;
    /* Series first (sorted by UID for lookup), then lone overrides, then
     * the overrides of series. */
    size_t nsorted = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            vevent *v = &vs[i];
            if ((pass == 0) != (v->rid == NULL) || !v->ev.ical_uid) continue;
            if (pass == 1 && find_series(im, v->ev.ical_uid, nsorted)) continue;
            v->handled = true;
            if (v->skipped) {
                skip(r, v->why_line, v->ev.ical_uid, "%s", v->why);
                continue;
            }
            if (pass == 1 && series_skipped(vs, n, v->ev.ical_uid)) {
                skip(r, v->c->line, v->ev.ical_uid, "its series cannot be stored");
                continue;
            }
            bool dup = false;
            for (size_t k = 0; k < im->nseries && !dup; k++) dup = strcmp(im->series[k].ev.ical_uid, v->ev.ical_uid) == 0;
            if (dup) {
                skip(r, v->c->line, v->ev.ical_uid, "another VEVENT of the file has the same UID");
                continue;
            }
            if (pass == 1) { /* a lone instance: the event as it is, not recurring */
                free(v->ev.rrule);
                free(v->ev.rdates);
                free(v->ev.exdates);
                v->ev.rrule = NULL, v->ev.rdates = v->ev.exdates = NULL, v->ev.nrdates = v->ev.nexdates = 0;
                v->rid = NULL;
            }
            ical_series_in *s = take_series(r, v);
            if (!s) return fail(r, v->c->line, "out of memory");
            s->lone_instance = pass == 1;
            resolve_or_skip(r, v->c);
        }
        if (im->nseries) qsort(im->series, im->nseries, sizeof *im->series, by_uid);
        nsorted = im->nseries;
    }
    for (size_t i = 0; i < n; i++) {
        vevent *v = &vs[i];
        if (!v->rid || v->handled) continue;
        ical_series_in *s = find_series(im, v->ev.ical_uid, im->nseries);
        if (s && v->skipped) skip(r, v->why_line, v->ev.ical_uid, "%s", v->why);
        else if (s && apply_override(r, s, v) != 0) return -1;
    }
    /* EXDATEs from cancelled instances change the series' bounds. */
    resolve_all(r);
    return 0;
}

int ical_read(const char *text, size_t len, tz_db *tz, const char *calendar_zone, ical_import *out,
              ical_err *err)
{
    memset(out, 0, sizeof *out);
    ical_doc doc;
    if (ical_parse(text, len, &doc, err) != 0) return -1;
    ical_reader r = {.tz = tz, .calendar_zone = calendar_zone ? calendar_zone : "", .doc = &doc, .out = out, .err = err};
    vevent *vs = NULL;
    size_t n = 0;
    int rc = collect(&r, &vs, &n) == 0 && read_all(&r, vs, n) == 0 ? 0 : -1;
    for (size_t i = 0; i < n; i++) cal_event_free(&vs[i].ev);
    free(vs);
    for (int i = 0; i < r.nzones; i++) tz_zone_free(r.zones[i].custom);
    ical_doc_free(&doc);
    if (rc != 0) ical_import_free(out);
    return rc;
}

void ical_import_skip(ical_import *im, int line, const char *uid, const char *reason)
{
    im->nskipped++;
    if (im->nskips == ICAL_MAX_SKIPS) return;
    ical_skip *s = &im->skips[im->nskips++];
    s->line = line;
    snprintf(s->uid, sizeof s->uid, "%s", uid ? uid : "");
    snprintf(s->reason, sizeof s->reason, "%s", reason);
    ical_utf8_sanitize(s->uid);
}

void ical_import_free(ical_import *im)
{
    for (size_t i = 0; i < im->nseries; i++) {
        cal_event_free(&im->series[i].ev);
        for (size_t k = 0; k < im->series[i].novs; k++) cal_override_free(&im->series[i].ovs[k]);
        free(im->series[i].ovs);
    }
    free(im->series);
    memset(im, 0, sizeof *im);
}
