/* rrule.h -- RFC 5545 recurrence rules: parse, print, expand, query, explain.
 *
 * Three layers, each owning plain memory the caller provides (nothing here
 * calls malloc):
 *
 *   rrule       the parsed RRULE text (rrule_parse / rrule_format).
 *   rrule_plan  a rule bound to its DTSTART: defaults filled in from DTSTART,
 *               small lazily filled caches (a day mask per kind of year).
 *               rrule_next_after, rrule_includes and the iterator run on it.
 *   rrule_set   (rrule_set.h) RRULE + RDATE - EXDATE in a time zone.
 *
 * All times here are "local seconds": a wall-clock time run through
 * civil_to_seconds (no zone). The arithmetic is on the wall clock, as RFC 5545
 * asks; turning an occurrence into a UTC instant is the set layer's job.
 *
 * How it is fast: the recurrence is cut into periods (a year, month, week,
 * day, hour, minute or second, times INTERVAL). Period k is found from a time
 * by arithmetic, never by walking from DTSTART. The days of a period that pass
 * BYMONTH/BYWEEKNO/BYYEARDAY/BYMONTHDAY/BYDAY come from a 366-bit mask that
 * depends only on the kind of year (weekday of January 1 and leap years), so
 * it is computed once per kind and cached in the plan. Times of day come from
 * three small sorted lists (hours, minutes, seconds); occurrence i of a period
 * is day[i / ntimes] + time[i % ntimes], so BYSETPOS picks indexes without
 * materialising the set. With COUNT, the occurrences before a period are
 * counted, never generated: a multiplication when every period yields the
 * same number (DAILY, WEEKLY;BYDAY=..., MONTHLY;BYDAY=1FR, ...), otherwise
 * popcounts per period or per kind of year (cached), a day at a time for
 * sub-daily rules.
 *
 * A plan is not safe to query from two threads at once: its caches fill
 * lazily. Plans are cheap (a fresh parse + plan + query is about 2 us), so
 * give each thread its own.
 *
 * Bounds: years run 0..9999 (the RFC 5545 text form has four digits); no
 * occurrence exists past 9999-12-31T23:59:59. Finding the next occurrence
 * examines at most RRULE_SCAN_BUDGET periods and then reports "no
 * occurrence"; empty days, hours and minutes are skipped in one step each,
 * and rules that can never match are mostly recognised when the plan is
 * made (no reachable time of day, BYSETPOS beyond any period), so in practice
 * only odd never-matching rules reach the budget. Counting a sub-daily COUNT rule
 * from far away is bounded by RRULE_COUNT_BUDGET checks (about 20 ms) and
 * then also answers "no occurrence" rather than guess.
 *
 * Where this differs from python-dateutil (deliberately, following RFC 5545):
 *  - DTSTART is always the first occurrence and counts towards COUNT, even
 *    when it does not match the rule (RFC 5545 3.8.5.3). dateutil drops a
 *    DTSTART that does not match; plan.keep_dtstart = false does the same
 *    here (the CLI's "keep_dtstart": false).
 *  - BYSETPOS picks from the whole period, also the first one: for WEEKLY
 *    that is the whole week (from WKST) holding DTSTART, and picks before
 *    DTSTART are then dropped. dateutil cuts the first week at DTSTART's day
 *    before applying BYSETPOS, so its picks in that week differ.
 *  - BYDAY mixing plain and ordinal days (BYDAY=MO,1TU) is the union of the
 *    two; dateutil requires a day to satisfy both (so it yields nothing).
 *  - BYWEEKNO: every day belongs to the week-numbering year that owns its
 *    week, and negative week numbers count from the end of that year. dateutil
 *    only recognises the December days of next year's week 1 as "1", not as
 *    "-52"/"-53".
 *  - Ordinal BYDAY outside MONTHLY/YEARLY, BYWEEKNO outside YEARLY,
 *    BYYEARDAY with DAILY/WEEKLY/MONTHLY and BYMONTHDAY with WEEKLY are
 *    errors (RFC 5545); dateutil ignores the ordinal or accepts the part.
 *  - UNTIL before DTSTART gives an empty set: the rule bounds the whole
 *    set, DTSTART included (as libical, dateutil and rrule.js have it; RDATEs
 *    of a set are not bounded by UNTIL and stay).
 *  - UNTIL given as a DATE for a date-time DTSTART includes the whole day
 *    (23:59:59); dateutil takes midnight.
 *  - A UTC UNTIL is tested occurrence by occurrence (rrule_set): right after
 *    a spring-forward gap, wall 02:30 (taken before the gap, 07:30Z in New
 *    York) can be past UNTIL while wall 03:00 (07:00Z) is not, and 03:00 is
 *    kept. dateutil stops the series at the first occurrence past UNTIL.
 *  - BYSECOND=60 is accepted (RFC 5545 allows it) but never occurs: wall
 *    clocks here have no leap seconds.
 * libical agrees with RFC 5545 on DTSTART; it is used only as a benchmark peer.
 */
