/* fuzz-caldav-xml.c -- a CalDAV request body as a client (or an attacker)
 * sends it, read as each kind of body chime takes (PROPFIND, PROPPATCH,
 * MKCOL/MKCALENDAR, REPORT). Whatever arrives, the parser either refuses
 * it with a 4xx (400, 403, 413, 415) and a printable message, or returns a
 * request within its bounds whose every string is there; and the property
 * names it keeps go back out through the XML writer without breaking it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caldav/caldav_out.h"
#include "caldav/caldav_xml.h"

static void check_refusal(const caldav_xml_err *e)
{
    if (e->status != 400 && e->status != 403 && e->status != 413 && e->status != 415) abort();
    if (!e->message[0] || (e->cond && !e->cond_ns)) abort();
}

static void check_request(const caldav_request *rq)
{
    if (rq->nprops > CALDAV_MAX_PROPS || rq->nhrefs > CALDAV_MAX_HREFS || rq->filter.nprops > CALDAV_MAX_PROP_FILTERS)
        abort();
    caldav_out o;
    co_init(&o, 256);
    co_multistatus_open(&o);
    for (size_t i = 0; i < rq->nprops; i++) {
        const caldav_prop *p = &rq->props[i];
        if (!p->ns || !p->name || !p->name[0]) abort();
        if (p->id != CALDAV_P_UNKNOWN && strcmp(caldav_prop_name(p->id), p->name) != 0) abort();
        co_prop_empty(&o, p);
        if (p->value) co_text(&o, p->value);
    }
    for (size_t i = 0; i < rq->nhrefs; i++) {
        if (!rq->hrefs[i] || strlen(rq->hrefs[i]) > CALDAV_HREF_MAX) abort();
        co_segment(&o, rq->hrefs[i]);
    }
    for (size_t i = 0; i < rq->filter.nprops; i++)
        if (!rq->filter.props[i].name) abort();
    if (rq->filter.has_range && rq->filter.to_ms <= rq->filter.from_ms) abort();
    if (rq->expand && rq->expand_to_ms <= rq->expand_from_ms) abort();
    if (rq->report == CALDAV_REPORT_SYNC && !rq->sync_token) abort();
    co_multistatus_close(&o);
    co_free(&o);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    caldav_xml_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    caldav_body kind = (caldav_body)(data[0] % 4);
    caldav_request rq;
    caldav_xml_err err;
    if (caldav_xml_parse(kind, (const char *)data + 1, size - 1, &rq, &err) != 0) {
        check_refusal(&err);
        return 0;
    }
    check_request(&rq);
    caldav_request_free(&rq);
    return 0;
}
