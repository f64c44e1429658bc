/* cal_ical_write.c -- a calendar's events as an RFC 5545 VCALENDAR.
 *
 * Lines end in CRLF and are folded at 75 octets without splitting a UTF-8
 * character (RFC 5545 3.1). Zoned times carry TZID=<IANA name>, and each
 * zone used gets a VTIMEZONE listing its real transitions (from the system
 * zone data) over the years the events need, plus X-LIC-LOCATION for
 * clients that prefer their own copy of the zone. Floating and all-day times
 * stay floating; instants in UTC are written with Z. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "calendar/cal_ical.h"

#define VTZ_YEARS_AHEAD 30   /* VTIMEZONE transitions listed past today */
#define VTZ_MAX_ZONES 64     /* distinct zones given a VTIMEZONE */

typedef struct ical_writer {
    FILE *f;
    tz_db *tz;
    int64_t now_ms;
} ical_writer;

/* One content line, folded: as many whole UTF-8 characters as fit in 75
 * octets, written at once. */
static void emit(ical_writer *w, const char *s)
{
    size_t n = strlen(s), col = 0, i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n) {
            size_t k = 1;
            while (i + k < n && ((unsigned char)s[i + k] & 0xC0) == 0x80) k++;
            if (col + k > 75) break;
            col += k;
            i += k;
        }
        fwrite(s + start, 1, i - start, w->f);
        if (i < n) {
            fputs("\r\n ", w->f);
            col = 1;
        }
    }
    fputs("\r\n", w->f);
}

static void linef(ical_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void linef(ical_writer *w, const char *fmt, ...)
{
    char small[256], *s = small;
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (s = malloc((size_t)n + 1)) != NULL) vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    if (n < 0 || !s) return;
    emit(w, s);
    if (s != small) free(s);
}

/* NAME:value for a TEXT value, escaped; nothing for an empty one. */
static void text_line(ical_writer *w, const char *name, const char *v)
{
    if (!v || !*v) return;
    size_t n = strlen(v);
    char *esc = malloc(2 * n + 1), *p = esc;
    if (!esc) return;
    for (; *v; v++) {
        if (*v == '\\' || *v == ';' || *v == ',') *p++ = '\\', *p++ = *v;
        else if (*v == '\n') *p++ = '\\', *p++ = 'n';
        else if ((unsigned char)*v >= 0x20 && *v != 0x7F) *p++ = *v;
        else if (*v == '\t') *p++ = '\t'; /* other controls cannot appear in a TEXT value */
    }
    *p = '\0';
    linef(w, "%s:%s", name, esc);
    free(esc);
}

/* ---- times ------------------------------------------------------------- */

static void fmt_local(int64_t local, bool date_only, char out[16])
{
    civil_time t;
    civil_from_seconds(local, &t);
    civil_format_basic(&t, date_only, out, 16);
}

static void utc_stamp(int64_t ms, char out[20])
{
    char b[16];
    fmt_local(ms / 1000, false, b);
    snprintf(out, 20, "%sZ", b);
}

static bool is_utc(const cal_event *e)
{
    return strcmp(e->time_zone, "UTC") == 0;
}

/* ";VALUE=DATE", ";TZID=zone" or "" -- what goes between name and ':'. */
static void time_params(const cal_event *e, char *buf, size_t size)
{
    if (e->all_day) snprintf(buf, size, ";VALUE=DATE");
    else if (e->time_zone[0] && !is_utc(e)) snprintf(buf, size, ";TZID=%s", e->time_zone);
    else buf[0] = '\0';
}

/* NAME[;params]:v1,v2,... for local times of the event's zone. */
static void times_line(ical_writer *w, const char *name, const cal_event *e, const int64_t *locals, size_t n)
{
    if (n == 0) return;
    char params[CAL_ZONE_MAX + 8];
    time_params(e, params, sizeof params);
    char *vals = malloc(n * 18 + 1), *p = vals;
    if (!vals) return;
    for (size_t i = 0; i < n; i++) {
        if (i) *p++ = ',';
        fmt_local(locals[i], e->all_day, p);
        p += strlen(p);
        if (is_utc(e) && !e->all_day) *p++ = 'Z';
    }
    *p = '\0';
    linef(w, "%s%s:%s", name, params, vals);
    free(vals);
}

