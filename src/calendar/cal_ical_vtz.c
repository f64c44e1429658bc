/* cal_ical_vtz.c -- a file's own VTIMEZONE as the definition of a zone the
 * system does not know.
 *
 * Outlook writes "TZID:Customized Time Zone" (other apps invent names too)
 * and defines the zone fully with STANDARD and DAYLIGHT observances: an
 * onset (DTSTART, a wall time in the offset before it), TZOFFSETFROM,
 * TZOFFSETTO, and an RRULE and/or RDATEs repeating the onset. RFC 5545
 * makes that definition authoritative. We expand it into a zone (tz.h's
 * tz_zone_from_changes), then look for an IANA zone that gives the same
 * offsets over the event's years: an event in a real zone keeps its wall
 * time across future rule changes and exports with a name every client
 * knows. When none matches, the reader keeps the event in UTC at the
 * instants the definition gives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "calendar/cal_ical.h"
#include "time/rrule.h"

#define VTZ_LAST_YEAR 2200 /* onsets are expanded up to here */

typedef struct vtz_changes {
    int64_t utc[TZ_MAX_CHANGES];
    int32_t to[TZ_MAX_CHANGES];
    int32_t from_of_first;
    int64_t first_utc;
    size_t n;
} vtz_changes;

/* "+HHMM", "-HHMM" or "+HHMMSS" into seconds east; -1 when malformed. */
static int parse_offset(const char *v, int32_t *out)
{
    size_t len = strlen(v);
    if ((len != 5 && len != 7) || (v[0] != '+' && v[0] != '-')) return -1;
    int digits[6] = {0};
    for (size_t i = 1; i < len; i++) {
        if (v[i] < '0' || v[i] > '9') return -1;
        digits[i - 1] = v[i] - '0';
    }
    int32_t s = (digits[0] * 10 + digits[1]) * 3600 + (digits[2] * 10 + digits[3]) * 60 + digits[4] * 10 + digits[5];
    if (s > 26 * 3600) return -1;
    *out = v[0] == '-' ? -s : s;
    return 0;
}

static void add_change(vtz_changes *c, int64_t utc, int32_t from, int32_t to)
{
    if (c->n == TZ_MAX_CHANGES) return;
    if (c->n == 0 || utc < c->first_utc) c->first_utc = utc, c->from_of_first = from;
    c->utc[c->n] = utc;
    c->to[c->n++] = to;
}

/* An observance's RRULE onsets: wall times in the offset before them. A
 * UTC UNTIL (RFC 5545 requires one here) is moved onto that wall clock. */
static int expand_rule(const ical_prop *p, const civil_time *start, int32_t from, int32_t to, vtz_changes *c)
{
    char msg[160];
    rrule r;
    if (rrule_parse(p->value, strlen(p->value), &r, msg, sizeof msg) != 0) return -1;
    if ((r.has & RRULE_HAS_UNTIL) && r.until_kind == RRULE_UNTIL_UTC) {
        civil_from_seconds(civil_to_seconds(&r.until) + from, &r.until);
        r.until_kind = RRULE_UNTIL_LOCAL;
    }
    rrule_plan *plan = malloc(sizeof *plan);
    rrule_iter *it = malloc(sizeof *it);
    int rc = plan && it && rrule_plan_init(plan, &r, start, msg, sizeof msg) == 0 ? 0 : -1;
    if (rc == 0) {
        civil_time end = {.year = VTZ_LAST_YEAR, .month = 12, .day = 31, .hour = 23, .minute = 59, .second = 59};
        int64_t limit = civil_to_seconds(&end), local;
        rrule_iter_init(it, plan, civil_to_seconds(start));
        while (c->n < TZ_MAX_CHANGES && rrule_iter_next(it, &local) && local <= limit)
            add_change(c, local - from, from, to);
    }
    free(plan);
    free(it);
    return rc;
}

