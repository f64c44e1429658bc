/* caldav_props.c -- the properties of every kind of node (the root, the
 * principal, the home, a collection, a resource) and the <D:response> that
 * carries them: found ones under 200, the ones asked for and missing
 * under 404 (RFC 4918 9.1). PROPFIND and every REPORT answer with it. */
#include "caldav/caldav_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"

/* What a node's properties need, fetched once per node when asked. */
typedef struct node_state {
    bool have_seq;
    int64_t seq;
    bool have_ref, no_ref;
    caldav_event_ref ref;
    bool have_text;
    char *text;
    size_t len;
    char email[256];
} node_state;

static void node_state_free(node_state *s)
{
    if (s->have_ref) caldav_event_ref_free(&s->ref);
    free(s->text);
}

void caldav_sync_token(const caldav_ctx *c, const caldav_target *t, int64_t seq, char *buf, size_t size)
{
    char hex[17];
    base_id_format(t->invited ? -t->coll : t->coll, hex);
    snprintf(buf, size, "urn:x-chime:sync:%c%s:%s:%" PRId64, t->invited ? 'i' : 'c', hex, c->zone_tag, seq);
}

int caldav_sync_token_parse(const caldav_ctx *c, const caldav_target *t, const char *token, int64_t *seq)
{
    char prefix[80];
    caldav_sync_token(c, t, 0, prefix, sizeof prefix);
    size_t plen = strlen(prefix) - 1; /* without the "0" */
    if (strncmp(token, prefix, plen) != 0) return -1;
    const char *digits = token + plen;
    char *end;
    long long v = strtoll(digits, &end, 10);
    if (!*digits || *end || v < 0 || (digits[0] == '0' && digits[1])) return -1;
    *seq = v;
    return 0;
}

/* ---- values -------------------------------------------------------------- */

static void href_el(caldav_out *o, const char *open, void (*href)(caldav_ctx *, caldav_out *), caldav_ctx *c,
                    const char *close)
{
    co_raw(o, open);
    co_raw(o, "<D:href>");
    href(c, o);
    co_raw(o, "</D:href>");
    co_raw(o, close);
}

static void privileges(caldav_out *o, bool write)
{
    static const char *const all[] = {"read", "read-current-user-privilege-set", "write", "write-properties",
                                      "write-content", "bind", "unbind"};
    co_raw(o, "<D:current-user-privilege-set>");
    for (size_t i = 0; i < (write ? 7u : 2u); i++) co_fmt(o, "<D:privilege><D:%s/></D:privilege>", all[i]);
    co_raw(o, "</D:current-user-privilege-set>");
}

static void report_set(caldav_out *o)
{
    static const char *const reports[] = {"C:calendar-query", "C:calendar-multiget", "C:free-busy-query",
                                          "D:sync-collection"};
    co_raw(o, "<D:supported-report-set>");
    for (size_t i = 0; i < 4; i++)
        co_fmt(o, "<D:supported-report><D:report><%s/></D:report></D:supported-report>", reports[i]);
    co_raw(o, "</D:supported-report-set>");
}

static void text_el(caldav_out *o, const char *open, const char *text, const char *close)
{
    co_raw(o, open);
    co_text(o, text);
    co_raw(o, close);
}

/* Properties every node has. */
static bool common_value(caldav_answer *a, caldav_prop_id id, caldav_out *o)
{
    if (id != CALDAV_P_CURRENT_USER_PRINCIPAL) return false;
    href_el(o, "<D:current-user-principal>", caldav_href_principal, a->c, "</D:current-user-principal>");
    return true;
}

static bool principal_value(caldav_answer *a, node_state *s, caldav_prop_id id, caldav_out *o)
{
    caldav_ctx *c = a->c;
    if (!s->email[0]) {
        int64_t uid;
        if (cal_user_lookup(c->db, NULL, c->me, &uid, s->email, sizeof s->email) != CAL_OK) return false;
    }
    switch (id) {
    case CALDAV_P_RESOURCETYPE:
        co_raw(o, "<D:resourcetype><D:principal/><D:collection/></D:resourcetype>");
        return true;
    case CALDAV_P_DISPLAYNAME: text_el(o, "<D:displayname>", s->email, "</D:displayname>"); return true;
    case CALDAV_P_PRINCIPAL_URL:
        href_el(o, "<D:principal-URL>", caldav_href_principal, c, "</D:principal-URL>");
        return true;
    case CALDAV_P_CALENDAR_HOME_SET:
        href_el(o, "<C:calendar-home-set>", caldav_href_home, c, "</C:calendar-home-set>");
        return true;
    case CALDAV_P_CALENDAR_USER_ADDRESS_SET:
        text_el(o, "<C:calendar-user-address-set><D:href>mailto:", s->email, "</D:href>");
        href_el(o, "", caldav_href_principal, c, "</C:calendar-user-address-set>");
        return true;
    default: return false;
    }
}