/* NAME[;params]:value of one local time of the event's zone, into buf. */
static void time_text(char *buf, size_t size, const char *name, const cal_event *e, int64_t local)
{
    char params[CAL_ZONE_MAX + 8], v[16];
    time_params(e, params, sizeof params);
    fmt_local(local, e->all_day, v);
    snprintf(buf, size, "%s%s:%s%s", name, params, v, is_utc(e) && !e->all_day ? "Z" : "");
}

static void time_line(ical_writer *w, const char *name, const cal_event *e, int64_t local)
{
    times_line(w, name, e, &local, 1);
}

/* ---- VTIMEZONE --------------------------------------------------------- */

static void offset_text(int32_t off, char out[16])
{
    int a = off < 0 ? -off : off;
    if (a % 60) snprintf(out, 16, "%c%02d%02d%02d", off < 0 ? '-' : '+', a / 3600, a / 60 % 60, a % 60);
    else snprintf(out, 16, "%c%02d%02d", off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
}

static void observance(ical_writer *w, bool summer, int64_t local, int32_t from, int32_t to, const char *abbr)
{
    char start[16], f[16], t[16];
    fmt_local(local, false, start);
    offset_text(from, f);
    offset_text(to, t);
    const char *kind = summer ? "DAYLIGHT" : "STANDARD";
    linef(w, "BEGIN:%s", kind);
    linef(w, "DTSTART:%s", start);
    linef(w, "TZOFFSETFROM:%s", f);
    linef(w, "TZOFFSETTO:%s", t);
    if (abbr && abbr[0]) text_line(w, "TZNAME", abbr);
    linef(w, "END:%s", kind);
}

/* The zone's transitions in [from, to) (UTC seconds), found a day at a time
 * and pinned to the second by bisection. */
static void vtimezone(ical_writer *w, const char *name, int64_t from, int64_t to)
{
    const tz_zone *z = tz_db_get(w->tz, name);
    if (!z) return;
    linef(w, "BEGIN:VTIMEZONE");
    linef(w, "TZID:%s", name);
    linef(w, "X-LIC-LOCATION:%s", name);
    int32_t off = tz_offset_at(z, from);
    observance(w, false, from + off, off, off, tz_abbrev_at(z, from));
    for (int64_t t = from; t < to; t += 86400) {
        int32_t next = tz_offset_at(z, t + 86400);
        if (next == off) continue;
        int64_t lo = t, hi = t + 86400; /* offset(lo) == off, offset(hi) != off */
        while (hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;
            if (tz_offset_at(z, mid) == off) lo = mid;
            else hi = mid;
        }
        int32_t to_off = tz_offset_at(z, hi);
        observance(w, to_off > off, hi + off, off, to_off, tz_abbrev_at(z, hi));
        off = to_off;
    }
    linef(w, "END:VTIMEZONE");
}

/* Zones' VTIMEZONE blocks, kept once written: probing a zone day by day
 * over 30 years is most of the cost of writing one event (measured on
 * CalDAV multigets), and the same (zone, years) comes back for every event
 * of a calendar. Shared by the threads under a lock; a bounded ring. */
#define VTZ_CACHE 32
static struct {
    char zone[CAL_ZONE_MAX];
    int64_t from, to;
    char *text;
} vtz_cache[VTZ_CACHE];
static size_t vtz_next;
static pthread_mutex_t vtz_lock = PTHREAD_MUTEX_INITIALIZER;

static bool vtimezone_from_cache(ical_writer *w, const char *name, int64_t from, int64_t to)
{
    bool hit = false;
    pthread_mutex_lock(&vtz_lock);
    for (size_t i = 0; i < VTZ_CACHE && !hit; i++) {
        hit = vtz_cache[i].text && vtz_cache[i].from == from && vtz_cache[i].to == to &&
              strcmp(vtz_cache[i].zone, name) == 0;
        if (hit) fputs(vtz_cache[i].text, w->f);
    }
    pthread_mutex_unlock(&vtz_lock);
    return hit;
}

static void vtimezone_cached(ical_writer *w, const char *name, int64_t from, int64_t to)
{
    if (vtimezone_from_cache(w, name, from, to)) return;
    char *text = NULL;
    size_t len = 0;
    ical_writer sub = {.f = open_memstream(&text, &len), .tz = w->tz, .now_ms = w->now_ms};
    if (!sub.f) return vtimezone(w, name, from, to);
    vtimezone(&sub, name, from, to);
    if (fclose(sub.f) != 0 || !text) {
        free(text);
        return vtimezone(w, name, from, to);
    }
    fputs(text, w->f);
    pthread_mutex_lock(&vtz_lock);
    size_t slot = vtz_next++ % VTZ_CACHE;
    free(vtz_cache[slot].text);
    snprintf(vtz_cache[slot].zone, sizeof vtz_cache[slot].zone, "%s", name);
    vtz_cache[slot].from = from;
    vtz_cache[slot].to = to;
    vtz_cache[slot].text = text;
    pthread_mutex_unlock(&vtz_lock);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One VTIMEZONE per zone the events name, covering their years. */
static void vtimezones(ical_writer *w, const cal_event *events, size_t n)
{
    const char *names[VTZ_MAX_ZONES];
    size_t nn = 0;
    int64_t earliest = w->now_ms / 1000;
    for (size_t i = 0; i < n; i++) {
        const cal_event *e = &events[i];
        if (e->all_day || !e->time_zone[0] || is_utc(e)) continue;
        if (e->start_ms / 1000 < earliest) earliest = e->start_ms / 1000;
        bool seen = false;
        for (size_t k = 0; k < nn && !seen; k++) seen = strcmp(names[k], e->time_zone) == 0;
        if (!seen && nn < VTZ_MAX_ZONES) names[nn++] = e->time_zone;
    }
    if (nn) qsort(names, nn, sizeof *names, cmp_str);
    /* From January 1 of the earliest year (at most 100 years back). */
    int64_t floor_s = w->now_ms / 1000 - (int64_t)100 * 366 * 86400;
    if (earliest < floor_s) earliest = floor_s;
    civil_time y;
    civil_from_seconds(earliest - 86400, &y);
    y.month = 1, y.day = 1, y.hour = y.minute = y.second = 0;
    int64_t from = civil_to_seconds(&y), to = w->now_ms / 1000 + (int64_t)VTZ_YEARS_AHEAD * 366 * 86400;
    for (size_t i = 0; i < nn; i++) vtimezone_cached(w, names[i], from, to);
}

/* ---- events ------------------------------------------------------------ */

static const char *partstat(cal_response r)
{
    static const char *names[] = {"NEEDS-ACTION", "ACCEPTED", "DECLINED", "TENTATIVE"};
    return names[r];
}

static void people(ical_writer *w, const cal_event *e)
{
    if (e->organizer_email[0]) linef(w, "ORGANIZER:mailto:%s", e->organizer_email);
    for (int i = 0; i < e->nattendees; i++)
        linef(w, "ATTENDEE;ROLE=REQ-PARTICIPANT;PARTSTAT=%s;RSVP=%s:mailto:%s", partstat(e->attendees[i].response),
              e->attendees[i].response == CAL_NEEDS_ACTION ? "TRUE" : "FALSE", e->attendees[i].email);
}

static void alarms(ical_writer *w, const cal_event *e)
{
    for (int i = 0; i < e->nreminders; i++) {
        const cal_reminder *r = &e->reminders[i];
        bool email = strcmp(r->method, "email") == 0;
        linef(w, "BEGIN:VALARM");
        linef(w, "ACTION:%s", email ? "EMAIL" : "DISPLAY");
        linef(w, "TRIGGER:-PT%dM", r->minutes_before);
        text_line(w, "DESCRIPTION", e->summary && e->summary[0] ? e->summary : "Reminder");
        if (email) {
            text_line(w, "SUMMARY", e->summary && e->summary[0] ? e->summary : "Reminder");
            if (e->organizer_email[0]) linef(w, "ATTENDEE:mailto:%s", e->organizer_email);
        }
        linef(w, "END:VALARM");
    }
}

static void status_line(ical_writer *w, const char *status)
{
    char up[12];
    size_t i = 0;
    for (; status[i] && i + 1 < sizeof up; i++) up[i] = (char)(status[i] >= 'a' && status[i] <= 'z' ? status[i] - 32 : status[i]);
    up[i] = '\0';
    linef(w, "STATUS:%s", up[0] ? up : "CONFIRMED");
}

/* DTSTAMP is the event's last change, not the time of the export, so that an
 * unchanged calendar exports to the same bytes (feeds answer 304 then). */
static void stamps(ical_writer *w, const cal_event *e)
{
    char b[20];
    utc_stamp(e->updated_ms, b);
    linef(w, "DTSTAMP:%s", b);
    utc_stamp(e->created_ms, b);
    linef(w, "CREATED:%s", b);
    utc_stamp(e->updated_ms, b);
    linef(w, "LAST-MODIFIED:%s", b);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The local start of an override's original instance, in the series' zone. */
static int64_t original_local(const cal_series *s, const cal_override *o)
{
    return tz_utc_to_local(s->zone, o->original_ms / 1000);
}

static void series_event(ical_writer *w, const cal_event *e, const cal_series *s, const cal_override *ovs, size_t novs)
{
    int64_t start = civil_to_seconds(&e->start_local), end = civil_to_seconds(&e->end_local);
    if (is_utc(e) && !e->all_day) { /* written with Z: the instant itself */
        start = tz_local_to_utc(s->zone, start);
        end = tz_local_to_utc(s->zone, end);
    }
    linef(w, "BEGIN:VEVENT");
    text_line(w, "UID", e->ical_uid);
    stamps(w, e);
    time_line(w, "DTSTART", e, start);
    /* An instant has no DTEND (RFC 5545 3.6.1; a DTEND must come after
     * DTSTART): Facebook and others write them so. */
    if (e->all_day || e->duration_s != 0) time_line(w, "DTEND", e, end);
    const char *cursor = e->rrule, *rule;
    int len;
    while (cal_rules_next(&cursor, &rule, &len)) linef(w, "RRULE:%.*s", len, rule); /* as they came: maybe two */
    /* Deleted instances and cancelled overrides are both EXDATEs. */
    size_t nex = e->nexdates;
    int64_t *ex = malloc((e->nexdates + novs + 1) * sizeof *ex);
    if (ex) {
        if (e->nexdates) memcpy(ex, e->exdates, e->nexdates * sizeof *ex);
        for (size_t i = 0; i < novs; i++)
            if (ovs[i].cancelled || strcmp(ovs[i].status, "cancelled") == 0) ex[nex++] = original_local(s, &ovs[i]);
        qsort(ex, nex, sizeof *ex, cmp64);
        times_line(w, "EXDATE", e, ex, nex);
        free(ex);
    }
    times_line(w, "RDATE", e, e->rdates, e->nrdates);
    text_line(w, "SUMMARY", e->summary);
    text_line(w, "DESCRIPTION", e->description);
    text_line(w, "LOCATION", e->location);
    status_line(w, e->status);
    linef(w, "SEQUENCE:0");
    people(w, e);
    alarms(w, e);
    linef(w, "END:VEVENT");
}

/* One instance's VEVENT: its three time lines already formatted (rid
 * NULL for a single event), the rest from the series and the override. */
static void instance_event(ical_writer *w, const cal_event *e, const cal_override *o, const char *rid,
                           const char *dtstart, const char *dtend)
{
    linef(w, "BEGIN:VEVENT");
    text_line(w, "UID", e->ical_uid);
    stamps(w, e);
    if (rid) linef(w, "%s", rid);
    linef(w, "%s", dtstart);
    if (dtend) linef(w, "%s", dtend); /* NULL: an instant (RFC 5545 3.6.1) */
    text_line(w, "SUMMARY", o && o->summary ? o->summary : e->summary);
    text_line(w, "DESCRIPTION", o && o->description ? o->description : e->description);
    text_line(w, "LOCATION", o && o->location ? o->location : e->location);
    status_line(w, o && o->status[0] ? o->status : e->status);
    linef(w, "SEQUENCE:0");
    people(w, e);
    alarms(w, e);
    linef(w, "END:VEVENT");
}

#define TIME_LINE_MAX (CAL_ZONE_MAX + 48)

static void override_event(ical_writer *w, const cal_event *e, const cal_series *s, const cal_override *o)
{
    if (o->cancelled || strcmp(o->status, "cancelled") == 0) return;
    int64_t orig = original_local(s, o), start, end;
    if (o->moved) {
        start = civil_to_seconds(&o->start_local);
        end = civil_to_seconds(&o->end_local);
    } else {
        start = orig;
        end = e->all_day ? orig + e->duration_s : tz_utc_to_local(s->zone, o->original_ms / 1000 + e->duration_s);
    }
    if (is_utc(e) && !e->all_day) {
        orig = o->original_ms / 1000;
        start = o->moved ? o->start_ms / 1000 : orig;
        end = o->moved ? o->end_ms / 1000 : orig + e->duration_s;
    }
    char rid[TIME_LINE_MAX], ds[TIME_LINE_MAX], de[TIME_LINE_MAX];
    time_text(rid, sizeof rid, "RECURRENCE-ID", e, orig);
    time_text(ds, sizeof ds, "DTSTART", e, start);
    time_text(de, sizeof de, "DTEND", e, end);
    /* Without DTEND an instance keeps its series' length: left out only
     * when both are instants. */
    instance_event(w, e, o, rid, ds, e->all_day || e->duration_s != 0 || end != start ? de : NULL);
}

/* A VCALENDAR being written into a new heap string (*out, *len bytes). */
static bool vcalendar_open(ical_writer *w, char **out, size_t *len, tz_db *tz, int64_t now_ms)
{
    *out = NULL;
    *len = 0;
    *w = (ical_writer){.f = open_memstream(out, len), .tz = tz, .now_ms = now_ms};
    if (!w->f) return false;
    linef(w, "BEGIN:VCALENDAR");
    linef(w, "PRODID:-//chime//chime calendar//EN");
    linef(w, "VERSION:2.0");
    linef(w, "CALSCALE:GREGORIAN");
    return true;
}

/* Ends it: the string (*out, which the stream set as it closed), or NULL
 * when out of memory. */
static char *vcalendar_close(ical_writer *w, char **out)
{
    linef(w, "END:VCALENDAR");
    if (fclose(w->f) != 0) {
        free(*out);
        return NULL;
    }
    return *out;
}

/* The VCALENDAR around events. publish: a whole calendar (METHOD and the
 * calendar's name and zone, as the export and feeds carry); otherwise one
 * CalDAV resource, which RFC 4791 4.1 forbids METHOD in. */
static char *write_vcalendar(const cal_calendar *cal, const cal_event *events, size_t nevents, const cal_override *ovs,
                             size_t novs, tz_db *tz, int64_t now_ms, size_t *len)
{
    char *out;
    ical_writer w;
    if (!vcalendar_open(&w, &out, len, tz, now_ms)) return NULL;
    if (cal) {
        linef(&w, "METHOD:PUBLISH");
        text_line(&w, "X-WR-CALNAME", cal->summary);
        if (cal->time_zone[0]) linef(&w, "X-WR-TIMEZONE:%s", cal->time_zone);
    }
    vtimezones(&w, events, nevents);
    size_t oi = 0;
    for (size_t i = 0; i < nevents; i++) {
        const cal_event *e = &events[i];
        while (oi < novs && ovs[oi].event_id < e->id) oi++;
        size_t first = oi;
        while (oi < novs && ovs[oi].event_id == e->id) oi++;
        cal_series s;
        char err[160];
        if (cal_series_init(&s, e, tz, err, sizeof err) != 0) continue; /* an unreadable row: nothing to say */
        series_event(&w, e, &s, ovs + first, oi - first);
        for (size_t k = first; k < oi; k++) override_event(&w, e, &s, &ovs[k]);
    }
    return vcalendar_close(&w, &out);
}

char *ical_write(const cal_calendar *cal, const cal_event *events, size_t nevents, const cal_override *ovs,
                 size_t novs, tz_db *tz, int64_t now_ms, size_t *len)
{
    return write_vcalendar(cal, events, nevents, ovs, novs, tz, now_ms, len);
}

char *ical_write_resource(const cal_event *e, const cal_override *ovs, size_t novs, tz_db *tz, size_t *len)
{
    /* The zones' transitions are listed up to 30 years past the year of
     * the event's last change rather than past today, so the bytes (and
     * the strong ETag that stands for them) stay the same until the event
     * changes; by whole years, so a calendar's events share their
     * VTIMEZONE text (vtimezone_cached). */
    civil_time y;
    civil_from_seconds(e->updated_ms / 1000, &y);
    y.month = 1, y.day = 1, y.hour = y.minute = y.second = 0;
    return write_vcalendar(NULL, e, 1, ovs, novs, tz, civil_to_seconds(&y) * 1000, len);
}

char *ical_write_timezone(const char *zone, tz_db *tz, int64_t now_ms, size_t *len)
{
    char *out;
    ical_writer w;
    if (!vcalendar_open(&w, &out, len, tz, now_ms)) return NULL;
    cal_event e = {.start_ms = now_ms};
    snprintf(e.time_zone, sizeof e.time_zone, "%s", zone);
    vtimezones(&w, &e, 1);
    return vcalendar_close(&w, &out);
}

/* An expanded instance's times: UTC date-times, or dates for all-day. */
static void expanded_text(char *buf, size_t size, const char *name, const cal_event *e, int64_t utc_ms, int64_t local)
{
    char v[16];
    fmt_local(e->all_day ? local : utc_ms / 1000, e->all_day, v);
    snprintf(buf, size, "%s%s:%s%s", name, e->all_day ? ";VALUE=DATE" : "", v, e->all_day ? "" : "Z");
}

static void expanded_item(ical_writer *w, const cal_item *it)
{
    const cal_event *e = it->ev;
    const cal_override *o = it->ov;
    int64_t start = it->original_local, end = it->original_local + e->duration_s;
    if (o && o->moved) {
        start = civil_to_seconds(&o->start_local);
        end = civil_to_seconds(&o->end_local);
    }
    char rid[TIME_LINE_MAX], ds[TIME_LINE_MAX], de[TIME_LINE_MAX];
    expanded_text(rid, sizeof rid, "RECURRENCE-ID", e, it->original_ms, it->original_local);
    expanded_text(ds, sizeof ds, "DTSTART", e, it->start_ms, start);
    expanded_text(de, sizeof de, "DTEND", e, it->end_ms, end);
    instance_event(w, e, o, it->recurring ? rid : NULL, ds, it->end_ms != it->start_ms || e->all_day ? de : NULL);
}

char *ical_write_expanded(const cal_item *items, size_t n, size_t *len)
{
    char *out;
    ical_writer w;
    if (!vcalendar_open(&w, &out, len, NULL, 0)) return NULL;
    for (size_t i = 0; i < n; i++) expanded_item(&w, &items[i]);
    return vcalendar_close(&w, &out);
}
