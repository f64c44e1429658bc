/* calendar_json.c -- events in and out of JSON, with validation that names
 * the field and the reason for every refusal. */
#include "calendar/calendar_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "http/json.h"
#include "http/jsonw.h"
#include "time/rfc3339.h"
#include "time/rrule.h"
#include "users/users.h"

/* ---- times -------------------------------------------------------------- */

int cal_json_time(tz_db *tz, const json_t *obj, const char *field, const char *default_zone, bool *all_day,
                  civil_time *local, char *zone, http_err *err)
{
    static const char *const fields[] = {"date", "date_time", "time_zone", NULL};
    char sub[64];
    if (!json_is_object(obj)) {
        http_err_set(err, 400, "wrong_type", field, "%s must be an object with date or date_time", field);
        return -1;
    }
    if (http_json_only(obj, fields, err) != 0) goto named;
    const char *date = NULL, *dt = NULL, *tzname = NULL;
    snprintf(sub, sizeof sub, "%s.date", field);
    if (http_json_str(obj, "date", false, 10, &date, err) != 0) goto named;
    if (http_json_str(obj, "date_time", false, 40, &dt, err) != 0) goto named;
    if (http_json_str(obj, "time_zone", false, CAL_ZONE_MAX - 1, &tzname, err) != 0) goto named;
    if (!date == !dt) {
        http_err_set(err, 400, "invalid_value", field, "%s needs exactly one of date and date_time", field);
        return -1;
    }
    if (date) {
        snprintf(sub, sizeof sub, "%s.date", field);
        if (rfc3339_parse_date(date, strlen(date), local) != 0) {
            http_err_set(err, 400, "invalid_value", sub, "%s must be a date like 2026-10-26", sub);
            return -1;
        }
        if (tzname) {
            snprintf(sub, sizeof sub, "%s.time_zone", field);
            http_err_set(err, 400, "invalid_value", sub, "an all-day date takes no time zone");
            return -1;
        }
        *all_day = true;
        zone[0] = '\0';
        return 0;
    }
    const char *zname = tzname ? tzname : default_zone;
    const tz_zone *z = tz_db_get(tz, zname);
    if (!z) {
        snprintf(sub, sizeof sub, "%s.time_zone", field);
        http_err_set(err, 400, "invalid_value", sub, "unknown time zone '%.64s'", zname);
        return -1;
    }
    rfc3339 t;
    if (rfc3339_parse(dt, strlen(dt), &t) != 0 || t.local.year < 1 || t.local.year > 9998) {
        snprintf(sub, sizeof sub, "%s.date_time", field);
        http_err_set(err, 400, "invalid_value", sub,
                     "%s must be an RFC 3339 date-time like 2026-10-26T09:00:00-04:00 (years 1-9998)", sub);
        return -1;
    }
    *local = t.local;
    if (t.has_offset) /* an instant: show it as wall time in the zone */
        civil_from_seconds(tz_utc_to_local(z, civil_to_seconds(&t.local) - t.offset), local);
    *all_day = false;
    snprintf(zone, CAL_ZONE_MAX, "%s", zname);
    return 0;
named:
    http_err_prefix(err, field);
    return -1;
}

/* ---- recurrence lines --------------------------------------------------- */

/* "EXDATE;TZID=Europe/London:20261109T090000,20261116T090000" and the like.
 * Values go to local seconds of the event's zone. */
