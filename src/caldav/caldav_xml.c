/* caldav_xml.c -- see caldav_xml.h. libxml2 builds a tree of the body
 * (bounded in size), which is walked by namespace URI and local name into
 * a caldav_request; the tree is freed before returning, and every string
 * kept is copied into the request's arena. The filter part of a
 * calendar-query is in caldav_filter_xml.c. */
#include "caldav/caldav_xml_int.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time/civil.h"

/* ---- known properties --------------------------------------------------- */

static const struct {
    caldav_prop_id id;
    const char *ns, *name;
} caldav_known[] = {
    {CALDAV_P_RESOURCETYPE, CALDAV_NS_DAV, "resourcetype"},
    {CALDAV_P_DISPLAYNAME, CALDAV_NS_DAV, "displayname"},
    {CALDAV_P_GETETAG, CALDAV_NS_DAV, "getetag"},
    {CALDAV_P_GETCONTENTTYPE, CALDAV_NS_DAV, "getcontenttype"},
    {CALDAV_P_GETCONTENTLENGTH, CALDAV_NS_DAV, "getcontentlength"},
    {CALDAV_P_GETLASTMODIFIED, CALDAV_NS_DAV, "getlastmodified"},
    {CALDAV_P_CURRENT_USER_PRINCIPAL, CALDAV_NS_DAV, "current-user-principal"},
    {CALDAV_P_PRINCIPAL_URL, CALDAV_NS_DAV, "principal-URL"},
    {CALDAV_P_OWNER, CALDAV_NS_DAV, "owner"},
    {CALDAV_P_SUPPORTED_REPORT_SET, CALDAV_NS_DAV, "supported-report-set"},
    {CALDAV_P_SYNC_TOKEN, CALDAV_NS_DAV, "sync-token"},
    {CALDAV_P_CURRENT_USER_PRIVILEGE_SET, CALDAV_NS_DAV, "current-user-privilege-set"},
    {CALDAV_P_CALENDAR_HOME_SET, CALDAV_NS_CAL, "calendar-home-set"},
    {CALDAV_P_CALENDAR_USER_ADDRESS_SET, CALDAV_NS_CAL, "calendar-user-address-set"},
    {CALDAV_P_CALENDAR_DATA, CALDAV_NS_CAL, "calendar-data"},
    {CALDAV_P_SUPPORTED_CALENDAR_COMPONENT_SET, CALDAV_NS_CAL, "supported-calendar-component-set"},
    {CALDAV_P_SUPPORTED_CALENDAR_DATA, CALDAV_NS_CAL, "supported-calendar-data"},
    {CALDAV_P_CALENDAR_TIMEZONE, CALDAV_NS_CAL, "calendar-timezone"},
    {CALDAV_P_CALENDAR_DESCRIPTION, CALDAV_NS_CAL, "calendar-description"},
    {CALDAV_P_MAX_RESOURCE_SIZE, CALDAV_NS_CAL, "max-resource-size"},
    {CALDAV_P_GETCTAG, CALDAV_NS_CS, "getctag"},
    {CALDAV_P_CALENDAR_COLOR, CALDAV_NS_APPLE, "calendar-color"},
    {CALDAV_P_CALENDAR_ORDER, CALDAV_NS_APPLE, "calendar-order"},
};
#define CALDAV_NKNOWN (sizeof caldav_known / sizeof caldav_known[0])

const char *caldav_prop_ns(caldav_prop_id id)
{
    for (size_t i = 0; i < CALDAV_NKNOWN; i++)
        if (caldav_known[i].id == id) return caldav_known[i].ns;
    return "";
}

const char *caldav_prop_name(caldav_prop_id id)
{
    for (size_t i = 0; i < CALDAV_NKNOWN; i++)
        if (caldav_known[i].id == id) return caldav_known[i].name;
    return "";
}

caldav_prop_id caldav_prop_lookup(const char *ns, const char *name)
{
    for (size_t i = 0; i < CALDAV_NKNOWN; i++)
        if (strcmp(caldav_known[i].ns, ns) == 0 && strcmp(caldav_known[i].name, name) == 0) return caldav_known[i].id;
    return CALDAV_P_UNKNOWN;
}

