/* cron.c -- cron expression parsing, formatting and next-fire search.
 *
 * Each field is a bitmask. The search walks wall time field by field (a
 * month that cannot match is skipped whole, then days, then hours, minutes
 * and seconds by next-set-bit), so one call costs at most a few steps per
 * month of the CRON_SEARCH_YEARS window, never one step per second.
 */
#include "time/cron.h"
#include "time/time_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "time/civil.h"

/* Fire times are positive, so -1 can mean "none". */
#define CRON_MIN_UTC INT64_C(0)            /* 1970-01-01T00:00:00Z */
#define CRON_MAX_UTC INT64_C(253402300799) /* 9999-12-31T23:59:59Z */
/* Longer than any real spring-forward gap (Apia skipped a whole day), and
 * shorter than the time between any two transitions since 1970 in tzdata
 * 2025b, so one look back sees the offset before the latest change. */
#define CRON_GAP_LOOKBACK (2 * 86400)
/* Wall times examined per cron_next beyond the first: only a gap or a
 * repeated (fall-back) stretch makes the search look further; a gap costs
 * two steps, a repeated stretch one step per matching wall time in it, and
 * even a per-second schedule has fewer than this in a two-day window. */
#define CRON_MAX_CANDIDATES (1 << 18)

typedef struct cron_field {
    const char *name;
    int min, max;              /* values accepted; '*' means min..max */
    const char *const *names;  /* three-letter names for min.., or NULL */
    int nnames;
    bool day;                  /* '?' allowed */
} cron_field;

static const char *const cron_month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                               "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const cron_day_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

enum { F_SECOND, F_MINUTE, F_HOUR, F_MDAY, F_MONTH, F_WDAY, F_COUNT };

static const cron_field cron_fields[F_COUNT] = {
    [F_SECOND] = {"second", 0, 59, NULL, 0, false},
    [F_MINUTE] = {"minute", 0, 59, NULL, 0, false},
    [F_HOUR] = {"hour", 0, 23, NULL, 0, false},
    [F_MDAY] = {"day-of-month", 1, 31, NULL, 0, true},
    [F_MONTH] = {"month", 1, 12, cron_month_names, 12, false},
    /* 7 is Sunday as well as 0, and a range may end on Sunday: FRI-SUN. */
    [F_WDAY] = {"day-of-week", 0, 7, cron_day_names, 7, true},
};

typedef struct cron_macro {
    const char *name;
    const char *fields;
} cron_macro;

