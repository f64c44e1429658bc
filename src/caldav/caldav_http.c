/* caldav_http.c -- CalDAV's routes, the resolution of its paths for the
 * signed-in user, hrefs, DAV answers and conditional requests. The
 * handlers themselves are in caldav_propfind.c (PROPFIND, GET),
 * caldav_report.c (REPORT) and caldav_write.c (PUT, DELETE, MKCALENDAR,
 * MKCOL, PROPPATCH). */
#include "caldav/caldav_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define DAV_METHODS "OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, REPORT, MKCOL, MKCALENDAR"

void caldav_http_init(void)
{
    caldav_xml_init();
}

caldav_ctx caldav_ctx_of(caldav_http *dav, http_req *r)
{
    caldav_ctx c = {.r = r, .dav = dav, .db = store_pool_at(dav->cal->dbs, r->loop), .tz = dav->cal->tz,
                    .me = r->user_id};
    base_id_format(c.me, c.me_hex);
    memcpy(c.zone_tag, dav->zone_tag, sizeof c.zone_tag);
    return c;
}

/* The zone data's fingerprint: the SHA-256 of tzdata.zi, the whole of
 * the data in one file (so a distribution's patch that keeps the
 * release's name changes it too), or of the release's name when the
 * file cannot be read. Read once, at start, as the zones' release is. */
static void zone_tag_of(tz_db *tz, char out[9])
{
    enum { ZI_MAX = 4 << 20 };
    char path[4096], h[65];
    snprintf(path, sizeof path, "%s/tzdata.zi", tz_db_dir(tz));
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(ZI_MAX) : NULL;
    size_t n = buf ? fread(buf, 1, ZI_MAX, f) : 0;
    if (f) fclose(f);
    if (n > 0) base_sha256_hex(buf, n, h);
    else base_sha256_hex(tz_db_version(tz), strlen(tz_db_version(tz)), h);
    free(buf);
    snprintf(out, 9, "%.8s", h);
}

void caldav_etag(const caldav_ctx *c, const char *stored, char out[CALDAV_ETAG_MAX])
{
    snprintf(out, CALDAV_ETAG_MAX, "%s-%s", stored, c->zone_tag);
}

/* ---- answers ------------------------------------------------------------- */

void caldav_send_xml(caldav_ctx *c, int status, caldav_out *o)
{
    if (co_failed(o)) http_send_error(c->r, 503, "unavailable", NULL, "out of memory");
    else http_send_body(c->r, status, "application/xml; charset=utf-8", o->buf, o->len);
    co_free(o);
}

void caldav_send_error(caldav_ctx *c, int status, const char *cond_ns, const char *cond, const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    caldav_out o;
    co_init(&o, 512);
    co_error_body(&o, cond_ns, cond, msg);
    caldav_send_xml(c, status, &o);
}

void caldav_send_xml_err(caldav_ctx *c, const caldav_xml_err *e)
{
    caldav_send_error(c, e->status, e->cond_ns, e->cond, "%s", e->message);
}

void caldav_send_db_error(caldav_ctx *c)
{
    http_send_db_error(c->r, store_errmsg(c->db));
}

/* ---- paths --------------------------------------------------------------- */

int caldav_depth(const http_req *r, int dflt)
{
    http_str h;
    if (!http_header(r, "depth", &h)) return dflt;
    if (h.len == 1 && (h.ptr[0] == '0' || h.ptr[0] == '1')) return h.ptr[0] - '0';
    return 2;
}

/* A route parameter as a C string; false when too long or holding bytes
 * no segment may (controls), or "." / "..". */
static bool param_copy(const http_req *r, int i, char *out, size_t size)
{
    http_str p = r->params[i];
    if (p.len == 0 || p.len >= size) return false;
    for (size_t k = 0; k < p.len; k++)
        if ((unsigned char)p.ptr[k] < 0x20 || p.ptr[k] == 0x7f) return false;
    memcpy(out, p.ptr, p.len);
    out[p.len] = '\0';
    return strcmp(out, ".") != 0 && strcmp(out, "..") != 0;
}

void caldav_target_calendar(caldav_ctx *c, caldav_target *t, const cal_calendar *cal)
{
    (void)c;
    t->kind = CALDAV_CALENDAR;
    t->cal = *cal;
    t->coll = cal->id;
    if (t->props.segment[0]) snprintf(t->segment, sizeof t->segment, "%s", t->props.segment);
    else base_id_format(cal->id, t->segment);
}