static int parse_dates(tz_db *tz, const cal_event *e, const char *line, const char *field, int64_t **arr, size_t *n,
                       http_err *err)
{
    const char *colon = strchr(line, ':');
    const char *params = strchr(line, ';');
    char tzid[CAL_ZONE_MAX] = "";
    if (!colon) {
        http_err_set(err, 400, "invalid_value", field, "%s: expected NAME[;params]:values", field);
        return -1;
    }
    for (const char *p = params; p && p < colon; p = strchr(p + 1, ';')) {
        if (p >= colon) break;
        if (strncmp(p, ";TZID=", 6) == 0) {
            const char *end = p + 6;
            while (end < colon && *end != ';') end++;
            snprintf(tzid, sizeof tzid, "%.*s", (int)(end - p - 6), p + 6);
        } else if (strncmp(p, ";VALUE=DATE", 11) != 0) {
            http_err_set(err, 400, "invalid_value", field, "%s: unsupported parameter '%.20s'", field, p + 1);
            return -1;
        }
    }
    const tz_zone *ez = tz_db_get(tz, cal_event_zone_name(e));
    const tz_zone *vz = tzid[0] ? tz_db_get(tz, tzid) : ez;
    if (tzid[0] && !vz) {
        http_err_set(err, 400, "invalid_value", field, "%s: unknown time zone '%s'", field, tzid);
        return -1;
    }
    const char *v = colon + 1;
    while (*v) {
        const char *comma = strchr(v, ',');
        size_t len = comma ? (size_t)(comma - v) : strlen(v);
        civil_time t;
        bool is_date;
        bool utc = len == 16 && v[15] == 'Z';
        if (*n >= CAL_MAX_DATES || civil_parse_basic(v, utc ? 15 : len, &t, &is_date) != 0 ||
            is_date != e->all_day) {
            http_err_set(err, 400, "invalid_value", field,
                         *n >= CAL_MAX_DATES ? "%s: at most %d dates" : "%s: '%.*s' is not a %s", field,
                         *n >= CAL_MAX_DATES ? CAL_MAX_DATES : (int)len, v,
                         e->all_day ? "date (YYYYMMDD)" : "date-time (YYYYMMDDTHHMMSS[Z])");
            return -1;
        }
        int64_t secs = civil_to_seconds(&t);
        if (utc) secs = tz_utc_to_local(ez, secs);
        else if (vz != ez) secs = tz_utc_to_local(ez, tz_local_to_utc(vz, secs));
        int64_t *grown = realloc(*arr, (*n + 1) * sizeof *grown);
        if (!grown) {
            http_err_set(err, 503, "unavailable", NULL, "out of memory");
            return -1;
        }
        *arr = grown;
        (*arr)[(*n)++] = secs;
        v += len + (comma ? 1 : 0);
    }
    return 0;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int parse_recurrence(tz_db *tz, const json_t *arr, cal_event *e, http_err *err)
{
    if (!json_is_array(arr) || json_array_size(arr) > 100) {
        http_err_set(err, 400, "wrong_type", "recurrence", "recurrence must be an array of at most 100 lines");
        return -1;
    }
    free(e->rrule);
    free(e->rdates);
    free(e->exdates);
    e->rrule = NULL;
    e->rdates = e->exdates = NULL;
    e->nrdates = e->nexdates = 0;
    size_t i;
    json_t *v;
    rrule rules[RRULE_SET_MAX_RULES];
    int nrules = 0;
    json_array_foreach(arr, i, v) {
        char field[48], msg[200];
        snprintf(field, sizeof field, "recurrence[%zu]", i);
        const char *line = json_string_value(v);
        if (!line || json_string_length(v) > RRULE_TEXT_MAX) {
            http_err_set(err, 400, "wrong_type", field, "%s must be a string of at most %d bytes", field,
                         RRULE_TEXT_MAX);
            return -1;
        }
        if (strncmp(line, "RRULE:", 6) == 0) {
            rrule r;
            if (nrules == RRULE_SET_MAX_RULES) {
                http_err_set(err, 400, "invalid_value", field, "at most %d RRULEs (their union)", RRULE_SET_MAX_RULES);
                return -1;
            }
            if (rrule_parse(line + 6, strlen(line + 6), &r, msg, sizeof msg) != 0) {
                http_err_set(err, 400, "invalid_rrule", field, "%s", msg);
                return -1;
            }
            if ((r.has & RRULE_HAS_COUNT) && r.count > CAL_MAX_COUNT) {
                http_err_set(err, 400, "invalid_rrule", field, "COUNT: at most %d", CAL_MAX_COUNT);
                return -1;
            }
            rules[nrules++] = r;
        } else if (strncmp(line, "EXDATE", 6) == 0 && (line[6] == ':' || line[6] == ';')) {
            if (parse_dates(tz, e, line, field, &e->exdates, &e->nexdates, err) != 0) return -1;
        } else if (strncmp(line, "RDATE", 5) == 0 && (line[5] == ':' || line[5] == ';')) {
            if (parse_dates(tz, e, line, field, &e->rdates, &e->nrdates, err) != 0) return -1;
        } else {
            http_err_set(err, 400, "invalid_value", field, "%s: expected an RRULE:, EXDATE: or RDATE: line", field);
            return -1;
        }
    }
    if (cal_rules_store(rules, nrules, &e->rrule) != 0) {
        http_err_set(err, 503, "unavailable", NULL, "out of memory");
        return -1;
    }
    if (e->nrdates) qsort(e->rdates, e->nrdates, sizeof *e->rdates, cmp64);
    if (e->nexdates) qsort(e->exdates, e->nexdates, sizeof *e->exdates, cmp64);
    return 0;
}

/* ---- reminders and attendees -------------------------------------------- */

int cal_json_reminders(const json_t *arr, const char *field, cal_reminder *out, int *n, http_err *err)
{
    static const char *const fields[] = {"method", "minutes_before", NULL};
    if (!json_is_array(arr) || json_array_size(arr) > CAL_MAX_REMINDERS) {
        http_err_set(err, 400, "wrong_type", field, "%s must be an array of at most %d reminders", field,
                     CAL_MAX_REMINDERS);
        return -1;
    }
    size_t i;
    json_t *v;
    *n = 0;
    json_array_foreach(arr, i, v) {
        char sub[48];
        const char *method;
        int64_t minutes;
        snprintf(sub, sizeof sub, "%s[%zu]", field, i);
        if (!json_is_object(v)) {
            http_err_set(err, 400, "wrong_type", sub, "%s must be an object", sub);
            return -1;
        }
        if (http_json_only(v, fields, err) || http_json_str(v, "method", true, 7, &method, err) ||
            http_json_int(v, "minutes_before", true, 0, CAL_MAX_REMINDER_MINUTES, &minutes, NULL, err))
            goto named;
        if (strcmp(method, "push") && strcmp(method, "email") && strcmp(method, "webhook")) {
            http_err_set(err, 400, "invalid_value", "method", "method must be push, email or webhook");
            goto named;
        }
        snprintf(out[*n].method, sizeof out[*n].method, "%s", method);
        out[*n].minutes_before = (int32_t)minutes;
        (*n)++;
        continue;
    named:
        http_err_prefix(err, sub);
        return -1;
    }
    return 0;
}

/* An attendee's address goes through the users' rule: one nobody could
 * register (an invisible character, say) is refused, naming it. */
static bool attendee_email_bad(const char *email, const char *sub, http_err *err)
{
    users_email em;
    char why[160], field[64];
    if (users_email_normalize(email, &em, why, sizeof why) != USERS_INVALID) return false;
    snprintf(field, sizeof field, "%s.email", sub);
    http_err_set(err, 400, "invalid_value", field, "%s: %s", field, why);
    return true;
}

static int parse_attendees(store *db, const json_t *arr, cal_event *e, http_err *err)
{
    static const char *const fields[] = {"email", "user_id", "response_status", "self", NULL};
    if (!json_is_array(arr) || json_array_size(arr) > CAL_MAX_ATTENDEES) {
        http_err_set(err, 400, json_is_array(arr) ? "too_many" : "wrong_type", "attendees",
                     "attendees must be an array of at most %d people", CAL_MAX_ATTENDEES);
        return -1;
    }
    free(e->attendees);
    e->attendees = calloc(json_array_size(arr) + 1, sizeof *e->attendees);
    e->nattendees = 0;
    if (!e->attendees) {
        http_err_set(err, 503, "unavailable", NULL, "out of memory");
        return -1;
    }
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        char sub[48];
        const char *email, *uid;
        int64_t id = 0;
        snprintf(sub, sizeof sub, "attendees[%zu]", i);
        if (!json_is_object(v) || http_json_only(v, fields, err) ||
            http_json_str(v, "email", false, 254, &email, err) ||
            http_json_str(v, "user_id", false, 16, &uid, err)) {
            if (!json_is_object(v)) http_err_set(err, 400, "wrong_type", "", "must be an object");
            http_err_prefix(err, sub);
            return -1;
        }
        if (!email && !uid) {
            http_err_set(err, 400, "missing_field", sub, "%s needs an email or a user_id", sub);
            return -1;
        }
        if (uid && base_id_parse(uid, strlen(uid), &id) != 0) {
            http_err_set(err, 400, "invalid_value", sub, "%s.user_id is not a user id", sub);
            return -1;
        }
        if (!uid && attendee_email_bad(email, sub, err)) return -1;
        cal_attendee *a = &e->attendees[e->nattendees];
        int rc = cal_user_lookup(db, uid ? NULL : email, id, &a->user_id, a->email, sizeof a->email);
        if (rc == CAL_ERROR) {
            http_err_set(err, 503, "unavailable", NULL, "the database did not answer; try again");
            return -1;
        }
        if (rc == CAL_NOT_FOUND) {
            http_err_set(err, 400, "unknown_user", sub, "%s: no registered user %s", sub, uid ? uid : email);
            return -1;
        }
        bool dup = a->user_id == e->created_by;
        for (int k = 0; k < e->nattendees && !dup; k++) dup = e->attendees[k].user_id == a->user_id;
        if (!dup) e->nattendees++;
    }
    return 0;
}

