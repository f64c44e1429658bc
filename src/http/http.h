/* http.h -- what request handlers see of the HTTP server.
 *
 * Handlers never touch h2o: they get an http_req, read its method, path
 * parameters, query, headers and body, and answer exactly once with one of
 * the http_send_* calls (or hand the request to a worker with http_defer and
 * answer from the done callback). Every error answer has the one shape
 *     {"error":{"code":"...","message":"...","field":"..."}}
 */
#ifndef CHIME_HTTP_H
#define CHIME_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum http_method {
    HTTP_GET = 1 << 0,
    HTTP_POST = 1 << 1,
    HTTP_PUT = 1 << 2,
    HTTP_PATCH = 1 << 3,
    HTTP_DELETE = 1 << 4,
    HTTP_HEAD = 1 << 5,
    HTTP_OPTIONS = 1 << 6,
    /* WebDAV (RFC 4918, 3253) and CalDAV (RFC 4791) */
    HTTP_PROPFIND = 1 << 7,
    HTTP_PROPPATCH = 1 << 8,
    HTTP_REPORT = 1 << 9,
    HTTP_MKCOL = 1 << 10,
    HTTP_MKCALENDAR = 1 << 11,
} http_method;

#define HTTP_METHOD_COUNT 12

#define HTTP_MAX_PARAMS 4

typedef struct http_str {
    const char *ptr;
    size_t len;
} http_str;

typedef struct http_req {
    http_method method;
    http_str path;   /* without the query string */
    http_str query;  /* after '?', possibly empty */
    http_str body;
    http_str params[HTTP_MAX_PARAMS]; /* {name} segments of the route, in order */
    int nparams;
    int loop;        /* the event loop running the handler (see server.h) */
    int64_t user_id; /* set by the authenticator on routes that need a user */
    char request_id[32];
    /* Internals of the server; handlers leave them alone. */
    void *impl;
    int route_index;
    unsigned route_allowed; /* methods the routes of this path take (fallback) */
    int status;
    bool answered;
    bool deferred;
    int64_t started_ns;
} http_req;

/* Error description filled by validation helpers and sent by http_send_err. */
typedef struct http_err {
    int status;
    const char *code;
    char field[64];
    char message[256];
} http_err;

void http_err_set(http_err *e, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Request accessors. Header names are matched case-insensitively. */
bool http_header(const http_req *r, const char *name, http_str *out);
/* Decoded value of a query parameter into buf (NUL-terminated). Returns 1
 * when present, 0 when absent, -1 when malformed or longer than size-1. */
int http_query(const http_req *r, const char *name, char *buf, size_t size);
/* Percent-decodes len bytes of src into buf (NUL-terminated); '+' is a
 * space in query strings (plus_is_space), itself in paths. -1 on a bad
 * escape, a NUL, or more than size-1 bytes. */
int http_url_decode(const char *src, size_t len, char *buf, size_t size, bool plus_is_space);
/* The client's address as text ("127.0.0.1"). */
void http_peer(const http_req *r, char *buf, size_t size);

/* Responses. json is stolen (decref'd by the server). */
void http_send_json(http_req *r, int status, json_t *json);
void http_send_error(http_req *r, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void http_send_err(http_req *r, const http_err *e);
/* 503 "the database did not answer; try again", with the database's own
 * message (dberr) logged under the request id, never shown to the client. */
void http_send_db_error(http_req *r, const char *dberr);
/* Qualifies e->field with its parent: "start" + "date" -> "start.date"
 * (prefix alone when the field is empty). Truncates, never overflows. */
void http_err_prefix(http_err *e, const char *prefix);
void http_send_body(http_req *r, int status, const char *content_type, const char *body, size_t len);
void http_send_empty(http_req *r, int status);
/* Adds a response header; call before the http_send_* call. */
void http_add_header(http_req *r, const char *name, const char *value);
/* Retry-After: seconds (a 429's or a 503's). */
void http_add_retry_after(http_req *r, int64_t seconds);
/* 429 with Retry-After: retry_s and the error's code and message. */
void http_send_429(http_req *r, int64_t retry_s, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Runs work(arg) on a background worker, then done(r, arg) on the request's
 * own event loop, where done must answer. If the client went away, done is
 * called with r == NULL so it can free arg. */
typedef void (*http_work_fn)(void *arg);
typedef void (*http_done_fn)(http_req *r, void *arg);
void http_defer(http_req *r, http_work_fn work, http_done_fn done, void *arg);

/* Sets the request aside for work another thread of the caller's does
 * (a writer that commits many requests' writes together): the handler
 * returns without answering, and once the work is done any thread calls
 * http_unpark, exactly once; done(r, arg) then runs on the request's own
 * loop and must answer (r == NULL when the client went away: free arg).
 * NULL after answering 503 (out of memory): the work must not start. */
typedef struct http_parked http_parked;
http_parked *http_park(http_req *r, http_done_fn done, void *arg);
void http_unpark(http_parked *p);

/* The JSON object body of a request: checks the content type (415), parses
 * (400, with the position), requires an object (400). Returns NULL after
 * filling e. The caller owns the result. */
json_t *http_json_body(const http_req *r, http_err *e);

#endif