static const cron_macro cron_macros[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},  {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
/* Any ASCII white space separates fields, so a trailing newline is fine. */
static bool is_blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* "unexpected character 'x'" or, for bytes that would garble a message,
 * "unexpected byte 0x07". */
static int fail_char(char *err, size_t errlen, const cron_field *f, char c)
{
    if (c >= 0x20 && c < 0x7f)
        return time_errf(err, errlen, "%s: unexpected character '%c'", f->name, c);
    return time_errf(err, errlen, "%s: unexpected byte 0x%02x", f->name, (unsigned char)c);
}

/* A number or a name, at *sp (before end). */
static int parse_value(const cron_field *f, const char **sp, const char *end, int *out,
                       char *err, size_t errlen)
{
    const char *s = *sp;
    if (s < end && is_digit(*s)) {
        long v = 0;
        int n = 0;
        for (; s < end && is_digit(*s); s++)
            if (++n <= 9) v = v * 10 + (*s - '0');
        if (n > 9 || v < f->min || v > f->max)
            return time_errf(err, errlen, "%s: %.*s is out of range %d-%d", f->name,
                             n > 12 ? 12 : n, *sp, f->min, f->max);
        *out = (int)v;
    } else if (s < end && is_alpha(*s)) {
        while (s < end && is_alpha(*s)) s++;
        int len = (int)(s - *sp);
        if (f->names && len == 3) {
            for (int i = 0; i < f->nnames; i++) {
                if (strncasecmp(*sp, f->names[i], 3) == 0) {
                    *out = f->min + i;
                    *sp = s;
                    return 0;
                }
            }
        }
        if (!f->names)
            return time_errf(err, errlen, "%s: '%.*s' is not a number", f->name,
                             len > 16 ? 16 : len, *sp);
        return time_errf(err, errlen, "%s: unknown name '%.*s'", f->name, len > 16 ? 16 : len,
                         *sp);
    } else if (s == end || *s == ',') {
        return time_errf(err, errlen, "%s: missing value", f->name);
    } else {
        return fail_char(err, errlen, f, *s);
    }
    *sp = s;
    return 0;
}

static int parse_step(const cron_field *f, const char **sp, const char *end, int *step,
                      char *err, size_t errlen)
{
    const char *s = *sp;
    int span = f->max - f->min + 1, n = 0;
    long v = 0;
    if (s == end || !is_digit(*s)) {
        if (s == end || *s == ',') return time_errf(err, errlen, "%s: missing step", f->name);
        return fail_char(err, errlen, f, *s);
    }
    for (; s < end && is_digit(*s); s++)
        if (++n <= 9) v = v * 10 + (*s - '0');
    if (n > 9 || v < 1 || v > span)
        return time_errf(err, errlen, "%s: step %.*s is out of range 1-%d", f->name,
                         n > 12 ? 12 : n, *sp, span);
    *step = (int)v;
    *sp = s;
    return 0;
}

/* One list item: "*", "?", "a", "a-b", each optionally "/step". */
static int parse_item(const cron_field *f, const char **sp, const char *end, uint64_t *mask,
                      char *err, size_t errlen)
{
    const char *s = *sp;
    int lo, hi, step = 1;
    bool single = false;
    if (s < end && (*s == '*' || (*s == '?' && f->day))) {
        lo = f->min;
        hi = f->max;
        s++;
    } else {
        if (parse_value(f, &s, end, &lo, err, errlen)) return -1;
        hi = lo;
        single = true;
        if (s < end && *s == '-') {
            s++;
            if (parse_value(f, &s, end, &hi, err, errlen)) return -1;
            if (f->max == 7 && hi == 0 && lo > 0) hi = 7; /* "FRI-SUN": through Sunday */
            if (hi < lo)
                return time_errf(err, errlen, "%s: range %d-%d is backwards", f->name, lo, hi);
            single = false;
        }
    }
    if (s < end && *s == '/') {
        s++;
        if (parse_step(f, &s, end, &step, err, errlen)) return -1;
        if (single) hi = f->max; /* "a/n" is "a-max/n" */
    }
    for (int v = lo; v <= hi; v += step) *mask |= UINT64_C(1) << v;
    *sp = s;
    return 0;
}

static int parse_field(const cron_field *f, const char *s, const char *end, uint64_t *mask,
                       char *err, size_t errlen)
{
    *mask = 0;
    for (;;) {
        if (parse_item(f, &s, end, mask, err, errlen)) return -1;
        if (s == end) return 0;
        if (*s != ',') return fail_char(err, errlen, f, *s);
        s++;
    }
}

/* Splits on blanks; returns the field count (up to max + 1). */
static int split_fields(const char *s, const char *start[], const char *stop[], int max)
{
    int n = 0;
    for (;;) {
        while (is_blank(*s)) s++;
        if (*s == '\0' || n > max) return n;
        start[n] = s;
        while (*s && !is_blank(*s)) s++;
        stop[n++] = s;
    }
}

static int parse_macro(const char *text, cron_expr *out, char *err, size_t errlen)
{
    const char *end = text;
    while (*end && !is_blank(*end)) end++;
    size_t len = (size_t)(end - text);
    while (is_blank(*end)) end++;
    if (*end != '\0') return time_errf(err, errlen, "nothing may follow a macro");
    for (size_t i = 0; i < sizeof cron_macros / sizeof cron_macros[0]; i++)
        if (strlen(cron_macros[i].name) == len && strncasecmp(text, cron_macros[i].name, len) == 0)
            return cron_parse(cron_macros[i].fields, out, err, errlen);
    if (len == 7 && strncasecmp(text, "@reboot", 7) == 0)
        return time_errf(err, errlen, "@reboot is not supported");
    return time_errf(err, errlen, "unknown macro '%.*s'", (int)(len > 16 ? 16 : len), text);
}

int cron_parse(const char *text, cron_expr *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!text) return time_errf(err, errlen, "no expression");
    if (strnlen(text, CRON_TEXT_MAX + 1) > CRON_TEXT_MAX)
        return time_errf(err, errlen, "expression is longer than %d bytes", CRON_TEXT_MAX);
    while (is_blank(*text)) text++;
    if (*text == '@') return parse_macro(text, out, err, errlen);
    const char *start[7], *stop[7];
    int n = split_fields(text, start, stop, 6);
    if (n != 5 && n != 6)
        return time_errf(err, errlen, "expected 5 or 6 fields, got %s%d", n > 6 ? "more than " : "",
                         n > 6 ? 6 : n);
    uint64_t mask[F_COUNT];
    mask[F_SECOND] = 1; /* five fields: at second 0 */
    for (int i = 0; i < n; i++) {
        int f = i + (6 - n);
        if (parse_field(&cron_fields[f], start[i], stop[i], &mask[f], err, errlen)) return -1;
    }
    mask[F_WDAY] = (mask[F_WDAY] | mask[F_WDAY] >> 7) & 0x7f; /* 7 is Sunday */
    out->second = mask[F_SECOND];
    out->minute = mask[F_MINUTE];
    out->hour = (uint32_t)mask[F_HOUR];
    out->mday = (uint32_t)mask[F_MDAY];
    out->month = (uint16_t)mask[F_MONTH];
    out->wday = (uint8_t)mask[F_WDAY];
    int dom = n - 3, dow = n - 1;
    out->flags = (uint8_t)((n == 6 ? CRON_HAS_SECONDS : 0) |
                           (*start[dom] == '*' || *start[dom] == '?' ? CRON_DOM_STAR : 0) |
                           (*start[dow] == '*' || *start[dow] == '?' ? CRON_DOW_STAR : 0));
    return 0;
}