/* One STANDARD or DAYLIGHT sub-component into its changes. */
static int read_observance(const ical_comp *o, vtz_changes *c)
{
    const ical_prop *ps = ical_prop_get(o, "DTSTART"), *pf = ical_prop_get(o, "TZOFFSETFROM"),
                    *pt = ical_prop_get(o, "TZOFFSETTO");
    civil_time start;
    bool is_date;
    int32_t from, to;
    if (!ps || !pf || !pt || parse_offset(pf->value, &from) || parse_offset(pt->value, &to) ||
        civil_parse_basic(ps->value, strlen(ps->value) > 15 ? 15 : strlen(ps->value), &start, &is_date) || is_date)
        return -1;
    bool repeated = false;
    for (const ical_prop *p = o->props; p; p = p->next) {
        if (strcmp(p->name, "RRULE") == 0) {
            if (expand_rule(p, &start, from, to, c) != 0) return -1;
            repeated = true;
        } else if (strcmp(p->name, "RDATE") == 0) {
            for (const char *v = p->value; *v;) {
                size_t len = strcspn(v, ",");
                civil_time t;
                if (len >= 15 && civil_parse_basic(v, 15, &t, &is_date) == 0 && !is_date)
                    add_change(c, civil_to_seconds(&t) - from, from, to);
                v += len + (v[len] == ',');
            }
        }
    }
    if (!repeated) add_change(c, civil_to_seconds(&start) - from, from, to);
    return 0;
}

typedef struct vtz_change {
    int64_t utc;
    int32_t to;
    size_t seq;
} vtz_change;

static int cmp_change(const void *a, const void *b)
{
    const vtz_change *x = a, *y = b;
    if (x->utc != y->utc) return (x->utc > y->utc) - (x->utc < y->utc);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The changes sorted by instant; of two at one instant the later wins. */
static tz_zone *zone_of(const char *tzid, const vtz_changes *c)
{
    vtz_change *v = malloc((c->n ? c->n : 1) * sizeof *v);
    int64_t *utc = malloc((c->n ? c->n : 1) * sizeof *utc);
    int32_t *to = malloc((c->n ? c->n : 1) * sizeof *to);
    tz_zone *z = NULL;
    if (v && utc && to) {
        for (size_t i = 0; i < c->n; i++) v[i] = (vtz_change){c->utc[i], c->to[i], i};
        qsort(v, c->n, sizeof *v, cmp_change);
        size_t m = 0;
        for (size_t i = 0; i < c->n; i++) {
            if (m && utc[m - 1] == v[i].utc) m--;
            utc[m] = v[i].utc;
            to[m++] = v[i].to;
        }
        z = tz_zone_from_changes(tzid, c->from_of_first, utc, to, m);
    }
    free(v);
    free(utc);
    free(to);
    return z;
}

tz_zone *ical_vtimezone_zone(const ical_doc *doc, const char *tzid)
{
    const ical_comp *vtz = NULL;
    for (const ical_comp *cal = doc->roots; cal && !vtz; cal = cal->next)
        for (const ical_comp *c = cal->subs; c && !vtz; c = c->next) {
            const ical_prop *id = strcmp(c->name, "VTIMEZONE") == 0 ? ical_prop_get(c, "TZID") : NULL;
            if (id && strcmp(id->value, tzid) == 0) vtz = c;
        }
    if (!vtz) return NULL;
    vtz_changes *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    int rc = 0;
    for (const ical_comp *o = vtz->subs; o && rc == 0; o = o->next)
        if (strcmp(o->name, "STANDARD") == 0 || strcmp(o->name, "DAYLIGHT") == 0) rc = read_observance(o, c);
    tz_zone *z = rc == 0 && c->n > 0 ? zone_of(tzid, c) : NULL;
    free(c);
    return z;
}

/* Do a and b give the same offset at every instant of [from, to)? */
static bool same_offsets(const tz_zone *a, const tz_zone *b, int64_t from, int64_t to)
{
    for (int64_t t = from;;) {
        if (tz_offset_at(a, t) != tz_offset_at(b, t)) return false;
        int64_t na = INT64_MAX, nb = INT64_MAX;
        if (!tz_next_change(a, t, &na)) na = INT64_MAX;
        if (!tz_next_change(b, t, &nb)) nb = INT64_MAX;
        t = na < nb ? na : nb;
        if (t >= to) return true;
    }
}

const char *ical_zone_match(tz_db *tz, const tz_zone *z, int64_t from, int64_t to)
{
    const char *name;
    for (size_t i = 0; (name = tz_windows_iana_at(i)); i++) {
        const tz_zone *cand = tz_db_get(tz, name);
        if (cand && same_offsets(z, cand, from, to)) return tz_zone_name(cand);
    }
    return NULL;
}