#ifndef CHIME_TIME_RRULE_H
#define CHIME_TIME_RRULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "time/civil.h"

enum rrule_freq {
    RRULE_SECONDLY, RRULE_MINUTELY, RRULE_HOURLY, RRULE_DAILY,
    RRULE_WEEKLY, RRULE_MONTHLY, RRULE_YEARLY
};

/* Which parts the text named (rrule.has). */
enum {
    RRULE_HAS_UNTIL = 1 << 0, RRULE_HAS_COUNT = 1 << 1, RRULE_HAS_INTERVAL = 1 << 2,
    RRULE_HAS_BYSECOND = 1 << 3, RRULE_HAS_BYMINUTE = 1 << 4, RRULE_HAS_BYHOUR = 1 << 5,
    RRULE_HAS_BYDAY = 1 << 6, RRULE_HAS_BYMONTHDAY = 1 << 7, RRULE_HAS_BYYEARDAY = 1 << 8,
    RRULE_HAS_BYWEEKNO = 1 << 9, RRULE_HAS_BYMONTH = 1 << 10, RRULE_HAS_BYSETPOS = 1 << 11,
    RRULE_HAS_WKST = 1 << 12, RRULE_HAS_FREQ = 1 << 13
};

enum rrule_until_kind { RRULE_UNTIL_DATE = 1, RRULE_UNTIL_LOCAL, RRULE_UNTIL_UTC };

#define RRULE_TEXT_MAX 4096       /* longest RRULE text accepted */
#define RRULE_SCAN_BUDGET (1u << 17)
#define RRULE_COUNT_BUDGET (1u << 25) /* checks when counting sub-daily COUNT */
#define RRULE_MAX_YEAR 9999

/* Sets of numbers are bitmaps: bit n stands for the value n (or -n in the
 * *_neg maps). The yearday and setpos maps need 367 bits. */
typedef struct rrule_bits { uint64_t w[6]; } rrule_bits;

typedef struct rrule {
    uint8_t freq;             /* enum rrule_freq */
    uint8_t wkst;             /* CIVIL_MO..CIVIL_SU */
    uint8_t until_kind;       /* 0 or enum rrule_until_kind */
    uint8_t byday_plain;      /* bit w: weekday w without ordinal */
    uint32_t has;             /* RRULE_HAS_* */
    uint32_t interval;        /* >= 1 */
    uint32_t count;           /* valid when has & RRULE_HAS_COUNT */
    civil_time until;
    uint64_t bysecond;        /* bits 0..60 */
    uint64_t byminute;        /* bits 0..59 */
    uint32_t byhour;          /* bits 0..23 */
    uint16_t bymonth;         /* bits 1..12 */
    uint32_t bymonthday_pos, bymonthday_neg;   /* bits 1..31 */
    uint64_t byweekno_pos, byweekno_neg;       /* bits 1..53 */
    uint64_t byday_pos[7], byday_neg[7];       /* [weekday] bits 1..53 */
    rrule_bits byyearday_pos, byyearday_neg;   /* bits 1..366 */
    rrule_bits bysetpos_pos, bysetpos_neg;     /* bits 1..366 */
} rrule;

/* Parses RRULE text ("FREQ=WEEKLY;BYDAY=MO,WE", an optional leading "RRULE:"
 * is accepted). Returns 0, or -1 with a message naming the part and the
 * reason in err ("BYMONTHDAY: 32 is out of range"). */
int rrule_parse(const char *text, size_t len, rrule *out, char *err, size_t errlen);

/* Canonical text: parts in RFC order, values sorted, defaults omitted.
 * Returns the length it needs (like snprintf); buf gets at most size bytes. */
