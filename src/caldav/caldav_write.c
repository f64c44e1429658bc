/* caldav_write.c -- the writes: PUT and DELETE of a resource, MKCALENDAR
 * and extended MKCOL (RFC 5689), PROPPATCH and DELETE of a calendar.
 *
 * A PUT is an import of one series into the calendar (cal_import_save,
 * the code behind POST /v1/calendars/{id}/import), so what a phone writes
 * is stored exactly as the same text imported would be, and comes back the
 * same through GET and the JSON API. The stored text is chime's rendering,
 * not the client's bytes, so a PUT answers without an ETag (RFC 4791
 * 5.3.4): clients fetch the new one. The invitations collection is
 * read-only: an invitation is answered in chime, not rewritten. */
#include "caldav/caldav_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"

static void read_only(caldav_ctx *c)
{
    caldav_send_error(c, 403, CALDAV_NS_DAV, "need-privileges",
                      "invitations are read-only here; answer them in chime");
}

/* ---- PUT ----------------------------------------------------------------- */

static bool is_calendar_type(const http_req *r)
{
    http_str h;
    if (!http_header(r, "content-type", &h)) return true; /* some clients send none */
    return h.len >= 13 && strncasecmp(h.ptr, "text/calendar", 13) == 0 &&
           (h.len == 13 || h.ptr[13] == ';' || h.ptr[13] == ' ');
}

/* One resource is one series: one UID (RFC 4791 4.1). */
static bool one_series(caldav_ctx *c, const ical_import *im)
{
    if (im->nseries == 1) return true;
    if (im->nseries == 0 && im->nskipped > 0)
        caldav_send_error(c, 403, CALDAV_NS_CAL, "supported-calendar-component", "nothing chime keeps: %s",
                          im->nskips ? im->skips[0].reason : "no VEVENT");
    else if (im->nseries == 0)
        caldav_send_error(c, 403, CALDAV_NS_CAL, "valid-calendar-object-resource", "no VEVENT");
    else
        caldav_send_error(c, 403, CALDAV_NS_CAL, "valid-calendar-object-resource",
                          "one resource holds one event (one UID); this holds %zu", im->nseries);
    return false;
}

/* The UID may live in this resource only (RFC 4791 5.3.2.1). */
static bool uid_free(caldav_ctx *c, const caldav_target *t, const char *uid)
{
    int64_t id, created;
    int rc = cal_event_find_uid(c->db, t->cal.id, uid, &id, &created);
    if (rc == CAL_ERROR) {
        caldav_send_db_error(c);
        return false;
    }
    if (t->exists ? rc == CAL_OK && id == t->member.event_id : rc == CAL_NOT_FOUND) return true;
    caldav_member other;
    caldav_out o;
    co_init(&o, 256);
    if (rc == CAL_OK && caldav_member_of_event(c->db, t->coll, id, &other) == CALDAV_OK)
        caldav_href_resource(c, t, other.name, &o);
    caldav_send_error(c, 409, CALDAV_NS_CAL, "no-uid-conflict", "%s %.200s",
                      t->exists ? "this resource holds another UID than" : "UID already stored at",
                      t->exists ? uid : o.buf ? o.buf : "");
    co_free(&o);
    return false;
}

/* Saves the series under the request's name, in one transaction. */
static int put_save(caldav_ctx *c, const caldav_target *t, ical_import *im)
{
    cal_import_counts n = {0};
    if (store_begin(c->db) != STORE_OK) return CAL_ERROR;
    int rc = caldav_name_set(c->db, t->cal.id, im->series[0].ev.ical_uid, t->name) == CALDAV_OK
                 ? cal_import_save(c->db, c->me, &t->cal, im, &n)
                 : CAL_ERROR;
    if (rc == CAL_OK && n.imported + n.updated == 0) rc = CAL_FORBIDDEN; /* a lone instance was skipped */
    if (rc != CAL_OK) {
        store_rollback(c->db);
        return rc;
    }
    return store_commit(c->db) == STORE_OK ? CAL_OK : CAL_ERROR;
}