void caldav_target_invited(caldav_ctx *c, caldav_target *t)
{
    t->kind = CALDAV_CALENDAR;
    t->invited = true;
    t->coll = CALDAV_INVITED(c->me);
    snprintf(t->segment, sizeof t->segment, "%s", CALDAV_INVITED_SEGMENT);
}

static bool not_found(caldav_ctx *c)
{
    caldav_send_error(c, 404, NULL, NULL, "no such resource");
    return false;
}

static bool resolve_collection(caldav_ctx *c, caldav_target *t)
{
    char seg[CALDAV_SEGMENT_MAX + 1];
    if (!param_copy(c->r, 1, seg, sizeof seg)) return not_found(c);
    if (strcmp(seg, CALDAV_INVITED_SEGMENT) == 0) {
        caldav_target_invited(c, t);
        return true;
    }
    cal_calendar cal;
    int rc = caldav_calendar_find(c->db, c->me, seg, &cal, &t->props);
    if (rc == CALDAV_NOT_FOUND) return not_found(c);
    if (rc != CALDAV_OK) {
        caldav_send_db_error(c);
        return false;
    }
    caldav_target_calendar(c, t, &cal);
    return true;
}

bool caldav_resolve(caldav_ctx *c, caldav_kind kind, caldav_target *t)
{
    memset(t, 0, sizeof *t);
    t->kind = kind;
    if (kind == CALDAV_ROOT) return true;
    /* Another user's paths are not there at all: 404, never 403. */
    http_str user = c->r->params[0];
    if (user.len != 16 || memcmp(user.ptr, c->me_hex, 16) != 0) return not_found(c);
    if (kind == CALDAV_PRINCIPAL || kind == CALDAV_HOME) return true;
    if (!resolve_collection(c, t)) return false;
    if (kind == CALDAV_CALENDAR) return true;
    t->kind = CALDAV_RESOURCE;
    if (!param_copy(c->r, 2, t->name, sizeof t->name)) {
        caldav_target_free(t);
        return not_found(c);
    }
    int rc = caldav_member_find(c->db, t->coll, t->name, &t->member);
    if (rc == CALDAV_ERROR) {
        caldav_target_free(t);
        caldav_send_db_error(c);
        return false;
    }
    t->exists = rc == CALDAV_OK;
    return true;
}

void caldav_target_free(caldav_target *t)
{
    caldav_calprops_free(&t->props);
}

/* ---- hrefs --------------------------------------------------------------- */

void caldav_href_principal(caldav_ctx *c, caldav_out *o)
{
    co_fmt(o, "/dav/principals/%s/", c->me_hex);
}

void caldav_href_home(caldav_ctx *c, caldav_out *o)
{
    co_fmt(o, "/dav/calendars/%s/", c->me_hex);
}

void caldav_href_collection(caldav_ctx *c, const caldav_target *t, caldav_out *o)
{
    caldav_href_home(c, o);
    co_segment(o, t->segment);
    co_raw(o, "/");
}

void caldav_href_resource(caldav_ctx *c, const caldav_target *t, const char *name, caldav_out *o)
{
    caldav_href_collection(c, t, o);
    co_segment(o, name);
}

const char *caldav_href_member(caldav_ctx *c, const caldav_target *t, const char *href, char *name, size_t size)
{
    char path[CALDAV_HREF_MAX + 1], prefix[96], id_hex[17];
    const char *p = href;
    if (strncmp(p, "http://", 7) == 0 || strncmp(p, "https://", 8) == 0) {
        p = strchr(strchr(p, ':') + 3, '/');
        if (!p) return NULL;
    }
    if (http_url_decode(p, strlen(p), path, sizeof path, false) != 0) return NULL;
    snprintf(prefix, sizeof prefix, "/dav/calendars/%s/", c->me_hex);
    size_t plen = strlen(prefix);
    if (strncmp(path, prefix, plen) != 0) return NULL;
    const char *seg = path + plen, *slash = strchr(seg, '/');
    if (!slash) return NULL;
    size_t slen = (size_t)(slash - seg);
    base_id_format(t->coll, id_hex);
    bool same = (slen == strlen(t->segment) && memcmp(seg, t->segment, slen) == 0) ||
                (!t->invited && slen == 16 && memcmp(seg, id_hex, 16) == 0);
    const char *rest = slash + 1;
    if (!same || !*rest || strchr(rest, '/') || strlen(rest) >= size) return NULL;
    memcpy(name, rest, strlen(rest) + 1);
    return name;
}

