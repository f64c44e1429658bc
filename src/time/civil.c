/* civil.c -- proleptic Gregorian arithmetic on day numbers.
 * The conversions are Howard Hinnant's era-based algorithms: constant time,
 * no tables, exact over the whole int32 year range. */
#include "time/civil.h"

#include <stdio.h>

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t civil_days_from_ymd(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;                                  /* [0, 399] */
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

void civil_ymd_from_days(int64_t z, int32_t *year, int8_t *month, int8_t *day)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    *year = (int32_t)(yoe + era * 400 + (m <= 2));
    *month = (int8_t)m;
    *day = (int8_t)d;
}

int civil_weekday(int64_t days)
{
    /* 1970-01-01 was a Thursday (3 when Monday is 0). */
    int64_t w = (days + 3) % 7;
    return (int)(w < 0 ? w + 7 : w);
}

int civil_yday(int64_t y, int m, int d)
{
    return (int)(civil_days_from_ymd(y, m, d) - civil_days_from_ymd(y, 1, 1)) + 1;
}

int64_t civil_to_seconds(const civil_time *t)
{
    return civil_days_from_ymd(t->year, t->month, t->day) * 86400 +
           t->hour * 3600 + t->minute * 60 + t->second;
}

void civil_from_seconds(int64_t secs, civil_time *t)
{
    int64_t days = floor_div(secs, 86400);
    int64_t rem = secs - days * 86400;
    civil_ymd_from_days(days, &t->year, &t->month, &t->day);
    t->hour = (int8_t)(rem / 3600);
    t->minute = (int8_t)(rem / 60 % 60);
    t->second = (int8_t)(rem % 60);
}

int civil_compare(const civil_time *a, const civil_time *b)
{
    int64_t x = civil_to_seconds(a), y = civil_to_seconds(b);
    return (x > y) - (x < y);
}

bool civil_valid(const civil_time *t)
{
    return t->month >= 1 && t->month <= 12 && t->day >= 1 &&
           t->day <= civil_days_in_month(t->year, t->month) && t->hour >= 0 &&
           t->hour <= 23 && t->minute >= 0 && t->minute <= 59 && t->second >= 0 &&
           t->second <= 59;
}

int64_t civil_week1_start(int64_t year, int wkst)
{
    int64_t jan1 = civil_days_from_ymd(year, 1, 1);
    int back = (civil_weekday(jan1) - wkst + 7) % 7; /* days since week start */
    int64_t start = jan1 - back;
    /* Week 1 must hold at least 4 days of the year. */
    return back >= 4 ? start + 7 : start;
}

int civil_weeks_in_year(int64_t year, int wkst)
{
    return (int)((civil_week1_start(year + 1, wkst) - civil_week1_start(year, wkst)) / 7);
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int civil_parse_basic(const char *s, size_t len, civil_time *t, bool *is_date)
{
    int y, mo, d, h = 0, mi = 0, se = 0;
    if (len != 8 && len != 15) return -1;
    if (digits(s, 4, &y) || digits(s + 4, 2, &mo) || digits(s + 6, 2, &d)) return -1;
    if (len == 15) {
        if (s[8] != 'T' || digits(s + 9, 2, &h) || digits(s + 11, 2, &mi) ||
            digits(s + 13, 2, &se))
            return -1;
        if (se == 60) se = 59;
    }
    t->year = y; t->month = (int8_t)mo; t->day = (int8_t)d;
    t->hour = (int8_t)h; t->minute = (int8_t)mi; t->second = (int8_t)se;
    if (is_date) *is_date = len == 8;
    return civil_valid(t) ? 0 : -1;
}

static void two(char *p, int v)
{
    p[0] = (char)('0' + v / 10);
    p[1] = (char)('0' + v % 10);
}

/* By hand: listings and exports format these by the thousand. */
int civil_format_basic(const civil_time *t, bool date_only, char *buf, size_t size)
{
    if (t->year < 0 || t->year > 9999 || size < 16) {
        if (date_only)
            return snprintf(buf, size, "%04d%02d%02d", (int)t->year, t->month, t->day);
        return snprintf(buf, size, "%04d%02d%02dT%02d%02d%02d", (int)t->year, t->month,
                        t->day, t->hour, t->minute, t->second);
    }
    two(buf, t->year / 100);
    two(buf + 2, t->year % 100);
    two(buf + 4, t->month);
    two(buf + 6, t->day);
    if (date_only) {
        buf[8] = '\0';
        return 8;
    }
    buf[8] = 'T';
    two(buf + 9, t->hour);
    two(buf + 11, t->minute);
    two(buf + 13, t->second);
    buf[15] = '\0';
    return 15;
}
