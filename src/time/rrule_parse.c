/* rrule_parse.c -- RRULE text to struct rrule and back.
 * Validation follows RFC 5545 3.3.10; every error names the part it is about. */
#include "time/rrule.h"
#include "time/time_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const freq_names[] = {"SECONDLY", "MINUTELY", "HOURLY", "DAILY",
                                         "WEEKLY", "MONTHLY", "YEARLY"};
static const char *const day_names[] = {"MO", "TU", "WE", "TH", "FR", "SA", "SU"};

/* With each name's length, so a part is compared only with the names it
 * could be (the look-up was a tenth of a parse-and-query, callgrind). */
#define PART(name, bit) {name, sizeof name - 1, bit}
static const struct part {
    const char *name;
    size_t len;
    uint32_t bit;
} parts[] = {
    PART("FREQ", RRULE_HAS_FREQ),         PART("UNTIL", RRULE_HAS_UNTIL),
    PART("COUNT", RRULE_HAS_COUNT),       PART("INTERVAL", RRULE_HAS_INTERVAL),
    PART("BYSECOND", RRULE_HAS_BYSECOND), PART("BYMINUTE", RRULE_HAS_BYMINUTE),
    PART("BYHOUR", RRULE_HAS_BYHOUR),     PART("BYDAY", RRULE_HAS_BYDAY),
    PART("BYMONTHDAY", RRULE_HAS_BYMONTHDAY), PART("BYYEARDAY", RRULE_HAS_BYYEARDAY),
    PART("BYWEEKNO", RRULE_HAS_BYWEEKNO), PART("BYMONTH", RRULE_HAS_BYMONTH),
    PART("BYSETPOS", RRULE_HAS_BYSETPOS), PART("WKST", RRULE_HAS_WKST),
};
#undef PART

static char upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
}

static bool name_is(const char *s, size_t n, const char *name)
{
    size_t i = 0;
    for (; i < n && name[i]; i++)
        if (upper(s[i]) != name[i]) return false;
    return i == n && name[i] == 0;
}

/* Parses [+|-]digits; at most 9 digits so it cannot overflow. */
static int parse_int(const char *s, size_t n, bool allow_sign, long *out)
{
    size_t i = 0;
    int sign = 1;
    if (n > 0 && allow_sign && (s[0] == '+' || s[0] == '-')) {
        sign = s[0] == '-' ? -1 : 1;
        i = 1;
    }
    if (i == n || n - i > 9) return -1;
    long v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v * sign;
    return 0;
}

static void bits_set(rrule_bits *b, unsigned n)
{
    b->w[n >> 6] |= 1ull << (n & 63);
}

static bool bits_test(const rrule_bits *b, unsigned n)
{
    return b->w[n >> 6] >> (n & 63) & 1;
}

/* One numeric list item: range check and store. */
static int put_number(rrule *r, uint32_t part, const char *pname, long v,
                      char *err, size_t errlen)
{
    long lo = 0, hi = 0;
    bool signed_ok = false;
    switch (part) {
    case RRULE_HAS_BYSECOND: hi = 60; break;
    case RRULE_HAS_BYMINUTE: hi = 59; break;
    case RRULE_HAS_BYHOUR: hi = 23; break;
    case RRULE_HAS_BYMONTH: lo = 1; hi = 12; break;
    case RRULE_HAS_BYMONTHDAY: lo = 1; hi = 31; signed_ok = true; break;
    case RRULE_HAS_BYYEARDAY: lo = 1; hi = 366; signed_ok = true; break;
    case RRULE_HAS_BYWEEKNO: lo = 1; hi = 53; signed_ok = true; break;
    case RRULE_HAS_BYSETPOS: lo = 1; hi = 366; signed_ok = true; break;
    }
    long mag = v < 0 ? -v : v;
    if ((v < 0 && !signed_ok) || mag < lo || mag > hi)
        return time_errf(err, errlen, "%s: %ld is out of range (%s%ld..%ld)", pname, v,
                    signed_ok ? "+/-" : "", lo, hi);
    switch (part) {
    case RRULE_HAS_BYSECOND: r->bysecond |= 1ull << v; break;
    case RRULE_HAS_BYMINUTE: r->byminute |= 1ull << v; break;
    case RRULE_HAS_BYHOUR: r->byhour |= 1u << v; break;
    case RRULE_HAS_BYMONTH: r->bymonth |= (uint16_t)(1u << v); break;
    case RRULE_HAS_BYMONTHDAY:
        if (v > 0) r->bymonthday_pos |= 1u << v; else r->bymonthday_neg |= 1u << mag;
        break;
    case RRULE_HAS_BYWEEKNO:
        if (v > 0) r->byweekno_pos |= 1ull << v; else r->byweekno_neg |= 1ull << mag;
        break;
    case RRULE_HAS_BYYEARDAY:
        bits_set(v > 0 ? &r->byyearday_pos : &r->byyearday_neg, (unsigned)mag);
        break;
    case RRULE_HAS_BYSETPOS:
        bits_set(v > 0 ? &r->bysetpos_pos : &r->bysetpos_neg, (unsigned)mag);
        break;
    }
    return 0;
}