/* ---- conditional requests ------------------------------------------------ */

/* Is [p, q) the quoted ETag "<stored>-<tag>" -- with any_tag, under any
 * zone tag, or under none (the ETags of the builds before the tag)? */
static bool etag_is(const char *p, const char *q, const char *stored, const char *tag, bool any_tag)
{
    size_t n = strlen(stored), t = strlen(tag), len = (size_t)(q - p);
    if (len < n + 2 || p[0] != '"' || q[-1] != '"' || memcmp(p + 1, stored, n) != 0) return false;
    if (any_tag && len == n + 2) return true;
    if (len != n + t + 3 || p[n + 1] != '-') return false;
    const char *g = p + n + 2;
    if (!any_tag) return memcmp(g, tag, t) == 0;
    for (size_t i = 0; i < t; i++)
        if (!((g[i] >= '0' && g[i] <= '9') || (g[i] >= 'a' && g[i] <= 'f'))) return false;
    return true;
}

/* Does an If-Match / If-None-Match list name the resource's ETag (see
 * etag_is)? */
static bool etag_listed(http_str h, const char *stored, const char *tag, bool any_tag)
{
    const char *p = h.ptr, *end = h.ptr + h.len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ',')) p++;
        if (end - p >= 2 && p[0] == 'W' && p[1] == '/') p += 2;
        const char *stop = memchr(p, ',', (size_t)(end - p));
        if (!stop) stop = end;
        const char *q = stop;
        while (q > p && q[-1] == ' ') q--;
        if (etag_is(p, q, stored, tag, any_tag)) return true;
        p = stop;
    }
    return false;
}

static bool is_star(http_str h)
{
    while (h.len && h.ptr[0] == ' ') h.ptr++, h.len--;
    while (h.len && h.ptr[h.len - 1] == ' ') h.len--;
    return h.len == 1 && h.ptr[0] == '*';
}

/* A write's conditions name the event's state: an ETag of the same
 * stored etag under an older zone tag (or none, from before the tag)
 * still matches, so a tzdata update or an upgrade alone (which change
 * the bytes, not the event) does not refuse with 412 the edit a client
 * made on the bytes it had. */
bool caldav_preconditions(caldav_ctx *c, bool exists, const char *stored)
{
    char etag[CALDAV_ETAG_MAX];
    caldav_etag(c, exists ? stored : "", etag);
    http_str h;
    bool ok = true;
    if (http_header(c->r, "if-match", &h))
        ok = exists && (is_star(h) || etag_listed(h, stored, c->zone_tag, true));
    if (ok && http_header(c->r, "if-none-match", &h))
        ok = !exists || (!is_star(h) && !etag_listed(h, stored, c->zone_tag, true));
    if (!ok)
        caldav_send_error(c, 412, NULL, NULL, exists ? "the resource changed (its ETag is \"%s\")" : "%s",
                          exists ? etag : "the resource is not there");
    return ok;
}

/* GET's If-None-Match: true when the client's copy is current (304). */
bool caldav_not_modified(caldav_ctx *c, const char *stored)
{
    http_str h;
    return http_header(c->r, "if-none-match", &h) && (is_star(h) || etag_listed(h, stored, c->zone_tag, false));
}

/* ---- routes -------------------------------------------------------------- */

static void on_well_known(http_req *r, void *arg)
{
    (void)arg;
    http_add_header(r, "Location", "/dav/");
    http_send_empty(r, 301);
}

static void on_options(http_req *r, void *arg)
{
    (void)arg;
    http_add_header(r, "DAV", "1, 3, calendar-access, extended-mkcol");
    http_add_header(r, "Allow", DAV_METHODS);
    http_send_empty(r, 200);
}

static void unsupported_report(caldav_ctx *c)
{
    caldav_send_error(c, 403, CALDAV_NS_DAV, "supported-report", "no report is supported here");
}

static void on_root(http_req *r, void *arg)
{
    caldav_ctx c = caldav_ctx_of(arg, r);
    caldav_handle_propfind(&c, CALDAV_ROOT);
}

