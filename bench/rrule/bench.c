/* bench.c -- the recurrence engine against libical, in one process.
 * (a) parse + expand the first 1,000 occurrences of each representative rule;
 * (b) next-after queries, DTSTART in 1990 and t in 2026, a fresh parse per
 *     query; every answer is checked against plain iteration.
 * Writes the synchronized DTSTARTs and the queries with our answers to
 * $OUT/rules.txt and $OUT/queries.txt for the python and node peers. */
#include <libical/ical.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "time/rrule.h"

static const char *const expand_rules[] = {
    "FREQ=DAILY",
    "FREQ=DAILY;INTERVAL=3",
    "FREQ=WEEKLY;BYDAY=MO,WE,FR",
    "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH,SU",
    "FREQ=MONTHLY;BYDAY=1FR",
    "FREQ=MONTHLY;BYMONTHDAY=-1",
    "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
    "FREQ=MONTHLY;BYMONTHDAY=15,30",
    "FREQ=YEARLY;BYMONTH=6;BYDAY=3SU",
    "FREQ=YEARLY;BYMONTH=11;BYDAY=4TH",
    "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=-1",
    "FREQ=YEARLY;BYMONTH=7,8;BYMONTHDAY=-1",
    "FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO",
    "FREQ=YEARLY;BYYEARDAY=1,100,200",
    "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13",
    "FREQ=HOURLY;INTERVAL=3",
    "FREQ=MINUTELY;INTERVAL=15;BYHOUR=9,10,11,12,13,14,15,16",
    "FREQ=DAILY;BYHOUR=9,12,17;BYMINUTE=0,30",
    "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9",
    "FREQ=YEARLY;INTERVAL=4;BYMONTH=11;BYDAY=TU;BYMONTHDAY=2,3,4,5,6,7,8",
};

static const char *const query_rules[] = {
    "FREQ=DAILY",
    "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH,SU",
    "FREQ=MONTHLY;BYDAY=1FR",
    "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
    "FREQ=YEARLY;BYMONTH=6;BYDAY=3SU",
    "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=-1",
    "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13",
    "FREQ=HOURLY;INTERVAL=5",
    "FREQ=DAILY;COUNT=20000",
    "FREQ=WEEKLY;BYDAY=MO,WE,FR;COUNT=10000",
    "FREQ=MONTHLY;BYMONTHDAY=1,15;COUNT=1000",
    "FREQ=YEARLY;BYMONTH=11;BYDAY=4TH;COUNT=100",
    "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13;COUNT=500",
    "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;COUNT=1000",
};

#define NR_EXPAND (sizeof expand_rules / sizeof expand_rules[0])
#define NR_QUERY (sizeof query_rules / sizeof query_rules[0])
#define NQ 10000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static rrule_plan plan;

/* The rule's first occurrence after a provisional start: a DTSTART every
 * engine agrees is part of the series. */
