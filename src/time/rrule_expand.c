/* rrule_expand.c -- the recurrence engine: periods, day masks, BYSETPOS,
 * iteration, next_after, includes. See rrule.h for the design. */
#include "time/rrule.h"

#include <stdio.h>
#include <string.h>

#define DAY 86400
#define END_SECONDS (civil_days_from_ymd(RRULE_MAX_YEAR + 1, 1, 1) * DAY)

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t ceildiv(int64_t a, int64_t b)
{
    return -floordiv(-a, b);
}

/* ---- 366-bit sets ---- */

/* Set bits of v. The build targets plain x86-64 (no POPCNT instruction), so
 * __builtin_popcountll is a call into libgcc's table code: 6-7% of a COUNT
 * query that counts months (callgrind, bench/rrule's slow rules). */
static inline int pop64(uint64_t v)
{
    v -= (v >> 1) & 0x5555555555555555ull;
    v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
    v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (int)((v * 0x0101010101010101ull) >> 56);
}

static void bits_set_range(rrule_bits *b, int lo, int hi)
{
    while (lo < hi) {
        int w = lo >> 6, end = (w + 1) * 64 < hi ? (w + 1) * 64 : hi;
        uint64_t v = ~0ull << (lo & 63);
        if (end & 63) v &= ~(~0ull << (end & 63));
        b->w[w] |= v;
        lo = end;
    }
}

static void bits_set1(rrule_bits *b, int i)
{
    b->w[i >> 6] |= 1ull << (i & 63);
}

static bool bits_get(const rrule_bits *b, int i)
{
    return b->w[i >> 6] >> (i & 63) & 1;
}

static void bits_and(rrule_bits *a, const rrule_bits *b)
{
    for (int i = 0; i < 6; i++) a->w[i] &= b->w[i];
}

static bool bits_any(const rrule_bits *b)
{
    return (b->w[0] | b->w[1] | b->w[2] | b->w[3] | b->w[4] | b->w[5]) != 0;
}

/* Set bits in [lo, hi). */
static int bits_count_range(const rrule_bits *b, int lo, int hi)
{
    int n = 0;
    if (lo >= hi) return 0;
    int wl = lo >> 6, wh = (hi - 1) >> 6;
    for (int w = wl; w <= wh; w++) {
        uint64_t v = b->w[w];
        if (w == wl) v &= ~0ull << (lo & 63);
        if (w == wh && (hi & 63)) v &= ~(~0ull << (hi & 63));
        n += pop64(v);
    }
    return n;
}

/* First set bit >= i and < hi, or -1. */
static int bits_next(const rrule_bits *b, int i, int hi)
{
    while (i < hi) {
        uint64_t v = b->w[i >> 6] & (~0ull << (i & 63));
        if (v) {
            int r = (i & ~63) + __builtin_ctzll(v);
            return r < hi ? r : -1;
        }
        i = (i & ~63) + 64;
    }
    return -1;
}

static int next_bit64(uint64_t m, int after) /* first set bit > after, or -1 */
{
    if (after >= 63) return -1;
    uint64_t v = m & (~0ull << (after + 1));
    return v ? __builtin_ctzll(v) : -1;
}

/* ---- the day mask of one year ---- */

static int month_start(int64_t y, int m) /* 0-based day of year of month m's 1st */
{
    static const int16_t cum[13] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};
    return cum[m - 1] + (m > 2 && civil_is_leap(y));
}

/* Weekday (0 = Monday) of January 1 of year y >= 1 (Gauss), without the
 * general day-number conversion. */
static int jan1_weekday(int64_t y)
{
    if (y < 1 || y > 1000000) return civil_weekday(civil_days_from_ymd(y, 1, 1));
    uint32_t x = (uint32_t)y - 1; /* 32-bit: the divisions are the cost */
    return (int)((1 + 5 * (x % 4) + 4 * (x % 100) + 6 * (x % 400) + 6) % 7); /* Sunday 6 */
}

static int year_kind(const rrule_plan *p, int64_t y)
{
    int wd = jan1_weekday(y);
    if (p->r.has & RRULE_HAS_BYWEEKNO)
        return wd * 8 + civil_is_leap(y - 1) * 4 + civil_is_leap(y) * 2 + civil_is_leap(y + 1);
    return wd * 8 + civil_is_leap(y) * 2;
}

static bool weekno_selected(const rrule *r, int n, int nweeks)
{
    return (r->byweekno_pos >> n & 1) || (r->byweekno_neg >> (nweeks + 1 - n) & 1);
}

static void mask_weekno(const rrule *r, int64_t y, int64_t jan1, int ylen, rrule_bits *out)
{
    int w1 = (int)(civil_week1_start(y, r->wkst) - jan1); /* -3..3 */
    int nweeks = civil_weeks_in_year(y, r->wkst);
    memset(out, 0, sizeof *out);
    for (int n = 1; n <= nweeks; n++) {
        if (!weekno_selected(r, n, nweeks)) continue;
        int lo = w1 + 7 * (n - 1), hi = lo + 7;
        bits_set_range(out, lo < 0 ? 0 : lo, hi > ylen ? ylen : hi);
    }
    /* January days in the previous year's last week. */
    int prev = civil_weeks_in_year(y - 1, r->wkst);
    if (w1 > 0 && weekno_selected(r, prev, prev)) bits_set_range(out, 0, w1);
    /* December days in next year's week 1. */
    int tail = w1 + 7 * nweeks;
    if (tail < ylen && weekno_selected(r, 1, civil_weeks_in_year(y + 1, r->wkst)))
        bits_set_range(out, tail, ylen);
}

