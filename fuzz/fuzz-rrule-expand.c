/* fuzz-rrule-expand.c -- expansion of any rule from any DTSTART: bounded,
 * strictly increasing, and next_after/includes agree with the iteration;
 * empty only when UNTIL comes before DTSTART.
 * Input: 15 bytes of DTSTART (YYYYMMDDTHHMMSS), then the RRULE text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "time/rrule.h"

static rrule_plan plan;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { N = 64 };
    rrule r;
    civil_time dt;
    char err[128];
    int64_t occ[N], t;
    if (size < 15 || civil_parse_basic((const char *)data, 15, &dt, NULL) != 0) return 0;
    if (rrule_parse((const char *)data + 15, size - 15, &r, err, sizeof err) != 0) return 0;
    if (rrule_plan_init(&plan, &r, &dt, err, sizeof err) != 0) return 0;
    size_t n = rrule_expand(&plan, INT64_MIN, INT64_MAX, occ, N);
    /* DTSTART always comes first, unless UNTIL is before it: then nothing. */
    if (n == 0) {
        if (plan.until >= plan.dtstart || rrule_includes(&plan, plan.dtstart)) abort();
        return 0;
    }
    if (occ[0] != plan.dtstart) abort();
    for (size_t i = 0; i < n; i++) {
        if (i && occ[i] <= occ[i - 1]) abort();
        if (!rrule_includes(&plan, occ[i])) abort();
        if (i + 1 < n && (!rrule_next_after(&plan, occ[i], &t) || t != occ[i + 1])) abort();
        if (i + 1 < n && occ[i + 1] > occ[i] + 1 && rrule_includes(&plan, occ[i] + 1)) abort();
    }
    if (n < N && rrule_next_after(&plan, occ[n - 1], &t)) abort();
    /* A far query must answer too (bounded), whatever it is. */
    rrule_next_after(&plan, occ[0] + (int64_t)86400 * 365 * 300, &t);
    return 0;
}