static civil_time synchronized(const char *text, const char *start)
{
    rrule r;
    civil_time dt;
    char err[200];
    int64_t occ[2];
    civil_parse_basic(start, 15, &dt, NULL);
    if (rrule_parse(text, strlen(text), &r, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", text, err);
        exit(1);
    }
    rrule_plan_init(&plan, &r, &dt, err, sizeof err);
    if (rrule_expand(&plan, INT64_MIN, INT64_MAX, occ, 2) < 2) exit(1);
    civil_from_seconds(occ[1], &dt);
    return dt;
}

static size_t ours_expand(const char *text, const civil_time *dt, int64_t *out, size_t n)
{
    rrule r;
    char err[200];
    rrule_parse(text, strlen(text), &r, err, sizeof err);
    rrule_plan_init(&plan, &r, dt, err, sizeof err);
    return rrule_expand(&plan, INT64_MIN, INT64_MAX, out, n);
}

static size_t ical_expand(const char *text, const char *dtstart, size_t n)
{
    struct icalrecurrencetype rt = icalrecurrencetype_from_string(text);
    icalrecur_iterator *it = icalrecur_iterator_new(rt, icaltime_from_string(dtstart));
    size_t got = 0;
    while (got < n && !icaltime_is_null_time(icalrecur_iterator_next(it))) got++;
    icalrecur_iterator_free(it);
    return got;
}

static int64_t ical_secs(struct icaltimetype t)
{
    civil_time c = {t.year, (int8_t)t.month, (int8_t)t.day, (int8_t)t.hour, (int8_t)t.minute, (int8_t)t.second};
    return civil_to_seconds(&c);
}

/* libical's answer by walking from DTSTART, or with set_start when shortcut. */
static int64_t ical_next_after(const char *text, const char *dtstart, int64_t t, bool shortcut)
{
    struct icalrecurrencetype rt = icalrecurrencetype_from_string(text);
    icalrecur_iterator *it = icalrecur_iterator_new(rt, icaltime_from_string(dtstart));
    if (shortcut) {
        civil_time c;
        civil_from_seconds(t + 1, &c);
        struct icaltimetype s = icaltime_null_time();
        s.year = c.year; s.month = c.month; s.day = c.day;
        s.hour = c.hour; s.minute = c.minute; s.second = c.second;
        if (icalrecur_iterator_set_start(it, s) == 0) { /* refuses COUNT rules */
            icalrecur_iterator_free(it);
            return ical_next_after(text, dtstart, t, false);
        }
    }
    int64_t r = -1;
    for (;;) {
        struct icaltimetype x = icalrecur_iterator_next(it);
        if (icaltime_is_null_time(x)) break;
        int64_t s = ical_secs(x);
        if (s > t) { r = s; break; }
    }
    icalrecur_iterator_free(it);
    return r;
}

int main(int argc, char **argv)
{
    const char *outdir = argc > 1 ? argv[1] : ".";
    char path[512], buf[32];
    static int64_t occ[200000];
    static civil_time dts[NR_EXPAND], qdts[NR_QUERY];
    static int64_t qt[NQ], want[NQ];
    FILE *f;

    snprintf(path, sizeof path, "%s/rules.txt", outdir);
    f = fopen(path, "w");
    for (size_t i = 0; i < NR_EXPAND; i++) {
        dts[i] = synchronized(expand_rules[i], "19970101T090000");
        civil_format_basic(&dts[i], false, buf, sizeof buf);
        fprintf(f, "%s %s\n", buf, expand_rules[i]);
    }
    fclose(f);

    /* Do libical and we agree on what (a) expands? */
    for (size_t i = 0; i < NR_EXPAND; i++) {
        size_t n = ours_expand(expand_rules[i], &dts[i], occ, 1000), j = 0;
        civil_format_basic(&dts[i], false, buf, sizeof buf);
        struct icalrecurrencetype rt = icalrecurrencetype_from_string(expand_rules[i]);
        icalrecur_iterator *it = icalrecur_iterator_new(rt, icaltime_from_string(buf));
        struct icaltimetype x = icaltime_null_time();
        while (j < n && !icaltime_is_null_time(x = icalrecur_iterator_next(it)) && ical_secs(x) == occ[j]) j++;
        icalrecur_iterator_free(it);
        if (j < n && icaltime_is_null_time(x))
            printf("expand  libical stops at occurrence %zu (its last year is 2582): %s\n", j, expand_rules[i]);
        else if (j < n)
            printf("expand  libical DIFFERS at occurrence %zu of %s\n", j, expand_rules[i]);
    }

    /* (a) expansion, parse included. */
    size_t total = 0;
    int reps = 0;
    double t0 = now();
    do {
        for (size_t i = 0; i < NR_EXPAND; i++) total += ours_expand(expand_rules[i], &dts[i], occ, 1000);
        reps++;
    } while (now() - t0 < 2.0);
    double ours_a = total / (now() - t0);
    total = 0;
    t0 = now();
    do {
        for (size_t i = 0; i < NR_EXPAND; i++) {
            civil_format_basic(&dts[i], false, buf, sizeof buf);
            total += ical_expand(expand_rules[i], buf, 1000);
        }
    } while (now() - t0 < 2.0);
    double ical_a = total / (now() - t0), ical_b = 0;
    printf("expand  ours     %12.0f occurrences/s\n", ours_a);
    printf("expand  libical  %12.0f occurrences/s   ours/libical %.0fx\n", ical_a, ours_a / ical_a);

    /* (b) next-after from 1990 to 2026; truth by plain iteration. */
    snprintf(path, sizeof path, "%s/queries.txt", outdir);
    f = fopen(path, "w");
    for (size_t i = 0; i < NR_QUERY; i++) qdts[i] = synchronized(query_rules[i], "19900101T090000");
    int64_t y2026 = civil_days_from_ymd(2026, 1, 1) * 86400;
    uint64_t seed = 12345;
    for (int q = 0; q < NQ; q++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        qt[q] = y2026 + (int64_t)((seed >> 33) % (365ull * 86400));
        size_t ri = (size_t)q % NR_QUERY;
        size_t n = ours_expand(query_rules[ri], &qdts[ri], occ, 200000), j = 0;
        while (j < n && occ[j] <= qt[q]) j++;
        want[q] = j < n ? occ[j] : -1;
        char a[32], b[32], c[32] = "none";
        civil_time x;
        civil_format_basic(&qdts[ri], false, a, sizeof a);
        civil_from_seconds(qt[q], &x);
        civil_format_basic(&x, false, b, sizeof b);
        if (want[q] >= 0) { civil_from_seconds(want[q], &x); civil_format_basic(&x, false, c, sizeof c); }
        fprintf(f, "%s %s %s %s\n", a, b, c, query_rules[ri]);
    }
    fclose(f);
    int wrong = 0;
    t0 = now();
    for (int q = 0; q < NQ; q++) {
        size_t ri = (size_t)q % NR_QUERY;
        rrule r;
        char err[100];
        int64_t got;
        rrule_parse(query_rules[ri], strlen(query_rules[ri]), &r, err, sizeof err);
        rrule_plan_init(&plan, &r, &qdts[ri], err, sizeof err);
        if (!rrule_next_after(&plan, qt[q], &got)) got = -1;
        wrong += got != want[q];
    }
    double ours_b = NQ / (now() - t0);
    printf("next    ours     %12.0f queries/s   (%d wrong of %d)\n", ours_b, wrong, NQ);
    for (size_t ri = 0; ri < NR_QUERY; ri++) {
        t0 = now();
        for (int q = (int)ri; q < NQ; q += (int)NR_QUERY) {
            rrule r;
            char err[100];
            int64_t got;
            rrule_parse(query_rules[ri], strlen(query_rules[ri]), &r, err, sizeof err);
            rrule_plan_init(&plan, &r, &qdts[ri], err, sizeof err);
            rrule_next_after(&plan, qt[q], &got);
        }
        printf("          %10.0f queries/s  %s\n", (NQ / NR_QUERY) / (now() - t0), query_rules[ri]);
    }
    for (int shortcut = 0; shortcut < 2; shortcut++) {
        int nq = shortcut ? NQ : 120, bad = 0;
        t0 = now();
        for (int q = 0; q < nq; q++) {
            size_t ri = (size_t)q % NR_QUERY;
            civil_format_basic(&qdts[ri], false, buf, sizeof buf);
            bad += ical_next_after(query_rules[ri], buf, qt[q], shortcut) != want[q];
        }
        double rate = nq / (now() - t0);
        if (!shortcut) ical_b = rate;
        printf("next    libical%s %10.0f queries/s   (%d wrong of %d)   ours/libical %.0fx\n",
               shortcut ? "+set_start" : "          ", rate, bad, nq, ours_b / rate);
    }
    printf("RATES ours_expand=%.0f ours_next=%.0f libical_expand=%.0f libical_next=%.2f\n", ours_a,
           ours_b, ical_a, ical_b);
    return wrong != 0;
}