/* ---- the whole body ----------------------------------------------------- */

static int take_str(const json_t *body, const char *name, size_t max, text_kind kind, char **dst, bool *seen,
                    http_err *err)
{
    const char *v;
    json_t *raw = json_object_get(body, name);
    if (!raw) return 0;
    *seen = true;
    if (json_is_string(raw) && json_string_length(raw) == 0) v = ""; /* clearing is fine */
    else if (http_json_text(body, name, false, max, kind, &v, err) != 0) return -1;
    free(*dst);
    *dst = strdup(v ? v : "");
    return 0;
}

int cal_json_apply(store *db, tz_db *tz, const json_t *body, bool create, const char *calendar_zone, cal_event *e,
                   cal_input *seen, http_err *err)
{
    static const char *const fields[] = {"summary", "description", "location", "start", "end", "recurrence",
                                         "status", "attendees", "reminders", "calendar_id", "ical_uid", NULL};
    memset(seen, 0, sizeof *seen);
    if (http_json_only(body, fields, err) ||
        take_str(body, "summary", CAL_SUMMARY_MAX, TEXT_LINE, &e->summary, &seen->has_summary, err) ||
        take_str(body, "description", CAL_DESCRIPTION_MAX, TEXT_MULTILINE, &e->description, &seen->has_description,
                 err) ||
        take_str(body, "location", CAL_LOCATION_MAX, TEXT_LINE, &e->location, &seen->has_location, err))
        return -1;
    const char *uid, *status;
    if (http_json_text(body, "ical_uid", false, CAL_UID_MAX, TEXT_IDENT, &uid, err) ||
        http_json_str(body, "status", false, 11, &status, err))
        return -1;
    if (uid) {
        seen->has_uid = true;
        free(e->ical_uid);
        e->ical_uid = strdup(uid);
    }
    if (status) {
        if (strcmp(status, "confirmed") && strcmp(status, "tentative") && strcmp(status, "cancelled")) {
            http_err_set(err, 400, "invalid_value", "status", "status must be confirmed, tentative or cancelled");
            return -1;
        }
        seen->has_status = true;
        snprintf(e->status, sizeof e->status, "%s", status);
    }
    json_t *start = json_object_get(body, "start"), *end = json_object_get(body, "end");
    if (create && (!start || !end)) {
        http_err_set(err, 400, "missing_field", start ? "end" : "start", "%s is required", start ? "end" : "start");
        return -1;
    }
    if (start || end) {
        /* PATCH may send one side; the other keeps its wall time and zone. */
        bool sa = e->all_day, ea = e->all_day;
        char szone[CAL_ZONE_MAX], ezone[CAL_ZONE_MAX];
        snprintf(szone, sizeof szone, "%s", e->time_zone);
        snprintf(ezone, sizeof ezone, "%s", e->time_zone);
        const char *def = e->time_zone[0] ? e->time_zone : calendar_zone;
        if (start && cal_json_time(tz, start, "start", def, &sa, &e->start_local, szone, err)) return -1;
        if (end && cal_json_time(tz, end, "end", start ? szone[0] ? szone : def : def, &ea, &e->end_local, ezone,
                                 err))
            return -1;
        if (sa != ea) {
            http_err_set(err, 400, "invalid_value", "end", "start and end must both be dates or both date-times");
            return -1;
        }
        if (!sa && strcmp(szone, ezone) != 0) { /* keep one zone: end as wall time in start's */
            const tz_zone *zs = tz_db_get(tz, szone), *ze = tz_db_get(tz, ezone);
            civil_from_seconds(tz_utc_to_local(zs, tz_local_to_utc(ze, civil_to_seconds(&e->end_local))),
                               &e->end_local);
        }
        e->all_day = sa;
        snprintf(e->time_zone, sizeof e->time_zone, "%s", szone);
        seen->has_start = start != NULL;
        seen->has_end = end != NULL;
    }
    json_t *rec = json_object_get(body, "recurrence");
    if (rec && !json_is_null(rec)) {
        seen->has_recurrence = true;
        if (parse_recurrence(tz, rec, e, err) != 0) return -1;
    } else if (rec) {
        seen->has_recurrence = true;
        json_t *empty = json_array();
        parse_recurrence(tz, empty, e, err);
        json_decref(empty);
    }
    json_t *rem = json_object_get(body, "reminders");
    if (rem) {
        seen->has_reminders = true;
        if (cal_json_reminders(rem, "reminders", e->reminders, &e->nreminders, err) != 0) return -1;
    }
    json_t *att = json_object_get(body, "attendees");
    if (att) {
        seen->has_attendees = true;
        if (parse_attendees(db, att, e, err) != 0) return -1;
    }
    return 0;
}