static int weekday_code(const char *s, size_t n)
{
    if (n != 2) return -1;
    for (int w = 0; w < 7; w++)
        if (upper(s[0]) == day_names[w][0] && upper(s[1]) == day_names[w][1]) return w;
    return -1;
}

static int put_byday(rrule *r, const char *s, size_t n, char *err, size_t errlen)
{
    if (n < 2) return time_errf(err, errlen, "BYDAY: '%.*s' is not a weekday", (int)n, s);
    int w = weekday_code(s + n - 2, 2);
    if (w < 0) return time_errf(err, errlen, "BYDAY: '%.*s' is not a weekday", (int)n, s);
    if (n == 2) {
        r->byday_plain |= (uint8_t)(1u << w);
        return 0;
    }
    long ord;
    if (parse_int(s, n - 2, true, &ord) != 0)
        return time_errf(err, errlen, "BYDAY: '%.*s' has a bad ordinal", (int)n, s);
    if (ord == 0 || ord > 53 || ord < -53)
        return time_errf(err, errlen, "BYDAY: ordinal %ld is out of range (+/-1..53)", ord);
    if (ord > 0) r->byday_pos[w] |= 1ull << ord;
    else r->byday_neg[w] |= 1ull << -ord;
    return 0;
}

static int parse_value(rrule *r, uint32_t part, const char *pname, const char *v,
                       size_t n, char *err, size_t errlen)
{
    long num;
    if (n == 0) return time_errf(err, errlen, "%s: empty value", pname);
    switch (part) {
    case RRULE_HAS_FREQ:
        for (int f = 0; f < 7; f++)
            if (name_is(v, n, freq_names[f])) {
                r->freq = (uint8_t)f;
                return 0;
            }
        return time_errf(err, errlen, "FREQ: '%.*s' is not a frequency", (int)n, v);
    case RRULE_HAS_WKST: {
        int w = weekday_code(v, n);
        if (w < 0) return time_errf(err, errlen, "WKST: '%.*s' is not a weekday", (int)n, v);
        r->wkst = (uint8_t)w;
        return 0;
    }
    case RRULE_HAS_COUNT:
    case RRULE_HAS_INTERVAL:
        if (parse_int(v, n, false, &num) != 0)
            return time_errf(err, errlen, "%s: '%.*s' is not a number", pname, (int)n, v);
        if (num < 1) return time_errf(err, errlen, "%s: must be at least 1", pname);
        if (part == RRULE_HAS_COUNT) r->count = (uint32_t)num;
        else r->interval = (uint32_t)num;
        return 0;
    case RRULE_HAS_UNTIL: {
        bool is_date = false;
        size_t m = n;
        if (n == 16 && upper(v[15]) == 'Z') m = 15;
        if (civil_parse_basic(v, m, &r->until, &is_date) != 0)
            return time_errf(err, errlen, "UNTIL: '%.*s' is not a date or date-time", (int)n, v);
        r->until_kind = is_date ? RRULE_UNTIL_DATE : n == 16 ? RRULE_UNTIL_UTC : RRULE_UNTIL_LOCAL;
        return 0;
    }
    default:
        break;
    }
    /* Comma-separated lists. */
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && v[j] != ',') j++;
        if (j == i) return time_errf(err, errlen, "%s: empty list item", pname);
        if (part == RRULE_HAS_BYDAY) {
            if (put_byday(r, v + i, j - i, err, errlen) != 0) return -1;
        } else {
            if (parse_int(v + i, j - i, true, &num) != 0)
                return time_errf(err, errlen, "%s: '%.*s' is not a number", pname,
                            (int)(j - i), v + i);
            if (put_number(r, part, pname, num, err, errlen) != 0) return -1;
        }
        i = j + 1;
    }
    return 0;
}

