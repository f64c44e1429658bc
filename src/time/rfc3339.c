/* rfc3339.c -- strict RFC 3339 parsing and formatting. */
#include "time/rfc3339.h"

#include <stdio.h>
#include <string.h>

static int num(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static int parse_date(const char *s, size_t len, civil_time *t)
{
    if (len < 10 || s[4] != '-' || s[7] != '-') return -1;
    int y = num(s, 4), m = num(s + 5, 2), d = num(s + 8, 2);
    if (y < 0 || m < 0 || d < 0) return -1;
    *t = (civil_time){.year = y, .month = (int8_t)m, .day = (int8_t)d};
    return civil_valid(t) ? 0 : -1;
}

int rfc3339_parse_date(const char *s, size_t len, civil_time *out)
{
    return len == 10 ? parse_date(s, len, out) : -1;
}

int rfc3339_parse(const char *s, size_t len, rfc3339 *out)
{
    *out = (rfc3339){0};
    if (len < 19 || parse_date(s, len, &out->local) != 0) return -1;
    if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') return -1;
    if (s[13] != ':' || s[16] != ':') return -1;
    int h = num(s + 11, 2), mi = num(s + 14, 2), se = num(s + 17, 2);
    if (h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60) return -1;
    out->local.hour = (int8_t)h;
    out->local.minute = (int8_t)mi;
    out->local.second = (int8_t)(se == 60 ? 59 : se);
    size_t i = 19;
    if (i < len && s[i] == '.') {
        size_t start = ++i;
        int ms = 0, digits = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (digits < 3) ms = ms * 10 + (s[i] - '0');
            digits++;
            i++;
        }
        if (i == start || digits > 9) return -1;
        while (digits < 3) ms *= 10, digits++;
        out->millis = ms;
    }
    if (i == len) return 0;
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == len) {
        out->has_offset = true;
        return 0;
    }
    if ((s[i] != '+' && s[i] != '-') || len - i != 6 || s[i + 3] != ':') return -1;
    int oh = num(s + i + 1, 2), om = num(s + i + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return -1;
    out->has_offset = true;
    out->offset = (s[i] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
    return 0;
}

/* Listings format thousands of these per response: digits by hand, not
 * through printf (measured: bench/calendar). */
static char *digits(char *p, int v, int n)
{
    for (int i = n - 1; i >= 0; i--, v /= 10) p[i] = (char)('0' + v % 10);
    return p + n;
}

static int format_date(const civil_time *t, char *p)
{
    if (t->year < 0 || t->year > 9999) return sprintf(p, "%d-%02d-%02d", (int)t->year, t->month, t->day);
    p = digits(p, t->year, 4);
    *p++ = '-';
    p = digits(p, t->month, 2);
    *p++ = '-';
    digits(p, t->day, 2);
    p[2] = '\0';
    return 10;
}

/* snprintf's contract (truncate, NUL, return the full length) without its
 * cost. */
static int copy_out(const char *src, size_t n, char *buf, size_t size)
{
    if (size > 0) {
        size_t k = n < size - 1 ? n : size - 1;
        memcpy(buf, src, k);
        buf[k] = '\0';
    }
    return (int)n;
}

int rfc3339_format(int64_t utc_secs, int32_t offset, char *buf, size_t size)
{
    char tmp[48], *p = tmp;
    civil_time t;
    civil_from_seconds(utc_secs + offset, &t);
    p += format_date(&t, p);
    *p++ = 'T';
    p = digits(p, t.hour, 2);
    *p++ = ':';
    p = digits(p, t.minute, 2);
    *p++ = ':';
    p = digits(p, t.second, 2);
    if (offset == 0) {
        *p++ = 'Z';
    } else {
        int a = offset < 0 ? -offset : offset;
        *p++ = offset < 0 ? '-' : '+';
        p = digits(p, a / 3600, 2);
        *p++ = ':';
        p = digits(p, a / 60 % 60, 2);
    }
    *p = '\0';
    return copy_out(tmp, (size_t)(p - tmp), buf, size);
}

int rfc3339_format_ms(int64_t ms, char *buf, size_t size)
{
    char tmp[48], *p = tmp;
    int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    civil_time t;
    civil_from_seconds(secs, &t);
    p += format_date(&t, p);
    *p++ = 'T';
    p = digits(p, t.hour, 2);
    *p++ = ':';
    p = digits(p, t.minute, 2);
    *p++ = ':';
    p = digits(p, t.second, 2);
    *p++ = '.';
    p = digits(p, (int)(ms - secs * 1000), 3);
    *p++ = 'Z';
    *p = '\0';
    return copy_out(tmp, (size_t)(p - tmp), buf, size);
}

int rfc3339_format_date(const civil_time *t, char *buf, size_t size)
{
    char tmp[32];
    int n = format_date(t, tmp);
    return copy_out(tmp, (size_t)n, buf, size);
}
