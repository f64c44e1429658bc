/* web_http.c -- answers GET and HEAD for the web app's files from the
 * in-memory table: content type, ETag and If-None-Match (304), gzip when
 * accepted, Cache-Control, and the security headers on every answer. */
#include <stdio.h>
#include <string.h>

#include "web/web.h"

/* Files are not fingerprinted (no build step), so the browser keeps them
 * but asks each time; the ETag makes the asking a 304. */
static void common_headers(http_req *r)
{
    http_add_header(r, "Content-Security-Policy", WEB_CSP);
    http_add_header(r, "X-Content-Type-Options", "nosniff");
    http_add_header(r, "Referrer-Policy", "no-referrer");
    http_add_header(r, "X-Frame-Options", "DENY");
    http_add_header(r, "Cache-Control", "no-cache");
    http_add_header(r, "Vary", "Accept-Encoding");
}

static void serve(http_req *r, const web_file *f)
{
    http_str ae = {0}, inm = {0};
    bool gz = f->gz && http_header(r, "accept-encoding", &ae) && web_accepts_gzip(ae.ptr, ae.len);
    const char *etag = gz ? f->etag_gz : f->etag;
    common_headers(r);
    http_add_header(r, "ETag", etag);
    if (http_header(r, "if-none-match", &inm) && web_etag_matches(inm.ptr, inm.len, etag)) {
        http_send_empty(r, 304);
        return;
    }
    if (gz) http_add_header(r, "Content-Encoding", "gzip");
    http_send_body(r, 200, f->content_type, (const char *)(gz ? f->gz : f->data), gz ? f->gzlen : f->len);
}

static void handle_web(http_req *r, void *arg)
{
    web_site *site = arg;
    char path[WEB_PATH_MAX];
    web_kind k = web_path_parse(r->path.ptr, r->path.len, path, sizeof path);
    const web_file *f = k == WEB_FILE ? web_site_find(site, path) : k == WEB_APP_ROUTE && site ? site->index : NULL;
    if (!f) {
        http_send_no_route(r); /* 404, or 405 where routes take other methods */
        return;
    }
    serve(r, f);
}

void web_http_register(web_site *site, http_server *s)
{
    http_server_set_fallback(s, handle_web, site);
}
