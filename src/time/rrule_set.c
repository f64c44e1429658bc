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

/* One rule bound to DTSTART in plan; a UTC UNTIL is loosened on the wall
 * clock and kept for the exact test on UTC instants. */
static int plan_rule(rrule_set *s, int i, rrule_plan *plan, const rrule *rule, const civil_time *dtstart,
                     char *err, size_t errlen)
{
    rrule r = *rule;
    s->until_utc[i] = false;
    if (s->zone && (r.has & RRULE_HAS_UNTIL) && r.until_kind == RRULE_UNTIL_UTC) {
        s->until_utc[i] = true;
        s->until[i] = civil_to_seconds(&r.until);
        civil_from_seconds(tz_utc_to_local(s->zone, s->until[i]) + MAX_SHIFT, &r.until);
        r.until_kind = RRULE_UNTIL_LOCAL;
    }
    return rrule_plan_init(plan, &r, dtstart, err, errlen);
}

static rrule_plan *plan_of(rrule_set *s, int i)
{
    return i == 0 ? &s->plan : &s->plan2;
}

int rrule_set_init_rules(rrule_set *s, const rrule *rules, int nrules, const civil_time *dtstart,
                         const tz_zone *zone, int64_t *rdate, size_t nrdate, int64_t *exdate,
                         size_t nexdate, char *err, size_t errlen)
{
    /* Without a rule the "rule" is DTSTART alone: COUNT=1. */
    static const rrule none = {.freq = RRULE_YEARLY, .interval = 1, .has = RRULE_HAS_FREQ | RRULE_HAS_COUNT,
                               .count = 1};
    if (nrules < 0 || nrules > RRULE_SET_MAX_RULES) {
        snprintf(err, errlen, "at most %d RRULEs", RRULE_SET_MAX_RULES);
        return -1;
    }
    s->zone = zone;
    s->nrules = nrules;
    s->has_rule = nrules > 0;
    s->rdate = rdate;
    s->exdate = exdate;
    s->nrdate = sort_unique(rdate, nrdate);
    s->nexdate = sort_unique(exdate, nexdate);
    for (int i = 0; i < (nrules ? nrules : 1); i++)
        if (plan_rule(s, i, plan_of(s, i), nrules ? &rules[i] : &none, dtstart, err, errlen) != 0) return -1;
    return 0;
}

int rrule_set_init(rrule_set *s, const rrule *rule, const civil_time *dtstart,
                   const tz_zone *zone, int64_t *rdate, size_t nrdate, int64_t *exdate,
                   size_t nexdate, char *err, size_t errlen)
{
    return rrule_set_init_rules(s, rule, rule ? 1 : 0, dtstart, zone, rdate, nrdate, exdate, nexdate, err, errlen);
}

static int rules_of(const rrule_set *s)
{
    return s->nrules ? s->nrules : 1;
}

/* Is an occurrence of rule i cut off by its UTC UNTIL? DTSTART is too, when
 * UNTIL comes before it: the set is then empty but for its RDATEs. */
static bool past_until(const rrule_set *s, int i, int64_t t)
{
    return s->until_utc[i] && rrule_set_to_utc(s, t) > s->until[i];
}

static void rule_advance(rrule_set_iter *si, int i)
{
    int64_t t;
    si->rule_live[i] = false;
    while (rrule_iter_next(&si->it[i], &t)) {
        /* UTC order can differ from wall order (a gap maps 02:30 after
         * 03:00), so skip rather than stop; the plan stops MAX_SHIFT later. */
        if (past_until(si->s, i, t)) continue;
        si->rule_live[i] = true;
        si->rule_next[i] = t;
        return;
    }
}

void rrule_set_iter_init(rrule_set_iter *si, rrule_set *s, int64_t from)
{
    si->s = s;
    for (int i = 0; i < rules_of(s); i++) {
        rrule_iter_init(&si->it[i], plan_of(s, i), from);
        rule_advance(si, i);
    }
    for (int i = rules_of(s); i < RRULE_SET_MAX_RULES; i++) si->rule_live[i] = false;
    size_t lo = 0, hi = s->nrdate;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->rdate[mid] < from) lo = mid + 1;
        else hi = mid;
    }
    si->ri = lo;
}

/* The smallest pending value of the rules and the RDATEs; false when none. */
static bool next_candidate(const rrule_set_iter *si, int64_t *t)
{
    bool any = si->ri < si->s->nrdate;
    if (any) *t = si->s->rdate[si->ri];
    for (int i = 0; i < RRULE_SET_MAX_RULES; i++)
        if (si->rule_live[i] && (!any || si->rule_next[i] < *t)) *t = si->rule_next[i], any = true;
    return any;
}

bool rrule_set_iter_next(rrule_set_iter *si, int64_t *out)
{
    rrule_set *s = si->s;
    int64_t t;
    while (next_candidate(si, &t)) {
        /* Every source at t moves on: the set has no duplicates. */
        if (si->ri < s->nrdate && s->rdate[si->ri] == t) si->ri++;
        for (int i = 0; i < RRULE_SET_MAX_RULES; i++)
            if (si->rule_live[i] && si->rule_next[i] == t) rule_advance(si, i);
        if (!contains(s->exdate, s->nexdate, t)) {
            *out = t;
            return true;
        }
    }
    return false;
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
    for (int i = 0; i < rules_of(s); i++)
        if (rrule_includes(plan_of(s, i), t) && !past_until(s, i, t)) return true;
    return false;
}