/* ---- output ------------------------------------------------------------- */

static void write_time(jsonw *w, const char *key, const tz_zone *z, const char *zone_name, bool all_day,
                       const civil_time *local, int64_t utc_ms)
{
    char buf[40];
    jw_key(w, key);
    jw_obj(w);
    if (all_day) {
        rfc3339_format_date(local, buf, sizeof buf);
        jw_kplain(w, "date", buf);
    } else {
        int64_t secs = utc_ms / 1000;
        rfc3339_format(secs, tz_offset_at(z, secs), buf, sizeof buf);
        jw_kplain(w, "date_time", buf);
        if (zone_name[0]) jw_kstr(w, "time_zone", zone_name);
    }
    jw_obj_end(w);
}

static void write_dates_line(jsonw *w, const char *name, const cal_event *e, const int64_t *d, size_t n)
{
    size_t cap = 64 + n * 17;
    char *line = malloc(cap);
    if (!line) return;
    size_t len = e->all_day ? (size_t)snprintf(line, cap, "%s;VALUE=DATE:", name)
                 : e->time_zone[0] ? (size_t)snprintf(line, cap, "%s;TZID=%s:", name, e->time_zone)
                                   : (size_t)snprintf(line, cap, "%s:", name);
    for (size_t i = 0; i < n; i++) {
        civil_time t;
        civil_from_seconds(d[i], &t);
        if (i) line[len++] = ',';
        len += (size_t)civil_format_basic(&t, e->all_day, line + len, cap - len);
    }
    jw_strn(w, line, len);
    free(line);
}

