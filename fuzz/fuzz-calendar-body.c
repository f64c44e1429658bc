/* fuzz-calendar-body.c -- an event body as a client sends it: JSON, RFC 3339
 * times in zones, recurrence lines (RRULE/EXDATE/RDATE), reminders; then the
 * series is resolved and expanded a little. Attendees need the database, so
 * they are left out here (their shape is checked before any lookup). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calendar/calendar.h"
#include "calendar/calendar_json.h"
#include "http/json.h"
#include "time/rfc3339.h"

static tz_db *zones;

static void exercise(tz_db *tz, json_t *body)
{
    cal_event ev = {0};
    cal_input seen;
    http_err err;
    snprintf(ev.status, sizeof ev.status, "confirmed");
    snprintf(ev.calendar_zone, sizeof ev.calendar_zone, "UTC");
    json_object_del(body, "attendees");
    if (cal_json_apply(NULL, tz, body, true, "UTC", &ev, &seen, &err) == 0) {
        char msg[200], field[64];
        if (cal_event_resolve(&ev, tz, msg, sizeof msg, field, sizeof field) == 0) {
            cal_series s;
            if (cal_series_init(&s, &ev, tz, msg, sizeof msg) == 0) {
                rrule_set_iter it;
                int64_t local;
                rrule_set_iter_init(&it, &s.set, civil_to_seconds(&ev.start_local));
                for (int i = 0; i < 50 && rrule_set_iter_next(&it, &local); i++) cal_series_end_ms(&s, local);
            }
        }
    }
    cal_event_free(&ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!zones) zones = tz_db_new(NULL);
    rfc3339 t;
    civil_time d;
    rfc3339_parse((const char *)data, size, &t);
    rfc3339_parse_date((const char *)data, size, &d);
    http_err err;
    json_t *body = http_json_decode((const char *)data, size, &err);
    if (body) {
        exercise(zones, body);
        json_decref(body);
    }
    return 0;
}