static bool byday_has_ordinal(const rrule *r)
{
    for (int w = 0; w < 7; w++)
        if (r->byday_pos[w] | r->byday_neg[w]) return true;
    return false;
}

/* Rules about combinations of parts, checked once every part is read. */
static int check_combination(const rrule *r, char *err, size_t errlen)
{
    if (!(r->has & RRULE_HAS_FREQ)) return time_errf(err, errlen, "FREQ: missing");
    if ((r->has & RRULE_HAS_UNTIL) && (r->has & RRULE_HAS_COUNT))
        return time_errf(err, errlen, "UNTIL: not allowed together with COUNT");
    if ((r->has & RRULE_HAS_BYWEEKNO) && r->freq != RRULE_YEARLY)
        return time_errf(err, errlen, "BYWEEKNO: only allowed with FREQ=YEARLY");
    if ((r->has & RRULE_HAS_BYYEARDAY) && r->freq >= RRULE_DAILY && r->freq <= RRULE_MONTHLY)
        return time_errf(err, errlen, "BYYEARDAY: not allowed with FREQ=%s", freq_names[r->freq]);
    if ((r->has & RRULE_HAS_BYMONTHDAY) && r->freq == RRULE_WEEKLY)
        return time_errf(err, errlen, "BYMONTHDAY: not allowed with FREQ=WEEKLY");
    if (byday_has_ordinal(r)) {
        if (r->freq != RRULE_MONTHLY && r->freq != RRULE_YEARLY)
            return time_errf(err, errlen, "BYDAY: ordinals (like 1MO) only with FREQ=MONTHLY or YEARLY");
        if (r->freq == RRULE_YEARLY && (r->has & RRULE_HAS_BYWEEKNO))
            return time_errf(err, errlen, "BYDAY: ordinals not allowed together with BYWEEKNO");
        if (r->freq == RRULE_MONTHLY) {
            for (int w = 0; w < 7; w++)
                if ((r->byday_pos[w] | r->byday_neg[w]) >> 6)
                    return time_errf(err, errlen, "BYDAY: ordinal beyond 5 with FREQ=MONTHLY");
        }
    }
    return 0;
}

int rrule_parse(const char *text, size_t len, rrule *out, char *err, size_t errlen)
{
    rrule r;
    memset(&r, 0, sizeof r);
    r.interval = 1;
    if (len > RRULE_TEXT_MAX) return time_errf(err, errlen, "RRULE: longer than %d bytes", RRULE_TEXT_MAX);
    if (len >= 6 && name_is(text, 6, "RRULE:")) {
        text += 6;
        len -= 6;
    }
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && text[j] != ';') j++;
        if (j == i) return time_errf(err, errlen, "RRULE: empty part");
        size_t eq = i;
        while (eq < j && text[eq] != '=') eq++;
        if (eq == j) return time_errf(err, errlen, "RRULE: '%.*s' has no '='", (int)(j - i), text + i);
        const struct part *p = NULL;
        for (size_t k = 0; k < sizeof parts / sizeof parts[0] && !p; k++)
            if (parts[k].len == eq - i && name_is(text + i, eq - i, parts[k].name)) p = &parts[k];
        if (!p) return time_errf(err, errlen, "RRULE: unknown part '%.*s'", (int)(eq - i), text + i);
        if (r.has & p->bit) return time_errf(err, errlen, "%s: given twice", p->name);
        r.has |= p->bit;
        if (parse_value(&r, p->bit, p->name, text + eq + 1, j - eq - 1, err, errlen) != 0)
            return -1;
        i = j + 1;
    }
    if (check_combination(&r, err, errlen) != 0) return -1;
    *out = r;
    return 0;
}

/* ---- canonical text ---- */

typedef struct rrule_outbuf {
    char *buf;
    size_t size, len;
} rrule_outbuf;