/* ---- arena and errors ---------------------------------------------------- */

struct caldav_arena {
    struct caldav_arena *next;
    char data[];
};

const char *cx_keep(cx_parser *p, const char *s, size_t n)
{
    caldav_arena *a = malloc(sizeof *a + n + 1);
    if (!a) return NULL;
    memcpy(a->data, s, n);
    a->data[n] = '\0';
    a->next = p->rq->arena;
    p->rq->arena = a;
    return a->data;
}

int cx_fail(cx_parser *p, int status, const char *cond_ns, const char *cond, const char *fmt, ...)
{
    p->err->status = status;
    p->err->cond_ns = cond_ns;
    p->err->cond = cond;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
    va_end(ap);
    return -1;
}

void caldav_request_free(caldav_request *r)
{
    caldav_arena *a = r->arena;
    while (a) {
        caldav_arena *next = a->next;
        free(a);
        a = next;
    }
    r->arena = NULL;
}

/* ---- tree helpers -------------------------------------------------------- */

bool cx_is(const xmlNode *n, const char *ns, const char *name)
{
    return n && n->type == XML_ELEMENT_NODE && n->ns && n->ns->href && xmlStrEqual(n->ns->href, BAD_CAST ns) &&
           xmlStrEqual(n->name, BAD_CAST name);
}

xmlNode *cx_next(xmlNode *n)
{
    while (n && n->type != XML_ELEMENT_NODE) n = n->next;
    return n;
}

/* The element's text (CDATA included), kept; surrounding white space
 * dropped when trim. NULL after failing when longer than max. */
const char *cx_text(cx_parser *p, xmlNode *n, size_t max, bool trim)
{
    xmlChar *t = xmlNodeGetContent(n);
    const char *s = t ? (const char *)t : "";
    size_t len = strlen(s);
    if (trim) {
        while (len && strchr(" \t\r\n", s[len - 1])) len--;
        while (len && strchr(" \t\r\n", *s)) s++, len--;
    }
    const char *kept = NULL;
    if (len > max) cx_fail(p, 403, NULL, NULL, "<%s> is longer than %zu bytes", (const char *)n->name, max);
    else if (!(kept = cx_keep(p, s, len))) cx_fail(p, 500, NULL, NULL, "out of memory");
    xmlFree(t);
    return kept;
}

/* An attribute's value (no namespace), kept; "" when absent. */
const char *cx_attr(cx_parser *p, xmlNode *n, const char *name)
{
    xmlChar *v = xmlGetNoNsProp(n, BAD_CAST name);
    const char *kept = cx_keep(p, v ? (const char *)v : "", v ? strlen((const char *)v) : 0);
    xmlFree(v);
    return kept;
}

int caldav_parse_utc(const char *s, int64_t *ms)
{
    civil_time t;
    bool is_date;
    size_t n = strlen(s);
    if (n != 16 || s[15] != 'Z' || civil_parse_basic(s, 15, &t, &is_date) != 0 || is_date) return -1;
    *ms = civil_to_seconds(&t) * 1000;
    return 0;
}

/* Open ends of a range: the first and the last instant a date-time names
 * (0001-01-01 and 10000-01-01 UTC, in ms), not INT64_MIN/MAX, from which
 * the search for instances steps back by an event's length (an open start
 * overflowed there and killed the server). */
#define CX_OPEN_FROM_MS (-62135596800000LL)
#define CX_OPEN_TO_MS 253402300800000LL

/* start/end of a time-range or expand element (both required when
 * need_both; an open end is CX_OPEN_FROM_MS/CX_OPEN_TO_MS). */