static bool home_value(caldav_answer *a, caldav_prop_id id, caldav_out *o)
{
    switch (id) {
    case CALDAV_P_RESOURCETYPE: co_raw(o, "<D:resourcetype><D:collection/></D:resourcetype>"); return true;
    case CALDAV_P_DISPLAYNAME: co_raw(o, "<D:displayname>Calendars</D:displayname>"); return true;
    case CALDAV_P_OWNER: href_el(o, "<D:owner>", caldav_href_principal, a->c, "</D:owner>"); return true;
    case CALDAV_P_CURRENT_USER_PRIVILEGE_SET: privileges(o, false); return true;
    default: return false;
    }
}

static bool collection_token(caldav_answer *a, const caldav_target *t, node_state *s, caldav_prop_id id, caldav_out *o)
{
    int64_t floor;
    if (!s->have_seq && caldav_collection_state(a->c->db, t->coll, &s->seq, &floor) != CALDAV_OK) return false;
    s->have_seq = true;
    char token[96];
    caldav_sync_token(a->c, t, s->seq, token, sizeof token);
    if (id == CALDAV_P_SYNC_TOKEN) text_el(o, "<D:sync-token>", token, "</D:sync-token>");
    else if (id == CALDAV_P_GETCTAG) text_el(o, "<CS:getctag>", token, "</CS:getctag>");
    else /* changes with the CTag */
        co_fmt(o, "<D:getetag>&quot;%" PRId64 "-%s&quot;</D:getetag>", s->seq, a->c->zone_tag);
    return true;
}

/* calendar-timezone: the calendar's zone as a VTIMEZONE (none for UTC). */
static bool collection_zone(caldav_answer *a, const caldav_target *t, caldav_out *o)
{
    if (t->invited || !t->cal.time_zone[0] || strcmp(t->cal.time_zone, "UTC") == 0) return false;
    size_t len;
    char *text = ical_write_timezone(t->cal.time_zone, a->c->tz, t->cal.created_ms, &len);
    if (!text) return false;
    co_raw(o, "<C:calendar-timezone>");
    co_textn(o, text, len);
    co_raw(o, "</C:calendar-timezone>");
    free(text);
    return true;
}

static bool collection_value(caldav_answer *a, const caldav_target *t, node_state *s, caldav_prop_id id,
                             caldav_out *o)
{
    const caldav_calprops *p = &t->props;
    switch (id) {
    case CALDAV_P_RESOURCETYPE:
        co_raw(o, "<D:resourcetype><D:collection/><C:calendar/></D:resourcetype>");
        return true;
    case CALDAV_P_DISPLAYNAME:
        text_el(o, "<D:displayname>", t->invited ? "Invitations" : t->cal.summary, "</D:displayname>");
        return true;
    case CALDAV_P_SYNC_TOKEN:
    case CALDAV_P_GETCTAG:
    case CALDAV_P_GETETAG: return collection_token(a, t, s, id, o);
    case CALDAV_P_SUPPORTED_CALENDAR_COMPONENT_SET:
        co_raw(o, "<C:supported-calendar-component-set><C:comp name=\"VEVENT\"/></C:supported-calendar-component-set>");
        return true;
    case CALDAV_P_SUPPORTED_CALENDAR_DATA:
        co_raw(o, "<C:supported-calendar-data><C:calendar-data content-type=\"text/calendar\" version=\"2.0\"/>"
                  "</C:supported-calendar-data>");
        return true;
    case CALDAV_P_SUPPORTED_REPORT_SET: report_set(o); return true;
    case CALDAV_P_CURRENT_USER_PRIVILEGE_SET: privileges(o, !t->invited); return true;
    case CALDAV_P_OWNER: href_el(o, "<D:owner>", caldav_href_principal, a->c, "</D:owner>"); return true;
    case CALDAV_P_MAX_RESOURCE_SIZE:
        co_fmt(o, "<C:max-resource-size>%" PRId64 "</C:max-resource-size>", a->c->dav->max_resource);
        return true;
    case CALDAV_P_CALENDAR_TIMEZONE: return collection_zone(a, t, o);
    case CALDAV_P_CALENDAR_COLOR:
        if (!p->color[0]) return false;
        text_el(o, "<A:calendar-color>", p->color, "</A:calendar-color>");
        return true;
    case CALDAV_P_CALENDAR_ORDER:
        if (!p->order[0]) return false;
        text_el(o, "<A:calendar-order>", p->order, "</A:calendar-order>");
        return true;
    case CALDAV_P_CALENDAR_DESCRIPTION:
        if (!p->description) return false;
        text_el(o, "<C:calendar-description>", p->description, "</C:calendar-description>");
        return true;
    default: return false;
    }
}

