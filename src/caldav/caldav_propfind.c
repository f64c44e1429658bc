/* caldav_propfind.c -- PROPFIND on every kind of path (Depth 0 or 1;
 * infinity is answered as 1: the tree is only two levels deep) and GET of
 * one resource. */
#include "caldav/caldav_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool caldav_wants_text(const caldav_request *rq)
{
    if (rq->want != CALDAV_WANT_PROP) return false;
    for (size_t i = 0; i < rq->nprops; i++)
        if (rq->props[i].id == CALDAV_P_CALENDAR_DATA || rq->props[i].id == CALDAV_P_GETCONTENTLENGTH) return true;
    return false;
}

/* The calendars of the home, then the invitations. */
static int list_home(caldav_answer *a)
{
    caldav_ctx *c = a->c;
    cal_calendar *cals;
    size_t n;
    if (cal_calendar_list(c->db, c->me, &cals, &n) != CAL_OK) return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        caldav_target t = {0};
        rc = caldav_calprops_get(c->db, cals[i].id, &t.props) == CALDAV_OK ? 0 : -1;
        caldav_target_calendar(c, &t, &cals[i]);
        caldav_node node = {.t = &t, .kind = CALDAV_CALENDAR};
        if (rc == 0) caldav_write_response(a, &node);
        caldav_target_free(&t);
    }
    free(cals);
    caldav_target inv = {0};
    caldav_target_invited(c, &inv);
    caldav_node node = {.t = &inv, .kind = CALDAV_CALENDAR};
    if (rc == 0) caldav_write_response(a, &node);
    return rc;
}

static int list_members(caldav_answer *a, const caldav_target *t)
{
    caldav_members m;
    if (caldav_members_list(a->c->db, t->coll, &m) != CALDAV_OK) return -1;
    for (size_t i = 0; i < m.n; i++) {
        caldav_node node = {.t = t, .kind = CALDAV_RESOURCE, .member = &m.v[i]};
        caldav_write_response(a, &node);
    }
    caldav_members_free(&m);
    return 0;
}

void caldav_handle_propfind(caldav_ctx *c, caldav_kind kind)
{
    caldav_target t;
    caldav_request rq;
    caldav_xml_err err;
    if (!caldav_resolve(c, kind, &t)) return;
    if (kind == CALDAV_RESOURCE && !t.exists) {
        caldav_target_free(&t);
        return caldav_send_error(c, 404, NULL, NULL, "no such resource");
    }
    if (caldav_xml_parse(CALDAV_BODY_PROPFIND, c->r->body.ptr, c->r->body.len, &rq, &err) != 0) {
        caldav_target_free(&t);
        return caldav_send_xml_err(c, &err);
    }
    caldav_events events = {0};
    caldav_answer a = {.c = c, .rq = &rq, .events = &events};
    co_init(&a.out, 4096);
    co_multistatus_open(&a.out);
    caldav_node self = {.t = &t, .kind = t.kind, .member = kind == CALDAV_RESOURCE ? &t.member : NULL};
    caldav_write_response(&a, &self);
    int rc = 0;
    bool deep = caldav_depth(c->r, 2) > 0;
    if (deep && kind == CALDAV_HOME) rc = list_home(&a);
    if (deep && kind == CALDAV_CALENDAR) {
        if (caldav_wants_text(&rq)) rc = caldav_events_load_all(c, &t, &events) == CALDAV_OK ? 0 : -1;
        if (rc == 0) rc = list_members(&a, &t);
    }
    co_multistatus_close(&a.out);
    if (rc != 0) {
        co_free(&a.out);
        caldav_send_db_error(c);
    } else {
        caldav_send_xml(c, 207, &a.out);
    }
    caldav_events_free(&events);
    caldav_request_free(&rq);
    caldav_target_free(&t);
}

void caldav_handle_get(caldav_ctx *c)
{
    caldav_target t;
    if (!caldav_resolve(c, CALDAV_RESOURCE, &t)) return;
    caldav_event_ref ref;
    int rc = t.exists ? caldav_event_get(c, NULL, t.member.event_id, &ref) : CALDAV_NOT_FOUND;
    caldav_target_free(&t);
    if (rc == CALDAV_NOT_FOUND) return caldav_send_error(c, 404, NULL, NULL, "no such resource");
    if (rc != CALDAV_OK) return caldav_send_db_error(c);
    char etag[CALDAV_ETAG_MAX], quoted[CALDAV_ETAG_MAX + 2];
    caldav_etag(c, ref.e->etag, etag);
    snprintf(quoted, sizeof quoted, "\"%s\"", etag);
    http_add_header(c->r, "ETag", quoted);
    if (caldav_not_modified(c, ref.e->etag)) {
        caldav_event_ref_free(&ref);
        return http_send_empty(c->r, 304);
    }
    size_t len;
    char *text = caldav_render(c, &ref, false, 0, 0, &len);
    caldav_event_ref_free(&ref);
    if (!text) return http_send_error(c->r, 503, "unavailable", NULL, "out of memory");
    http_send_body(c->r, 200, "text/calendar; charset=utf-8", text, len);
    free(text);
}