static void put_into(caldav_ctx *c, caldav_target *t)
{
    ical_import im;
    ical_err ierr;
    if (!is_calendar_type(c->r))
        return caldav_send_error(c, 415, CALDAV_NS_CAL, "supported-calendar-data", "send text/calendar");
    if (!caldav_preconditions(c, t->exists, t->member.etag)) return;
    if (ical_read(c->r->body.ptr, c->r->body.len, c->tz, t->cal.time_zone, &im, &ierr) != 0)
        return caldav_send_error(c, 403, CALDAV_NS_CAL, "valid-calendar-data", "line %d: %s", ierr.line, ierr.msg);
    if (one_series(c, &im) && uid_free(c, t, im.series[0].ev.ical_uid)) {
        int rc = put_save(c, t, &im);
        if (rc == CAL_OK) http_send_empty(c->r, t->exists ? 204 : 201);
        else if (rc == CAL_FORBIDDEN)
            caldav_send_error(c, 403, CALDAV_NS_CAL, "valid-calendar-object-resource",
                              "an instance of a series stored elsewhere: put the whole series");
        else if (rc == CAL_CONFLICT)
            caldav_send_error(c, 409, CALDAV_NS_CAL, "no-uid-conflict", "another write took this UID; try again");
        else caldav_send_db_error(c);
    }
    ical_import_free(&im);
}

void caldav_handle_put(caldav_ctx *c)
{
    caldav_target t;
    if (!caldav_resolve(c, CALDAV_RESOURCE, &t)) return;
    if (t.invited) read_only(c);
    else put_into(c, &t);
    caldav_target_free(&t);
}

/* ---- DELETE -------------------------------------------------------------- */

static void delete_calendar(caldav_ctx *c, const caldav_target *t)
{
    int rc = cal_calendar_delete(c->db, c->me, t->cal.id);
    if (rc == CAL_OK) http_send_empty(c->r, 204);
    else if (rc == CAL_FORBIDDEN)
        caldav_send_error(c, 403, CALDAV_NS_DAV, "need-privileges", "the primary calendar cannot be deleted");
    else if (rc == CAL_NOT_FOUND) caldav_send_error(c, 404, NULL, NULL, "no such resource");
    else caldav_send_db_error(c);
}

void caldav_handle_delete(caldav_ctx *c, caldav_kind kind)
{
    caldav_target t;
    if (!caldav_resolve(c, kind, &t)) return;
    if (t.invited) read_only(c);
    else if (kind == CALDAV_CALENDAR) delete_calendar(c, &t);
    else if (!t.exists) caldav_send_error(c, 404, NULL, NULL, "no such resource");
    else if (caldav_preconditions(c, true, t.member.etag)) {
        /* The triggers leave a tombstone for sync-collection. */
        if (cal_event_delete(c->db, t.member.event_id) != CAL_OK) caldav_send_db_error(c);
        else http_send_empty(c->r, 204);
    }
    caldav_target_free(&t);
}

/* ---- MKCALENDAR and MKCOL ------------------------------------------------ */

/* The IANA zone a calendar-timezone names (its VTIMEZONE's TZID or
 * X-LIC-LOCATION, mapped as an import maps them); NULL if none. */
static const char *zone_of(caldav_ctx *c, const char *text)
{
    ical_doc doc;
    ical_err err;
    const char *zone = NULL;
    if (ical_parse(text, strlen(text), &doc, &err) != 0) return NULL;
    for (const ical_comp *cal = doc.roots; cal && !zone; cal = cal->next)
        for (const ical_comp *s = cal->subs; s && !zone; s = s->next) {
            const ical_prop *id = ical_prop_get(s, "TZID"), *loc = ical_prop_get(s, "X-LIC-LOCATION");
            if (strcmp(s->name, "VTIMEZONE") == 0 && id)
                zone = ical_zone_map(c->tz, id->value, loc ? loc->value : NULL);
        }
    ical_doc_free(&doc);
    return zone;
}