size_t rrule_format(const rrule *r, char *buf, size_t size);

/* Plain English ("every 2 weeks on Tuesday, Thursday and Sunday"). dtstart
 * may be NULL; with it, parts the rule takes from DTSTART are spelled out.
 * Returns the length it needs (like snprintf). */
size_t rrule_explain(const rrule *r, const civil_time *dtstart, char *buf, size_t size);

/* A rule bound to DTSTART. About 3.5 KB; lives wherever the caller likes.
 * Fields are private to rrule_*.c. */
typedef struct rrule_plan {
    /* Public: true (the default, RFC 5545) makes DTSTART the first
     * occurrence even when the rule does not yield it; false drops such a
     * DTSTART as python-dateutil does (and COUNT then counts only what the
     * rule yields). Set it after rrule_plan_init, before any query. */
    bool keep_dtstart;
    int8_t dtstart_match;     /* -1 unknown, else does the rule yield DTSTART */
    rrule r;
    int64_t dtstart;          /* local seconds */
    int64_t until;            /* last local second allowed (inclusive) */
    int64_t d0;               /* day number of DTSTART */
    int64_t p0;               /* number of period 0 (year, month index, ...) */
    int64_t unit;             /* sub-daily period length in seconds */
    uint64_t hmask, mmask, smask;            /* allowed hours/minutes/seconds */
    uint8_t lh[24], lm[60], ls[61];          /* time-of-day lists expanded */
    uint16_t nh, nm, ns;
    uint32_t nt;              /* times per day (or per sub-daily period) */
    bool has_setpos;
    bool ordinals;            /* BYDAY has ordinals (1FR, -1SU) */
    bool never;               /* known to yield nothing but DTSTART */
    int64_t per_period;       /* occurrences in every period, or -1: varies */
    uint64_t mask_ok;         /* which kinds of year have masks[] filled */
    uint64_t ycount_ok;       /* which ycount[] are filled */
    uint64_t ndcount_ok;      /* which ndcount[] are filled */
    uint32_t mcount_ok;       /* which mcount[] are filled */
    uint16_t ndcount[32];     /* BYSETPOS count of a period of n days */
    uint32_t mcount[28];      /* MONTHLY: occurrences in a month, by kind */
    rrule_bits masks[56];
    uint32_t ycount[56];      /* occurrences in a year (YEARLY, MONTHLY) */
} rrule_plan;

/* Binds r to dtstart (a valid civil time, year 0..9999). Returns 0 or -1 with
 * a message (an UNTIL before DTSTART is fine: the series is then empty). A
 * UTC UNTIL is compared as a wall time here; rrule_set converts it first. */
int rrule_plan_init(rrule_plan *p, const rrule *r, const civil_time *dtstart,
                    char *err, size_t errlen);

/* Iterates occurrences >= from in order. The iterator holds one period's
 * occurrences (about 4.5 KB). */
typedef struct rrule_iter {
    rrule_plan *p;
    int64_t k;                /* current period */
    int64_t from;
    uint64_t index;           /* occurrences of the series before the next one */
    uint32_t budget;
    bool dtstart_pending;     /* DTSTART still to emit (it does not match) */
    bool done;
    uint32_t n, pos;          /* occurrences in this period, next to look at */
    uint32_t nsel;            /* BYSETPOS: selected indexes in sel[] */
    uint16_t nd;
    int32_t cy, cylen;        /* cached year of the last day looked at */
    int64_t cjan1;
    const rrule_bits *cmask;
    int64_t base[366];        /* period: local second of each day (or the hour) */
    uint32_t sel[733];
} rrule_iter;

void rrule_iter_init(rrule_iter *it, rrule_plan *p, int64_t from);
/* Next occurrence into *out; false when the series has ended. */
bool rrule_iter_next(rrule_iter *it, int64_t *out);

/* Occurrences in [from, to), at most limit of them, into out. Returns how many. */
size_t rrule_expand(rrule_plan *p, int64_t from, int64_t to, int64_t *out, size_t limit);
/* First occurrence strictly after t; false if none. */
bool rrule_next_after(rrule_plan *p, int64_t t, int64_t *out);
/* Is t an occurrence? */
bool rrule_includes(rrule_plan *p, int64_t t);

#endif
