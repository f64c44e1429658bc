/* web.h -- the web app's static files, served by chime itself.
 *
 * At start the whole web root (web/ by default) is read into memory: each
 * file with its content type, a strong ETag (from its SHA-256) and, for
 * text that shrinks, a gzip copy made once. A request is answered from
 * that table alone, never by opening a path the client named, so no path
 * can reach outside the root ("..", symlinks, encoded slashes: a name is
 * either in the table or it is not). Editing web/ needs a restart.
 *
 * Routes: any GET or HEAD that no API route takes. A path naming a file
 * serves it; "/" and the app's client-side routes (/calendar, /chat/42:
 * a first segment of web/js/app.js's routes, listed in web_files.c, and no
 * dot in the last segment) serve index.html; anything else, and
 * everything under /v1/, is a JSON 404.
 */
#ifndef CHIME_WEB_H
#define CHIME_WEB_H

#include <stdbool.h>
#include <stddef.h>

#include "http/server.h"

#define WEB_MAX_FILES 2000
#define WEB_MAX_FILE_BYTES (8u << 20)
#define WEB_MAX_TOTAL_BYTES (64u << 20)
#define WEB_PATH_MAX 256

/* The Content-Security-Policy of every page: only this origin's scripts,
 * styles, images and connections (the WebSocket included); no inline
 * script, no plugins, no framing. */
#define WEB_CSP                                                                                            \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "   \
    "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; "                      \
    "frame-ancestors 'none'; object-src 'none'"

typedef struct web_file {
    char path[WEB_PATH_MAX]; /* "/index.html", "/js/app.js" */
    const char *content_type;
    unsigned char *data, *gz; /* gz NULL when not worth it */
    size_t len, gzlen;
    char etag[24], etag_gz[28]; /* quoted: "\"0123456789abcdef\"" */
} web_file;

typedef struct web_site {
    web_file *files; /* sorted by path */
    size_t n;
    const web_file *index;
} web_site;

/* Reads root into memory. NULL when root is not a directory or breaks a
 * limit (err says which). */
web_site *web_site_load(const char *root, char *err, size_t errlen);
void web_site_free(web_site *s);

/* The web root when --web-root is not given: "web" in the working
 * directory when it holds index.html (make run), else web/ beside the
 * binary's build/ directory (build/chime, build/san/chime). Writes into
 * buf; false when neither exists. */
bool web_root_find(char *buf, size_t size);

/* ---- request parsing: pure, fuzzed (fuzz/fuzz-web-request.c) ---- */

typedef enum web_kind { WEB_FILE, WEB_APP_ROUTE, WEB_NOT_FOUND } web_kind;

/* Decodes and checks a request path (without the query). Writes the
 * decoded path into out and says what it names: a file name to look up,
 * an app route (see above), or nothing servable
 * (bad escapes, NUL, backslash, "." or ".." or hidden segments, empty
 * segments, too long, or under /v1/). */
web_kind web_path_parse(const char *path, size_t len, char *out, size_t size);

/* Content type from a file name's extension. */
const char *web_content_type(const char *name);

/* Does an Accept-Encoding value accept gzip (a "gzip" token whose q is
 * not 0)? */
bool web_accepts_gzip(const char *value, size_t len);

/* Does an If-None-Match value match etag ("*", or one of a list of
 * entity tags, weak ones compared weakly as RFC 9110 says for GET)? */
bool web_etag_matches(const char *value, size_t len, const char *etag);

const web_file *web_site_find(const web_site *s, const char *path);

/* Adds the catch-all route for site (which the caller keeps for the
 * server's life; NULL serves only 404s). */
void web_http_register(web_site *site, http_server *s);

#endif