int cx_range(cx_parser *p, xmlNode *n, bool need_both, int64_t *from, int64_t *to)
{
    const char *s = cx_attr(p, n, "start"), *e = cx_attr(p, n, "end");
    if (!s || !e) return cx_fail(p, 500, NULL, NULL, "out of memory");
    *from = CX_OPEN_FROM_MS;
    *to = CX_OPEN_TO_MS;
    if ((!s[0] && !e[0]) || (need_both && (!s[0] || !e[0])))
        return cx_fail(p, 403, CALDAV_NS_CAL, "valid-filter", "<%s> needs %s", (const char *)n->name,
                       need_both ? "start and end" : "start or end");
    if ((s[0] && caldav_parse_utc(s, from) != 0) || (e[0] && caldav_parse_utc(e, to) != 0))
        return cx_fail(p, 403, CALDAV_NS_CAL, "valid-filter",
                       "<%s> times are UTC date-times like 20260105T000000Z", (const char *)n->name);
    if (*to <= *from) return cx_fail(p, 403, CALDAV_NS_CAL, "valid-filter", "<%s> ends before it starts",
                                     (const char *)n->name);
    return 0;
}

/* ---- properties ---------------------------------------------------------- */

/* supported-calendar-component-set's C:comp children, as bits. */
static unsigned components_of(cx_parser *p, xmlNode *set)
{
    unsigned bits = 0;
    for (xmlNode *c = cx_next(set->children); c; c = cx_next(c->next)) {
        if (!cx_is(c, CALDAV_NS_CAL, "comp")) continue;
        const char *name = cx_attr(p, c, "name");
        bits |= cx_component_bit(name ? name : "");
    }
    return bits;
}

/* MKCOL and MKCALENDAR: the values, and what resourcetype says. */
static int prop_value(cx_parser *p, xmlNode *el, caldav_prop *pr)
{
    if (pr->id == CALDAV_P_RESOURCETYPE) {
        for (xmlNode *c = cx_next(el->children); c; c = cx_next(c->next))
            if (cx_is(c, CALDAV_NS_CAL, "calendar")) p->rq->calendar_type = true;
        return 0;
    }
    if (pr->id == CALDAV_P_SUPPORTED_CALENDAR_COMPONENT_SET) {
        p->rq->components = components_of(p, el);
        return 0;
    }
    size_t max = pr->id == CALDAV_P_CALENDAR_TIMEZONE || pr->id == CALDAV_P_CALENDAR_DESCRIPTION ? CALDAV_VALUE_MAX
                                                                                               : CALDAV_TEXT_MAX;
    return (pr->value = cx_text(p, el, max, pr->id != CALDAV_P_CALENDAR_DESCRIPTION)) ? 0 : -1;
}

/* calendar-data asked for in a report: the expand range, the type. */
static int calendar_data_request(cx_parser *p, xmlNode *el)
{
    const char *type = cx_attr(p, el, "content-type");
    if (!type) return cx_fail(p, 500, NULL, NULL, "out of memory");
    if (type[0] && strcmp(type, "text/calendar") != 0)
        return cx_fail(p, 415, CALDAV_NS_CAL, "supported-calendar-data", "calendar-data comes as text/calendar only");
    for (xmlNode *c = cx_next(el->children); c; c = cx_next(c->next)) {
        if (!cx_is(c, CALDAV_NS_CAL, "expand")) continue;
        if (cx_range(p, c, true, &p->rq->expand_from_ms, &p->rq->expand_to_ms) != 0) return -1;
        p->rq->expand = true;
    }
    return 0;
}

static int add_prop(cx_parser *p, xmlNode *el, bool with_value, bool remove)
{
    caldav_request *rq = p->rq;
    if (rq->nprops == CALDAV_MAX_PROPS)
        return cx_fail(p, 403, NULL, NULL, "at most %d properties in one request", CALDAV_MAX_PROPS);
    caldav_prop *pr = &rq->props[rq->nprops];
    memset(pr, 0, sizeof *pr);
    const char *ns = el->ns && el->ns->href ? (const char *)el->ns->href : "";
    pr->ns = cx_keep(p, ns, strlen(ns));
    pr->name = cx_keep(p, (const char *)el->name, strlen((const char *)el->name));
    if (!pr->ns || !pr->name) return cx_fail(p, 500, NULL, NULL, "out of memory");
    pr->id = caldav_prop_lookup(pr->ns, pr->name);
    pr->remove = remove;
    if (with_value && prop_value(p, el, pr) != 0) return -1;
    if (!with_value && pr->id == CALDAV_P_CALENDAR_DATA && rq->body == CALDAV_BODY_REPORT &&
        calendar_data_request(p, el) != 0)
        return -1;
    rq->nprops++;
    return 0;
}

