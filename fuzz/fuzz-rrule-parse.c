/* fuzz-rrule-parse.c -- RRULE text: parse never crashes; what parses prints
 * back to canonical text that parses to the same canonical text; explain
 * stays within its buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "time/rrule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rrule r, r2;
    char err[128], a[8192], b[8192], text[2048];
    if (rrule_parse((const char *)data, size, &r, err, sizeof err) != 0) {
        if (strlen(err) == 0) abort(); /* every error has a message */
        return 0;
    }
    size_t n = rrule_format(&r, a, sizeof a);
    if (n >= sizeof a) abort();
    if (rrule_parse(a, n, &r2, err, sizeof err) != 0) abort();
    rrule_format(&r2, b, sizeof b);
    if (strcmp(a, b) != 0) abort();
    civil_time dt = {2026, 11, 22, 9, 30, 0};
    rrule_explain(&r, &dt, text, sizeof text);
    rrule_explain(&r, NULL, text, 16);
    return 0;
}
