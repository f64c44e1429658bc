/* calendar_http.c -- calendars, events, instances, RSVP and free/busy over
 * HTTP. Visibility is decided in the store queries: an event is seen by its
 * organizer and its attendees; everyone else gets 404, never 403. */
#include "calendar/cal_http.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "calendar/cal_http.h"
#include "calendar/calendar.h"
#include "calendar/calendar_json.h"
#include "http/json.h"
#include "time/rfc3339.h"
#include "time/rrule.h"

cal_req cal_req_of(cal_http *cal, http_req *r)
{
    return (cal_req){.r = r, .cal = cal, .db = store_pool_at(cal->dbs, r->loop), .tz = cal->tz, .me = r->user_id};
}

void cal_req_db_error(cal_req *c)
{
    http_send_db_error(c->r, store_errmsg(c->db));
}

int cal_on_change(cal_changes *c, cal_change_fn fn, void *arg)
{
    if (c->n == CAL_MAX_LISTENERS) return -1;
    c->l[c->n].fn = fn;
    c->l[c->n].arg = arg;
    c->n++;
    return 0;
}

void cal_changed(const cal_changes *c, store *db)
{
    for (int i = 0; i < c->n; i++) c->l[i].fn(c->l[i].arg, db);
}

static void not_found(cal_req *c, const char *what)
{
    http_send_error(c->r, 404, "not_found", NULL, "no such %s", what);
}

static bool param_id(cal_req *c, int i, int64_t *id, const char *what)
{
    if (base_id_parse(c->r->params[i].ptr, c->r->params[i].len, id) == 0) return true;
    not_found(c, what);
    return false;
}

static void send_writer(cal_req *c, int status, jsonw *w)
{
    if (jw_failed(w)) http_send_error(c->r, 503, "unavailable", NULL, "out of memory");
    else http_send_body(c->r, status, "application/json", w->buf, w->len);
    jw_free(w);
}

static void send_event(cal_req *c, int status, const cal_event *e)
{
    char etag[32];
    jsonw w;
    snprintf(etag, sizeof etag, "\"%s\"", e->etag);
    http_add_header(c->r, "ETag", etag);
    jw_init(&w, 2048);
    cal_write_event(&w, e, c->tz, c->me);
    send_writer(c, status, &w);
}

/* ---- calendars ---------------------------------------------------------- */