static void mark_ordinals(const rrule *r, int wd1, int a, int b, rrule_bits *out)
{
    for (int w = 0; w < 7; w++) {
        uint64_t pos = r->byday_pos[w], neg = r->byday_neg[w];
        if (!(pos | neg)) continue;
        int first = a + (w - (wd1 + a) % 7 + 7) % 7;
        int last = (b - 1) - (((wd1 + b - 1) % 7) - w + 7) % 7;
        /* Only the ordinals named: a range holds at most 53 of a weekday. */
        for (; pos; pos &= pos - 1) {
            int d = first + 7 * (__builtin_ctzll(pos) - 1);
            if (d >= b) break;
            bits_set1(out, d);
        }
        for (; neg; neg &= neg - 1) {
            int d = last - 7 * (__builtin_ctzll(neg) - 1);
            if (d < a) break;
            bits_set1(out, d);
        }
    }
}

/* 64 days from one on weekday s: bit j is set when day j's weekday is in
 * the set (bit w: weekday w) -- the set rotated by s, every 7 bits. */
static uint64_t weekday_word(uint8_t set, int s)
{
    uint64_t v = (uint64_t)(((set >> s) | (set << (7 - s))) & 0x7f);
    v |= v << 7;
    v |= v << 14;
    v |= v << 28;
    v |= v << 56;
    return v;
}

static void mask_byday(const rrule *r, int64_t y, int wd1, int ylen, rrule_bits *out)
{
    memset(out, 0, sizeof *out);
    if (r->byday_plain) {
        /* Word k starts on weekday wd1 + 64k = wd1 + k (mod 7): its 7-day
         * pattern is the weekday set rotated by that, repeated across the
         * word. */
        for (int k = 0, s = wd1 % 7; k < 6; k++, s = s == 6 ? 0 : s + 1) out->w[k] = weekday_word(r->byday_plain, s);
        if (ylen < 384) { /* clear past the year's end */
            out->w[ylen >> 6] &= ~(~0ull << (ylen & 63));
            for (int k = (ylen >> 6) + 1; k < 6; k++) out->w[k] = 0;
        }
    }
    bool ordinals = false;
    for (int w = 0; w < 7; w++) ordinals |= (r->byday_pos[w] | r->byday_neg[w]) != 0;
    if (!ordinals) return;
    /* Ordinals count within the month for MONTHLY and for YEARLY with
     * BYMONTH, within the year otherwise (RFC 5545 3.3.10). */
    if (r->freq == RRULE_MONTHLY || (r->has & RRULE_HAS_BYMONTH)) {
        for (int m = 1; m <= 12; m++)
            mark_ordinals(r, wd1, month_start(y, m), m == 12 ? ylen : month_start(y, m + 1), out);
    } else {
        mark_ordinals(r, wd1, 0, ylen, out);
    }
}

static void mask_compute(const rrule_plan *p, int64_t y, rrule_bits *m)
{
    const rrule *r = &p->r;
    int64_t jan1 = civil_days_from_ymd(y, 1, 1);
    int ylen = civil_days_in_year(y), wd1 = civil_weekday(jan1);
    rrule_bits t;
    memset(m, 0, sizeof *m);
    bits_set_range(m, 0, ylen);
    if (r->has & RRULE_HAS_BYMONTH) {
        memset(&t, 0, sizeof t);
        for (int mo = 1; mo <= 12; mo++)
            if (r->bymonth >> mo & 1)
                bits_set_range(&t, month_start(y, mo), mo == 12 ? ylen : month_start(y, mo + 1));
        bits_and(m, &t);
    }
    if (r->has & RRULE_HAS_BYWEEKNO) {
        mask_weekno(r, y, jan1, ylen, &t);
        bits_and(m, &t);
    }
    if (r->has & RRULE_HAS_BYYEARDAY) {
        memset(&t, 0, sizeof t);
        for (int d = bits_next(&r->byyearday_pos, 1, ylen + 1); d > 0;
             d = bits_next(&r->byyearday_pos, d + 1, ylen + 1))
            bits_set1(&t, d - 1);
        for (int d = bits_next(&r->byyearday_neg, 1, ylen + 1); d > 0;
             d = bits_next(&r->byyearday_neg, d + 1, ylen + 1))
            bits_set1(&t, ylen - d);
        bits_and(m, &t);
    }
    if (r->has & RRULE_HAS_BYMONTHDAY) {
        memset(&t, 0, sizeof t);
        for (int mo = 1; mo <= 12; mo++) {
            int ms = month_start(y, mo), ml = civil_days_in_month(y, mo);
            for (uint32_t v = r->bymonthday_pos; v; v &= v - 1) {
                int d = __builtin_ctz(v);
                if (d <= ml) bits_set1(&t, ms + d - 1);
            }
            for (uint32_t v = r->bymonthday_neg; v; v &= v - 1) {
                int d = __builtin_ctz(v);
                if (d <= ml) bits_set1(&t, ms + ml - d);
            }
        }
        bits_and(m, &t);
    }
    if (r->has & RRULE_HAS_BYDAY) {
        mask_byday(r, y, wd1, ylen, &t);
        bits_and(m, &t);
    }
}

/* The mask of year y, whose kind is k. */
static const rrule_bits *kind_mask(rrule_plan *p, int64_t y, int k)
{
    if (!(p->mask_ok >> k & 1)) {
        mask_compute(p, y, &p->masks[k]);
        p->mask_ok |= 1ull << k;
    }
    return &p->masks[k];
}

static const rrule_bits *year_mask(rrule_plan *p, int64_t y)
{
    return kind_mask(p, y, year_kind(p, y));
}

/* ---- BYSETPOS ---- */