/* A new calendar's fields from the body; false after answering. */
static bool mk_fields(caldav_ctx *c, const caldav_request *rq, const char **summary, const char **zone,
                      caldav_calprops *p)
{
    for (size_t i = 0; i < rq->nprops; i++) {
        const caldav_prop *pr = &rq->props[i];
        const char *v = pr->value ? pr->value : "";
        if (pr->id == CALDAV_P_DISPLAYNAME && v[0]) *summary = v;
        else if (pr->id == CALDAV_P_CALENDAR_COLOR) snprintf(p->color, sizeof p->color, "%s", v);
        else if (pr->id == CALDAV_P_CALENDAR_ORDER) snprintf(p->order, sizeof p->order, "%s", v);
        else if (pr->id == CALDAV_P_CALENDAR_DESCRIPTION) p->description = strdup(v);
        else if (pr->id == CALDAV_P_CALENDAR_TIMEZONE && !(*zone = zone_of(c, v))) {
            caldav_send_error(c, 403, CALDAV_NS_CAL, "valid-calendar-data", "calendar-timezone names no known zone");
            return false;
        }
    }
    if (strlen(*summary) > CAL_SUMMARY_MAX) {
        caldav_send_error(c, 403, NULL, NULL, "displayname is at most %d bytes", CAL_SUMMARY_MAX);
        return false;
    }
    return true;
}

static void mk_create(caldav_ctx *c, const caldav_request *rq, const char *segment)
{
    const char *summary = segment, *zone = "UTC";
    caldav_calprops p = {0};
    snprintf(p.segment, sizeof p.segment, "%s", segment);
    if (!mk_fields(c, rq, &summary, &zone, &p)) return caldav_calprops_free(&p);
    cal_calendar cal;
    int rc = store_begin(c->db) == STORE_OK ? cal_calendar_create(c->db, c->me, summary, zone, &cal) : CAL_ERROR;
    if (rc == CAL_OK) rc = caldav_calprops_save(c->db, cal.id, c->me, &p) == CALDAV_OK ? CAL_OK : CAL_ERROR;
    if (rc == CAL_OK && store_commit(c->db) != STORE_OK) rc = CAL_ERROR;
    if (rc != CAL_OK) store_rollback(c->db);
    caldav_calprops_free(&p);
    if (rc == CAL_OK) http_send_empty(c->r, 201);
    else if (rc == CAL_CONFLICT)
        caldav_send_error(c, 403, NULL, NULL, "at most %d calendars per user", CAL_MAX_CALENDARS);
    else caldav_send_db_error(c);
}

/* A segment a client may name a calendar by: no slash, no controls. */
static bool segment_ok(const http_str *s, char *out, size_t size)
{
    if (s->len == 0 || s->len >= size) return false;
    for (size_t i = 0; i < s->len; i++)
        if ((unsigned char)s->ptr[i] < 0x20 || s->ptr[i] == 0x7f || s->ptr[i] == '/') return false;
    memcpy(out, s->ptr, s->len);
    out[s->len] = '\0';
    return strcmp(out, ".") != 0 && strcmp(out, "..") != 0;
}

void caldav_handle_mkcol(caldav_ctx *c)
{
    caldav_target home;
    caldav_request rq;
    caldav_xml_err err;
    char segment[CALDAV_SEGMENT_MAX + 1];
    cal_calendar cal;
    caldav_calprops props = {0};
    if (!caldav_resolve(c, CALDAV_HOME, &home)) return;
    if (!segment_ok(&c->r->params[1], segment, sizeof segment))
        return caldav_send_error(c, 403, NULL, NULL, "a calendar's name is 1 to %d bytes, no '/'", CALDAV_SEGMENT_MAX);
    int rc = strcmp(segment, CALDAV_INVITED_SEGMENT) == 0 ? CALDAV_OK
                                                         : caldav_calendar_find(c->db, c->me, segment, &cal, &props);
    caldav_calprops_free(&props);
    if (rc == CALDAV_ERROR) return caldav_send_db_error(c);
    if (rc == CALDAV_OK) return caldav_send_error(c, 405, CALDAV_NS_DAV, "resource-must-be-null", "it exists already");
    if (caldav_xml_parse(CALDAV_BODY_MKCOL, c->r->body.ptr, c->r->body.len, &rq, &err) != 0)
        return caldav_send_xml_err(c, &err);
    bool mkcal = c->r->method == HTTP_MKCALENDAR;
    if (mkcal ? (c->r->body.len && !rq.is_mkcalendar) : !rq.calendar_type)
        caldav_send_error(c, 403, CALDAV_NS_DAV, "valid-resourcetype", "only calendar collections can be made here");
    else if (rq.components && !(rq.components & CALDAV_COMP_VEVENT))
        caldav_send_error(c, 403, CALDAV_NS_CAL, "supported-calendar-component",
                          "chime calendars hold events (VEVENT)");
    else
        mk_create(c, &rq, segment);
    caldav_request_free(&rq);
}

