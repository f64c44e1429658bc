/* rfc3339.h -- Internet date-times ("2026-10-26T09:00:00-04:00") and dates
 * ("2026-10-26"), as the HTTP API speaks them. */
#ifndef CHIME_TIME_RFC3339_H
#define CHIME_TIME_RFC3339_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "time/civil.h"

typedef struct rfc3339 {
    civil_time local;   /* the wall time as written */
    bool has_offset;    /* 'Z' or +-HH:MM was given */
    int32_t offset;     /* seconds east of UTC, when has_offset */
    int32_t millis;     /* fractional part, truncated to ms */
} rfc3339;

/* "YYYY-MM-DDTHH:MM:SS[.fff][Z|+-HH:MM]" ('t', 'z' and ' ' accepted as in
 * RFC 3339 5.6). Returns 0 or -1. */
int rfc3339_parse(const char *s, size_t len, rfc3339 *out);
/* "YYYY-MM-DD" only. */
int rfc3339_parse_date(const char *s, size_t len, civil_time *out);
/* UTC seconds shown at a given offset: "2026-10-26T09:00:00-04:00"
 * ("Z" for offset 0). buf needs 26 bytes. */
int rfc3339_format(int64_t utc_secs, int32_t offset, char *buf, size_t size);
int rfc3339_format_date(const civil_time *t, char *buf, size_t size);
/* A Unix time in ms as UTC with milliseconds, "2026-11-22T04:18:00.123Z"
 * (24 characters for years 0-9999): the API's timestamps, and three to a
 * webhook payload, so digits by hand, no gmtime, no printf. buf >= 32. */
int rfc3339_format_ms(int64_t ms, char *buf, size_t size);

#endif
