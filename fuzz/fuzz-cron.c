/* fuzz-cron.c -- arbitrary text through cron_parse; for what parses:
 * cron_format must succeed and parse back to the same expression, and
 * cron_next (UTC, New York, Lord Howe) must return strictly later instants
 * or -1, within its bounded search. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "time/cron.h"

static void check_next(const cron_expr *e, const tz_zone *z, int64_t t)
{
    for (int i = 0; i < 4 && t >= 0; i++) {
        int64_t n = cron_next(e, z, t);
        if (n != -1 && n <= t) abort();
        t = n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tz_db *db; /* loaded once, lives for the whole run */
    if (!db) db = tz_db_new(NULL);
    if (size > CRON_TEXT_MAX + 16) return 0;
    char text[CRON_TEXT_MAX + 17];
    memcpy(text, data, size);
    text[size] = '\0';
    cron_expr e, back;
    char err[128];
    if (cron_parse(text, &e, err, sizeof err) != 0) {
        if (strlen(err) == 0) abort();
        return 0;
    }
    char buf[CRON_FORMAT_MAX];
    if (cron_format(&e, buf, sizeof buf) < 0) abort();
    if (cron_parse(buf, &back, err, sizeof err) != 0 || memcmp(&e, &back, sizeof e) != 0) abort();
    check_next(&e, NULL, INT64_C(1772953800));
    check_next(&e, tz_db_get(db, "America/New_York"), INT64_C(1772953800));  /* in the gap */
    check_next(&e, tz_db_get(db, "Australia/Lord_Howe"), INT64_C(1775310000));
    return 0;
}
