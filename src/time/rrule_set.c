/* rrule_set.c -- RRULE + RDATE - EXDATE, with UTC instants from tz.h. */
#include "time/rrule_set.h"

#include <stdio.h>
#include <stdlib.h>

/* The largest jump of a UTC offset (Antarctica/Troll moves 2 h): a local
 * time more than this past UNTIL's local time is past UNTIL. */
#define MAX_SHIFT (3 * 3600)

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static size_t sort_unique(int64_t *v, size_t n)
{
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, cmp_i64);
    size_t m = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[m - 1]) v[m++] = v[i];
    return m;
}

static bool contains(const int64_t *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && v[lo] == t;
}

int64_t rrule_set_to_utc(const rrule_set *s, int64_t local)
{
    return s->zone ? tz_local_to_utc(s->zone, local) : local;
}

int rrule_set_init(rrule_set *s, const rrule *rule, const civil_time *dtstart,
                   const tz_zone *zone, int64_t *rdate, size_t nrdate, int64_t *exdate,
                   size_t nexdate, char *err, size_t errlen)
{
    rrule none = {.freq = RRULE_YEARLY, .interval = 1, .has = RRULE_HAS_FREQ | RRULE_HAS_COUNT,
                  .count = 1};
    s->zone = zone;
    s->has_rule = rule != NULL;
    s->until_utc = false;
    s->rdate = rdate;
    s->exdate = exdate;
    s->nrdate = sort_unique(rdate, nrdate);
    s->nexdate = sort_unique(exdate, nexdate);
    /* Without a rule the "rule" is DTSTART alone: COUNT=1. */
    rrule r = rule ? *rule : none;
    if (zone && (r.has & RRULE_HAS_UNTIL) && r.until_kind == RRULE_UNTIL_UTC) {
        /* Loosen the wall-clock bound; the exact test is on UTC instants. */
        s->until_utc = true;
        s->until = civil_to_seconds(&r.until);
        civil_from_seconds(tz_utc_to_local(zone, s->until) + MAX_SHIFT, &r.until);
        r.until_kind = RRULE_UNTIL_LOCAL;
    }
    return rrule_plan_init(&s->plan, &r, dtstart, err, errlen);
}

/* Is a rule occurrence cut off by a UTC UNTIL? DTSTART is too, when UNTIL
 * comes before it: the set is then empty but for its RDATEs. */
static bool past_until(const rrule_set *s, int64_t t)
{
    return s->until_utc && rrule_set_to_utc(s, t) > s->until;
}

static void rule_advance(rrule_set_iter *si)
{
    int64_t t;
    si->rule_live = false;
    while (rrule_iter_next(&si->it, &t)) {
        /* UTC order can differ from wall order (a gap maps 02:30 after
         * 03:00), so skip rather than stop; the plan stops MAX_SHIFT later. */
        if (past_until(si->s, t)) continue;
        si->rule_live = true;
        si->rule_next = t;
        return;
    }
}

void rrule_set_iter_init(rrule_set_iter *si, rrule_set *s, int64_t from)
{
    si->s = s;
    rrule_iter_init(&si->it, &s->plan, from);
    rule_advance(si);
    size_t lo = 0, hi = s->nrdate;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->rdate[mid] < from) lo = mid + 1;
        else hi = mid;
    }
    si->ri = lo;
}

bool rrule_set_iter_next(rrule_set_iter *si, int64_t *out)
{
    rrule_set *s = si->s;
    for (;;) {
        bool have_r = si->ri < s->nrdate;
        if (!si->rule_live && !have_r) return false;
        int64_t t;
        if (si->rule_live && (!have_r || si->rule_next <= s->rdate[si->ri])) {
            t = si->rule_next;
            if (have_r && s->rdate[si->ri] == t) si->ri++;
            rule_advance(si);
        } else {
            t = s->rdate[si->ri++];
        }
        if (!contains(s->exdate, s->nexdate, t)) {
            *out = t;
            return true;
        }
    }
}

size_t rrule_set_expand(rrule_set *s, int64_t from, int64_t to, int64_t *out, size_t limit)
{
    rrule_set_iter si;
    size_t n = 0;
    int64_t t;
    rrule_set_iter_init(&si, s, from);
    while (n < limit && rrule_set_iter_next(&si, &t) && t < to) out[n++] = t;
    return n;
}

bool rrule_set_next_after(rrule_set *s, int64_t t, int64_t *out)
{
    rrule_set_iter si;
    rrule_set_iter_init(&si, s, t + 1);
    return rrule_set_iter_next(&si, out);
}

bool rrule_set_includes(rrule_set *s, int64_t t)
{
    if (contains(s->exdate, s->nexdate, t)) return false;
    if (contains(s->rdate, s->nrdate, t)) return true;
    return rrule_includes(&s->plan, t) && !past_until(s, t);
}