/* ---- formatting ---------------------------------------------------------------- */

typedef struct cron_buf {
    char *p;
    size_t size, len;
    bool overflow;
} cron_buf;

static void buf_printf(cron_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->size ? b->size - b->len : 0;
    int n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room) b->overflow = true;
    else b->len += (size_t)n;
}

static bool bit(uint64_t mask, int i) { return (mask >> i) & 1; }

/* Bits lo..hi. */
static uint64_t bits(int lo, int hi)
{
    return (~UINT64_C(0) >> (63 - hi)) & (~UINT64_C(0) << lo);
}

/* The bits "*" + "/step" sets: min, min+step, ... up to max, with the
 * weekday 7 folded onto Sunday. */
static uint64_t star_bits(const cron_field *f, int step)
{
    uint64_t m = 0;
    for (int v = f->min; v <= f->max; v += step)
        m |= UINT64_C(1) << (f->max == 7 && v == 7 ? 0 : v);
    return m;
}

static void format_runs(cron_buf *b, uint64_t mask, const char *sep)
{
    while (mask) {
        int v = __builtin_ctzll(mask), run = v;
        while (run < 63 && bit(mask, run + 1)) run++;
        if (run - v >= 2) buf_printf(b, "%s%d-%d", sep, v, run);
        else if (run > v) buf_printf(b, "%s%d,%d", sep, v, run);
        else buf_printf(b, "%s%d", sep, v);
        mask &= ~bits(v, run);
        sep = ",";
    }
}

/* If mask is lo, lo+step, ..., hi with at least three values and step > 1,
 * returns step, else 0. */