static void write_recurrence(jsonw *w, const cal_event *e)
{
    jw_key(w, "recurrence");
    jw_arr(w);
    const char *cursor = e->rrule, *rule;
    int len;
    while (cal_rules_next(&cursor, &rule, &len)) { /* a line each (two when a file had two) */
        char *line = malloc((size_t)len + 7);
        if (line) {
            snprintf(line, (size_t)len + 7, "RRULE:%.*s", len, rule);
            jw_str(w, line);
            free(line);
        }
    }
    if (e->nexdates) write_dates_line(w, "EXDATE", e, e->exdates, e->nexdates);
    if (e->nrdates) write_dates_line(w, "RDATE", e, e->rdates, e->nrdates);
    jw_arr_end(w);
}

static void write_reminders(jsonw *w, const cal_reminder *r, int n)
{
    jw_key(w, "reminders");
    jw_arr(w);
    for (int i = 0; i < n; i++) {
        jw_obj(w);
        jw_kplain(w, "method", r[i].method);
        jw_kint(w, "minutes_before", r[i].minutes_before);
        jw_obj_end(w);
    }
    jw_arr_end(w);
}

static void write_attendees(jsonw *w, const cal_event *e, int64_t viewer)
{
    jw_key(w, "attendees");
    jw_arr(w);
    for (int i = 0; i < e->nattendees; i++) {
        const cal_attendee *a = &e->attendees[i];
        char id[17];
        base_id_format(a->user_id, id);
        jw_obj(w);
        jw_kstr(w, "email", a->email);
        jw_kplain(w, "user_id", id);
        jw_kplain(w, "response_status", cal_response_name(a->response));
        if (a->user_id == viewer) {
            jw_key(w, "self");
            jw_bool(w, true);
            if (a->has_reminders) write_reminders(w, a->reminders, a->nreminders);
        }
        jw_obj_end(w);
    }
    jw_arr_end(w);
}