/* ---- PROPPATCH ----------------------------------------------------------- */

/* Can this update be applied? Applies it to *p / *summary if so. */
static bool patch_one(const caldav_prop *pr, caldav_calprops *p, const char **summary)
{
    const char *v = pr->value ? pr->value : "";
    switch (pr->id) {
    case CALDAV_P_DISPLAYNAME:
        if (pr->remove || !v[0] || strlen(v) > CAL_SUMMARY_MAX) return false;
        *summary = v;
        return true;
    case CALDAV_P_CALENDAR_COLOR:
        if (strlen(v) > CALDAV_COLOR_MAX) return false;
        snprintf(p->color, sizeof p->color, "%s", pr->remove ? "" : v);
        return true;
    case CALDAV_P_CALENDAR_ORDER:
        if (strlen(v) >= sizeof p->order) return false;
        snprintf(p->order, sizeof p->order, "%s", pr->remove ? "" : v);
        return true;
    case CALDAV_P_CALENDAR_DESCRIPTION:
        free(p->description);
        p->description = pr->remove ? NULL : strdup(v);
        return true;
    default: return false;
    }
}

/* RFC 4918 9.2: all or nothing; refused properties 403, the rest 424. */
static void patch_answer(caldav_ctx *c, const caldav_target *t, const caldav_request *rq, const bool *ok, bool all)
{
    caldav_out o;
    co_init(&o, 1024);
    co_multistatus_open(&o);
    co_raw(&o, "<D:response><D:href>");
    caldav_href_collection(c, t, &o);
    co_raw(&o, "</D:href>");
    for (int pass = 0; pass < 2; pass++) {
        bool any = false;
        for (size_t i = 0; i < rq->nprops; i++) {
            if (ok[i] != (pass == 0)) continue;
            if (!any) co_raw(&o, "<D:propstat><D:prop>");
            any = true;
            co_prop_empty(&o, &rq->props[i]);
        }
        if (!any) continue;
        co_raw(&o, "</D:prop>");
        co_status(&o, pass == 1 ? 403 : all ? 200 : 424);
        co_raw(&o, "</D:propstat>");
    }
    co_raw(&o, "</D:response>");
    co_multistatus_close(&o);
    caldav_send_xml(c, 207, &o);
}

static int patch_apply(caldav_ctx *c, const caldav_target *t, const caldav_calprops *p, const char *summary)
{
    if (store_begin(c->db) != STORE_OK) return -1;
    bool ok = (!summary || cal_calendar_rename(c->db, c->me, t->cal.id, summary) == CAL_OK) &&
              caldav_calprops_save(c->db, t->cal.id, c->me, p) == CALDAV_OK;
    if (!ok) {
        store_rollback(c->db);
        return -1;
    }
    return store_commit(c->db) == STORE_OK ? 0 : -1;
}

void caldav_handle_proppatch(caldav_ctx *c)
{
    caldav_target t;
    caldav_request rq;
    caldav_xml_err err;
    if (!caldav_resolve(c, CALDAV_CALENDAR, &t)) return;
    if (caldav_xml_parse(CALDAV_BODY_PROPPATCH, c->r->body.ptr, c->r->body.len, &rq, &err) != 0) {
        caldav_target_free(&t);
        return caldav_send_xml_err(c, &err);
    }
    bool ok[CALDAV_MAX_PROPS], all = true;
    const char *summary = NULL;
    for (size_t i = 0; i < rq.nprops; i++) all &= ok[i] = !t.invited && patch_one(&rq.props[i], &t.props, &summary);
    if (all && patch_apply(c, &t, &t.props, summary) != 0) caldav_send_db_error(c);
    else patch_answer(c, &t, &rq, ok, all);
    caldav_request_free(&rq);
    caldav_target_free(&t);
}