/* How many distinct indexes BYSETPOS picks from a set of n. */
static uint32_t setpos_count(const rrule_plan *p, uint32_t n)
{
    if (!p->has_setpos) return n;
    const rrule_bits *pos = &p->r.bysetpos_pos, *neg = &p->r.bysetpos_neg;
    uint32_t c = 0;
    int lim = n < 366 ? (int)n : 366;
    for (int i = bits_next(pos, 1, lim + 1); i > 0; i = bits_next(pos, i + 1, lim + 1)) c++;
    for (int i = bits_next(neg, 1, lim + 1); i > 0; i = bits_next(neg, i + 1, lim + 1)) {
        /* -i is index n - i, the same as +(n - i + 1). */
        uint32_t same = n - (uint32_t)i + 1;
        if (!(same <= 366 && bits_get(pos, (int)same))) c++;
    }
    return c;
}

/* Sorted distinct indexes into sel; returns how many. */
static uint32_t setpos_resolve(const rrule_plan *p, uint32_t n, uint32_t *sel)
{
    const rrule_bits *pos = &p->r.bysetpos_pos, *neg = &p->r.bysetpos_neg;
    uint32_t a[366], b[366], na = 0, nb = 0, ns = 0;
    int lim = n < 366 ? (int)n : 366;
    for (int i = bits_next(pos, 1, lim + 1); i > 0; i = bits_next(pos, i + 1, lim + 1))
        a[na++] = (uint32_t)i - 1;
    for (int i = lim; i >= 1; i--)
        if (bits_get(neg, i)) b[nb++] = n - (uint32_t)i;
    uint32_t i = 0, j = 0;
    while (i < na || j < nb) {
        uint32_t v = j >= nb || (i < na && a[i] < b[j]) ? a[i++] : b[j++];
        if (ns == 0 || sel[ns - 1] != v) sel[ns++] = v;
    }
    return ns;
}

/* ---- the plan ---- */

static int fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return -1;
}

/* The set bits of m up to hi, ascending (most masks hold one bit). */
static uint16_t list_from_mask(uint64_t m, int hi, uint8_t *out)
{
    uint16_t n = 0;
    if (hi < 63) m &= (2ull << hi) - 1;
    for (; m; m &= m - 1) out[n++] = (uint8_t)__builtin_ctzll(m);
    return n;
}

/* Hours, minutes and seconds: the lists a period expands into and the masks
 * a sub-daily period must pass (RFC 5545's table of "limit"/"expand"). */
