/* fuzz-rrule-cli.c -- one JSON line of `chime rrule`: always exactly one
 * JSON object back, never a crash, a leak or an unbounded loop. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "cli_rrule.h"

static tz_db *db;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!db) db = tz_db_new(NULL);
    if (size > 4096) return 0;
    char *out = cli_rrule_answer((const char *)data, size, db);
    if (!out) abort();
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    if (!json_is_object(j)) abort();
    json_decref(j);
    free(out);
    return 0;
}