static int arithmetic_step(uint64_t mask)
{
    if (__builtin_popcountll(mask) < 3) return 0;
    int lo = __builtin_ctzll(mask), hi = 63 - __builtin_clzll(mask);
    int step = __builtin_ctzll(mask >> lo >> 1) + 1;
    if (step < 2 || (hi - lo) % step != 0 || (hi - lo) / step + 1 != __builtin_popcountll(mask))
        return 0;
    for (int v = lo; v <= hi; v += step)
        if (!bit(mask, v)) return 0;
    return step;
}

/* star: 1 = must start with '*' (the day fields' Vixie flag), 0 = must
 * not, -1 = either (the other fields, where it changes nothing). A mask
 * parsed from a field starting with '*' always holds min, so "*" + "/s"
 * for the densest such subset, then the rest as a list, spells it. */
static void format_field(cron_buf *b, const cron_field *f, uint64_t mask, int star)
{
    if (star != 0 && bit(mask, f->min)) {
        int span = f->max - f->min + 1, s = 1;
        while (s < span && (star_bits(f, s) & ~mask)) s++;
        uint64_t covered = star_bits(f, s);
        if (star == 1 || (covered == mask && (s == 1 || __builtin_popcountll(mask) >= 3))) {
            if (s == 1) buf_printf(b, "*");
            else buf_printf(b, "*/%d", s);
            format_runs(b, mask & ~covered, ",");
            return;
        }
    }
    int step = arithmetic_step(mask);
    if (step) {
        buf_printf(b, "%d-%d/%d", __builtin_ctzll(mask), 63 - __builtin_clzll(mask), step);
        return;
    }
    format_runs(b, mask, "");
}

int cron_format(const cron_expr *e, char *out, size_t size)
{
    cron_buf b = {.p = out, .size = size};
    uint64_t mask[F_COUNT] = {e->second, e->minute, e->hour, e->mday, e->month, e->wday};
    int first = e->flags & CRON_HAS_SECONDS ? F_SECOND : F_MINUTE;
    for (int f = first; f < F_COUNT; f++) {
        const cron_field *cf = &cron_fields[f];
        uint64_t m = mask[f] & bits(cf->min, cf->max == 7 ? 6 : cf->max);
        if (m == 0) return -1;
        int star = -1;
        if (f == F_MDAY) star = (e->flags & CRON_DOM_STAR) != 0;
        if (f == F_WDAY) star = (e->flags & CRON_DOW_STAR) != 0;
        if (f > first) buf_printf(&b, " ");
        format_field(&b, cf, m, star);
    }
    if (size > 0 && b.overflow) out[0] = '\0';
    return b.overflow ? -1 : (int)b.len;
}

/* ---- next fire time -------------------------------------------------------------- */

/* Smallest i in [from, max] with bit i set, or -1. */
static int next_bit(uint64_t mask, int from, int max)
{
    if (from > max || from > 63) return -1;
    uint64_t m = mask & (~UINT64_C(0) << from);
    if (!m) return -1;
    int i = __builtin_ctzll(m);
    return i <= max ? i : -1;
}

static bool cron_and_days(const cron_expr *e)
{
    return (e->flags & (CRON_DOM_STAR | CRON_DOW_STAR)) != 0;
}

static bool day_matches(const cron_expr *e, int64_t y, int m, int d)
{
    int wd = (civil_weekday(civil_days_from_ymd(y, m, d)) + 1) % 7; /* 0 = Sunday */
    bool dom = bit(e->mday, d), dow = bit(e->wday, wd);
    return cron_and_days(e) ? dom && dow : dom || dow;
}

/* First time of day >= h:m:s matching the hour, minute and second masks,
 * as seconds since midnight, or -1. */
