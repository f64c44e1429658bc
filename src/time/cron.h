/* cron.h -- cron expressions and their next fire time in an IANA zone.
 *
 * Syntax: five fields "minute hour day-of-month month day-of-week", or six
 * with a leading "second" field, separated by blanks. Each field is a
 * comma-separated list of items: "*", a value, a range "a-b", and any of
 * these with a step "/n" ("*" + "/15", "1-5/2"; "a/n" means "a-max/n").
 * Months and weekdays also take names (JAN..DEC, SUN..SAT), in any case.
 * Day-of-week is 0..7 with both 0 and 7 meaning Sunday. "?" is accepted as
 * "*" in the two day fields. Macros: @yearly (@annually), @monthly,
 * @weekly, @daily (@midnight), @hourly.
 *
 * Day-of-month and day-of-week combine as in Vixie cron: when both fields
 * are restricted a day matches if either does; when either field starts
 * with '*' (so "*" and "*" + "/2" alike), a day must match both.
 *
 * Time zones: fields are matched against the wall-clock time of the zone
 * (as cronie and systemd do). A wall time skipped by a spring-forward fires
 * once, at the instant RFC 5545 gives it (02:30 -> 03:30 after the shift);
 * a wall time repeated by a fall-back fires once, at its first occurrence.
 * So "0 * * * *" fires every real hour across a spring-forward (02:00 and
 * 03:00 are the same instant, fired once) and skips the repeated hour at a
 * fall-back. Instants fired are strictly increasing.
 */
#ifndef CHIME_TIME_CRON_H
#define CHIME_TIME_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "time/tz.h"

/* Longest expression cron_parse accepts, and a buffer always big enough for
 * cron_format. */
#define CRON_TEXT_MAX 1024
#define CRON_FORMAT_MAX 640
/* cron_next searches this many years of wall time before giving up. The
 * Gregorian calendar repeats every 400 years, so nothing is missed. */
#define CRON_SEARCH_YEARS 400

enum {
    CRON_HAS_SECONDS = 1, /* written with six fields */
    CRON_DOM_STAR = 2,    /* day-of-month field starts with '*' or '?' */
    CRON_DOW_STAR = 4,    /* day-of-week field starts with '*' or '?' */
};

/* Bit i set = value i matches. A plain value type: copy it, compare it
 * with memcmp (cron_parse zeroes it first). */
typedef struct cron_expr {
    uint64_t second; /* 0..59 */
    uint64_t minute; /* 0..59 */
    uint32_t hour;   /* 0..23 */
    uint32_t mday;   /* 1..31 */
    uint16_t month;  /* 1..12 */
    uint8_t wday;    /* 0..6, 0 = Sunday */
    uint8_t flags;   /* CRON_* */
} cron_expr;

/* Parses text (NUL-terminated, at most CRON_TEXT_MAX bytes). Returns 0, or
 * -1 with a message in err naming the field and the reason ("minute: 61 is
 * out of range 0-59", "day-of-week: unknown name 'MOX'"). err may be NULL. */
int cron_parse(const char *text, cron_expr *out, char *err, size_t errlen);

/* The first fire time strictly after `after_utc_secs` (Unix seconds), with
 * fields matched in zone z (NULL: UTC / floating). Returns -1 when there is
 * none in the next CRON_SEARCH_YEARS years ("0 0 30 2 *"), and when
 * `after` is outside 1970..9999 (the search never leaves those years). */
int64_t cron_next(const cron_expr *e, const tz_zone *z, int64_t after_utc_secs);

/* Canonical text: numbers only, runs as ranges, arithmetic series as steps,
 * "*" only where the expression had one; cron_parse of the result gives an
 * equal cron_expr. Five fields unless it was written with seconds. Returns
 * the length, or -1 if buf (size bytes) is too small; CRON_FORMAT_MAX is. */
int cron_format(const cron_expr *e, char *buf, size_t size);

#endif
