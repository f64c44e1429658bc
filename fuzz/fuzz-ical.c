/* fuzz-ical.c -- arbitrary bytes through the iCalendar import (parse and
 * read into series, no database). Whatever is accepted must export, and the
 * export must import again to the same number of series with the same
 * UIDs and first starts: the writer only says what the reader understands. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calendar/cal_ical.h"

#define FUZZ_MAX_INPUT 65536

static void check_round_trip(tz_db *tz, ical_import *im)
{
    cal_calendar cal = {.id = 1, .owner_id = 1};
    strcpy(cal.summary, "fuzz");
    strcpy(cal.time_zone, "Europe/London");
    cal_event *evs = calloc(im->nseries + 1, sizeof *evs);
    size_t novs = 0;
    for (size_t i = 0; i < im->nseries; i++) novs += im->series[i].novs;
    cal_override *ovs = calloc(novs + 1, sizeof *ovs);
    if (!evs || !ovs) abort();
    novs = 0;
    for (size_t i = 0; i < im->nseries; i++) {
        evs[i] = im->series[i].ev; /* shallow: im still owns the strings */
        evs[i].id = (int64_t)i + 1;
        for (size_t k = 0; k < im->series[i].novs; k++) {
            ovs[novs] = im->series[i].ovs[k];
            ovs[novs++].event_id = (int64_t)i + 1;
        }
    }
    size_t len;
    char *text = ical_write(&cal, evs, im->nseries, ovs, novs, tz, INT64_C(1795000000000), &len);
    if (!text) abort();
    ical_import again;
    ical_err err;
    if (ical_read(text, len, tz, "Europe/London", &again, &err) != 0) abort();
    if (again.nseries != im->nseries) abort();
    for (size_t i = 0; i < im->nseries; i++) {
        /* Both are sorted by UID. */
        if (strcmp(again.series[i].ev.ical_uid, im->series[i].ev.ical_uid) != 0) abort();
        if (again.series[i].ev.start_ms != im->series[i].ev.start_ms) abort();
    }
    ical_import_free(&again);
    free(text);
    free(evs);
    free(ovs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tz_db *tz; /* loaded once, lives for the whole run */
    if (!tz) tz = tz_db_new(NULL);
    if (size > FUZZ_MAX_INPUT) return 0;
    ical_import im;
    ical_err err;
    if (ical_read((const char *)data, size, tz, "Europe/London", &im, &err) != 0) {
        if (err.msg[0] == '\0') abort();
        return 0;
    }
    check_round_trip(tz, &im);
    ical_import_free(&im);
    return 0;
}