static void handle_calendars_list(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_calendar *cals;
    size_t n;
    if (cal_calendar_list(c.db, c.me, &cals, &n) != CAL_OK) return cal_req_db_error(&c);
    json_t *items = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(items, cal_json_calendar(&cals[i]));
    free(cals);
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

static void handle_calendar_create(http_req *r, void *arg)
{
    static const char *const fields[] = {"summary", "time_zone", NULL};
    cal_req c = cal_req_of(arg, r);
    http_err e;
    const char *summary, *zone;
    json_t *body = http_json_body(r, &e);
    if (!body || http_json_only(body, fields, &e) ||
        http_json_text(body, "summary", true, CAL_SUMMARY_MAX, TEXT_LINE, &summary, &e) ||
        http_json_str(body, "time_zone", false, CAL_ZONE_MAX - 1, &zone, &e))
        goto bad;
    if (!zone) zone = "UTC";
    if (!tz_db_get(c.tz, zone)) {
        http_err_set(&e, 400, "invalid_value", "time_zone", "unknown time zone '%.64s'", zone);
        goto bad;
    }
    cal_calendar cal;
    int rc = cal_calendar_create(c.db, c.me, summary, zone, &cal);
    if (rc == CAL_CONFLICT) {
        http_err_set(&e, 409, "too_many", NULL, "at most %d calendars per user", CAL_MAX_CALENDARS);
        goto bad;
    }
    json_decref(body);
    if (rc != CAL_OK) return cal_req_db_error(&c);
    http_send_json(r, 201, cal_json_calendar(&cal));
    return;
bad:
    json_decref(body);
    http_send_err(r, &e);
}

static void handle_calendar_get(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    int64_t id;
    cal_calendar cal;
    if (!param_id(&c, 0, &id, "calendar")) return;
    int rc = cal_calendar_get(c.db, c.me, id, &cal);
    if (rc == CAL_NOT_FOUND) return not_found(&c, "calendar");
    if (rc != CAL_OK) return cal_req_db_error(&c);
    http_send_json(r, 200, cal_json_calendar(&cal));
}

/* PATCH /v1/calendars/{id}: a new summary. The time zone stays: floating
 * and all-day events keep their instants and their overrides' keys in it,
 * so a body may repeat it (a GET's answer sent back) but not change it. */
static void handle_calendar_patch(http_req *r, void *arg)
{
    static const char *const fields[] = {"summary", "time_zone", NULL};
    cal_req c = cal_req_of(arg, r);
    http_err e;
    int64_t id;
    cal_calendar cal;
    const char *summary, *zone;
    if (!param_id(&c, 0, &id, "calendar")) return;
    int rc = cal_calendar_get(c.db, c.me, id, &cal);
    if (rc == CAL_NOT_FOUND) return not_found(&c, "calendar");
    if (rc != CAL_OK) return cal_req_db_error(&c);
    json_t *body = http_json_body(r, &e);
    if (!body || http_json_only(body, fields, &e) ||
        http_json_text(body, "summary", false, CAL_SUMMARY_MAX, TEXT_LINE, &summary, &e) ||
        http_json_str(body, "time_zone", false, CAL_ZONE_MAX - 1, &zone, &e))
        goto bad;
    if (zone && strcmp(zone, cal.time_zone) != 0) {
        http_err_set(&e, 400, "invalid_value", "time_zone",
                     "a calendar's time zone cannot be changed (it is '%s'); make a calendar in the new one",
                     cal.time_zone);
        goto bad;
    }
    rc = summary ? cal_calendar_rename(c.db, c.me, id, summary) : CAL_OK;
    if (rc == CAL_OK && summary) snprintf(cal.summary, sizeof cal.summary, "%s", summary);
    json_decref(body);
    if (rc == CAL_NOT_FOUND) return not_found(&c, "calendar");
    if (rc != CAL_OK) return cal_req_db_error(&c);
    http_send_json(r, 200, cal_json_calendar(&cal));
    return;
bad:
    json_decref(body);
    http_send_err(r, &e);
}

static void handle_calendar_delete(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    int64_t id;
    if (!param_id(&c, 0, &id, "calendar")) return;
    int rc = cal_calendar_delete(c.db, c.me, id);
    if (rc == CAL_NOT_FOUND) return not_found(&c, "calendar");
    if (rc == CAL_FORBIDDEN)
        return http_send_error(r, 403, "forbidden", NULL, "the primary calendar cannot be deleted");
    if (rc != CAL_OK) return cal_req_db_error(&c);
    http_send_empty(r, 204);
}

/* ---- events ------------------------------------------------------------- */

/* The calendar an event goes to: calendar_id if given (must be the user's). */
static int target_calendar(cal_req *c, const json_t *body, cal_calendar *cal, http_err *e)
{
    const char *cid;
    int64_t id;
    if (http_json_str(body, "calendar_id", false, 16, &cid, e) != 0) return -1;
    int rc = cid ? (base_id_parse(cid, strlen(cid), &id) == 0 ? cal_calendar_get(c->db, c->me, id, cal) : CAL_NOT_FOUND)
                 : cal_primary(c->db, c->me, cal);
    if (rc == CAL_NOT_FOUND) {
        http_err_set(e, 404, "not_found", "calendar_id", "no such calendar");
        return -1;
    }
    if (rc != CAL_OK) {
        http_err_set(e, 503, "unavailable", NULL, "the database did not answer; try again");
        return -1;
    }
    return 0;
}

/* Validates, resolves and saves; answers the request in every case. */
static void finish_save(cal_req *c, cal_event *ev, bool insert, int status)
{
    char msg[200], field[64];
    if (cal_event_resolve(ev, c->tz, msg, sizeof msg, field, sizeof field) != 0)
        return http_send_error(c->r, 400, strcmp(field, "recurrence") ? "invalid_value" : "invalid_rrule", field,
                               "%s", msg);
    int rc = cal_event_save(c->db, ev, insert);
    if (rc == CAL_CONFLICT)
        return http_send_error(c->r, 409, "duplicate", "ical_uid", "an event with this ical_uid already exists here");
    if (rc != CAL_OK) return cal_req_db_error(c);
    bool org;
    cal_event fresh;
    if (cal_event_load(c->db, c->me, ev->id, &fresh, &org) != CAL_OK) return cal_req_db_error(c);
    send_event(c, status, &fresh);
    cal_event_free(&fresh);
}

static void handle_event_create(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    http_err e;
    cal_calendar cal;
    cal_input seen;
    cal_event ev = {0};
    json_t *body = http_json_body(r, &e);
    if (!body || target_calendar(&c, body, &cal, &e) != 0) goto bad;
    ev.calendar_id = cal.id;
    ev.created_by = c.me;
    snprintf(ev.status, sizeof ev.status, "confirmed");
    snprintf(ev.calendar_zone, sizeof ev.calendar_zone, "%s", cal.time_zone);
    if (cal_json_apply(c.db, c.tz, body, true, cal.time_zone, &ev, &seen, &e) != 0) goto bad;
    ev.id = base_id_new();
    if (!ev.ical_uid) {
        char id[17], uid[40];
        base_id_format(ev.id, id);
        snprintf(uid, sizeof uid, "%s@chime", id);
        ev.ical_uid = strdup(uid);
    }
    json_decref(body);
    finish_save(&c, &ev, true, 201);
    cal_event_free(&ev);
    return;
bad:
    json_decref(body);
    cal_event_free(&ev);
    http_send_err(r, &e);
}

/* Loads event id for the viewer: 404 for strangers, 403 when the
 * organizer is needed and the viewer only attends. Answers on failure. */
static bool load_event_id(cal_req *c, int64_t id, cal_event *ev, bool need_organizer)
{
    bool org;
    int rc = cal_event_load(c->db, c->me, id, ev, &org);
    if (rc == CAL_NOT_FOUND) {
        not_found(c, "event");
        return false;
    }
    if (rc != CAL_OK) {
        cal_req_db_error(c);
        return false;
    }
    if (need_organizer && !org) {
        cal_event_free(ev);
        http_send_error(c->r, 403, "forbidden", NULL, "only the organizer can change this event");
        return false;
    }
    return true;
}

/* The same for the path's {id}. */
static bool load_event(cal_req *c, cal_event *ev, bool need_organizer)
{
    int64_t id;
    return param_id(c, 0, &id, "event") && load_event_id(c, id, ev, need_organizer);
}

/* If-Match: the etag the client last saw must be the current one. */
static bool etag_matches(cal_req *c, const cal_event *ev)
{
    http_str h;
    if (!http_header(c->r, "if-match", &h)) return true;
    const char *p = h.ptr;
    size_t n = h.len;
    if (n == 1 && p[0] == '*') return true;
    if (n >= 2 && p[0] == 'W' && p[1] == '/') p += 2, n -= 2;
    if (n >= 2 && p[0] == '"' && p[n - 1] == '"') p++, n -= 2;
    if (n == strlen(ev->etag) && memcmp(p, ev->etag, n) == 0) return true;
    http_send_error(c->r, 412, "precondition_failed", "if-match", "the event changed since that etag");
    return false;
}

static void get_instance(cal_req *c, const http_str *id, const http_str *key);

/* {id} may also be an instance id from a listing, {event}_{original
 * start}: clients follow the ids they are shown (Google Calendar answers
 * them the same way). */
static void handle_event_get(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    const char *us = memchr(r->params[0].ptr, '_', r->params[0].len);
    if (us) {
        http_str id = {r->params[0].ptr, (size_t)(us - r->params[0].ptr)};
        http_str key = {us + 1, r->params[0].len - id.len - 1};
        return get_instance(&c, &id, &key);
    }
    cal_event ev;
    if (!load_event(&c, &ev, false)) return;
    send_event(&c, 200, &ev);
    cal_event_free(&ev);
}

static void handle_event_patch(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    http_err e;
    cal_event ev;
    cal_input seen;
    cal_calendar cal;
    if (!load_event(&c, &ev, true)) return;
    json_t *body = NULL;
    if (!etag_matches(&c, &ev)) goto done;
    body = http_json_body(r, &e);
    if (!body) goto bad;
    if (json_object_get(body, "calendar_id")) {
        if (target_calendar(&c, body, &cal, &e) != 0) goto bad;
        ev.calendar_id = cal.id;
        snprintf(ev.calendar_zone, sizeof ev.calendar_zone, "%s", cal.time_zone);
    }
    if (cal_json_apply(c.db, c.tz, body, false, ev.calendar_zone, &ev, &seen, &e) != 0) goto bad;
    /* Overrides are keyed by original starts; new times or a new rule make
     * them meaningless, as in Google Calendar. */
    if ((seen.has_start || seen.has_end || seen.has_recurrence) && cal_overrides_clear(c.db, ev.id) != CAL_OK) {
        cal_req_db_error(&c);
        goto done;
    }
    finish_save(&c, &ev, false, 200);
    goto done;
bad:
    http_send_err(r, &e);
done:
    json_decref(body);
    cal_event_free(&ev);
}

static void handle_event_delete(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_event ev;
    if (!load_event(&c, &ev, true)) return;
    if (etag_matches(&c, &ev)) {
        if (cal_event_delete(c.db, ev.id) != CAL_OK) cal_req_db_error(&c);
        else http_send_empty(r, 204);
    }
    cal_event_free(&ev);
}

/* ---- listing ------------------------------------------------------------ */

static bool query_instant(cal_req *c, const char *name, bool required, int64_t *ms)
{
    char buf[48];
    rfc3339 t;
    int rc = http_query(c->r, name, buf, sizeof buf);
    if (rc == 0 && !required) return true;
    if (rc != 1 || rfc3339_parse(buf, strlen(buf), &t) != 0 || !t.has_offset) {
        http_send_error(c->r, 400, rc == 0 ? "missing_field" : "invalid_value", name,
                        "%s must be an RFC 3339 instant with an offset, like 2026-11-01T00:00:00Z", name);
        return false;
    }
    *ms = (civil_to_seconds(&t.local) - t.offset) * 1000 + t.millis;
    return true;
}

static void cursor_encode(const cal_item *it, char *out, size_t size)
{
    char raw[80];
    int n = snprintf(raw, sizeof raw, "%lld.%lld.%lld", (long long)it->start_ms, (long long)it->ev->id,
                     (long long)it->original_ms);
    sodium_bin2base64(out, size, (const unsigned char *)raw, (size_t)n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

static bool cursor_decode(cal_req *c, cal_query *q)
{
    char tok[128], raw[96];
    size_t len;
    int rc = http_query(c->r, "page_token", tok, sizeof tok);
    if (rc == 0) return true;
    long long a, b, d;
    char extra;
    if (rc < 0 || sodium_base642bin((unsigned char *)raw, sizeof raw - 1, tok, strlen(tok), NULL, &len, NULL,
                                    sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        (raw[len] = '\0', sscanf(raw, "%lld.%lld.%lld%c", &a, &b, &d, &extra) != 3)) {
        http_send_error(c->r, 400, "invalid_value", "page_token", "page_token is not one this server gave out");
        return false;
    }
    q->has_cursor = true;
    q->cursor_ms = a;
    q->cursor_event = b;
    q->cursor_orig = d;
    return true;
}

/* from, to, page_token, max_results and calendar_id of a listing. */
static bool list_query(cal_req *c, cal_query *q)
{
    char buf[24];
    memset(q, 0, sizeof *q);
    q->viewer = c->me;
    q->limit = CAL_DEFAULT_PAGE;
    if (!query_instant(c, "from", true, &q->from_ms) || !query_instant(c, "to", true, &q->to_ms)) return false;
    if (q->to_ms <= q->from_ms) {
        http_send_error(c->r, 400, "invalid_value", "to", "to must be after from");
        return false;
    }
    if (q->to_ms - q->from_ms > (int64_t)CAL_MAX_RANGE_DAYS * 86400000) {
        http_send_error(c->r, 400, "invalid_value", "to", "a range spans at most %d days", CAL_MAX_RANGE_DAYS);
        return false;
    }
    int rc = http_query(c->r, "max_results", buf, sizeof buf);
    if (rc != 0) {
        char *end;
        long v = rc == 1 ? strtol(buf, &end, 10) : 0;
        if (rc != 1 || *end || v < 1 || v > CAL_MAX_PAGE) {
            http_send_error(c->r, 400, "invalid_value", "max_results", "max_results must be 1 to %d", CAL_MAX_PAGE);
            return false;
        }
        q->limit = (size_t)v;
    }
    rc = http_query(c->r, "calendar_id", buf, sizeof buf);
    if (rc != 0) {
        cal_calendar cal;
        int64_t id;
        int found = rc == 1 && base_id_parse(buf, strlen(buf), &id) == 0 ? cal_calendar_get(c->db, c->me, id, &cal)
                                                                         : CAL_NOT_FOUND;
        if (found != CAL_OK) {
            if (found == CAL_NOT_FOUND) http_send_error(c->r, 404, "not_found", "calendar_id", "no such calendar");
            else cal_req_db_error(c);
            return false;
        }
        q->calendar_id = id;
    }
    return cursor_decode(c, q);
}

static void send_listing(cal_req *c, const cal_query *q)
{
    cal_listing l;
    if (cal_list(c->db, c->tz, q, &l) != CAL_OK) {
        cal_listing_free(&l);
        return cal_req_db_error(c);
    }
    jsonw w;
    jw_init(&w, 1024 + l.nitems * 900);
    jw_obj(&w);
    jw_key(&w, "items");
    jw_arr(&w);
    for (size_t i = 0; i < l.nitems; i++) cal_write_item(&w, &l.items[i], c->tz, c->me);
    jw_arr_end(&w);
    jw_key(&w, "next_page_token");
    if (l.more && l.nitems > 0) {
        char tok[128];
        cursor_encode(&l.items[l.nitems - 1], tok, sizeof tok);
        jw_str(&w, tok);
    } else {
        jw_null(&w);
    }
    jw_obj_end(&w);
    cal_listing_free(&l);
    send_writer(c, 200, &w);
}

static void handle_events_list(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_query q;
    if (list_query(&c, &q)) send_listing(&c, &q);
}

static void handle_instances_list(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_event ev;
    cal_query q;
    if (!load_event(&c, &ev, false)) return;
    if (list_query(&c, &q)) {
        q.event_id = ev.id;
        send_listing(&c, &q);
    }
    cal_event_free(&ev);
}

/* ---- one instance ------------------------------------------------------- */

typedef struct cal_instance {
    cal_event ev;
    cal_series series;
    int64_t original_ms, original_local;
} cal_instance;

/* Loads the series id and checks key (an original start) names one of
 * its instances (or an existing override). Answers on failure. */
static bool load_instance_at(cal_req *c, const http_str *id_text, const http_str *key, bool need_organizer,
                             cal_instance *in)
{
    char msg[160];
    int64_t id;
    if (base_id_parse(id_text->ptr, id_text->len, &id) != 0) {
        not_found(c, "instance");
        return false;
    }
    if (!load_event_id(c, id, &in->ev, need_organizer)) return false;
    if (cal_series_init(&in->series, &in->ev, c->tz, msg, sizeof msg) != 0 || !in->series.recurring) {
        cal_event_free(&in->ev);
        not_found(c, "instance");
        return false;
    }
    in->original_ms = cal_parse_instance_key(&in->series, key->ptr, key->len);
    cal_override o;
    bool exists = in->original_ms >= 0 &&
                  (cal_series_has_instance(&in->series, in->original_ms, &in->original_local) ||
                   (cal_override_load(c->db, in->ev.id, in->original_ms, &o) == CAL_OK &&
                    (cal_override_free(&o), in->original_local = tz_utc_to_local(in->series.zone, in->original_ms / 1000),
                     true)));
    if (!exists) {
        cal_event_free(&in->ev);
        not_found(c, "instance");
        return false;
    }
    return true;
}

/* The instance the path's {id} and {original_start} name, for its organizer. */
static bool load_instance(cal_req *c, cal_instance *in)
{
    return load_instance_at(c, &c->r->params[0], &c->r->params[1], true, in);
}

static void send_instance(cal_req *c, cal_instance *in, const cal_override *o)
{
    cal_item it = {.ev = &in->ev, .ov = o, .recurring = true, .original_ms = in->original_ms,
                   .original_local = in->original_local};
    it.start_ms = o && o->moved ? o->start_ms : cal_series_utc_ms(&in->series, in->original_local);
    it.end_ms = o && o->moved ? o->end_ms : cal_series_end_ms(&in->series, in->original_local);
    jsonw w;
    jw_init(&w, 2048);
    cal_write_item(&w, &it, c->tz, c->me);
    send_writer(c, 200, &w);
}

/* Fills a one-instance override from a PATCH body. */
static int override_apply(cal_req *c, cal_instance *in, const json_t *body, cal_override *o, http_err *e)
{
    static const char *const fields[] = {"summary", "description", "location", "status", "start", "end", NULL};
    const char *s;
    if (http_json_only(body, fields, e)) return -1;
    const char *names[] = {"summary", "description", "location"};
    char **dst[] = {&o->summary, &o->description, &o->location};
    size_t max[] = {CAL_SUMMARY_MAX, CAL_DESCRIPTION_MAX, CAL_LOCATION_MAX};
    text_kind kinds[] = {TEXT_LINE, TEXT_MULTILINE, TEXT_LINE};
    for (int i = 0; i < 3; i++) {
        if (http_json_text(body, names[i], false, max[i], kinds[i], &s, e) != 0) return -1;
        if (s) {
            free(*dst[i]);
            *dst[i] = strdup(s);
        }
    }
    if (http_json_str(body, "status", false, 11, &s, e) != 0) return -1;
    if (s && strcmp(s, "confirmed") && strcmp(s, "tentative") && strcmp(s, "cancelled")) {
        http_err_set(e, 400, "invalid_value", "status", "status must be confirmed, tentative or cancelled");
        return -1;
    }
    if (s) snprintf(o->status, sizeof o->status, "%s", s);
    o->cancelled = s && strcmp(s, "cancelled") == 0;
    json_t *start = json_object_get(body, "start"), *end = json_object_get(body, "end");
    if (!start && !end) return 0;
    const char *zone = cal_event_zone_name(&in->ev);
    bool sa = in->ev.all_day, ea = sa;
    char sz[CAL_ZONE_MAX], ez[CAL_ZONE_MAX];
    civil_time sl, el;
    civil_from_seconds(o->moved ? civil_to_seconds(&o->start_local) : in->original_local, &sl);
    civil_from_seconds(o->moved ? civil_to_seconds(&o->end_local) : in->original_local + (sa ? in->ev.duration_s : 0),
                       &el);
    if (start && cal_json_time(c->tz, start, "start", zone, &sa, &sl, sz, e)) return -1;
    if (end && cal_json_time(c->tz, end, "end", zone, &ea, &el, ez, e)) return -1;
    if (sa != in->ev.all_day || ea != in->ev.all_day) {
        http_err_set(e, 400, "invalid_value", start ? "start" : "end",
                     "an instance of a%s series takes %s", sa ? "n all-day" : " timed",
                     in->ev.all_day ? "dates" : "date-times");
        return -1;
    }
    const tz_zone *z = in->series.zone;
    if (!sa) { /* both as wall times in the series' zone */
        if (start && strcmp(sz, zone)) civil_from_seconds(tz_utc_to_local(z, tz_local_to_utc(tz_db_get(c->tz, sz), civil_to_seconds(&sl))), &sl);
        if (end && strcmp(ez, zone)) civil_from_seconds(tz_utc_to_local(z, tz_local_to_utc(tz_db_get(c->tz, ez), civil_to_seconds(&el))), &el);
    }
    int64_t s_utc = tz_local_to_utc(z, civil_to_seconds(&sl));
    int64_t e_utc = end ? tz_local_to_utc(z, civil_to_seconds(&el)) : s_utc + (sa ? 0 : in->ev.duration_s);
    if (!end) {
        if (sa) civil_from_seconds(civil_to_seconds(&sl) + in->ev.duration_s, &el);
        if (sa) e_utc = tz_local_to_utc(z, civil_to_seconds(&el));
        else civil_from_seconds(tz_utc_to_local(z, e_utc), &el);
    }
    if (e_utc < s_utc || (sa && e_utc == s_utc)) { /* a timed instance may be an instant */
        http_err_set(e, 400, "invalid_value", "end", sa ? "end must be after start" : "end must not be before start");
        return -1;
    }
    o->moved = true;
    o->start_local = sl;
    o->end_local = el;
    o->start_ms = s_utc * 1000;
    o->end_ms = e_utc * 1000;
    return 0;
}

static void handle_instance_delete(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_instance in;
    char scope[16] = "";
    if (http_query(r, "scope", scope, sizeof scope) < 0 || (scope[0] && strcmp(scope, "following"))) {
        return http_send_error(r, 400, "invalid_value", "scope", "scope must be 'following' or absent");
    }
    if (!load_instance(&c, &in)) return;
    char msg[200], field[64];
    bool first = in.original_local == civil_to_seconds(&in.ev.start_local);
    if (scope[0] && first) { /* the whole series goes */
        if (cal_event_delete(c.db, in.ev.id) != CAL_OK) cal_req_db_error(&c);
        else http_send_empty(r, 204);
    } else if (scope[0]) {
        if (cal_series_truncate(&in.ev, &in.series, in.original_local, in.original_ms) != 0 ||
            cal_event_resolve(&in.ev, c.tz, msg, sizeof msg, field, sizeof field) != 0) {
            http_send_error(r, 400, "invalid_value", "original_start", "the series cannot be cut there");
        } else if (cal_overrides_drop_from(c.db, in.ev.id, in.original_ms) != CAL_OK ||
                   cal_event_save(c.db, &in.ev, false) != CAL_OK) {
            cal_req_db_error(&c);
        } else {
            http_send_empty(r, 204);
        }
    } else {
        int rc = cal_event_add_exdate(&in.ev, in.original_local);
        if (rc == CAL_CONFLICT)
            http_send_error(r, 409, "too_many", "original_start", "a series has at most %d EXDATEs", CAL_MAX_DATES);
        else if (rc != CAL_OK)
            http_send_error(r, 503, "unavailable", NULL, "out of memory");
        else if (cal_event_resolve(&in.ev, c.tz, msg, sizeof msg, field, sizeof field) != 0 ||
                 cal_override_delete(c.db, in.ev.id, in.original_ms) != CAL_OK ||
                 cal_event_save(c.db, &in.ev, false) != CAL_OK)
            cal_req_db_error(&c);
        else
            http_send_empty(r, 204);
    }
    cal_event_free(&in.ev);
}

/* Splits the series at the instance: the old one ends before it, a new one
 * starts there with the edits applied (cal_edit.c). Answers. */
static void split_series(cal_req *c, cal_instance *in, const json_t *body)
{
    http_err e;
    cal_input seen;
    char msg[200], field[64];
    cal_event next;
    cal_event *old = &in->ev;
    if (cal_series_split(old, &in->series, in->original_local, in->original_ms, base_id_new(), &next) != 0) {
        http_send_error(c->r, 400, "invalid_value", "original_start", "the series cannot be split there");
        goto out;
    }
    if (cal_json_apply(c->db, c->tz, body, false, old->calendar_zone, &next, &seen, &e) != 0) {
        http_send_err(c->r, &e);
        goto out;
    }
    if (cal_event_resolve(old, c->tz, msg, sizeof msg, field, sizeof field) != 0 ||
        cal_event_resolve(&next, c->tz, msg, sizeof msg, field, sizeof field) != 0) {
        http_send_error(c->r, 400, "invalid_value", field, "%s", msg);
        goto out;
    }
    bool moved_times = seen.has_start || seen.has_end || seen.has_recurrence;
    bool org;
    cal_event fresh;
    if (cal_series_split_save(c->db, old, &next, in->original_ms, moved_times) != CAL_OK ||
        cal_event_load(c->db, c->me, next.id, &fresh, &org) != CAL_OK) {
        cal_req_db_error(c);
        goto out;
    }
    send_event(c, 200, &fresh);
    cal_event_free(&fresh);
out:
    cal_event_free(&next);
}

static void handle_instance_patch(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_instance in;
    http_err e;
    char scope[16] = "";
    if (http_query(r, "scope", scope, sizeof scope) < 0 || (scope[0] && strcmp(scope, "following")))
        return http_send_error(r, 400, "invalid_value", "scope", "scope must be 'following' or absent");
    json_t *body = http_json_body(r, &e);
    if (!body) return http_send_err(r, &e);
    if (!load_instance(&c, &in)) {
        json_decref(body);
        return;
    }
    if (scope[0]) {
        split_series(&c, &in, body);
    } else {
        cal_override o;
        if (cal_override_load(c.db, in.ev.id, in.original_ms, &o) != CAL_OK) {
            memset(&o, 0, sizeof o);
            o.event_id = in.ev.id;
            o.original_ms = in.original_ms;
            o.start_ms = cal_series_utc_ms(&in.series, in.original_local);
            o.end_ms = cal_series_end_ms(&in.series, in.original_local);
        }
        if (override_apply(&c, &in, body, &o, &e) != 0) http_send_err(r, &e);
        else if (cal_override_save(c.db, &o, in.ev.all_day) != CAL_OK || cal_event_touch(c.db, in.ev.id) != CAL_OK)
            cal_req_db_error(&c);
        else
            send_instance(&c, &in, &o);
        cal_override_free(&o);
    }
    json_decref(body);
    cal_event_free(&in.ev);
}

/* GET of an instance id: for anyone who may see the event. */
static void get_instance(cal_req *c, const http_str *id, const http_str *key)
{
    cal_instance in;
    if (!load_instance_at(c, id, key, false, &in)) return;
    cal_override o;
    int rc = cal_override_load(c->db, in.ev.id, in.original_ms, &o);
    if (rc == CAL_OK) {
        send_instance(c, &in, &o);
        cal_override_free(&o);
    } else if (rc == CAL_NOT_FOUND) {
        send_instance(c, &in, NULL);
    } else {
        cal_req_db_error(c);
    }
    cal_event_free(&in.ev);
}

/* ---- invitations -------------------------------------------------------- */

static void handle_rsvp(http_req *r, void *arg)
{
    static const char *const fields[] = {"status", "reminders", NULL};
    cal_req c = cal_req_of(arg, r);
    http_err e;
    cal_event ev;
    if (!load_event(&c, &ev, false)) return;
    const char *status;
    cal_response resp;
    cal_reminder rem[CAL_MAX_REMINDERS];
    int nrem = 0;
    json_t *body = http_json_body(r, &e), *rj = NULL;
    if (!body || http_json_only(body, fields, &e) || http_json_str(body, "status", true, 16, &status, &e)) goto bad;
    if (cal_response_parse(status, &resp) != 0) {
        http_err_set(&e, 400, "invalid_value", "status", "status must be needs_action, accepted, declined or tentative");
        goto bad;
    }
    rj = json_object_get(body, "reminders");
    if (rj && !json_is_null(rj) && cal_json_reminders(rj, "reminders", rem, &nrem, &e) != 0) goto bad;
    /* "reminders": null goes back to the event's reminders. */
    int rc = cal_rsvp(c.db, ev.id, c.me, resp, rj && json_is_null(rj) ? NULL : rem, nrem, rj != NULL);
    if (rc == CAL_NOT_FOUND) {
        http_err_set(&e, 403, "forbidden", NULL, "only invited attendees answer an invitation");
        goto bad;
    }
    if (rc != CAL_OK || cal_event_touch(c.db, ev.id) != CAL_OK) {
        cal_req_db_error(&c);
    } else {
        cal_event fresh;
        bool org;
        if (cal_event_load(c.db, c.me, ev.id, &fresh, &org) != CAL_OK) cal_req_db_error(&c);
        else send_event(&c, 200, &fresh), cal_event_free(&fresh);
    }
    json_decref(body);
    cal_event_free(&ev);
    return;
bad:
    json_decref(body);
    cal_event_free(&ev);
    http_send_err(r, &e);
}

/* ---- free/busy ---------------------------------------------------------- */

#define FREEBUSY_MAX_USERS 50
#define FREEBUSY_MAX_DAYS 366
#define FREEBUSY_MAX_INTERVALS 5000

static bool body_instant(const json_t *body, const char *name, int64_t *ms, http_err *e)
{
    const char *s;
    rfc3339 t;
    if (http_json_str(body, name, true, 40, &s, e) != 0) return false;
    if (rfc3339_parse(s, strlen(s), &t) != 0 || !t.has_offset) {
        http_err_set(e, 400, "invalid_value", name, "%s must be an RFC 3339 instant with an offset", name);
        return false;
    }
    *ms = (civil_to_seconds(&t.local) - t.offset) * 1000 + t.millis;
    return true;
}

static json_t *busy_of(cal_req *c, int64_t who, int64_t from, int64_t to)
{
    cal_query q = {.viewer = who, .from_ms = from, .to_ms = to, .limit = FREEBUSY_MAX_INTERVALS, .busy_only = true};
    cal_interval *iv;
    size_t n;
    if (cal_busy(c->db, c->tz, &q, &iv, &n) != CAL_OK) return NULL;
    json_t *busy = json_array();
    char a[32], b[32];
    for (size_t i = 0; i < n; i++) {
        rfc3339_format(iv[i].start_ms / 1000, 0, a, sizeof a);
        rfc3339_format(iv[i].end_ms / 1000, 0, b, sizeof b);
        json_array_append_new(busy, json_pack("{s:s,s:s}", "start", a, "end", b));
    }
    free(iv);
    return busy;
}

static void handle_freebusy(http_req *r, void *arg)
{
    static const char *const fields[] = {"users", "from", "to", NULL};
    cal_req c = cal_req_of(arg, r);
    http_err e;
    int64_t from, to;
    json_t *body = http_json_body(r, &e), *users;
    if (!body || http_json_only(body, fields, &e) || !body_instant(body, "from", &from, &e) ||
        !body_instant(body, "to", &to, &e))
        goto bad;
    if (to <= from || to - from > (int64_t)FREEBUSY_MAX_DAYS * 86400000) {
        http_err_set(&e, 400, "invalid_value", "to", "to must be after from, at most %d days later", FREEBUSY_MAX_DAYS);
        goto bad;
    }
    users = json_object_get(body, "users");
    if (!json_is_array(users) || json_array_size(users) == 0 || json_array_size(users) > FREEBUSY_MAX_USERS) {
        http_err_set(&e, 400, "invalid_value", "users", "users must be a list of 1 to %d emails or user ids",
                     FREEBUSY_MAX_USERS);
        goto bad;
    }
    json_t *out = json_object(), *v;
    size_t i;
    json_array_foreach(users, i, v) {
        const char *key = json_string_value(v);
        int64_t id = 0, uid;
        char email[256];
        if (!key || json_string_length(v) == 0 || json_string_length(v) > 254) {
            json_decref(out);
            http_err_set(&e, 400, "invalid_value", "users", "users[%zu] must be an email or a user id", i);
            goto bad;
        }
        bool by_id = base_id_parse(key, strlen(key), &id) == 0;
        int rc = cal_user_lookup(c.db, by_id ? NULL : key, id, &uid, email, sizeof email);
        json_t *busy = rc == CAL_OK ? busy_of(&c, uid, from, to) : NULL;
        if (rc == CAL_ERROR || (rc == CAL_OK && !busy)) {
            json_decref(out);
            json_decref(body);
            return cal_req_db_error(&c);
        }
        json_object_set_new(out, key, busy ? json_pack("{s:o}", "busy", busy)
                                          : json_pack("{s:s,s:[]}", "error", "not_found", "busy"));
    }
    char a[32], b[32];
    rfc3339_format(from / 1000, 0, a, sizeof a);
    rfc3339_format(to / 1000, 0, b, sizeof b);
    json_decref(body);
    http_send_json(r, 200, json_pack("{s:s,s:s,s:o}", "from", a, "to", b, "users", out));
    return;
bad:
    json_decref(body);
    http_send_err(r, &e);
}

/* A write, then the news of it (cal_changes): the triggers of the write
 * marked what changed; the listeners (the reminders' recompute) act on the
 * marks. The loop is read before the handler runs: the request may be
 * gone once it has answered. */
#define THEN_ANNOUNCE(h)                                                                                    \
    static void h##_announced(http_req *r, void *arg)                                                       \
    {                                                                                                       \
        cal_http *cal = arg;                                                                                \
        int loop = r->loop;                                                                                 \
        h(r, arg);                                                                                          \
        cal_changed(&cal->changes, store_pool_at(cal->dbs, loop));                                          \
    }
THEN_ANNOUNCE(handle_calendar_delete)
THEN_ANNOUNCE(handle_event_create)
THEN_ANNOUNCE(handle_event_patch)
THEN_ANNOUNCE(handle_event_delete)
THEN_ANNOUNCE(handle_instance_patch)
THEN_ANNOUNCE(handle_instance_delete)
THEN_ANNOUNCE(handle_rsvp)

void calendar_http_register(cal_http *c, http_server *s)
{
    const unsigned A = HTTP_ROUTE_AUTH;
    http_route(s, HTTP_GET, "/v1/calendars", handle_calendars_list, c, A);
    http_route(s, HTTP_POST, "/v1/calendars", handle_calendar_create, c, A);
    http_route(s, HTTP_GET, "/v1/calendars/{id}", handle_calendar_get, c, A);
    http_route(s, HTTP_PATCH, "/v1/calendars/{id}", handle_calendar_patch, c, A);
    http_route(s, HTTP_DELETE, "/v1/calendars/{id}", handle_calendar_delete_announced, c, A);
    http_route(s, HTTP_GET, "/v1/events", handle_events_list, c, A);
    http_route(s, HTTP_POST, "/v1/events", handle_event_create_announced, c, A);
    http_route(s, HTTP_GET, "/v1/events/{id}", handle_event_get, c, A);
    http_route(s, HTTP_PATCH, "/v1/events/{id}", handle_event_patch_announced, c, A);
    http_route(s, HTTP_DELETE, "/v1/events/{id}", handle_event_delete_announced, c, A);
    http_route(s, HTTP_GET, "/v1/events/{id}/instances", handle_instances_list, c, A);
    http_route(s, HTTP_PATCH, "/v1/events/{id}/instances/{original_start}", handle_instance_patch_announced, c, A);
    http_route(s, HTTP_DELETE, "/v1/events/{id}/instances/{original_start}", handle_instance_delete_announced, c, A);
    http_route(s, HTTP_POST, "/v1/events/{id}/rsvp", handle_rsvp_announced, c, A);
    http_route(s, HTTP_POST, "/v1/freebusy", handle_freebusy, c, A);
    ical_http_register(c, s);
    explain_http_register(c, s);
}