/* The children of a DAV:prop. */
int cx_prop_list(cx_parser *p, xmlNode *prop, bool with_value, bool remove)
{
    for (xmlNode *c = cx_next(prop->children); c; c = cx_next(c->next))
        if (add_prop(p, c, with_value, remove) != 0) return -1;
    return 0;
}

/* prop, allprop or propname among n's children (PROPFIND, calendar-query,
 * multiget, sync-collection). Returns 1 when one was found. */
int cx_want(cx_parser *p, xmlNode *n)
{
    if (cx_is(n, CALDAV_NS_DAV, "prop")) {
        p->rq->want = CALDAV_WANT_PROP;
        return cx_prop_list(p, n, false, false) == 0 ? 1 : -1;
    }
    if (cx_is(n, CALDAV_NS_DAV, "allprop")) {
        p->rq->want = CALDAV_WANT_ALLPROP;
        return 1;
    }
    if (cx_is(n, CALDAV_NS_DAV, "propname")) {
        p->rq->want = CALDAV_WANT_PROPNAME;
        return 1;
    }
    return 0;
}

/* ---- bodies -------------------------------------------------------------- */

static int parse_propfind(cx_parser *p, xmlNode *root)
{
    if (!cx_is(root, CALDAV_NS_DAV, "propfind"))
        return cx_fail(p, 400, NULL, NULL, "a PROPFIND body is a DAV:propfind element");
    p->rq->want = CALDAV_WANT_ALLPROP;
    for (xmlNode *c = cx_next(root->children); c; c = cx_next(c->next))
        if (cx_want(p, c) < 0) return -1;
    return 0;
}

static int parse_propertyupdate(cx_parser *p, xmlNode *root)
{
    if (!cx_is(root, CALDAV_NS_DAV, "propertyupdate"))
        return cx_fail(p, 400, NULL, NULL, "a PROPPATCH body is a DAV:propertyupdate element");
    for (xmlNode *c = cx_next(root->children); c; c = cx_next(c->next)) {
        bool set = cx_is(c, CALDAV_NS_DAV, "set"), remove = cx_is(c, CALDAV_NS_DAV, "remove");
        if (!set && !remove) continue;
        for (xmlNode *pr = cx_next(c->children); pr; pr = cx_next(pr->next))
            if (cx_is(pr, CALDAV_NS_DAV, "prop") && cx_prop_list(p, pr, set, remove) != 0) return -1;
    }
    if (p->rq->nprops == 0) return cx_fail(p, 400, NULL, NULL, "the propertyupdate sets or removes nothing");
    return 0;
}

static int parse_mkcol(cx_parser *p, xmlNode *root)
{
    p->rq->is_mkcalendar = cx_is(root, CALDAV_NS_CAL, "mkcalendar");
    if (!p->rq->is_mkcalendar && !cx_is(root, CALDAV_NS_DAV, "mkcol"))
        return cx_fail(p, 400, NULL, NULL, "the body is a C:mkcalendar or DAV:mkcol element");
    for (xmlNode *c = cx_next(root->children); c; c = cx_next(c->next)) {
        if (!cx_is(c, CALDAV_NS_DAV, "set")) continue;
        for (xmlNode *pr = cx_next(c->children); pr; pr = cx_next(pr->next))
            if (cx_is(pr, CALDAV_NS_DAV, "prop") && cx_prop_list(p, pr, true, false) != 0) return -1;
    }
    return 0;
}

