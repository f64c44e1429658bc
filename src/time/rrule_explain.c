/* rrule_explain.c -- a rule in plain English, for the web page and the API:
 * "every 2 weeks on Tuesday, Thursday and Sunday", "yearly on the third
 * Sunday of June", "monthly on the last weekday, 10 times". */
#include "time/rrule.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const day_full[] = {"Monday", "Tuesday", "Wednesday", "Thursday",
                                       "Friday", "Saturday", "Sunday"};
static const char *const month_full[] = {"", "January", "February", "March", "April",
                                         "May", "June", "July", "August", "September",
                                         "October", "November", "December"};

typedef struct explain_text {
    char *buf;
    size_t size, len;
} explain_text;

static void put(explain_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->len < t->size ? t->size - t->len : 0;
    int n = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) t->len += (size_t)n;
}

/* Separator before item i of n: "", ", " or " and ". */
static const char *sep(int i, int n)
{
    return i == 0 ? "" : i == n - 1 ? " and " : ", ";
}

static const char *suffix(int n)
{
    if (n % 100 >= 11 && n % 100 <= 13) return "th";
    return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/* "first", "third", "last", "second-to-last", "10th", "3rd-to-last". */
static void ordinal(explain_text *t, int n)
{
    static const char *const words[] = {"", "first", "second", "third", "fourth", "fifth"};
    int m = n < 0 ? -n : n;
    if (n == -1) { put(t, "last"); return; }
    if (m <= 5) put(t, "%s", words[m]);
    else put(t, "%d%s", m, suffix(m));
    if (n < 0) put(t, "-to-last");
}

/* An ordinal spelled for a number of a day ("1st", "15th", "last"). */
static void day_number(explain_text *t, int n)
{
    if (n == -1) put(t, "last");
    else if (n < 0) put(t, "%d%s-to-last", -n, suffix(-n));
    else put(t, "%d%s", n, suffix(n));
}

static int bit_count(uint64_t v)
{
    return __builtin_popcountll(v);
}

/* Values of a bitmap pair from lo up, positives ascending then negatives. */
static int signed_values(const uint64_t *pos, const uint64_t *neg, int lo, int hi, int *out)
{
    int n = 0;
    for (int v = lo; v <= hi; v++)
        if (pos[v >> 6] >> (v & 63) & 1) out[n++] = v;
    for (int v = 1; neg && v <= hi; v++)
        if (neg[v >> 6] >> (v & 63) & 1) out[n++] = -v;
    return n;
}

static void put_frequency(explain_text *t, const rrule *r)
{
    static const char *const once[] = {"every second", "every minute", "hourly", "daily",
                                       "weekly", "monthly", "yearly"};
    static const char *const unit[] = {"seconds", "minutes", "hours", "days",
                                       "weeks", "months", "years"};
    if (r->interval == 1) put(t, "%s", once[r->freq]);
    else if (r->interval == 2 && r->freq == RRULE_DAILY) put(t, "every other day");
    else put(t, "every %u %s", r->interval, unit[r->freq]);
}

static void put_months(explain_text *t, uint16_t months)
{
    int n = bit_count(months), i = 0;
    for (int m = 1; m <= 12; m++)
        if (months >> m & 1) put(t, "%s%s", sep(i++, n), month_full[m]);
}

static bool weekdays_only(const rrule *r)
{
    return r->byday_plain == 0x1f;
}

static void put_byday(explain_text *t, const rrule *r)
{
    int items = bit_count(r->byday_plain), i = 0;
    for (int w = 0; w < 7; w++) items += bit_count(r->byday_pos[w]) + bit_count(r->byday_neg[w]);
    if (weekdays_only(r) && items == 5) { put(t, "weekdays"); return; }
    if (r->byday_plain == 0x60 && items == 2) { put(t, "weekends"); return; }
    for (int w = 0; w < 7; w++) {
        if (r->byday_plain >> w & 1) put(t, "%s%s", sep(i++, items), day_full[w]);
        for (int n = 1; n <= 53; n++)
            if (r->byday_pos[w] >> n & 1) {
                put(t, "%sthe ", sep(i++, items));
                ordinal(t, n);
                put(t, " %s", day_full[w]);
            }
        for (int n = 1; n <= 53; n++)
            if (r->byday_neg[w] >> n & 1) {
                put(t, "%sthe ", sep(i++, items));
                ordinal(t, -n);
                put(t, " %s", day_full[w]);
            }
    }
}

static void put_monthdays(explain_text *t, uint32_t pos, uint32_t neg)
{
    uint64_t p = pos, q = neg;
    int v[62], n = signed_values(&p, &q, 1, 31, v);
    put(t, "the ");
    for (int i = 0; i < n; i++) {
        put(t, "%s", sep(i, n));
        day_number(t, v[i]);
    }
    if (v[n - 1] < 0) put(t, " day"); /* "the 1st and last day" */
}

/* "hours 9 and 17": values from 0 (times) or 1 (week numbers). */
static void put_list(explain_text *t, const char *one, const char *many, const uint64_t *pos,
                     const uint64_t *neg, int hi)
{
    int v[740], n = signed_values(pos, neg, neg ? 1 : 0, hi, v);
    put(t, "%s ", n == 1 ? one : many);
    for (int i = 0; i < n; i++) put(t, "%s%d", sep(i, n), v[i]);
}

static void put_times(explain_text *t, const rrule *r, const civil_time *dt)
{
    bool hh = r->has & RRULE_HAS_BYHOUR, mm = r->has & RRULE_HAS_BYMINUTE,
         ss = r->has & RRULE_HAS_BYSECOND;
    if (r->freq < RRULE_DAILY) {
        /* Sub-daily: the parts narrow or fill in the period. */
        if (hh) { uint64_t h = r->byhour; put(t, " during "); put_list(t, "hour", "hours", &h, NULL, 23); }
        if (mm) { put(t, " at "); put_list(t, "minute", "minutes", &r->byminute, NULL, 59); }
        if (ss) { put(t, " at "); put_list(t, "second", "seconds", &r->bysecond, NULL, 60); }
        return;
    }
    if (!dt && !(hh && mm)) {
        /* Without DTSTART the missing parts are unknown: list what is given. */
        uint64_t h = r->byhour;
        if (hh) { put(t, " at "); put_list(t, "hour", "hours", &h, NULL, 23); }
        if (mm) { put(t, " at "); put_list(t, "minute", "minutes", &r->byminute, NULL, 59); }
        if (ss) { put(t, " at "); put_list(t, "second", "seconds", &r->bysecond, NULL, 60); }
        return;
    }
    uint64_t h = hh ? r->byhour : dt ? 1ull << dt->hour : 0;
    uint64_t m = mm ? r->byminute : dt ? 1ull << dt->minute : 0;
    uint64_t s = ss ? r->bysecond : dt ? 1ull << dt->second : 1;
    if (!h || !m || !s) return;
    int n = bit_count(h) * bit_count(m) * bit_count(s), i = 0;
    if (n > 12) {
        put(t, " at ");
        put_list(t, "hour", "hours", &h, NULL, 23);
        put(t, ", ");
        put_list(t, "minute", "minutes", &m, NULL, 59);
        if (s != 1) { put(t, ", "); put_list(t, "second", "seconds", &s, NULL, 60); }
        return;
    }
    put(t, " at ");
    for (int a = 0; a < 24; a++)
        for (int b = 0; b < 60; b++)
            for (int c = 0; c <= 60; c++)
                if ((h >> a & 1) && (m >> b & 1) && (s >> c & 1)) {
                    put(t, "%s%02d:%02d", sep(i++, n), a, b);
                    if (s != 1) put(t, ":%02d", c);
                }
}

static void put_setpos(explain_text *t, const rrule *r)
{
    static const char *const per[] = {"second", "minute", "hour", "day", "week", "month", "year"};
    int v[740], n = signed_values(r->bysetpos_pos.w, r->bysetpos_neg.w, 1, 366, v);
    put(t, ", only the ");
    for (int i = 0; i < n; i++) {
        put(t, "%s", sep(i, n));
        ordinal(t, v[i]);
    }
    put(t, " of each %s", per[r->freq]);
}

size_t rrule_explain(const rrule *r, const civil_time *dt, char *buf, size_t size)
{
    explain_text t = {buf, size, 0};
    if (size) buf[0] = 0;
    put_frequency(&t, r);
    bool day_parts = r->has & (RRULE_HAS_BYDAY | RRULE_HAS_BYMONTHDAY | RRULE_HAS_BYYEARDAY |
                               RRULE_HAS_BYWEEKNO);
    bool months = r->has & RRULE_HAS_BYMONTH, said_months = false;
    if (r->has & RRULE_HAS_BYWEEKNO) {
        if (r->byweekno_neg) { /* "in the 1st and last week of the year" */
            int v[110], n = signed_values(&r->byweekno_pos, &r->byweekno_neg, 1, 53, v);
            put(&t, " in the ");
            for (int i = 0; i < n; i++) {
                put(&t, "%s", sep(i, n));
                day_number(&t, v[i]);
            }
            put(&t, " week of the year");
        } else {
            put(&t, " in ");
            put_list(&t, "week", "weeks", &r->byweekno_pos, &r->byweekno_neg, 53);
        }
    }
    if (r->has & RRULE_HAS_BYYEARDAY) {
        int v[740], n = signed_values(r->byyearday_pos.w, r->byyearday_neg.w, 1, 366, v);
        put(&t, " on the ");
        for (int i = 0; i < n; i++) {
            put(&t, "%s", sep(i, n));
            day_number(&t, v[i]);
        }
        put(&t, " day of the year");
    }
    if (r->has & RRULE_HAS_BYMONTHDAY) {
        put(&t, " on ");
        put_monthdays(&t, r->bymonthday_pos, r->bymonthday_neg);
        if (r->freq == RRULE_YEARLY && months) {
            put(&t, " of ");
            put_months(&t, r->bymonth);
            said_months = true;
        }
    }
    if (r->has & RRULE_HAS_BYDAY) {
        put(&t, (r->has & RRULE_HAS_BYMONTHDAY) ? " if it is " : " on ");
        put_byday(&t, r);
        if (r->freq == RRULE_YEARLY && months && !said_months) {
            put(&t, " of ");
            put_months(&t, r->bymonth);
            said_months = true;
        }
    }
    if (months && !said_months) {
        put(&t, " in ");
        put_months(&t, r->bymonth);
    }
    if (!day_parts && dt) {
        /* What the rule takes from DTSTART. */
        if (r->freq == RRULE_WEEKLY)
            put(&t, " on %s", day_full[civil_weekday(civil_days_from_ymd(dt->year, dt->month, dt->day))]);
        else if (r->freq == RRULE_MONTHLY)
            put(&t, " on the %d%s", dt->day, suffix(dt->day));
        else if (r->freq == RRULE_YEARLY && !months)
            put(&t, " on %s %d", month_full[dt->month], dt->day);
        else if (r->freq == RRULE_YEARLY)
            put(&t, " on the %d%s", dt->day, suffix(dt->day));
    }
    put_times(&t, r, dt);
    if (r->has & RRULE_HAS_BYSETPOS) put_setpos(&t, r);
    if ((r->has & RRULE_HAS_WKST) && r->wkst != CIVIL_MO &&
        ((r->has & RRULE_HAS_BYWEEKNO) || (r->freq == RRULE_WEEKLY && r->interval > 1)))
        put(&t, " (weeks start on %s)", day_full[r->wkst]);
    if (r->has & RRULE_HAS_COUNT) put(&t, r->count == 1 ? ", once" : ", %u times", r->count);
    if (r->has & RRULE_HAS_UNTIL) {
        put(&t, ", until %s %d, %d", month_full[r->until.month], r->until.day, (int)r->until.year);
        if (r->until_kind != RRULE_UNTIL_DATE)
            put(&t, " %02d:%02d%s", r->until.hour, r->until.minute,
                r->until_kind == RRULE_UNTIL_UTC ? " UTC" : "");
    }
    return t.len;
}
