/* ical_http.c -- iCalendar over HTTP: export, import, and the secret
 * subscription feed.
 *
 *   GET    /v1/calendars/{id}/export.ics   the calendar as text/calendar
 *   POST   /v1/calendars/{id}/import       a text/calendar body, upserted by UID
 *   POST   /v1/calendars/{id}/feed         a new feed URL (the old one stops working)
 *   DELETE /v1/calendars/{id}/feed         no feed URL at all
 *   GET    /v1/feeds/{token}.ics           the feed, no sign-in: the token is the key
 *
 * Only the calendar's owner may use the first four; others get 404. Only
 * the SHA-256 of a feed token is stored, so a database leak does not leak
 * working feed URLs. An export holds the events stored in that calendar
 * (the owner's); invitations from other people live in their organizers'
 * calendars and are not copied, as in Google Calendar's export. */
#include "calendar/cal_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "calendar/cal_ical.h"
#include "calendar/cal_http.h"
#include "calendar/calendar.h"

#define FEED_TOKEN_BYTES 32

/* The caller's own calendar {id}; answers 404/503 and returns false otherwise. */
static bool own_calendar(cal_req *c, cal_calendar *cal)
{
    int64_t id;
    int rc = base_id_parse(c->r->params[0].ptr, c->r->params[0].len, &id) == 0 ? cal_calendar_get(c->db, c->me, id, cal)
                                                                               : CAL_NOT_FOUND;
    if (rc == CAL_OK) return true;
    if (rc == CAL_NOT_FOUND) http_send_error(c->r, 404, "not_found", NULL, "no such calendar");
    else cal_req_db_error(c);
    return false;
}

/* ---- export ------------------------------------------------------------- */

/* Does If-None-Match name this etag ("*" or a list of quoted tags)? */
static bool etag_seen(http_req *r, const char *etag)
{
    http_str h;
    if (!http_header(r, "if-none-match", &h)) return false;
    size_t n = strlen(etag);
    for (size_t i = 0; i < h.len; i++) {
        if (h.ptr[i] == '*') return true;
        if (h.len - i >= n && memcmp(h.ptr + i, etag, n) == 0) return true;
    }
    return false;
}

/* The whole file is built in memory: an export is bounded by what the
 * calendar holds, and the ETag needs all of it anyway. */
static void send_calendar(cal_req *c, const cal_calendar *cal, bool attachment)
{
    cal_listing l;
    if (cal_calendar_events(c->db, cal->id, &l) != CAL_OK) {
        cal_listing_free(&l);
        return cal_req_db_error(c);
    }
    size_t len;
    char *text = ical_write(cal, l.events, l.nevents, l.overrides, l.noverrides, c->tz, base_now_ms(), &len);
    cal_listing_free(&l);
    if (!text) return http_send_error(c->r, 500, "internal", NULL, "out of memory writing the calendar");
    char hash[65], etag[68];
    base_sha256_hex(text, len, hash);
    snprintf(etag, sizeof etag, "\"%.32s\"", hash);
    http_add_header(c->r, "ETag", etag);
    http_add_header(c->r, "Cache-Control", "no-cache");
    if (etag_seen(c->r, etag)) {
        free(text);
        return http_send_empty(c->r, 304);
    }
    if (attachment) http_add_header(c->r, "Content-Disposition", "attachment; filename=\"calendar.ics\"");
    http_send_body(c->r, 200, "text/calendar; charset=utf-8", text, len);
    free(text);
}

static void handle_export(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_calendar cal;
    if (own_calendar(&c, &cal)) send_calendar(&c, &cal, true);
}

/* ---- feed --------------------------------------------------------------- */