static int parse_multiget(cx_parser *p, xmlNode *root)
{
    caldav_request *rq = p->rq;
    rq->report = CALDAV_REPORT_MULTIGET;
    for (xmlNode *c = cx_next(root->children); c; c = cx_next(c->next)) {
        if (cx_want(p, c) < 0) return -1;
        if (!cx_is(c, CALDAV_NS_DAV, "href")) continue;
        if (rq->nhrefs == CALDAV_MAX_HREFS)
            return cx_fail(p, 403, NULL, NULL, "at most %d hrefs in one calendar-multiget", CALDAV_MAX_HREFS);
        if (!(rq->hrefs[rq->nhrefs++] = cx_text(p, c, CALDAV_HREF_MAX, true))) return -1;
    }
    return 0;
}

static int parse_freebusy(cx_parser *p, xmlNode *root)
{
    p->rq->report = CALDAV_REPORT_FREEBUSY;
    xmlNode *tr = cx_next(root->children);
    while (tr && !cx_is(tr, CALDAV_NS_CAL, "time-range")) tr = cx_next(tr->next);
    if (!tr) return cx_fail(p, 403, CALDAV_NS_CAL, "valid-filter", "a free-busy-query needs a time-range");
    return cx_range(p, tr, true, &p->rq->range_from_ms, &p->rq->range_to_ms);
}

/* DAV:limit/DAV:nresults */
static int sync_limit(cx_parser *p, xmlNode *limit)
{
    for (xmlNode *c = cx_next(limit->children); c; c = cx_next(c->next)) {
        if (!cx_is(c, CALDAV_NS_DAV, "nresults")) continue;
        const char *t = cx_text(p, c, 16, true);
        char *end;
        long long v = t ? strtoll(t, &end, 10) : 0;
        if (!t) return -1;
        if (!t[0] || *end || v < 1 || v > 100000) return cx_fail(p, 400, NULL, NULL, "nresults must be 1 to 100000");
        p->rq->limit = (size_t)v;
    }
    return 0;
}

static int parse_sync(cx_parser *p, xmlNode *root)
{
    caldav_request *rq = p->rq;
    rq->report = CALDAV_REPORT_SYNC;
    rq->sync_token = "";
    bool level = false;
    for (xmlNode *c = cx_next(root->children); c; c = cx_next(c->next)) {
        if (cx_want(p, c) < 0) return -1;
        if (cx_is(c, CALDAV_NS_DAV, "sync-token") && !(rq->sync_token = cx_text(p, c, CALDAV_TEXT_MAX, true)))
            return -1;
        if (cx_is(c, CALDAV_NS_DAV, "limit") && sync_limit(p, c) != 0) return -1;
        if (!cx_is(c, CALDAV_NS_DAV, "sync-level")) continue;
        const char *v = cx_text(p, c, 16, true);
        if (!v) return -1;
        if (strcmp(v, "1") != 0 && strcmp(v, "infinite") != 0)
            return cx_fail(p, 400, NULL, NULL, "sync-level is 1 or infinite");
        rq->sync_infinite = v[0] == 'i';
        level = true;
    }
    if (!level) return cx_fail(p, 400, NULL, NULL, "a sync-collection needs a sync-level");
    return 0;
}

static int parse_query(cx_parser *p, xmlNode *root)
{
    p->rq->report = CALDAV_REPORT_QUERY;
    p->rq->want = CALDAV_WANT_ALLPROP;
    bool filter = false;
    for (xmlNode *c = cx_next(root->children); c; c = cx_next(c->next)) {
        if (cx_want(p, c) < 0) return -1;
        if (!cx_is(c, CALDAV_NS_CAL, "filter")) continue;
        if (filter || cx_filter(p, c) != 0)
            return filter ? cx_fail(p, 403, CALDAV_NS_CAL, "valid-filter", "one filter per query") : -1;
        filter = true;
    }
    if (!filter) return cx_fail(p, 403, CALDAV_NS_CAL, "valid-filter", "a calendar-query needs a filter");
    return 0;
}