static void on_principal(http_req *r, void *arg)
{
    caldav_ctx c = caldav_ctx_of(arg, r);
    if (r->method == HTTP_REPORT) unsupported_report(&c);
    else caldav_handle_propfind(&c, CALDAV_PRINCIPAL);
}

static void on_home(http_req *r, void *arg)
{
    caldav_ctx c = caldav_ctx_of(arg, r);
    if (r->method == HTTP_REPORT) unsupported_report(&c);
    else caldav_handle_propfind(&c, CALDAV_HOME);
}

static void on_collection(http_req *r, void *arg)
{
    caldav_ctx c = caldav_ctx_of(arg, r);
    switch (r->method) {
    case HTTP_PROPFIND: return caldav_handle_propfind(&c, CALDAV_CALENDAR);
    case HTTP_REPORT: return caldav_handle_report(&c);
    case HTTP_PROPPATCH: return caldav_handle_proppatch(&c);
    case HTTP_DELETE: return caldav_handle_delete(&c, CALDAV_CALENDAR);
    default: return caldav_handle_mkcol(&c); /* MKCOL, MKCALENDAR */
    }
}

static void on_resource(http_req *r, void *arg)
{
    caldav_ctx c = caldav_ctx_of(arg, r);
    switch (r->method) {
    case HTTP_PROPFIND: return caldav_handle_propfind(&c, CALDAV_RESOURCE);
    case HTTP_PUT: return caldav_handle_put(&c);
    case HTTP_DELETE: return caldav_handle_delete(&c, CALDAV_RESOURCE);
    default: return caldav_handle_get(&c); /* GET, HEAD */
    }
}

/* Writes announce themselves through the calendar's change hook after
 * answering, as the JSON API's do (the reminders recompute from it). The
 * loop is read first: the request may be gone once answered. */
static void on_collection_write(http_req *r, void *arg)
{
    caldav_http *dav = arg;
    int loop = r->loop;
    on_collection(r, arg);
    cal_changed(&dav->cal->changes, store_pool_at(dav->cal->dbs, loop));
}

static void on_resource_write(http_req *r, void *arg)
{
    caldav_http *dav = arg;
    int loop = r->loop;
    on_resource(r, arg);
    cal_changed(&dav->cal->changes, store_pool_at(dav->cal->dbs, loop));
}

void caldav_http_register(caldav_http *c, http_server *s)
{
    zone_tag_of(c->cal->tz, c->zone_tag);
    log_info("caldav: zone data %s, tag %s (in every ETag and sync token)",
             tz_db_version(c->cal->tz)[0] ? tz_db_version(c->cal->tz) : "of no named release", c->zone_tag);
    const unsigned B = HTTP_ROUTE_BASIC;
    static const char *const paths[] = {"/", "/dav", "/dav/principals/{user}", "/dav/calendars/{user}",
                                        "/dav/calendars/{user}/{calendar}",
                                        "/dav/calendars/{user}/{calendar}/{name}", "/.well-known/caldav"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) http_route(s, HTTP_OPTIONS, paths[i], on_options, c, 0);
    http_route(s, HTTP_GET | HTTP_PROPFIND, "/.well-known/caldav", on_well_known, c, 0);
    http_route(s, HTTP_PROPFIND, "/", on_root, c, B);
    http_route(s, HTTP_PROPFIND, "/dav", on_root, c, B);
    http_route(s, HTTP_PROPFIND | HTTP_REPORT, "/dav/principals/{user}", on_principal, c, B);
    http_route(s, HTTP_PROPFIND | HTTP_REPORT, "/dav/calendars/{user}", on_home, c, B);
    http_route(s, HTTP_PROPFIND | HTTP_REPORT, "/dav/calendars/{user}/{calendar}", on_collection, c, B);
    http_route(s, HTTP_PROPPATCH | HTTP_DELETE | HTTP_MKCOL | HTTP_MKCALENDAR, "/dav/calendars/{user}/{calendar}",
               on_collection_write, c, B);
    http_route(s, HTTP_GET | HTTP_PROPFIND, "/dav/calendars/{user}/{calendar}/{name}", on_resource, c, B);
    http_route(s, HTTP_PUT | HTTP_DELETE, "/dav/calendars/{user}/{calendar}/{name}", on_resource_write, c, B);
}