/* What an instance may override; the series' values otherwise. */
typedef struct cal_shown {
    const char *summary, *description, *location, *status;
} cal_shown;

/* Members every instance of an event repeats unchanged. */
static void write_const(jsonw *w, const cal_event *e, int64_t viewer)
{
    char cal[17], org[17], created[32], updated[32];
    base_id_format(e->calendar_id, cal);
    base_id_format(e->created_by, org);
    rfc3339_format_ms(e->created_ms, created, sizeof created);
    rfc3339_format_ms(e->updated_ms, updated, sizeof updated);
    jw_kplain(w, "calendar_id", cal);
    jw_kstr(w, "ical_uid", e->ical_uid);
    jw_key(w, "organizer");
    jw_obj(w);
    jw_kplain(w, "id", org);
    jw_kstr(w, "email", e->organizer_email);
    jw_obj_end(w);
    jw_kplain(w, "created_by", org);
    write_attendees(w, e, viewer);
    write_reminders(w, e->reminders, e->nreminders);
    jw_kplain(w, "etag", e->etag);
    jw_kplain(w, "created", created);
    jw_kplain(w, "updated", updated);
}

static void write_shown(jsonw *w, const cal_shown *v)
{
    jw_kstr(w, "summary", v->summary);
    jw_kstr(w, "description", v->description);
    jw_kstr(w, "location", v->location);
    jw_kstr(w, "status", v->status);
}

/* Renders members once into a heap copy. */
static char *render_members(void (*fn)(jsonw *, const void *, int64_t), const void *arg, int64_t viewer,
                            size_t *len)
{
    jsonw t;
    jw_init(&t, 512);
    jw_obj(&t);
    fn(&t, arg, viewer);
    size_t n;
    const char *m = jw_open_members(&t, &n);
    char *copy = jw_failed(&t) ? NULL : malloc(n ? n : 1);
    if (copy) memcpy(copy, m, n);
    *len = copy ? n : 0;
    jw_free(&t);
    return copy;
}

static void const_thunk(jsonw *w, const void *e, int64_t viewer)
{
    write_const(w, e, viewer);
}

static void shown_thunk(jsonw *w, const void *e, int64_t viewer)
{
    const cal_event *ev = e;
    cal_shown v = {ev->summary, ev->description, ev->location, ev->status};
    (void)viewer;
    write_shown(w, &v);
}

/* The event's id-less members; cached on the event for its next instance.
 * The cache is rendering state, not data, hence the cast. */
