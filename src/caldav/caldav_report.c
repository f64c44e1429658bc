/* caldav_report.c -- REPORT on a calendar collection: calendar-multiget
 * and calendar-query (RFC 4791 7.8, 7.9), free-busy-query (7.10) and
 * sync-collection (RFC 6578). */
#include "caldav/caldav_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time/civil.h"

#define MULTIGET_BULK 32         /* hrefs from which a calendar's events are loaded at once */
#define FREEBUSY_MAX_INSTANCES 5000

/* A report's answer (207) or its error. */
static void finish(caldav_answer *a, int rc)
{
    if (rc == 0) return caldav_send_xml(a->c, 207, &a->out);
    co_free(&a->out);
    caldav_send_db_error(a->c);
}

/* ---- calendar-multiget --------------------------------------------------- */

static void href_missing(caldav_answer *a, const char *href)
{
    co_raw(&a->out, "<D:response><D:href>");
    co_text(&a->out, href);
    co_raw(&a->out, "</D:href>");
    co_status(&a->out, 404);
    co_raw(&a->out, "</D:response>");
}

static int report_multiget(caldav_answer *a, const caldav_target *t)
{
    const caldav_request *rq = a->rq;
    if (caldav_wants_text(rq) && rq->nhrefs >= MULTIGET_BULK &&
        caldav_events_load_all(a->c, t, a->events) != CALDAV_OK)
        return -1;
    for (size_t i = 0; i < rq->nhrefs; i++) {
        char name[CALDAV_NAME_MAX + 1];
        caldav_member m;
        if (!caldav_href_member(a->c, t, rq->hrefs[i], name, sizeof name)) {
            href_missing(a, rq->hrefs[i]);
            continue;
        }
        int rc = caldav_member_find(a->c->db, t->coll, name, &m);
        if (rc == CALDAV_ERROR) return -1;
        if (rc == CALDAV_NOT_FOUND) {
            caldav_write_missing(a, t, name);
            continue;
        }
        caldav_node node = {.t = t, .kind = CALDAV_RESOURCE, .member = &m};
        caldav_write_response(a, &node);
    }
    return 0;
}

/* ---- calendar-query ------------------------------------------------------ */

/* Filters that every stored resource passes (or none does) without
 * looking at it: listing a collection through a query (vdirsyncer, DAVx5). */
static int trivial_filter(const caldav_filter *f)
{
    if (f->has_range || f->nprops || f->alarm) return -1;
    bool vevent = f->comp == 0 || f->comp == CALDAV_COMP_VEVENT;
    if (f->comp_not_defined) return !vevent && f->comp != 0;
    return vevent;
}

/* The events a query must look at: with a time-range on the events
 * (what a client asks for a window: Thunderbird, DAVx5's past-events
 * limit) only those that may reach into it, found by index as the JSON
 * listings find them; the others cannot match. */
static int query_events(caldav_answer *a, const caldav_target *t, int all)
{
    const caldav_filter *f = &a->rq->filter;
    bool vevents = f->comp == 0 || f->comp == CALDAV_COMP_VEVENT;
    int rc = CALDAV_OK;
    if (all < 0 && f->has_range && vevents && !f->comp_not_defined)
        rc = caldav_events_load_range(a->c, t, f->from_ms, f->to_ms, a->events);
    else if (all < 0 || caldav_wants_text(a->rq))
        rc = caldav_events_load_all(a->c, t, a->events);
    return rc == CALDAV_OK ? 0 : -1;
}

static int report_query(caldav_answer *a, const caldav_target *t)
{
    const caldav_filter *f = &a->rq->filter;
    int all = trivial_filter(f);
    if (all == 0) return 0;
    caldav_members m;
    if (caldav_members_list(a->c->db, t->coll, &m) != CALDAV_OK) return -1;
    int rc = query_events(a, t, all);
    for (size_t i = 0; i < m.n && rc == 0; i++) {
        int hit = 1;
        if (all < 0) {
            caldav_event_ref ref;
            int got = caldav_event_get(a->c, a->events, m.v[i].event_id, &ref);
            hit = got == CALDAV_OK ? caldav_matches(a->c, f, &ref) : got == CALDAV_NOT_FOUND ? 0 : -1;
            caldav_event_ref_free(&ref);
        }
        if (hit < 0) rc = -1;
        if (hit <= 0) continue;
        caldav_node node = {.t = t, .kind = CALDAV_RESOURCE, .member = &m.v[i]};
        caldav_write_response(a, &node);
    }
    caldav_members_free(&m);
    return rc;
}

/* ---- sync-collection ----------------------------------------------------- */

/* With a limit, the page ends where the sequence changes, so that the
 * token handed back covers exactly what was sent. */
static size_t page_cut(const caldav_members *m, size_t limit)
{
    if (!limit || m->n <= limit) return m->n;
    size_t cut = limit;
    while (cut > 0 && m->v[cut - 1].seq == m->v[cut].seq) cut--;
    return cut;
}