static void handle_feed_create(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_calendar cal;
    if (!own_calendar(&c, &cal)) return;
    unsigned char raw[FEED_TOKEN_BYTES];
    char token[2 * FEED_TOKEN_BYTES + 1], hash[65], url[2 * FEED_TOKEN_BYTES + 32];
    base_random(raw, sizeof raw);
    base_hex(raw, sizeof raw, token);
    base_sha256_hex(token, strlen(token), hash);
    int rc = cal_feed_set(c.db, c.me, cal.id, hash);
    if (rc == CAL_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such calendar");
    if (rc != CAL_OK) return cal_req_db_error(&c);
    snprintf(url, sizeof url, "/v1/feeds/%s.ics", token);
    http_send_json(r, 201, json_pack("{s:s}", "url", url));
}

static void handle_feed_delete(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_calendar cal;
    if (!own_calendar(&c, &cal)) return;
    int rc = cal_feed_set(c.db, c.me, cal.id, NULL);
    if (rc == CAL_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such calendar");
    if (rc != CAL_OK) return cal_req_db_error(&c);
    http_send_empty(r, 204);
}

static void handle_feed_get(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    http_str t = r->params[0];
    if (t.len > 4 && strncasecmp(t.ptr + t.len - 4, ".ics", 4) == 0) t.len -= 4;
    bool hex = t.len == 2 * FEED_TOKEN_BYTES;
    for (size_t i = 0; hex && i < t.len; i++)
        hex = (t.ptr[i] >= '0' && t.ptr[i] <= '9') || (t.ptr[i] >= 'a' && t.ptr[i] <= 'f');
    char hash[65];
    cal_calendar cal;
    int rc = CAL_NOT_FOUND;
    if (hex) {
        base_sha256_hex(t.ptr, t.len, hash);
        rc = cal_feed_lookup(c.db, hash, &cal);
    }
    if (rc == CAL_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such feed");
    if (rc != CAL_OK) return cal_req_db_error(&c);
    send_calendar(&c, &cal, false);
}

/* ---- import ------------------------------------------------------------- */

static void send_ical_error(http_req *r, const ical_err *e)
{
    char msg[300];
    if (e->line > 0) snprintf(msg, sizeof msg, "line %d: %s", e->line, e->msg);
    else snprintf(msg, sizeof msg, "%s", e->msg);
    json_t *j = json_pack("{s:{s:s,s:s,s:s,s:i}}", "error", "code", "invalid_ical", "message", msg, "field", "body",
                          "line", e->line);
    http_send_json(r, 422, j);
}

static bool is_text_calendar(http_req *r)
{
    http_str h;
    if (!http_header(r, "content-type", &h)) return false;
    return h.len >= 13 && strncasecmp(h.ptr, "text/calendar", 13) == 0 &&
           (h.len == 13 || h.ptr[13] == ';' || h.ptr[13] == ' ');
}

static void handle_import(http_req *r, void *arg)
{
    cal_req c = cal_req_of(arg, r);
    cal_calendar cal;
    if (!is_text_calendar(r))
        return http_send_error(r, 415, "unsupported_media_type", "content-type", "send the file as text/calendar");
    if (!own_calendar(&c, &cal)) return;
    ical_import im;
    ical_err err;
    if (ical_read(r->body.ptr ? r->body.ptr : "", r->body.len, c.tz, cal.time_zone, &im, &err) != 0)
        return send_ical_error(r, &err);
    cal_import_counts n = {0};
    int rc = store_begin(c.db) == STORE_OK ? cal_import_save(c.db, c.me, &cal, &im, &n) : CAL_ERROR;
    if (rc != CAL_OK) {
        store_rollback(c.db);
        ical_import_free(&im);
        if (rc == CAL_CONFLICT)
            return http_send_error(r, 409, "conflict", NULL, "another import changed this calendar; try again");
        return cal_req_db_error(&c);
    }
    if (store_commit(c.db) != STORE_OK) {
        ical_import_free(&im);
        return cal_req_db_error(&c);
    }
    json_t *skipped = json_array();
    for (size_t i = 0; i < im.nskips; i++)
        json_array_append_new(skipped, json_pack("{s:i,s:s,s:s}", "line", im.skips[i].line, "uid", im.skips[i].uid,
                                                 "reason", im.skips[i].reason));
    json_t *out = json_pack("{s:I,s:I,s:o,s:I,s:I}", "imported", (json_int_t)n.imported, "updated",
                            (json_int_t)n.updated, "skipped", skipped, "skipped_count", (json_int_t)im.nskipped,
                            "ignored_attendees", (json_int_t)n.ignored_attendees);
    ical_import_free(&im);
    http_send_json(r, 200, out);
}

/* An import, then the news of what it wrote (see calendar_http.c's
 * THEN_ANNOUNCE). */
static void handle_import_announced(http_req *r, void *arg)
{
    cal_http *cal = arg;
    int loop = r->loop;
    handle_import(r, arg);
    cal_changed(&cal->changes, store_pool_at(cal->dbs, loop));
}

void ical_http_register(cal_http *c, http_server *s)
{
    const unsigned A = HTTP_ROUTE_AUTH;
    http_route(s, HTTP_GET, "/v1/calendars/{id}/export.ics", handle_export, c, A);
    http_route(s, HTTP_POST, "/v1/calendars/{id}/import", handle_import_announced, c, A);
    http_route(s, HTTP_POST, "/v1/calendars/{id}/feed", handle_feed_create, c, A);
    http_route(s, HTTP_DELETE, "/v1/calendars/{id}/feed", handle_feed_delete, c, A);
    http_route(s, HTTP_GET, "/v1/feeds/{token}", handle_feed_get, c, HTTP_ROUTE_SECRET);
}