/* The resource's text (as stored, or expanded as the report asks). */
static bool resource_text(caldav_answer *a, const caldav_member *m, node_state *s)
{
    if (s->have_text) return true;
    if (s->no_ref) return false;
    if (!s->have_ref) {
        if (caldav_event_get(a->c, a->events, m->event_id, &s->ref) != CALDAV_OK) {
            s->no_ref = true;
            return false;
        }
        s->have_ref = true;
    }
    const caldav_request *rq = a->rq;
    bool expand = rq && rq->expand;
    s->text = caldav_render(a->c, &s->ref, expand, expand ? rq->expand_from_ms : 0, expand ? rq->expand_to_ms : 0,
                            &s->len);
    s->have_text = s->text != NULL;
    return s->have_text;
}

static void http_date(int64_t ms, char out[40])
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    snprintf(out, 40, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static bool resource_value(caldav_answer *a, const caldav_member *m, node_state *s, caldav_prop_id id,
                           caldav_out *o)
{
    char date[40];
    switch (id) {
    case CALDAV_P_RESOURCETYPE: co_raw(o, "<D:resourcetype/>"); return true;
    case CALDAV_P_GETETAG: {
        char etag[CALDAV_ETAG_MAX];
        caldav_etag(a->c, m->etag, etag);
        co_fmt(o, "<D:getetag>&quot;%s&quot;</D:getetag>", etag);
        return true;
    }
    case CALDAV_P_GETCONTENTTYPE:
        co_raw(o, "<D:getcontenttype>text/calendar; charset=utf-8; component=VEVENT</D:getcontenttype>");
        return true;
    case CALDAV_P_GETLASTMODIFIED:
        http_date(m->updated_ms, date);
        co_fmt(o, "<D:getlastmodified>%s</D:getlastmodified>", date);
        return true;
    case CALDAV_P_GETCONTENTLENGTH:
        if (!resource_text(a, m, s)) return false;
        co_fmt(o, "<D:getcontentlength>%zu</D:getcontentlength>", s->len);
        return true;
    case CALDAV_P_CALENDAR_DATA:
        if (!resource_text(a, m, s)) return false;
        co_raw(o, "<C:calendar-data>");
        co_textn(o, s->text, s->len);
        co_raw(o, "</C:calendar-data>");
        return true;
    default: return false;
    }
}

static bool node_value(caldav_answer *a, const caldav_node *n, node_state *s, const caldav_prop *p, caldav_out *o)
{
    if (p->id == CALDAV_P_UNKNOWN) return false;
    if (n->kind != CALDAV_RESOURCE && common_value(a, p->id, o)) return true;
    switch (n->kind) {
    case CALDAV_ROOT:
        if (p->id == CALDAV_P_RESOURCETYPE) co_raw(o, "<D:resourcetype><D:collection/></D:resourcetype>");
        return p->id == CALDAV_P_RESOURCETYPE;
    case CALDAV_PRINCIPAL: return principal_value(a, s, p->id, o);
    case CALDAV_HOME: return home_value(a, p->id, o);
    case CALDAV_CALENDAR: return collection_value(a, n->t, s, p->id, o);
    default: return resource_value(a, n->member, s, p->id, o);
    }
}

/* ---- the response -------------------------------------------------------- */

/* What allprop and propname list for each kind of node. */
static size_t allprops(caldav_kind kind, caldav_prop *out)
{
    static const caldav_prop_id root[] = {CALDAV_P_RESOURCETYPE, CALDAV_P_CURRENT_USER_PRINCIPAL};
    static const caldav_prop_id principal[] = {CALDAV_P_RESOURCETYPE, CALDAV_P_DISPLAYNAME,
                                               CALDAV_P_CURRENT_USER_PRINCIPAL, CALDAV_P_PRINCIPAL_URL,
                                               CALDAV_P_CALENDAR_HOME_SET, CALDAV_P_CALENDAR_USER_ADDRESS_SET};
    static const caldav_prop_id home[] = {CALDAV_P_RESOURCETYPE, CALDAV_P_DISPLAYNAME,
                                          CALDAV_P_CURRENT_USER_PRINCIPAL, CALDAV_P_OWNER};
    static const caldav_prop_id coll[] = {CALDAV_P_RESOURCETYPE, CALDAV_P_DISPLAYNAME, CALDAV_P_GETCTAG,
                                          CALDAV_P_SYNC_TOKEN, CALDAV_P_SUPPORTED_CALENDAR_COMPONENT_SET,
                                          CALDAV_P_CALENDAR_COLOR, CALDAV_P_CALENDAR_DESCRIPTION,
                                          CALDAV_P_CALENDAR_ORDER, CALDAV_P_OWNER};
    static const caldav_prop_id res[] = {CALDAV_P_RESOURCETYPE, CALDAV_P_GETETAG, CALDAV_P_GETCONTENTTYPE,
                                         CALDAV_P_GETLASTMODIFIED};
    const caldav_prop_id *ids = kind == CALDAV_ROOT ? root : kind == CALDAV_PRINCIPAL ? principal
                                : kind == CALDAV_HOME ? home : kind == CALDAV_CALENDAR ? coll : res;
    size_t n = kind == CALDAV_ROOT ? 2 : kind == CALDAV_PRINCIPAL ? 6 : kind == CALDAV_HOME ? 4
               : kind == CALDAV_CALENDAR ? 9 : 4;
    for (size_t i = 0; i < n; i++) out[i] = co_known(ids[i]);
    return n;
}

static void node_href(caldav_answer *a, const caldav_node *n, caldav_out *o)
{
    caldav_ctx *c = a->c;
    switch (n->kind) {
    case CALDAV_ROOT:
        co_textn(o, c->r->path.ptr, c->r->path.len);
        if (c->r->path.len == 0 || c->r->path.ptr[c->r->path.len - 1] != '/') co_raw(o, "/");
        return;
    case CALDAV_PRINCIPAL: return caldav_href_principal(c, o);
    case CALDAV_HOME: return caldav_href_home(c, o);
    case CALDAV_CALENDAR: return caldav_href_collection(c, n->t, o);
    default: return caldav_href_resource(c, n->t, n->member->name, o);
    }
}

static void propstat(caldav_out *o, const char *props, size_t len, int status)
{
    co_raw(o, "<D:propstat><D:prop>");
    co_rawn(o, props, len);
    co_raw(o, "</D:prop>");
    co_status(o, status);
    co_raw(o, "</D:propstat>");
}

void caldav_write_response(caldav_answer *a, const caldav_node *n)
{
    caldav_prop fixed[16];
    const caldav_request *rq = a->rq;
    bool asked = rq && rq->want == CALDAV_WANT_PROP;
    const caldav_prop *props = asked ? rq->props : fixed;
    size_t nprops = asked ? rq->nprops : allprops(n->kind, fixed);
    caldav_out found, missing;
    node_state s = {0};
    co_init(&found, 512);
    co_init(&missing, 64);
    for (size_t i = 0; i < nprops; i++) {
        if (rq && rq->want == CALDAV_WANT_PROPNAME) co_prop_empty(&found, &props[i]);
        else if (!node_value(a, n, &s, &props[i], &found) && asked) co_prop_empty(&missing, &props[i]);
    }
    co_raw(&a->out, "<D:response><D:href>");
    node_href(a, n, &a->out);
    co_raw(&a->out, "</D:href>");
    if (found.len || !missing.len) propstat(&a->out, found.buf, found.len, 200);
    if (missing.len) propstat(&a->out, missing.buf, missing.len, 404);
    co_raw(&a->out, "</D:response>");
    a->out.failed |= found.failed || missing.failed;
    co_free(&found);
    co_free(&missing);
    node_state_free(&s);
}

void caldav_write_missing(caldav_answer *a, const caldav_target *t, const char *name)
{
    co_raw(&a->out, "<D:response><D:href>");
    caldav_href_resource(a->c, t, name, &a->out);
    co_raw(&a->out, "</D:href>");
    co_status(&a->out, 404);
    co_raw(&a->out, "</D:response>");
}