static int sync_changes(caldav_answer *a, const caldav_target *t, int64_t since, int64_t upto)
{
    const caldav_request *rq = a->rq;
    caldav_members m;
    if (caldav_changes(a->c->db, t->coll, since, upto, rq->limit ? rq->limit + 1 : 0, &m) != CALDAV_OK) return -1;
    size_t cut = page_cut(&m, rq->limit);
    if (cut == 0 && m.n) { /* one sequence fills more than a page: send it whole */
        caldav_members_free(&m);
        if (caldav_changes(a->c->db, t->coll, since, upto, 0, &m) != CALDAV_OK) return -1;
        cut = m.n;
    }
    if (caldav_wants_text(rq) && cut >= MULTIGET_BULK && caldav_events_load_all(a->c, t, a->events) != CALDAV_OK) {
        caldav_members_free(&m);
        return -1;
    }
    for (size_t i = 0; i < cut; i++) {
        caldav_node node = {.t = t, .kind = CALDAV_RESOURCE, .member = &m.v[i]};
        if (m.v[i].deleted) caldav_write_missing(a, t, m.v[i].name);
        else caldav_write_response(a, &node);
    }
    bool truncated = cut < m.n;
    int64_t next = truncated ? m.v[cut - 1].seq : upto;
    if (truncated) { /* RFC 6578 3.6: the collection itself says 507 */
        co_raw(&a->out, "<D:response><D:href>");
        caldav_href_collection(a->c, t, &a->out);
        co_raw(&a->out, "</D:href>");
        co_status(&a->out, 507);
        co_raw(&a->out, "<D:error><D:number-of-matches-within-limits/></D:error></D:response>");
    }
    char token[96];
    caldav_sync_token(a->c, t, next, token, sizeof token);
    co_raw(&a->out, "<D:sync-token>");
    co_text(&a->out, token);
    co_raw(&a->out, "</D:sync-token>");
    caldav_members_free(&m);
    return 0;
}

/* The token must be one of this collection's, not newer than its state
 * and not older than its floor (tombstones before it were pruned). */
static void report_sync(caldav_answer *a, const caldav_target *t)
{
    int64_t seq, floor, since = 0;
    if (caldav_collection_state(a->c->db, t->coll, &seq, &floor) != CALDAV_OK) return finish(a, -1);
    const char *token = a->rq->sync_token;
    if (token[0] && (caldav_sync_token_parse(a->c, t, token, &since) != 0 || since > seq || since < floor)) {
        co_free(&a->out);
        return caldav_send_error(a->c, 403, CALDAV_NS_DAV, "valid-sync-token",
                                 "the sync token is unknown or has expired; sync again from the start");
    }
    int rc = sync_changes(a, t, since, seq);
    co_multistatus_close(&a->out);
    finish(a, rc);
}

/* ---- free-busy-query ----------------------------------------------------- */

static void utc_text(int64_t ms, char out[20])
{
    civil_time tm;
    civil_from_seconds(ms / 1000, &tm);
    civil_format_basic(&tm, false, out, 16);
    strcat(out, "Z");
}

static void report_freebusy(caldav_ctx *c, const caldav_target *t, const caldav_request *rq)
{
    int64_t from = rq->range_from_ms, to = rq->range_to_ms;
    if (t->invited) return caldav_send_error(c, 403, CALDAV_NS_DAV, "supported-report", "free-busy of a calendar only");
    if (to - from > (int64_t)CAL_MAX_RANGE_DAYS * 86400000)
        return caldav_send_error(c, 403, CALDAV_NS_CAL, "valid-filter", "a range spans at most %d days",
                                 CAL_MAX_RANGE_DAYS);
    cal_query q = {.viewer = c->me, .calendar_id = t->cal.id, .from_ms = from, .to_ms = to,
                   .limit = FREEBUSY_MAX_INSTANCES, .busy_only = true};
    cal_interval *iv;
    size_t n;
    if (cal_busy(c->db, c->tz, &q, &iv, &n) != CAL_OK) return caldav_send_db_error(c);
    caldav_out o;
    char a[20], b[20];
    co_init(&o, 256 + n * 48);
    co_raw(&o, "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//chime//chime calendar//EN\r\nBEGIN:VFREEBUSY\r\n");
    utc_text(from, a);
    utc_text(to, b);
    co_fmt(&o, "DTSTART:%s\r\nDTEND:%s\r\n", a, b);
    for (size_t i = 0; i < n; i++) {
        utc_text(iv[i].start_ms, a);
        utc_text(iv[i].end_ms, b);
        co_fmt(&o, "FREEBUSY;FBTYPE=BUSY:%s/%s\r\n", a, b);
    }
    co_raw(&o, "END:VFREEBUSY\r\nEND:VCALENDAR\r\n");
    free(iv);
    if (co_failed(&o)) http_send_error(c->r, 503, "unavailable", NULL, "out of memory");
    else http_send_body(c->r, 200, "text/calendar; charset=utf-8", o.buf, o.len);
    co_free(&o);
}

void caldav_handle_report(caldav_ctx *c)
{
    caldav_target t;
    caldav_request rq;
    caldav_xml_err err;
    if (!caldav_resolve(c, CALDAV_CALENDAR, &t)) return;
    if (caldav_xml_parse(CALDAV_BODY_REPORT, c->r->body.ptr, c->r->body.len, &rq, &err) != 0) {
        caldav_target_free(&t);
        return caldav_send_xml_err(c, &err);
    }
    caldav_events events = {0};
    caldav_answer a = {.c = c, .rq = &rq, .events = &events};
    co_init(&a.out, 8192);
    co_multistatus_open(&a.out);
    if (rq.report == CALDAV_REPORT_FREEBUSY) {
        co_free(&a.out);
        report_freebusy(c, &t, &rq);
    } else if (rq.report == CALDAV_REPORT_SYNC) {
        report_sync(&a, &t);
    } else {
        int rc = rq.report == CALDAV_REPORT_MULTIGET ? report_multiget(&a, &t) : report_query(&a, &t);
        co_multistatus_close(&a.out);
        finish(&a, rc);
    }
    caldav_events_free(&events);
    caldav_request_free(&rq);
    caldav_target_free(&t);
}