static void out_add(rrule_outbuf *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->size ? o->size - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}

/* Writes ";NAME=" then the values of a signed bitmap pair, negatives first
 * (most negative first), then positives ascending. */
static void out_list(rrule_outbuf *o, const char *name, const rrule_bits *pos,
                     const rrule_bits *neg, unsigned lo, unsigned hi)
{
    char sep = '=';
    out_add(o, ";%s", name);
    if (neg)
        for (unsigned v = hi; v >= 1 && v <= hi; v--)
            if (bits_test(neg, v)) { out_add(o, "%c-%u", sep, v); sep = ','; }
    for (unsigned v = lo; v <= hi; v++)
        if (bits_test(pos, v)) { out_add(o, "%c%u", sep, v); sep = ','; }
}

static rrule_bits bits_from64(uint64_t v)
{
    rrule_bits b = {{v, 0, 0, 0, 0, 0}};
    return b;
}

size_t rrule_format(const rrule *r, char *buf, size_t size)
{
    rrule_outbuf o = {buf, size, 0};
    if (size) buf[0] = 0;
    out_add(&o, "FREQ=%s", freq_names[r->freq]);
    if (r->has & RRULE_HAS_UNTIL) {
        char t[16];
        civil_format_basic(&r->until, r->until_kind == RRULE_UNTIL_DATE, t, sizeof t);
        out_add(&o, ";UNTIL=%s%s", t, r->until_kind == RRULE_UNTIL_UTC ? "Z" : "");
    }
    if (r->has & RRULE_HAS_COUNT) out_add(&o, ";COUNT=%u", r->count);
    if (r->interval > 1) out_add(&o, ";INTERVAL=%u", r->interval);
    rrule_bits a, b;
    if (r->has & RRULE_HAS_BYSECOND) {
        a = bits_from64(r->bysecond);
        out_list(&o, "BYSECOND", &a, NULL, 0, 60);
    }
    if (r->has & RRULE_HAS_BYMINUTE) {
        a = bits_from64(r->byminute);
        out_list(&o, "BYMINUTE", &a, NULL, 0, 59);
    }
    if (r->has & RRULE_HAS_BYHOUR) {
        a = bits_from64(r->byhour);
        out_list(&o, "BYHOUR", &a, NULL, 0, 23);
    }
    if (r->has & RRULE_HAS_BYDAY) {
        char sep = '=';
        out_add(&o, ";BYDAY");
        for (int w = 0; w < 7; w++) {
            if (r->byday_plain >> w & 1) { out_add(&o, "%c%s", sep, day_names[w]); sep = ','; }
            for (int n = 1; n <= 53; n++)
                if (r->byday_pos[w] >> n & 1) { out_add(&o, "%c%d%s", sep, n, day_names[w]); sep = ','; }
            for (int n = 1; n <= 53; n++)
                if (r->byday_neg[w] >> n & 1) { out_add(&o, "%c-%d%s", sep, n, day_names[w]); sep = ','; }
        }
    }
    if (r->has & RRULE_HAS_BYMONTHDAY) {
        a = bits_from64(r->bymonthday_pos);
        b = bits_from64(r->bymonthday_neg);
        out_list(&o, "BYMONTHDAY", &a, &b, 1, 31);
    }
    if (r->has & RRULE_HAS_BYYEARDAY)
        out_list(&o, "BYYEARDAY", &r->byyearday_pos, &r->byyearday_neg, 1, 366);
    if (r->has & RRULE_HAS_BYWEEKNO) {
        a = bits_from64(r->byweekno_pos);
        b = bits_from64(r->byweekno_neg);
        out_list(&o, "BYWEEKNO", &a, &b, 1, 53);
    }
    if (r->has & RRULE_HAS_BYMONTH) {
        a = bits_from64(r->bymonth);
        out_list(&o, "BYMONTH", &a, NULL, 1, 12);
    }
    if (r->has & RRULE_HAS_BYSETPOS)
        out_list(&o, "BYSETPOS", &r->bysetpos_pos, &r->bysetpos_neg, 1, 366);
    if (r->wkst != CIVIL_MO) out_add(&o, ";WKST=%s", day_names[r->wkst]);
    return o.len;
}