static void write_base(jsonw *w, const cal_event *e, const char *id, const cal_shown *v, int64_t viewer)
{
    cal_event *m = (cal_event *)e;
    jw_kplain(w, "id", id);
    if (!m->json_const) m->json_const = render_members(const_thunk, e, viewer, &m->json_const_len);
    if (m->json_const) jw_members(w, m->json_const, m->json_const_len);
    else write_const(w, e, viewer);
    bool series_values = v->summary == e->summary && v->description == e->description &&
                         v->location == e->location && v->status == e->status;
    if (!series_values) {
        write_shown(w, v);
        return;
    }
    if (!m->json_shown) m->json_shown = render_members(shown_thunk, e, viewer, &m->json_shown_len);
    if (m->json_shown) jw_members(w, m->json_shown, m->json_shown_len);
    else write_shown(w, v);
}

static const tz_zone *zone_of(const cal_event *e, tz_db *tz)
{
    const char *zname = cal_event_zone_name(e);
    return zname[0] ? tz_db_get(tz, zname) : NULL;
}

void cal_write_event(jsonw *w, const cal_event *e, tz_db *tz, int64_t viewer)
{
    char id[17];
    base_id_format(e->id, id);
    cal_shown v = {e->summary, e->description, e->location, e->status};
    const tz_zone *z = zone_of(e, tz);
    int64_t start = tz_local_to_utc(z, civil_to_seconds(&e->start_local));
    int64_t end = tz_local_to_utc(z, civil_to_seconds(&e->end_local));
    jw_obj(w);
    write_base(w, e, id, &v, viewer);
    write_time(w, "start", z, e->time_zone, e->all_day, &e->start_local, start * 1000);
    write_time(w, "end", z, e->time_zone, e->all_day, &e->end_local, end * 1000);
    write_recurrence(w, e);
    jw_obj_end(w);
}

void cal_write_item(jsonw *w, const cal_item *it, tz_db *tz, int64_t viewer)
{
    const cal_event *e = it->ev;
    if (!it->recurring) {
        cal_write_event(w, e, tz, viewer);
        return;
    }
    const cal_override *o = it->ov;
    cal_shown v = {e->summary, e->description, e->location, e->status};
    if (o && o->summary) v.summary = o->summary;
    if (o && o->description) v.description = o->description;
    if (o && o->location) v.location = o->location;
    if (o && o->status[0]) v.status = o->status;
    if (o && o->cancelled) v.status = "cancelled";
    const tz_zone *z = zone_of(e, tz);
    char id[48], rid[17];
    cal_item_id(it, id, sizeof id);
    base_id_format(e->id, rid);
    civil_time sl, el, ol;
    civil_from_seconds(it->original_local, &ol);
    if (e->all_day && o && o->moved) {
        sl = o->start_local;
        el = o->end_local;
    } else if (e->all_day) {
        civil_from_seconds(it->original_local, &sl);
        civil_from_seconds(it->original_local + e->duration_s, &el);
    } else {
        civil_from_seconds(tz_utc_to_local(z, it->start_ms / 1000), &sl);
        civil_from_seconds(tz_utc_to_local(z, it->end_ms / 1000), &el);
    }
    jw_obj(w);
    write_base(w, e, id, &v, viewer);
    jw_kplain(w, "recurring_event_id", rid);
    write_time(w, "start", z, e->time_zone, e->all_day, &sl, it->start_ms);
    write_time(w, "end", z, e->time_zone, e->all_day, &el, it->end_ms);
    write_time(w, "original_start", z, e->time_zone, e->all_day, &ol, it->original_ms);
    jw_obj_end(w);
}

json_t *cal_json_calendar(const cal_calendar *c)
{
    char id[17], created[32];
    base_id_format(c->id, id);
    rfc3339_format_ms(c->created_ms, created, sizeof created);
    return json_pack("{s:s,s:s,s:s,s:b,s:s}", "id", id, "summary", c->summary, "time_zone", c->time_zone, "primary",
                     c->primary, "created", created);
}
