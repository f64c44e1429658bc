/* civil.h -- proleptic Gregorian calendar arithmetic.
 *
 * Days are counted from 1970-01-01 (day 0), seconds from 1970-01-01T00:00:00
 * as if every day had 86400 seconds (no leap seconds, as in TZif and POSIX).
 * Pure functions, no libc time calls, valid for years -1,000,000..1,000,000.
 */
#ifndef CHIME_TIME_CIVIL_H
#define CHIME_TIME_CIVIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A nominal wall-clock time: no zone attached. */
typedef struct civil_time {
    int32_t year;
    int8_t month;   /* 1..12 */
    int8_t day;     /* 1..31 */
    int8_t hour;    /* 0..23 */
    int8_t minute;  /* 0..59 */
    int8_t second;  /* 0..59 (60 is accepted on parse and folded to 59) */
} civil_time;

/* Weekdays are 0 = Monday .. 6 = Sunday (ISO 8601 order, as RFC 5545 WKST). */
enum { CIVIL_MO, CIVIL_TU, CIVIL_WE, CIVIL_TH, CIVIL_FR, CIVIL_SA, CIVIL_SU };

/* Inline: the recurrence engine asks these for every month it counts. */
static inline bool civil_is_leap(int64_t year)
{
    return (year & 3) == 0 && (year % 100 != 0 || year % 400 == 0);
}

static inline int civil_days_in_month(int64_t year, int month)
{
    static const int8_t len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12) return 0;
    return month == 2 && civil_is_leap(year) ? 29 : len[month - 1];
}

static inline int civil_days_in_year(int64_t year)
{
    return civil_is_leap(year) ? 366 : 365;
}

int64_t civil_days_from_ymd(int64_t year, int month, int day);
void civil_ymd_from_days(int64_t days, int32_t *year, int8_t *month, int8_t *day);
int civil_weekday(int64_t days);                  /* 0 = Monday */
int civil_yday(int64_t year, int month, int day); /* 1-based */

int64_t civil_to_seconds(const civil_time *t);
void civil_from_seconds(int64_t secs, civil_time *t);
int civil_compare(const civil_time *a, const civil_time *b);
bool civil_valid(const civil_time *t);

/* Day number of day 1 of week 1 of `year` when weeks start on `wkst`: week 1
 * is the first week with at least four days in the year (RFC 5545 BYWEEKNO). */
int64_t civil_week1_start(int64_t year, int wkst);
/* Number of such weeks in `year` (52 or 53). */
int civil_weeks_in_year(int64_t year, int wkst);

/* "YYYYMMDDTHHMMSS" (15 chars; a trailing 'Z' is not accepted here) or
 * "YYYYMMDD" (8 chars, time 00:00:00, *is_date set). Returns 0 or -1. */
int civil_parse_basic(const char *s, size_t len, civil_time *t, bool *is_date);
/* Writes "YYYYMMDDTHHMMSS" (or "YYYYMMDD" when date_only) and a NUL; buf
 * needs 16 bytes. Returns the length written. */
int civil_format_basic(const civil_time *t, bool date_only, char *buf, size_t size);

#endif
