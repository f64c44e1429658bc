/* calendar_json.h -- events as the API writes and reads them (JSON, RFC 3339,
 * recurrence lines). Part of the calendar's HTTP face. */
#ifndef CHIME_CALENDAR_JSON_H
#define CHIME_CALENDAR_JSON_H

#include <jansson.h>

#include "calendar/calendar.h"
#include "http/http.h"
#include "http/jsonw.h"

/* What a create or PATCH body may set. */
typedef struct cal_input {
    bool has_start, has_end, has_recurrence, has_attendees, has_reminders;
    bool has_summary, has_description, has_location, has_status, has_uid;
} cal_input;

/* Applies a create (all required parts) or PATCH body to e. The calendar's
 * zone is the default for times without one. Attendee emails and ids are
 * resolved against registered users. Fills err (naming the field) on bad
 * input and returns -1. */
int cal_json_apply(store *db, tz_db *tz, const json_t *body, bool create, const char *calendar_zone, cal_event *e,
                   cal_input *seen, http_err *err);

/* Times of an instance override body (start/end), in the series' terms. */
int cal_json_time(tz_db *tz, const json_t *obj, const char *field, const char *default_zone, bool *all_day,
                  civil_time *local, char *zone, http_err *err);
/* Reminder list: [{method, minutes_before}], at most CAL_MAX_REMINDERS. */
int cal_json_reminders(const json_t *arr, const char *field, cal_reminder *out, int *n, http_err *err);

/* Events and instances are written straight into a response buffer: a month
 * view has hundreds of them (see http/jsonw.h for why). */
void cal_write_event(jsonw *w, const cal_event *e, tz_db *tz, int64_t viewer);
void cal_write_item(jsonw *w, const cal_item *it, tz_db *tz, int64_t viewer);
json_t *cal_json_calendar(const cal_calendar *c);

#endif