static int next_time_of_day(const cron_expr *e, int h, int m, int s)
{
    while (h < 24) {
        int nh = next_bit(e->hour, h, 23);
        if (nh < 0) return -1;
        if (nh != h) { h = nh; m = s = 0; }
        int nm = next_bit(e->minute, m, 59);
        if (nm < 0) { h++; m = s = 0; continue; }
        if (nm != m) { m = nm; s = 0; }
        int ns = next_bit(e->second, s, 59);
        if (ns < 0) {
            s = 0;
            if (++m == 60) { m = 0; h++; }
            continue;
        }
        return h * 3600 + m * 60 + ns;
    }
    return -1;
}

/* First wall time (local seconds) after *w that matches, in a year up to
 * ylimit, into *w; false if there is none. */
static bool next_wall(const cron_expr *e, int64_t *w, int64_t ylimit)
{
    int64_t w0 = *w;
    civil_time c;
    civil_from_seconds(w0 + 1, &c);
    int64_t y = c.year;
    int mo = c.month, d = c.day, h = c.hour, mi = c.minute, s = c.second;
    while (y <= ylimit) {
        int nm = next_bit(e->month, mo, 12);
        if (nm < 0) { y++; mo = 1; d = 1; h = mi = s = 0; continue; }
        if (nm != mo) { mo = nm; d = 1; h = mi = s = 0; }
        int dim = civil_days_in_month(y, mo);
        /* With AND semantics no later day this month can match once the
         * day-of-month mask is exhausted. */
        if (d > dim || (cron_and_days(e) && next_bit(e->mday, d, dim) < 0)) {
            mo++; d = 1; h = mi = s = 0;
            continue;
        }
        int tod = day_matches(e, y, mo, d) ? next_time_of_day(e, h, mi, s) : -1;
        if (tod < 0) { d++; h = mi = s = 0; continue; }
        *w = civil_days_from_ymd(y, mo, d) * 86400 + tod;
        return true;
    }
    return false;
}

static bool wall_exists(const tz_zone *z, int64_t w)
{
    return tz_utc_to_local(z, tz_local_to_utc(z, w)) == w;
}

/* The first wall time after the gap that holds w: between w and the wall
 * reading of its shifted instant, found by bisection (a gap is at most a
 * day or so wide, so this is under twenty lookups). */
static int64_t gap_end(const tz_zone *z, int64_t w)
{
    int64_t lo = w, hi = tz_utc_to_local(z, tz_local_to_utc(z, w)); /* lo in the gap, hi not */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (wall_exists(z, mid)) hi = mid;
        else lo = mid;
    }
    return hi;
}

int64_t cron_next(const cron_expr *e, const tz_zone *z, int64_t after)
{
    if (after < CRON_MIN_UTC || after >= CRON_MAX_UTC) return -1;
    /* A wall time W in a spring-forward gap fires at W - (offset before the
     * gap), later than its wall reading suggests. If `after` is just past a
     * gap, such W lie before the wall time at `after` yet may fire after
     * it, so the search starts from the offset in force before any gap. */
    int32_t now = tz_offset_at(z, after), then = tz_offset_at(z, after - CRON_GAP_LOOKBACK);
    int64_t w = after + (then < now ? then : now);
    civil_time c;
    civil_from_seconds(tz_utc_to_local(z, after), &c);
    int64_t ylimit = c.year + CRON_SEARCH_YEARS > 9999 ? 9999 : c.year + CRON_SEARCH_YEARS;
    int64_t best = -1;
    for (int i = 0; i < CRON_MAX_CANDIDATES; i++) {
        if (!next_wall(e, &w, ylimit)) break;
        int64_t u = tz_local_to_utc(z, w);
        if (u <= after) continue; /* repeated or already-passed wall time */
        if (best < 0 || u < best) best = u;
        /* A wall time that really occurs maps to its first occurrence, and
         * those only increase with wall time: nothing later fires earlier. */
        if (tz_utc_to_local(z, u) == w) break;
        /* w is in a gap. Later wall times in the same gap fire later still;
         * only wall times after the gap can fire earlier. */
        w = gap_end(z, w) - 1;
    }
    return best;
}