static void plan_times(rrule_plan *p, const civil_time *dt)
{
    const rrule *r = &p->r;
    uint64_t all60 = (1ull << 60) - 1;
    uint64_t h = r->has & RRULE_HAS_BYHOUR ? r->byhour : 1ull << dt->hour;
    uint64_t m = r->has & RRULE_HAS_BYMINUTE ? r->byminute : 1ull << dt->minute;
    uint64_t s = (r->has & RRULE_HAS_BYSECOND ? r->bysecond : 1ull << dt->second) & all60;
    p->hmask = (1ull << 24) - 1;
    p->mmask = all60;
    p->smask = all60;
    if (r->freq <= RRULE_HOURLY && (r->has & RRULE_HAS_BYHOUR)) p->hmask = r->byhour;
    if (r->freq <= RRULE_MINUTELY && (r->has & RRULE_HAS_BYMINUTE)) p->mmask = r->byminute;
    if (r->freq == RRULE_SECONDLY && (r->has & RRULE_HAS_BYSECOND)) p->smask = s;
    if (r->freq <= RRULE_HOURLY) h = 1;
    if (r->freq <= RRULE_MINUTELY) m = 1;
    if (r->freq == RRULE_SECONDLY) s = 1;
    p->nh = list_from_mask(h, 23, p->lh);
    p->nm = list_from_mask(m, 59, p->lm);
    p->ns = list_from_mask(s, 59, p->ls);
    p->nt = (uint32_t)p->nh * p->nm * p->ns;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Sub-daily: can any period start on an allowed hour/minute/second at all?
 * Period starts fall on one residue class modulo gcd(INTERVAL, periods per
 * day), so a rule like FREQ=HOURLY;INTERVAL=2;BYHOUR=1 from an even hour is
 * known empty here instead of after a long scan. */
static bool subdaily_reachable(const rrule_plan *p)
{
    int64_t per_day = DAY / p->unit, g = gcd64(p->r.interval, per_day);
    int64_t r0 = p->p0 - floordiv(p->p0, g) * g;
    for (int h = 0; h < 24; h++) {
        if (!(p->hmask >> h & 1)) continue;
        if (p->unit == 3600) {
            if (h % g == r0) return true;
            continue;
        }
        for (int m = 0; m < 60; m++) {
            if (!(p->mmask >> m & 1)) continue;
            if (p->unit == 60) {
                if ((h * 60 + m) % g == r0) return true;
                continue;
            }
            for (int s = 0; s < 60; s++)
                if ((p->smask >> s & 1) && (h * 3600 + m * 60 + s) % g == r0) return true;
        }
    }
    return false;
}

/* Days per month named by BYMONTHDAY when that number is the same in every
 * month (values within 1..28 from either end that cannot meet), else -1. */
static int monthdays_fixed(const rrule *r)
{
    uint32_t pos = r->bymonthday_pos, neg = r->bymonthday_neg;
    if ((pos | neg) >> 29) return -1;
    for (uint32_t a = pos; a; a &= a - 1)
        for (uint32_t b = neg; b; b &= b - 1)
            if (__builtin_ctz(a) + __builtin_ctz(b) >= 29) return -1; /* 28..31 + 1 */
    return pop64(pos) + pop64(neg);
}

/* Days per month named by ordinal BYDAY alone when every month has them
 * all: ordinals within +/-4 and never both ends of one weekday. */
static int ordinals_fixed(const rrule *r)
{
    int n = 0;
    if (r->byday_plain) return -1;
    for (int w = 0; w < 7; w++) {
        uint64_t pos = r->byday_pos[w], neg = r->byday_neg[w];
        if (((pos | neg) >> 5) || (pos && neg)) return -1;
        n += pop64(pos | neg);
    }
    return n;
}

/* Occurrences per period when every period has the same number, so that
 * COUNT arithmetic is a multiplication; -1 when it varies. */
static int64_t constant_per_period(const rrule_plan *p)
{
    const rrule *r = &p->r;
    uint32_t has = r->has, days = RRULE_HAS_BYMONTH | RRULE_HAS_BYMONTHDAY | RRULE_HAS_BYDAY |
                                  RRULE_HAS_BYYEARDAY | RRULE_HAS_BYWEEKNO;
    int64_t n = -1;
    switch (r->freq) {
    case RRULE_YEARLY:
    case RRULE_MONTHLY: {
        int per_month = -1;
        uint32_t rest = has & days & ~(uint32_t)RRULE_HAS_BYMONTH;
        if (rest == RRULE_HAS_BYMONTHDAY) per_month = monthdays_fixed(r);
        else if (rest == RRULE_HAS_BYDAY) per_month = ordinals_fixed(r);
        if (per_month < 0) return -1;
        int months = has & RRULE_HAS_BYMONTH ? pop64(r->bymonth) : 12;
        if (r->freq == RRULE_YEARLY) {
            if (!(has & RRULE_HAS_BYMONTH)) return -1; /* ordinals count in the year */
            n = (int64_t)months * per_month;
        } else {
            if (has & RRULE_HAS_BYMONTH) return -1; /* months without any */
            n = per_month;
        }
        break;
    }
    case RRULE_WEEKLY:
        if ((has & days) != RRULE_HAS_BYDAY) return -1;
        n = pop64(r->byday_plain);
        break;
    case RRULE_DAILY:
        if (has & days) return -1;
        n = 1;
        break;
    default:
        if ((has & days) || p->hmask != (1ull << 24) - 1 || p->mmask != (1ull << 60) - 1 ||
            p->smask != (1ull << 60) - 1)
            return -1;
        n = 1;
    }
    return setpos_count(p, (uint32_t)n * p->nt);
}

/* Parts the rule leaves out come from DTSTART (RFC 5545 3.3.10). */
static void plan_defaults(rrule *r, const civil_time *dt, int64_t d0)
{
    if (r->has & (RRULE_HAS_BYWEEKNO | RRULE_HAS_BYYEARDAY | RRULE_HAS_BYMONTHDAY | RRULE_HAS_BYDAY))
        return;
    if (r->freq == RRULE_YEARLY) {
        if (!(r->has & RRULE_HAS_BYMONTH)) {
            r->bymonth = (uint16_t)(1u << dt->month);
            r->has |= RRULE_HAS_BYMONTH;
        }
        r->bymonthday_pos = 1u << dt->day;
        r->has |= RRULE_HAS_BYMONTHDAY;
    } else if (r->freq == RRULE_MONTHLY) {
        r->bymonthday_pos = 1u << dt->day;
        r->has |= RRULE_HAS_BYMONTHDAY;
    } else if (r->freq == RRULE_WEEKLY) {
        r->byday_plain = (uint8_t)(1u << civil_weekday(d0));
        r->has |= RRULE_HAS_BYDAY;
    }
}

int rrule_plan_init(rrule_plan *p, const rrule *r, const civil_time *dt, char *err, size_t errlen)
{
    if (!civil_valid(dt) || dt->year < 0 || dt->year > RRULE_MAX_YEAR)
        return fail(err, errlen, "DTSTART: not a valid date-time in years 0..9999");
    p->r = *r;
    p->dtstart = civil_to_seconds(dt);
    p->d0 = floordiv(p->dtstart, DAY);
    p->mask_ok = p->ycount_ok = p->ndcount_ok = 0;
    p->mcount_ok = 0;
    p->keep_dtstart = true;
    p->dtstart_match = -1;
    p->has_setpos = (r->has & RRULE_HAS_BYSETPOS) != 0;
    p->ordinals = false;
    for (int w = 0; w < 7; w++) p->ordinals |= (r->byday_pos[w] | r->byday_neg[w]) != 0;
    p->unit = 0;
    p->until = END_SECONDS - 1;
    if (r->has & RRULE_HAS_UNTIL) {
        civil_time u = r->until;
        if (r->until_kind == RRULE_UNTIL_DATE) {
            u.hour = 23; u.minute = 59; u.second = 59;
        }
        if (civil_to_seconds(&u) < p->until) p->until = civil_to_seconds(&u);
    }
    plan_defaults(&p->r, dt, p->d0);
    plan_times(p, dt);
    switch (r->freq) {
    case RRULE_YEARLY: p->p0 = dt->year; break;
    case RRULE_MONTHLY: p->p0 = (int64_t)dt->year * 12 + dt->month - 1; break;
    case RRULE_WEEKLY: p->p0 = p->d0 - (civil_weekday(p->d0) - r->wkst + 7) % 7; break;
    case RRULE_DAILY: p->p0 = p->d0; break;
    default:
        p->unit = r->freq == RRULE_HOURLY ? 3600 : r->freq == RRULE_MINUTELY ? 60 : 1;
        p->p0 = floordiv(p->dtstart, p->unit);
    }
    /* BYSETPOS can only pick from as many occurrences as a period can hold. */
    static const uint32_t max_days[] = {1, 1, 1, 1, 7, 31, 366};
    p->per_period = constant_per_period(p);
    p->never = p->nt == 0 || p->per_period == 0 || (p->unit && !subdaily_reachable(p)) ||
               setpos_count(p, max_days[r->freq] * p->nt) == 0;
    return 0;
}

/* Period index whose span holds local second t (may be before period 0). */
static int64_t period_of(const rrule_plan *p, int64_t t)
{
    int64_t I = p->r.interval, d = floordiv(t, DAY), idx;
    int32_t y; int8_t m, dd;
    switch (p->r.freq) {
    case RRULE_YEARLY:
        civil_ymd_from_days(d, &y, &m, &dd);
        idx = y - p->p0;
        break;
    case RRULE_MONTHLY:
        civil_ymd_from_days(d, &y, &m, &dd);
        idx = (int64_t)y * 12 + m - 1 - p->p0;
        break;
    case RRULE_WEEKLY: idx = floordiv(d - p->p0, 7); break;
    case RRULE_DAILY: idx = d - p->p0; break;
    default: idx = floordiv(t, p->unit) - p->p0;
    }
    return floordiv(idx, I);
}

/* ---- filling one period ---- */

static void iter_year(rrule_iter *it, int64_t d)
{
    if (it->cmask && d >= it->cjan1 && d < it->cjan1 + it->cylen) return;
    int32_t y; int8_t m, dd;
    civil_ymd_from_days(d, &y, &m, &dd);
    it->cy = y;
    it->cjan1 = civil_days_from_ymd(y, 1, 1);
    it->cylen = civil_days_in_year(y);
    it->cmask = year_mask(it->p, y);
}

/* First day >= d that passes the day mask, or -1 past year 9999. */
static int64_t next_day(rrule_iter *it, int64_t d)
{
    for (;;) {
        iter_year(it, d);
        if (it->cy > RRULE_MAX_YEAR) return -1;
        int i = bits_next(it->cmask, (int)(d - it->cjan1), it->cylen);
        if (i >= 0) return it->cjan1 + i;
        d = it->cjan1 + it->cylen;
        if (it->budget-- == 0) return -1;
    }
}

/* After the day list of a period is in base[], n and sel follow. */
static bool finish_period(rrule_iter *it, uint32_t nd)
{
    rrule_plan *p = it->p;
    it->nd = (uint16_t)nd;
    it->n = nd * p->nt;
    it->pos = 0;
    if (it->n == 0) return false;
    if (p->has_setpos) {
        it->nsel = setpos_resolve(p, it->n, it->sel);
        return it->nsel > 0;
    }
    it->nsel = it->n;
    return true;
}

static uint32_t days_from_mask(rrule_iter *it, const rrule_bits *m, int64_t jan1, int lo, int hi,
                               uint32_t nd)
{
    for (int i = bits_next(m, lo, hi); i >= 0; i = bits_next(m, i + 1, hi))
        it->base[nd++] = (jan1 + i) * DAY;
    return nd;
}

/* Sub-daily: first period >= k whose day, hour, minute and second pass. */
static bool fill_subdaily(rrule_iter *it, int64_t *kp)
{
    rrule_plan *p = it->p;
    int64_t I = p->r.interval, k = *kp, end = END_SECONDS;
    if (p->never) return false;
    while (it->budget-- > 0) {
        int64_t s = (p->p0 + k * I) * p->unit, target = -1;
        if (s >= end) return false;
        int64_t d = floordiv(s, DAY);
        int64_t nd = next_day(it, d);
        if (nd < 0) return false;
        int tod = (int)(s - d * DAY), h = tod / 3600, mi = tod / 60 % 60, se = tod % 60;
        if (nd != d) {
            target = nd * DAY;
        } else if (!(p->hmask >> h & 1)) {
            int nh = next_bit64(p->hmask, h);
            target = nh < 0 ? (d + 1) * DAY : d * DAY + nh * 3600;
        } else if (!(p->mmask >> mi & 1)) {
            int nm = next_bit64(p->mmask, mi);
            target = nm < 0 ? d * DAY + (h + 1) * 3600 : d * DAY + h * 3600 + nm * 60;
        } else if (!(p->smask >> se & 1)) {
            int ns = next_bit64(p->smask, se);
            target = ns < 0 ? s - se + 60 : s - se + ns;
        }
        if (target >= 0) {
            k = ceildiv(ceildiv(target, p->unit) - p->p0, I);
            continue;
        }
        it->base[0] = s;
        *kp = k;
        if (finish_period(it, 1)) return true;
        k++;
    }
    return false;
}

/* Fills the first period >= *kp that has occurrences; false when none. */
static bool fill(rrule_iter *it, int64_t *kp)
{
    rrule_plan *p = it->p;
    int64_t I = p->r.interval, k = *kp;
    if (p->never) return false;
    if (p->unit) return fill_subdaily(it, kp);
    for (; it->budget > 0; it->budget--, k++) {
        uint32_t nd = 0;
        if (p->r.freq == RRULE_YEARLY) {
            int64_t y = p->p0 + k * I;
            if (y > RRULE_MAX_YEAR) return false;
            const rrule_bits *m = year_mask(p, y);
            if (!bits_any(m)) continue;
            nd = days_from_mask(it, m, civil_days_from_ymd(y, 1, 1), 0, 366, 0);
        } else if (p->r.freq == RRULE_MONTHLY) {
            int64_t mi = p->p0 + k * I, y = floordiv(mi, 12);
            int mo = (int)(mi - y * 12) + 1;
            if (y > RRULE_MAX_YEAR) return false;
            const rrule_bits *m = year_mask(p, y);
            int lo = month_start(y, mo);
            nd = days_from_mask(it, m, civil_days_from_ymd(y, 1, 1), lo,
                                lo + civil_days_in_month(y, mo), 0);
        } else if (p->r.freq == RRULE_WEEKLY) {
            int64_t ws = p->p0 + 7 * k * I;
            for (int64_t d = ws; d < ws + 7; d++) {
                iter_year(it, d);
                if (it->cy > RRULE_MAX_YEAR) return false;
                if (bits_get(it->cmask, (int)(d - it->cjan1))) it->base[nd++] = d * DAY;
            }
        } else { /* DAILY */
            int64_t d = p->p0 + k * I, nd_ = next_day(it, d);
            if (nd_ < 0) return false;
            if (nd_ != d) {
                k = ceildiv(nd_ - p->p0, I) - 1;
                continue;
            }
            it->base[0] = d * DAY;
            nd = 1;
        }
        if (nd && finish_period(it, nd)) {
            *kp = k;
            return true;
        }
    }
    return false;
}

/* Local second of index i of the filled period. */
static int64_t occurrence_at(const rrule_iter *it, uint32_t i)
{
    const rrule_plan *p = it->p;
    if (p->nt == 1) return it->base[i] + p->lh[0] * 3600 + p->lm[0] * 60 + p->ls[0];
    uint32_t di = i / p->nt, ti = i % p->nt;
    uint32_t per_h = (uint32_t)p->nm * p->ns;
    return it->base[di] + p->lh[ti / per_h] * 3600 + p->lm[ti / p->ns % p->nm] * 60 +
           p->ls[ti % p->ns];
}

/* ---- counting whole periods (for COUNT) ---- */

/* BYSETPOS count for a period of nd days (nd <= 31), cached. */
static uint32_t days_count(rrule_plan *p, uint32_t nd)
{
    if (!p->has_setpos) return nd * p->nt;
    if (!(p->ndcount_ok >> nd & 1)) {
        p->ndcount[nd] = (uint16_t)setpos_count(p, nd * p->nt);
        p->ndcount_ok |= 1ull << nd;
    }
    return p->ndcount[nd];
}

/* A MONTHLY rule picks the same days in every month that starts on the
 * same weekday and has as many days, as long as BYMONTH names it: BYDAY
 * (plain and ordinal) and BYMONTHDAY are all the parts it may have
 * (rrule_parse refuses BYWEEKNO and BYYEARDAY with MONTHLY). So a month's
 * count is one of 28, each from the days of one month -- mask_compute's
 * rules on a 31-day range, with mark_ordinals itself -- instead of a whole
 * year's mask for each of the 14 kinds of year between DTSTART and t (a
 * COUNT query from 1990 to 2026 built all 14). */
static uint32_t month_kind_count(rrule_plan *p, int wd1, int len)
{
    int k = wd1 * 4 + len - 28;
    if (!(p->mcount_ok >> k & 1)) {
        const rrule *r = &p->r;
        uint32_t all = (1u << len) - 1, days = all;
        if (r->has & RRULE_HAS_BYMONTHDAY) {
            uint32_t md = r->bymonthday_pos >> 1; /* day d is bit d - 1 */
            for (uint32_t v = r->bymonthday_neg; v; v &= v - 1)
                if (__builtin_ctz(v) <= len) md |= 1u << (len - __builtin_ctz(v));
            days &= md;
        }
        if (r->has & RRULE_HAS_BYDAY) {
            rrule_bits t;
            memset(&t, 0, sizeof t);
            t.w[0] = weekday_word(r->byday_plain, wd1);
            if (p->ordinals) mark_ordinals(r, wd1, 0, len, &t);
            days &= (uint32_t)t.w[0];
        }
        p->mcount[k] = days_count(p, (uint32_t)pop64(days & all));
        p->mcount_ok |= 1u << k;
    }
    return p->mcount[k];
}

/* Occurrences in month mo of year y, whose January 1 is weekday wd. */
static uint32_t month_count_wd(rrule_plan *p, int64_t y, int wd, int mo)
{
    if ((p->r.has & RRULE_HAS_BYMONTH) && !(p->r.bymonth >> mo & 1)) return 0;
    return month_kind_count(p, (wd + month_start(y, mo)) % 7, civil_days_in_month(y, mo));
}

static uint32_t month_count(rrule_plan *p, int64_t y, int mo)
{
    return month_count_wd(p, y, jan1_weekday(y), mo);
}

/* MONTHLY with INTERVAL dividing 12: the same months are periods every
 * year, so a whole year's count depends on the kind of year only. */
static uint32_t ycount_monthly(rrule_plan *p, int64_t y)
{
    int k = year_kind(p, y);
    if (!(p->ycount_ok >> k & 1)) {
        static const int8_t mlen[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        uint32_t c = 0;
        int64_t I = p->r.interval, first = p->p0 - floordiv(p->p0, I) * I; /* phase */
        int wd = jan1_weekday(y), leap = civil_is_leap(y);
        for (int mo = 1; mo <= 12; mo++) {
            int len = mlen[mo - 1] + (mo == 2 && leap);
            if ((mo - 1 - first) % I == 0 && (!(p->r.has & RRULE_HAS_BYMONTH) || (p->r.bymonth >> mo & 1)))
                c += month_kind_count(p, wd, len);
            wd = (wd + len) % 7;
        }
        p->ycount[k] = c;
        p->ycount_ok |= 1ull << k;
    }
    return p->ycount[k];
}

static uint32_t ycount(rrule_plan *p, int64_t y)
{
    int k = year_kind(p, y);
    if (!(p->ycount_ok >> k & 1)) {
        const rrule_bits *m = kind_mask(p, y, k);
        p->ycount[k] = setpos_count(p, (uint32_t)bits_count_range(m, 0, 366) * p->nt);
        p->ycount_ok |= 1ull << k;
    }
    return p->ycount[k];
}

/* Days in [a, b) that pass the mask. */
static uint64_t count_days(rrule_iter *it, int64_t a, int64_t b)
{
    uint64_t c = 0;
    while (a < b) {
        iter_year(it, a);
        if (it->cy > RRULE_MAX_YEAR) break;
        int64_t stop = it->cjan1 + it->cylen < b ? it->cjan1 + it->cylen : b;
        c += (uint64_t)bits_count_range(it->cmask, (int)(a - it->cjan1), (int)(stop - it->cjan1));
        a = stop;
    }
    return c;
}

/* Sub-daily periods starting in [lo, hi) of one day that pass the hour,
 * minute and second filters: by the filters' combinations or by the aligned
 * starts, whichever is fewer. Adds the work done to *ops. */
static uint64_t day_starts(const rrule_plan *p, int64_t d, int64_t lo, int64_t hi, uint64_t *ops)
{
    int64_t I = p->r.interval, step = I * p->unit, c = 0;
    int nh = pop64(p->hmask);
    int64_t combos = p->unit == 3600 ? nh
                     : p->unit == 60 ? (int64_t)nh * pop64(p->mmask)
                                     : (int64_t)nh * pop64(p->mmask) *
                                           pop64(p->smask);
    int64_t first = ceildiv(ceildiv(lo, p->unit) - p->p0, I); /* first period k in range */
    int64_t aligned = (hi - (p->p0 + first * I) * p->unit + step - 1) / step;
    if (aligned <= 0) return 0;
    if (aligned <= combos) {
        *ops += (uint64_t)aligned;
        for (int64_t s = (p->p0 + first * I) * p->unit; s < hi; s += step) {
            int tod = (int)(s - d * DAY);
            c += (p->hmask >> (tod / 3600) & 1) && (p->mmask >> (tod / 60 % 60) & 1) &&
                 (p->smask >> (tod % 60) & 1);
        }
        return (uint64_t)c;
    }
    *ops += (uint64_t)combos;
    for (uint64_t hm = p->hmask; hm; hm &= hm - 1) {
        int h = __builtin_ctzll(hm);
        uint64_t mm = p->unit == 3600 ? 1 : p->mmask, sm = p->unit == 1 ? p->smask : 1;
        for (; mm; mm &= mm - 1)
            for (uint64_t x = sm; x; x &= x - 1) {
                int64_t s = d * DAY + h * 3600 + (p->unit == 3600 ? 0 : __builtin_ctzll(mm) * 60) +
                            (p->unit == 1 ? __builtin_ctzll(x) : 0);
                c += s >= lo && s < hi && (floordiv(s, p->unit) - p->p0) % I == 0;
            }
    }
    return (uint64_t)c;
}

/* Sub-daily COUNT: whole days at a time. Gives up (returns UINT64_MAX)
 * after a bounded amount of work. */
static uint64_t count_subdaily(rrule_iter *it, int64_t k1, int64_t k2, uint64_t cap)
{
    rrule_plan *p = it->p;
    int64_t I = p->r.interval, s1 = (p->p0 + k1 * I) * p->unit, s2 = (p->p0 + k2 * I) * p->unit;
    uint64_t per = setpos_count(p, p->nt), c = 0, ops = 0;
    /* A whole day's count depends only on where the period grid falls in
     * it: its phase modulo INTERVAL, which takes I / gcd(I, periods per
     * day) values. Remember those counts so each further day costs O(1). */
    enum { PHASES = 1024 };
    int64_t units = DAY / p->unit, g = gcd64(I, units), cycle = I / g;
    uint32_t memo[PHASES];
    uint64_t known[PHASES / 64] = {0};
    if (s2 > END_SECONDS) s2 = END_SECONDS;
    for (int64_t d = floordiv(s1, DAY); c < cap && d * DAY < s2; d++) {
        d = next_day(it, d);
        if (d < 0 || d * DAY >= s2) break;
        int64_t lo = d * DAY > s1 ? d * DAY : s1, hi = (d + 1) * DAY < s2 ? (d + 1) * DAY : s2;
        ops++;
        if (cycle <= PHASES && lo == d * DAY && hi == (d + 1) * DAY) {
            int64_t ph = d * units - p->p0;
            int slot = (int)((ph - floordiv(ph, I) * I) / g);
            if (!(known[slot >> 6] >> (slot & 63) & 1)) {
                memo[slot] = (uint32_t)day_starts(p, d, lo, hi, &ops);
                known[slot >> 6] |= 1ull << (slot & 63);
            }
            c += memo[slot] * per;
        } else {
            c += day_starts(p, d, lo, hi, &ops) * per;
        }
        if (ops > RRULE_COUNT_BUDGET) return UINT64_MAX;
    }
    return c;
}

/* Occurrences in periods [k1, k2), stopping once cap is reached. */
static uint64_t count_periods(rrule_iter *it, int64_t k1, int64_t k2, uint64_t cap)
{
    rrule_plan *p = it->p;
    int64_t I = p->r.interval;
    uint64_t c = 0;
    if (p->per_period > 0) return (uint64_t)(k2 - k1) * (uint64_t)p->per_period;
    switch (p->r.freq) {
    case RRULE_YEARLY:
        for (int64_t k = k1; k < k2 && c < cap && p->p0 + k * I <= RRULE_MAX_YEAR; k++)
            c += ycount(p, p->p0 + k * I);
        return c;
    case RRULE_MONTHLY:
        for (int64_t k = k1; k < k2 && c < cap;) {
            int64_t mi = p->p0 + k * I, y = floordiv(mi, 12);
            int mo = (int)(mi - y * 12) + 1;
            if (y > RRULE_MAX_YEAR) break;
            int64_t per_year = 12 / I;
            if (12 % I == 0 && mo <= I && k + per_year <= k2) {
                c += ycount_monthly(p, y); /* the whole year at once */
                k += per_year;
                continue;
            }
            c += month_count(p, y, mo);
            k++;
        }
        return c;
    case RRULE_WEEKLY:
        if (I == 1 && !p->has_setpos)
            return count_days(it, p->p0 + 7 * k1, p->p0 + 7 * k2) * p->nt;
        for (int64_t k = k1; k < k2 && c < cap; k++) {
            int64_t ws = p->p0 + 7 * k * I;
            c += days_count(p, (uint32_t)count_days(it, ws, ws + 7));
        }
        return c;
    case RRULE_DAILY: {
        uint64_t per = setpos_count(p, p->nt);
        if (I == 1) return count_days(it, p->p0 + k1, p->p0 + k2) * per;
        for (int64_t k = k1; k < k2 && c < cap; k++) {
            int64_t d = p->p0 + k * I;
            iter_year(it, d);
            if (it->cy > RRULE_MAX_YEAR) break;
            if (bits_get(it->cmask, (int)(d - it->cjan1))) c += per;
        }
        return c;
    }
    default:
        return count_subdaily(it, k1, k2, cap);
    }
}

/* ---- iteration ---- */

/* Is DTSTART an occurrence? Unless UNTIL comes before it (the rule bounds
 * the whole set, DTSTART included), always -- or, when the caller asked
 * for the dateutil reading (keep_dtstart false), when the rule yields it. */
static bool dtstart_counts(rrule_iter *it)
{
    rrule_plan *p = it->p;
    if (p->keep_dtstart) return p->dtstart <= p->until;
    if (p->dtstart_match < 0) {
        int64_t k0 = 0;
        p->dtstart_match = 0;
        if (fill(it, &k0) && k0 == 0)
            for (uint32_t i = 0; i < it->nsel; i++)
                if (occurrence_at(it, p->has_setpos ? it->sel[i] : i) == p->dtstart)
                    p->dtstart_match = 1;
        it->n = it->nsel = it->pos = 0;
        it->budget = RRULE_SCAN_BUDGET;
    }
    return p->dtstart_match > 0 && p->dtstart <= p->until;
}

void rrule_iter_init(rrule_iter *it, rrule_plan *p, int64_t from)
{
    it->p = p;
    it->from = from;
    it->budget = RRULE_SCAN_BUDGET;
    it->cmask = NULL;
    it->done = false;
    it->n = it->nsel = it->pos = 0;
    it->index = 0;
    it->k = 0;
    bool counts = dtstart_counts(it);
    it->dtstart_pending = from <= p->dtstart && counts;
    if (from <= p->dtstart) return;
    it->index = counts; /* DTSTART */
    int64_t k = period_of(p, from < END_SECONDS ? from : END_SECONDS);
    if (k <= 0) return;
    if (p->r.has & RRULE_HAS_COUNT) {
        /* Occurrences after DTSTART in period 0, then whole periods. */
        uint64_t cap = p->r.count;
        int64_t k0 = 0;
        if (fill(it, &k0) && k0 == 0)
            for (uint32_t i = 0; i < it->nsel; i++)
                it->index += occurrence_at(it, p->has_setpos ? it->sel[i] : i) > p->dtstart;
        if (it->index < cap) {
            uint64_t more = count_periods(it, 1, k, cap - it->index);
            it->index = more > cap ? cap : it->index + more; /* gave up: "none" */
        }
        it->n = it->nsel = it->pos = 0;
        it->budget = RRULE_SCAN_BUDGET;
        if (it->index >= cap) it->done = true;
    }
    it->k = k;
}

bool rrule_iter_next(rrule_iter *it, int64_t *out)
{
    rrule_plan *p = it->p;
    uint64_t cap = p->r.has & RRULE_HAS_COUNT ? p->r.count : UINT64_MAX;
    if (it->dtstart_pending) {
        it->dtstart_pending = false;
        it->index = 1;
        *out = p->dtstart;
        return true;
    }
    while (!it->done) {
        if (it->pos >= it->nsel) {
            if (it->n) it->k++;
            it->n = 0;
            if (!fill(it, &it->k)) break;
        }
        uint32_t i = it->pos++;
        int64_t t = occurrence_at(it, p->has_setpos ? it->sel[i] : i);
        if (t <= p->dtstart) continue;
        if (t > p->until || it->index >= cap) break;
        it->index++;
        if (t < it->from) continue;
        it->budget = RRULE_SCAN_BUDGET; /* the budget is per search */
        *out = t;
        return true;
    }
    it->done = true;
    return false;
}

size_t rrule_expand(rrule_plan *p, int64_t from, int64_t to, int64_t *out, size_t limit)
{
    rrule_iter it;
    size_t n = 0;
    int64_t t;
    rrule_iter_init(&it, p, from);
    while (n < limit && rrule_iter_next(&it, &t) && t < to) out[n++] = t;
    return n;
}

bool rrule_next_after(rrule_plan *p, int64_t t, int64_t *out)
{
    rrule_iter it;
    rrule_iter_init(&it, p, t + 1);
    return rrule_iter_next(&it, out);
}

bool rrule_includes(rrule_plan *p, int64_t t)
{
    rrule_iter it;
    int64_t got;
    rrule_iter_init(&it, p, t);
    return rrule_iter_next(&it, &got) && got == t;
}
