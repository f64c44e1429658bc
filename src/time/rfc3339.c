/* rfc3339.c -- strict RFC 3339 parsing and formatting. */
#include "time/rfc3339.h"

#include <stdio.h>

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

int rfc3339_format(int64_t utc_secs, int32_t offset, char *buf, size_t size)
{
    civil_time t;
    civil_from_seconds(utc_secs + offset, &t);
    int n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d", (int)t.year, t.month, t.day, t.hour,
                     t.minute, t.second);
    if (offset == 0) return n + snprintf(buf + n, size > (size_t)n ? size - (size_t)n : 0, "Z");
    int a = offset < 0 ? -offset : offset;
    return n + snprintf(buf + n, size > (size_t)n ? size - (size_t)n : 0, "%c%02d:%02d", offset < 0 ? '-' : '+',
                        a / 3600, a / 60 % 60);
}

int rfc3339_format_date(const civil_time *t, char *buf, size_t size)
{
    return snprintf(buf, size, "%04d-%02d-%02d", (int)t->year, t->month, t->day);
}