static int parse_report(cx_parser *p, xmlNode *root)
{
    p->rq->want = CALDAV_WANT_PROP;
    if (cx_is(root, CALDAV_NS_CAL, "calendar-multiget")) return parse_multiget(p, root);
    if (cx_is(root, CALDAV_NS_CAL, "calendar-query")) return parse_query(p, root);
    if (cx_is(root, CALDAV_NS_CAL, "free-busy-query")) return parse_freebusy(p, root);
    if (cx_is(root, CALDAV_NS_DAV, "sync-collection")) return parse_sync(p, root);
    return cx_fail(p, 403, CALDAV_NS_DAV, "supported-report", "unsupported report <%s>", (const char *)root->name);
}

/* ---- the parser ---------------------------------------------------------- */

void caldav_xml_init(void)
{
    xmlInitParser();
}

/* Any DOCTYPE ends the parse: with no DTD, no entity can be declared, so
 * no external entity is fetched and no entity expands into a bomb. */
static void refuse_dtd(void *ctx, const xmlChar *name, const xmlChar *external_id, const xmlChar *system_id)
{
    (void)name, (void)external_id, (void)system_id;
    xmlStopParser((xmlParserCtxtPtr)ctx);
}

/* libxml2's message, as printable ASCII (it may quote the input). */
static void malformed(cx_parser *p, xmlParserCtxtPtr ctxt)
{
    if (ctxt->errNo == XML_ERR_USER_STOP) {
        cx_fail(p, 400, NULL, NULL, "DTDs (<!DOCTYPE ...>) are not accepted");
        return;
    }
    const xmlError *e = xmlCtxtGetLastError(ctxt);
    char msg[160] = "";
    size_t n = 0;
    for (const char *m = e && e->message ? e->message : ""; *m && n + 1 < sizeof msg; m++)
        msg[n++] = *m >= 0x20 && *m < 0x7f ? *m : ' ';
    while (n && msg[n - 1] == ' ') n--;
    msg[n] = '\0';
    cx_fail(p, 400, NULL, NULL, "the body is not well-formed XML (line %d: %s)", e ? e->line : 0,
            msg[0] ? msg : "error");
}

static xmlDocPtr read_tree(cx_parser *p, const char *body, size_t len)
{
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        cx_fail(p, 500, NULL, NULL, "out of memory");
        return NULL;
    }
    ctxt->sax->internalSubset = refuse_dtd;
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, body, (int)len, NULL, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    bool ok = doc && ctxt->wellFormed && ctxt->nsWellFormed && ctxt->errNo == 0 && xmlDocGetRootElement(doc);
    if (!ok) {
        malformed(p, ctxt);
        xmlFreeDoc(doc);
        doc = NULL;
    }
    xmlFreeParserCtxt(ctxt);
    return doc;
}

static bool blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!strchr(" \t\r\n", s[i])) return false;
    return true;
}

int caldav_xml_parse(caldav_body kind, const char *body, size_t len, caldav_request *out, caldav_xml_err *err)
{
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    out->body = kind;
    cx_parser p = {.rq = out, .err = err};
    int rc = -1;
    if (len > CALDAV_XML_MAX) {
        cx_fail(&p, 413, NULL, NULL, "an XML body is at most %d bytes", CALDAV_XML_MAX);
    } else if (blank(body, len)) {
        out->want = CALDAV_WANT_ALLPROP;
        bool may_be_empty = kind == CALDAV_BODY_PROPFIND || kind == CALDAV_BODY_MKCOL;
        rc = may_be_empty ? 0 : cx_fail(&p, 400, NULL, NULL, "a body is required");
    } else {
        xmlDocPtr doc = read_tree(&p, body, len);
        xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
        if (root && kind == CALDAV_BODY_PROPFIND) rc = parse_propfind(&p, root);
        else if (root && kind == CALDAV_BODY_PROPPATCH) rc = parse_propertyupdate(&p, root);
        else if (root && kind == CALDAV_BODY_MKCOL) rc = parse_mkcol(&p, root);
        else if (root) rc = parse_report(&p, root);
        xmlFreeDoc(doc);
    }
    if (rc != 0) caldav_request_free(out);
    return rc;
}
