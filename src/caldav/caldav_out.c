/* caldav_out.c -- see caldav_out.h. */
#include "caldav/caldav_out.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void co_init(caldav_out *o, size_t cap)
{
    o->len = 0;
    o->cap = cap ? cap : 256;
    o->buf = malloc(o->cap);
    o->failed = o->buf == NULL;
    if (o->buf) o->buf[0] = '\0';
}

void co_free(caldav_out *o)
{
    free(o->buf);
    memset(o, 0, sizeof *o);
}

bool co_failed(const caldav_out *o)
{
    return o->failed;
}

static bool co_reserve(caldav_out *o, size_t n)
{
    if (o->failed) return false;
    if (o->len + n + 1 <= o->cap) return true;
    size_t cap = o->cap * 2;
    while (cap < o->len + n + 1) cap *= 2;
    char *grown = realloc(o->buf, cap);
    if (!grown) {
        o->failed = true;
        return false;
    }
    o->buf = grown;
    o->cap = cap;
    return true;
}

void co_rawn(caldav_out *o, const char *s, size_t n)
{
    if (!co_reserve(o, n)) return;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

void co_raw(caldav_out *o, const char *s)
{
    co_rawn(o, s, strlen(s));
}

void co_fmt(caldav_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !co_reserve(o, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(o->buf + o->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    o->len += (size_t)n;
}

void co_textn(caldav_out *o, const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;" : NULL;
        /* XML 1.0 has no place for other control characters at all. */
        bool drop = c < 0x20 && c != '\t' && c != '\n' && c != '\r';
        if (!esc && !drop && c != '\r') continue;
        co_rawn(o, s + run, i - run);
        if (esc) co_raw(o, esc);
        else if (c == '\r') co_raw(o, "&#13;"); /* kept: iCalendar lines end in CRLF */
        run = i + 1;
    }
    co_rawn(o, s + run, n - run);
}

void co_text(caldav_out *o, const char *s)
{
    co_textn(o, s, strlen(s));
}

void co_segment(caldav_out *o, const char *seg)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)seg; *p; p++) {
        bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-._~@", *p);
        if (keep) {
            co_rawn(o, (const char *)p, 1);
        } else {
            char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            co_rawn(o, esc, 3);
        }
    }
}

void co_multistatus_open(caldav_out *o)
{
    co_raw(o, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\" xmlns:C=\"" CALDAV_NS_CAL
              "\" xmlns:CS=\"" CALDAV_NS_CS "\" xmlns:A=\"" CALDAV_NS_APPLE "\">");
}

void co_multistatus_close(caldav_out *o)
{
    co_raw(o, "</D:multistatus>\n");
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 424: return "Failed Dependency";
    case 507: return "Insufficient Storage";
    default: return "Error";
    }
}

void co_status(caldav_out *o, int status)
{
    co_fmt(o, "<D:status>HTTP/1.1 %d %s</D:status>", status, reason(status));
}

static const char *prefix_of(const char *ns)
{
    if (strcmp(ns, CALDAV_NS_DAV) == 0) return "D";
    if (strcmp(ns, CALDAV_NS_CAL) == 0) return "C";
    if (strcmp(ns, CALDAV_NS_CS) == 0) return "CS";
    if (strcmp(ns, CALDAV_NS_APPLE) == 0) return "A";
    return NULL;
}

static void prop_tag(caldav_out *o, const caldav_prop *p, const char *close)
{
    const char *prefix = prefix_of(p->ns);
    if (prefix) {
        co_fmt(o, "<%s:%s%s", prefix, p->name, close);
        return;
    }
    co_fmt(o, "<X:%s xmlns:X=\"", p->name);
    co_text(o, p->ns);
    co_fmt(o, "\"%s", close);
}

void co_prop_open(caldav_out *o, const caldav_prop *p)
{
    prop_tag(o, p, ">");
}

void co_prop_empty(caldav_out *o, const caldav_prop *p)
{
    prop_tag(o, p, "/>");
}

void co_prop_close(caldav_out *o, const caldav_prop *p)
{
    const char *prefix = prefix_of(p->ns);
    co_fmt(o, "</%s:%s>", prefix ? prefix : "X", p->name);
}

caldav_prop co_known(caldav_prop_id id)
{
    return (caldav_prop){.id = id, .ns = caldav_prop_ns(id), .name = caldav_prop_name(id)};
}

void co_error_body(caldav_out *o, const char *cond_ns, const char *cond, const char *message)
{
    co_raw(o, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:error xmlns:D=\"DAV:\"");
    if (cond && cond_ns && strcmp(cond_ns, CALDAV_NS_DAV) != 0) {
        co_raw(o, " xmlns:C=\"");
        co_text(o, cond_ns);
        co_raw(o, "\"");
    }
    co_raw(o, ">");
    if (cond) co_fmt(o, "<%s:%s/>", cond_ns && strcmp(cond_ns, CALDAV_NS_DAV) == 0 ? "D" : "C", cond);
    co_raw(o, "<M:message xmlns:M=\"urn:x-chime\">");
    co_text(o, message);
    co_raw(o, "</M:message></D:error>\n");
}
