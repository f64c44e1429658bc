/* server.c -- h2o event loops, listeners, request dispatch, responses,
 * deferred work and clean shutdown. Request framing checks and the
 * lingering close are in framing.c, the buffered access log in
 * access_log.c; h2o's types stay inside src/http. */
#define _GNU_SOURCE
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <h2o.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"
#include "http/access_log.h"
#include "http/framing.h"
#include "http/metrics.h"
#include "http/router.h"
#include "http/server_int.h"
#include "http/workers.h"

typedef struct loop_thread loop_thread;

#define HTTP_MAX_LOOP_HOOKS 32

typedef struct loop_hook {
    http_loop_fn start, stop;
    void *arg;
} loop_hook;

struct http_server {
    http_server_opts opts;
    router routes;
    http_metrics metrics;
    h2o_globalconf_t config;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int port;
    http_access_log *access; /* NULL when off */
    loop_thread *threads;
    int nthreads;
    workers *pool;
    char id_prefix[12];
    loop_hook hooks[HTTP_MAX_LOOP_HOOKS];
    int nhooks;
    pthread_mutex_t start_mu; /* loops set up on their own threads report here */
    pthread_cond_t start_cv;
    int loops_ready;
    http_auth_fn authenticate, admin;
    void *auth_arg;
    http_auth_fn basic;
    void *basic_arg;
    http_handler_fn fallback; /* GET/HEAD that no route takes */
    void *fallback_arg;
    http_refuse_fn refuse_writes; /* http_server_set_write_guard */
    void *refuse_arg;
};

struct loop_thread {
    http_server *srv;
    int index;
    pthread_t tid;
    bool started;
    h2o_evloop_t *loop;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
    int listen_fd;
    h2o_socket_t *listener;
    h2o_multithread_receiver_t done_rx; /* deferred work that finished */
    h2o_multithread_receiver_t stop_rx;
    h2o_multithread_message_t stop_msg;
    http_linger_loop *linger; /* connections ended by an error, draining */
    http_access_buf *access;  /* this loop's access log lines; NULL when off */
    h2o_timeout_t accept_pause;          /* out of descriptors: accepting waits */
    h2o_timeout_entry_t accept_resume;
    int64_t accept_warned_ns;            /* the last "cannot accept" line */
    int pending; /* deferred requests not yet answered */
    int unwritten; /* requests whose response h2o has not finished writing */
    bool stopping;
    uint64_t seq;
};

typedef struct chime_handler {
    h2o_handler_t super;
    http_server *srv;
} chime_handler;

/* A deferred request: owned by the loop thread until queued, then by the
 * worker, then by the loop thread again, which frees it after `done`. */
typedef struct http_deferred {
    h2o_multithread_message_t msg; /* first: the queue links through it */
    loop_thread *thread;
    http_req *req;   /* NULL once the client's request is gone */
    struct http_deferred **guard;
    http_work_fn work;
    http_done_fn done;
    void *arg;
} http_deferred;

static loop_thread *thread_of(h2o_req_t *req)
{
    return (loop_thread *)((char *)req->conn->ctx - offsetof(loop_thread, ctx));
}

/* ---- responses ---------------------------------------------------------- */

static const char *reason_of(int status)
{
    switch (status) {
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 207: return "Multi-Status";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 412: return "Precondition Failed";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 424: return "Failed Dependency";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default: return "Status";
    }
}

static void access_log(loop_thread *t, const http_req *r, h2o_req_t *req, int status, size_t bytes)
{
    if (!t->access) return;
    http_server *srv = t->srv;
    char peer[64];
    http_peer(r, peer, sizeof peer);
    http_access_entry e = {.request_id = r->request_id, .peer = peer, .method = req->method, .path = req->path,
                           .status = status, .bytes = bytes, .ms = (double)(base_mono_ns() - r->started_ns) / 1e6};
    if (r->route_index >= 0 && r->route_index < srv->routes.nroutes &&
        (srv->routes.routes[r->route_index].flags & HTTP_ROUTE_SECRET))
        e.path = h2o_iovec_init(srv->routes.routes[r->route_index].pattern,
                                strlen(srv->routes.routes[r->route_index].pattern));
    http_access_buf_add(t->access, &e);
}

static void finish(http_req *r, int status, const char *ctype, const char *body, size_t len)
{
    h2o_req_t *req = r->impl;
    loop_thread *t = thread_of(req);
    if (r->answered) {
        log_error("request %s answered twice", r->request_id);
        return;
    }
    r->answered = true;
    r->status = status;
    req->res.status = status;
    req->res.reason = reason_of(status);
    if (ctype)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype, strlen(ctype));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-request-id"), 0, NULL, r->request_id,
                          strlen(r->request_id));
    metrics_observe(&t->srv->metrics, r->route_index, status, base_mono_ns() - r->started_ns);
    access_log(t, r, req, status, len);
    req->res.content_length = len;
    if (req->method.len == 4 && memcmp(req->method.base, "HEAD", 4) == 0) len = 0;
    h2o_send_inline(req, body, len);
}

void http_send_body(http_req *r, int status, const char *content_type, const char *body, size_t len)
{
    finish(r, status, content_type, body, len);
}

void http_send_empty(http_req *r, int status)
{
    finish(r, status, NULL, "", 0);
}

void http_send_json(http_req *r, int status, json_t *json)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    json_decref(json);
    if (!text) {
        http_send_error(r, 500, "internal", NULL, "could not encode the response");
        return;
    }
    finish(r, status, "application/json", text, strlen(text));
    free(text);
}

void http_err_set(http_err *e, int status, const char *code, const char *field, const char *fmt, ...)
{
    e->status = status;
    e->code = code;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

void http_err_prefix(http_err *e, const char *prefix)
{
    char joined[sizeof e->field];
    size_t plen = strlen(prefix), flen = strlen(e->field), n = 0;
    for (size_t i = 0; i < plen && n + 1 < sizeof joined; i++) joined[n++] = prefix[i];
    if (flen && n + 1 < sizeof joined) joined[n++] = '.';
    for (size_t i = 0; i < flen && n + 1 < sizeof joined; i++) joined[n++] = e->field[i];
    joined[n] = '\0';
    memcpy(e->field, joined, n + 1);
}

void http_send_err(http_req *r, const http_err *e)
{
    json_t *err = json_pack("{s:s,s:s}", "code", e->code, "message", e->message);
    if (err && e->field[0]) json_object_set_new(err, "field", json_string(e->field));
    http_send_json(r, e->status, json_pack("{s:o}", "error", err));
}

void http_send_db_error(http_req *r, const char *dberr)
{
    log_error("request %s: database: %s", r->request_id, dberr ? dberr : "?");
    http_send_error(r, 503, "unavailable", NULL, "the database did not answer; try again");
}

void http_send_error(http_req *r, int status, const char *code, const char *field, const char *fmt, ...)
{
    http_err e = {.status = status, .code = code};
    snprintf(e.field, sizeof e.field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    http_send_err(r, &e);
}

void http_add_header(http_req *r, const char *name, const char *value)
{
    h2o_req_t *req = r->impl;
    size_t nlen = strlen(name);
    char *lower = h2o_mem_alloc_pool(&req->pool, nlen + 1);
    for (size_t i = 0; i <= nlen; i++) lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    h2o_add_header_by_str(&req->pool, &req->res.headers, lower, nlen, 1, NULL,
                          h2o_strdup(&req->pool, value, SIZE_MAX).base, strlen(value));
}

void http_add_retry_after(http_req *r, int64_t seconds)
{
    char secs[24];
    snprintf(secs, sizeof secs, "%lld", (long long)seconds);
    http_add_header(r, "Retry-After", secs);
}

void http_send_429(http_req *r, int64_t retry_s, const char *code, const char *fmt, ...)
{
    http_err e = {.status = 429, .code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    http_add_retry_after(r, retry_s);
    http_send_err(r, &e);
}

/* ---- request accessors -------------------------------------------------- */

bool http_header(const http_req *r, const char *name, http_str *out)
{
    h2o_req_t *req = r->impl;
    ssize_t i = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
    if (i < 0) return false;
    out->ptr = req->headers.entries[i].value.base;
    out->len = req->headers.entries[i].value.len;
    return true;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int http_url_decode(const char *src, size_t len, char *buf, size_t size, bool plus_is_space)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        if (c == '+' && plus_is_space) c = ' ';
        else if (c == '%') {
            if (i + 2 >= len) return -1;
            int hi = hexval(src[i + 1]), lo = hexval(src[i + 2]);
            if (hi < 0 || lo < 0) return -1;
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        if (c == '\0' || n + 1 >= size) return -1;
        buf[n++] = c;
    }
    buf[n] = '\0';
    return 0;
}

int http_query(const http_req *r, const char *name, char *buf, size_t size)
{
    size_t nlen = strlen(name);
    const char *p = r->query.ptr, *end = p + r->query.len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        const char *kend = eq ? eq : stop;
        if ((size_t)(kend - p) == nlen && memcmp(p, name, nlen) == 0) {
            const char *v = eq ? eq + 1 : stop;
            return http_url_decode(v, (size_t)(stop - v), buf, size, true) == 0 ? 1 : -1;
        }
        p = stop + 1;
    }
    return 0;
}

void http_peer(const http_req *r, char *buf, size_t size)
{
    h2o_req_t *req = r->impl;
    struct sockaddr_storage ss;
    socklen_t len = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    buf[0] = '\0';
    if (len == 0 || getnameinfo((struct sockaddr *)&ss, len, buf, (socklen_t)size, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(buf, size, "unknown");
}

/* ---- deferred work ------------------------------------------------------ */

static void deferred_guard_dispose(void *p)
{
    http_deferred **slot = p;
    if (*slot) (*slot)->req = NULL;
}

static void deferred_run(void *p)
{
    http_deferred *d = p;
    d->work(d->arg);
    h2o_multithread_send_message(&d->thread->done_rx, &d->msg);
}

/* A request set aside: answered later by done, on its own loop. */
static http_deferred *deferred_new(http_req *r, http_done_fn done, void *arg)
{
    h2o_req_t *req = r->impl;
    loop_thread *t = thread_of(req);
    http_deferred *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->thread = t;
    d->req = r;
    d->done = done;
    d->arg = arg;
    /* Freed with the request's pool; tells us if the request died first. */
    r->deferred = true;
    d->guard = h2o_mem_alloc_shared(&req->pool, sizeof *d->guard, deferred_guard_dispose);
    *d->guard = d;
    t->pending++;
    return d;
}

http_parked *http_park(http_req *r, http_done_fn done, void *arg)
{
    http_deferred *d = deferred_new(r, done, arg);
    if (!d) http_send_error(r, 503, "unavailable", NULL, "out of memory");
    return (http_parked *)d;
}

void http_unpark(http_parked *p)
{
    http_deferred *d = (http_deferred *)p;
    h2o_multithread_send_message(&d->thread->done_rx, &d->msg);
}

void http_defer(http_req *r, http_work_fn work, http_done_fn done, void *arg)
{
    h2o_req_t *req = r->impl;
    loop_thread *t = thread_of(req);
    http_deferred *d = deferred_new(r, done, arg);
    if (!d) {
        done(NULL, arg);
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    d->work = work;
    if (workers_submit(t->srv->pool, deferred_run, d) != 0) {
        t->pending--;
        *d->guard = NULL;
        free(d);
        done(NULL, arg);
        http_send_error(r, 503, "unavailable", NULL, "the server is shutting down");
    }
}

static void on_deferred_done(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages)
{
    while (!h2o_linklist_is_empty(messages)) {
        h2o_multithread_message_t *m = H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        h2o_linklist_unlink(&m->link);
        http_deferred *d = (http_deferred *)m;
        d->thread->pending--;
        if (d->req) {
            *d->guard = NULL;
            d->done(d->req, d->arg);
            if (!d->req->answered) http_send_error(d->req, 500, "internal", NULL, "no response");
        } else {
            d->done(NULL, d->arg);
        }
        free(d);
    }
}

/* ---- WebSocket upgrades (ws.c) -------------------------------------------- */

h2o_context_t *http_server_context(http_server *s, int loop)
{
    return &s->threads[loop].ctx;
}

static const char *ws_key(h2o_req_t *req)
{
    const char *key = NULL;
    if (req->version >= 0x200 || h2o_is_websocket_handshake(req, &key) != 0) return NULL;
    return key;
}

bool http_server_is_ws(http_req *r)
{
    return ws_key(r->impl) != NULL;
}

h2o_websocket_conn_t *http_server_upgrade_ws(http_req *r, void *data, h2o_websocket_msg_callback cb)
{
    h2o_req_t *req = r->impl;
    const char *key = ws_key(req);
    if (!key) return NULL;
    loop_thread *t = thread_of(req);
    /* h2o writes the 101 itself, past our filters and finish(). */
    r->answered = true;
    r->status = 101;
    metrics_observe(&t->srv->metrics, r->route_index, 101, base_mono_ns() - r->started_ns);
    access_log(t, r, req, 101, 0);
    return h2o_upgrade_to_websocket(req, key, data, cb);
}

int http_authenticate(http_req *r, http_err *e)
{
    http_server *srv = thread_of(r->impl)->srv;
    http_err_set(e, 401, "unauthorized", NULL, "this server checks no sign-ins");
    return srv->authenticate ? srv->authenticate(srv->auth_arg, r, e) : -1;
}

/* ---- dispatch ----------------------------------------------------------- */

/* By bit: names[i] is the method 1 << i. */
static const char *const method_names[HTTP_METHOD_COUNT] = {
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PROPFIND", "PROPPATCH", "REPORT", "MKCOL",
    "MKCALENDAR"};

static http_method method_of(h2o_iovec_t m)
{
    for (int i = 0; i < HTTP_METHOD_COUNT; i++)
        if (m.len == strlen(method_names[i]) && memcmp(m.base, method_names[i], m.len) == 0) return 1u << i;
    return 0;
}

static void allow_header(http_req *r, unsigned allowed)
{
    char buf[160] = "";
    for (int i = 0; i < HTTP_METHOD_COUNT; i++)
        if (allowed & (1u << i)) {
            if (buf[0]) strcat(buf, ", ");
            strcat(buf, method_names[i]);
        }
    http_add_header(r, "Allow", buf);
}

/* The answer a check gives unless it says otherwise: set for every signed-in
 * request, so copied rather than formatted (two vsnprintf calls were 2.5%
 * of a loop's instructions in bench/chat). */
static void err_preset(http_err *e, int status, const char *code, const char *message)
{
    e->status = status;
    e->code = code;
    e->field[0] = '\0';
    size_t n = strlen(message);
    if (n >= sizeof e->message) n = sizeof e->message - 1;
    memcpy(e->message, message, n);
    e->message[n] = '\0';
}

/* The route's sign-in check (AUTH, ADMIN or BASIC); false after answering. */
static bool route_signed_in(http_server *srv, const router_route *route, http_req *r)
{
    http_err e;
    if (route->flags & HTTP_ROUTE_BASIC) {
        http_err_set(&e, 401, "unauthorized", NULL, "this server checks no sign-ins");
        if (srv->basic && srv->basic(srv->basic_arg, r, &e) == 0) return true;
        if (e.status == 401) http_add_header(r, "WWW-Authenticate", "Basic realm=\"chime\", charset=\"UTF-8\"");
        http_send_err(r, &e);
        return false;
    }
    if (!(route->flags & (HTTP_ROUTE_AUTH | HTTP_ROUTE_ADMIN))) return true;
    err_preset(&e, 401, "unauthorized", "this server checks no sign-ins");
    if (!srv->authenticate || srv->authenticate(srv->auth_arg, r, &e) != 0) {
        if (e.status == 401) http_add_header(r, "WWW-Authenticate", "Bearer");
        http_send_err(r, &e);
        return false;
    }
    if (!(route->flags & HTTP_ROUTE_ADMIN)) return true;
    err_preset(&e, 403, "forbidden", "this needs an admin");
    if (!srv->admin || srv->admin(srv->auth_arg, r, &e) != 0) {
        http_send_err(r, &e);
        return false;
    }
    return true;
}

void http_send_no_route(http_req *r)
{
    h2o_req_t *req = r->impl;
    if (r->route_allowed) {
        allow_header(r, r->route_allowed);
        http_send_error(r, 405, "method_not_allowed", NULL, "%.*s is not allowed here", (int)req->method.len,
                        req->method.base);
        return;
    }
    http_send_error(r, 404, "not_found", NULL, "no such resource");
}

/* Whether the path as sent holds an encoded slash (%2F). */
static bool has_encoded_slash(http_str path)
{
    for (size_t i = 0; i + 2 < path.len; i++)
        if (path.ptr[i] == '%' && path.ptr[i + 1] == '2' && (path.ptr[i + 2] == 'F' || path.ptr[i + 2] == 'f'))
            return true;
    return false;
}

/* Decodes the route's parameters of a path matched as sent, into the
 * request's pool. False on a bad escape. */
static bool params_decode(http_req *r)
{
    h2o_req_t *req = r->impl;
    for (int k = 0; k < r->nparams; k++) {
        http_str *p = &r->params[k];
        char *buf = h2o_mem_alloc_pool(&req->pool, p->len + 1);
        if (http_url_decode(p->ptr, p->len, buf, p->len + 1, false) != 0) return false;
        *p = (http_str){buf, strlen(buf)};
    }
    return true;
}

/* Routes on h2o's normalized path (decoded, dot segments resolved), but
 * that decodes %2F into a separator: a segment holding an encoded slash
 * (a CalDAV resource its client named "a%2Fb.ics") would route as two.
 * Such a path is routed as sent, and its parameters decoded after. */
static int route_of(http_server *srv, http_req *r, unsigned *allowed)
{
    h2o_req_t *req = r->impl;
    if (!has_encoded_slash(r->path))
        return router_match(&srv->routes, r->method, req->path_normalized.base, req->path_normalized.len, r, allowed);
    int i = router_match(&srv->routes, r->method, r->path.ptr, r->path.len, r, allowed);
    return i >= 0 && !params_decode(r) ? -1 : i;
}

static void dispatch(http_server *srv, http_req *r)
{
    unsigned allowed;
    int i = route_of(srv, r, &allowed);
    r->route_index = i >= 0 ? i : ROUTER_MAX_ROUTES;
    r->route_allowed = i == -2 ? allowed : 0;
    if (i < 0 && srv->fallback && (r->method & (HTTP_GET | HTTP_HEAD))) {
        srv->fallback(r, srv->fallback_arg);
        return;
    }
    if (i < 0) {
        http_send_no_route(r);
        return;
    }
    const router_route *route = &srv->routes.routes[i];
    if (route_signed_in(srv, route, r)) route->fn(r, route->arg);
}

/* h2o disposes of a request's pool once its response is written out (or
 * the connection is gone): the count a stopping loop waits on. */
static void unwritten_dispose(void *p)
{
    (*(loop_thread **)p)->unwritten--;
}

static void unwritten_track(loop_thread *t, h2o_req_t *req)
{
    loop_thread **slot = h2o_mem_alloc_shared(&req->pool, sizeof *slot, unwritten_dispose);
    *slot = t;
    t->unwritten++;
}

/* The write guard (server.h): answers a request that may write, and
 * says so, while the guard refuses writes. */
static bool writes_refused(http_server *srv, http_req *r)
{
    const unsigned reads = HTTP_GET | HTTP_HEAD | HTTP_OPTIONS | HTTP_PROPFIND | HTTP_REPORT;
    http_err e = {0};
    if (!srv->refuse_writes || (r->method & reads) || !srv->refuse_writes(srv->refuse_arg, r->loop, &e)) return false;
    http_send_err(r, &e);
    return true;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    http_server *srv = ((chime_handler *)self)->srv;
    loop_thread *t = thread_of(req);
    unwritten_track(t, req);
    http_req *r = h2o_mem_alloc_pool(&req->pool, sizeof *r);
    memset(r, 0, sizeof *r);
    r->impl = req;
    r->started_ns = base_mono_ns();
    r->loop = t->index;
    r->method = method_of(req->method);
    r->route_index = ROUTER_MAX_ROUTES; /* counted with the unrouted until dispatch routes it */
    r->path.ptr = req->path.base;
    r->path.len = req->query_at == SIZE_MAX ? req->path.len : req->query_at;
    if (req->query_at != SIZE_MAX) {
        r->query.ptr = req->path.base + req->query_at + 1;
        r->query.len = req->path.len - req->query_at - 1;
    }
    r->body.ptr = req->entity.base ? req->entity.base : "";
    r->body.len = req->entity.base ? req->entity.len : 0;
    snprintf(r->request_id, sizeof r->request_id, "%s%d-%llx", srv->id_prefix, t->index,
             (unsigned long long)++t->seq);
    const char *field, *why;
    http_framing framing = http_framing_check(req, &field, &why);
    if (framing != HTTP_FRAMING_OK) req->http1_is_persistent = 0;
    if (framing == HTTP_FRAMING_BAD) {
        http_linger_arm(t->linger, req);
        http_send_error(r, 400, "bad_request", field, "%s", why);
    } else if (t->stopping) {
        http_add_header(r, "Retry-After", "1");
        http_send_error(r, 503, "shutting_down", NULL, "the server is shutting down");
    } else if (r->method == 0) {
        http_send_error(r, 405, "method_not_allowed", NULL, "unsupported method");
    } else if (!writes_refused(srv, r)) {
        dispatch(srv, r);
    }
    if (!r->answered && !r->deferred) http_send_error(r, 500, "internal", NULL, "no response");
    return 0;
}

/* ---- h2o's own errors as JSON ------------------------------------------- */

/* h2o answers some requests itself before any handler runs (413 for a body
 * over the limit, 400 for broken chunked encoding or a transfer coding it
 * does not know) with a text/plain body. This filter turns those into our
 * JSON error shape, and lets the connection linger (framing.c) when the
 * answer ends it, so the client reads the answer instead of a reset. */
typedef struct json_error_ostream {
    h2o_ostream_t super;
    h2o_iovec_t body;
    bool sent;
} json_error_ostream;

static void json_error_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t n,
                               h2o_send_state_t state)
{
    json_error_ostream *o = (json_error_ostream *)self;
    if (!o->sent) {
        o->sent = true;
        h2o_ostream_send_next(self, req, &o->body, 1, state);
    } else {
        h2o_ostream_send_next(self, req, NULL, 0, state);
    }
}

static void json_error_setup(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    ssize_t ct = req->res.status >= 400 ? h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1) : -1;
    if (ct < 0 || !h2o_memis(req->res.headers.entries[ct].value.base, 10, H2O_STRLIT("text/plain"))) {
        h2o_setup_next_ostream(req, slot);
        return;
    }
    http_server *srv = *(http_server **)(self + 1);
    const char *code = req->res.status == 413 ? "body_too_large" : "bad_request", *field = "body", *why;
    char msg[160];
    if (req->res.status == 413)
        snprintf(msg, sizeof msg, "the request body is larger than %zu bytes", srv->opts.max_body);
    else if (req->res.status == 400 && http_framing_check(req, &field, &why) == HTTP_FRAMING_BAD)
        snprintf(msg, sizeof msg, "%s", why); /* h2o refused a coding: say which header */
    else
        snprintf(msg, sizeof msg, "%s", req->res.reason ? req->res.reason : "bad request");
    if (!req->http1_is_persistent) http_linger_arm(thread_of(req)->linger, req);
    json_t *j = json_pack("{s:{s:s,s:s,s:s}}", "error", "code", code, "message", msg, "field", field);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!text) {
        h2o_setup_next_ostream(req, slot);
        return;
    }
    json_error_ostream *o = (json_error_ostream *)h2o_add_ostream(req, sizeof *o, slot);
    o->body = h2o_strdup(&req->pool, text, SIZE_MAX);
    o->sent = false;
    o->super.do_send = json_error_do_send;
    free(text);
    req->res.headers.entries[ct].value = h2o_iovec_init(H2O_STRLIT("application/json"));
    req->res.content_length = o->body.len;
    metrics_observe(&srv->metrics, ROUTER_MAX_ROUTES, req->res.status, 0);
    log_info("access id=- %.*s %.*s %d (rejected before routing)", (int)req->method.len, req->method.base,
             (int)(req->path.len > 512 ? 512 : req->path.len), req->path.base, req->res.status);
    h2o_setup_next_ostream(req, &o->super.next);
}

static void add_json_error_filter(http_server *srv, h2o_pathconf_t *pathconf)
{
    h2o_filter_t *f = h2o_create_filter(pathconf, sizeof(h2o_filter_t) + sizeof(http_server *));
    *(http_server **)(f + 1) = srv;
    f->on_setup_ostream = json_error_setup;
}

/* ---- listeners and loops ------------------------------------------------ */

static int parse_listen(http_server *s, const char *listen)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host) {
        log_error("listen: '%s' is not HOST:PORT", listen);
        return -1;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *h = host;
    if (h[0] == '[' && h[strlen(h) - 1] == ']') {
        h[strlen(h) - 1] = '\0';
        h++;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
    int rc = getaddrinfo(h, colon + 1, &hints, &res);
    if (rc != 0) {
        log_error("listen: cannot resolve '%s': %s", listen, gai_strerror(rc));
        return -1;
    }
    memcpy(&s->addr, res->ai_addr, res->ai_addrlen);
    s->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static int open_listener(http_server *s)
{
    int fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), on = 1;
    if (fd < 0) return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0 ||
        bind(fd, (struct sockaddr *)&s->addr, s->addrlen) != 0 || listen(fd, 4096) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    /* With port 0 the first bind picks the port; the other loops share it. */
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &len);
    in_port_t port = bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                 : ((struct sockaddr_in *)&bound)->sin_port;
    if (s->addr.ss_family == AF_INET6) ((struct sockaddr_in6 *)&s->addr)->sin6_port = port;
    else ((struct sockaddr_in *)&s->addr)->sin_port = port;
    s->port = ntohs(port);
    return fd;
}

/* Out of file descriptors (EMFILE, ENFILE) or memory, a waiting
 * connection cannot be accepted, yet the listener stays readable: trying
 * again at once spun the loop at full CPU. Accepting pauses a moment
 * instead; the kernel keeps the backlog, and connections that close free
 * descriptors meanwhile. */
#define HTTP_ACCEPT_PAUSE_MS 100

static void on_accept(h2o_socket_t *listener, const char *err);

static void on_accept_resume(h2o_timeout_entry_t *entry)
{
    loop_thread *t = H2O_STRUCT_FROM_MEMBER(loop_thread, accept_resume, entry);
    if (t->listener && !t->stopping) h2o_socket_read_start(t->listener, on_accept);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    loop_thread *t = listener->data;
    if (err) return;
    for (int i = 0; i < 64; i++) {
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
        if (sock) {
            h2o_accept(&t->accept_ctx, sock);
            continue;
        }
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            h2o_socket_read_stop(listener);
            int64_t now = base_mono_ns();
            if (now - t->accept_warned_ns > 10 * 1000000000LL) { /* a line per 10 s at most */
                log_warn("http: cannot accept connections (%s): pausing %d ms at a time", strerror(errno),
                         HTTP_ACCEPT_PAUSE_MS);
                t->accept_warned_ns = now;
            }
            if (!h2o_timeout_is_linked(&t->accept_resume))
                h2o_timeout_link(t->loop, &t->accept_pause, &t->accept_resume);
        }
        break;
    }
}

static void close_listener(loop_thread *t)
{
    if (h2o_timeout_is_linked(&t->accept_resume)) h2o_timeout_unlink(&t->accept_resume);
    if (!t->listener) return;
    h2o_socket_read_stop(t->listener);
    h2o_socket_close(t->listener);
    t->listener = NULL;
}

static void on_stop(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages)
{
    loop_thread *t = (loop_thread *)((char *)rx - offsetof(loop_thread, stop_rx));
    while (!h2o_linklist_is_empty(messages)) h2o_linklist_unlink(messages->next);
    t->stopping = true;
    close_listener(t);
    /* From now on responses carry "Connection: close". */
    h2o_context_request_shutdown(&t->ctx);
}

static void loop_init(loop_thread *t);

static void *loop_main(void *p)
{
    loop_thread *t = p;
    http_server *s = t->srv;
    base_thread_name("http-loop");
    loop_init(t);
    for (int i = 0; i < s->nhooks; i++)
        if (s->hooks[i].start) s->hooks[i].start(s->hooks[i].arg, t->index);
    /* Started once the loop's objects exist (stopping needs its receivers)
     * and its hooks ran (a domain's per-loop state, e.g. its connection). */
    pthread_mutex_lock(&s->start_mu);
    s->loops_ready++;
    pthread_cond_broadcast(&s->start_cv);
    pthread_mutex_unlock(&s->start_mu);
    while (!t->stopping || t->pending > 0) h2o_evloop_run(t->loop, 100);
    /* Let h2o finish writing the responses it holds (a slow reader's), for
     * at most 200 ms; with none, the loop stops at once. */
    int64_t until = base_mono_ns() + 200 * 1000000LL;
    while (t->unwritten > 0 && base_mono_ns() < until) h2o_evloop_run(t->loop, 20);
    for (int i = s->nhooks - 1; i >= 0; i--)
        if (s->hooks[i].stop) s->hooks[i].stop(s->hooks[i].arg, t->index);
    if (h2o_timeout_is_linked(&t->accept_resume)) h2o_timeout_unlink(&t->accept_resume);
    h2o_timeout_dispose(t->loop, &t->accept_pause);
    http_linger_loop_free(t->linger);
    t->linger = NULL;
    http_access_buf_free(t->access); /* every line out before the process ends */
    t->access = NULL;
    return NULL;
}

/* On the loop's own thread: h2o's sockets -- the context's queue pipe, the
 * listener -- take their buffers from the creating thread's thread-local
 * allocator; made on the main thread, two loops shared its free lists
 * without a lock and reused each other's freed buffers (ASan caught it,
 * now and then, under the chat tests). hclient.c learnt the same. */
static void loop_init(loop_thread *t)
{
    http_server *s = t->srv;
    int fd = t->listen_fd;
    t->loop = h2o_evloop_create();
    h2o_context_init(&t->ctx, t->loop, &s->config);
    t->linger = http_linger_loop_new(t->loop);
    t->access = http_access_buf_new(s->access, t->loop);
    t->accept_ctx.ctx = &t->ctx;
    t->accept_ctx.hosts = s->config.hosts;
    h2o_multithread_register_receiver(t->ctx.queue, &t->done_rx, on_deferred_done);
    h2o_multithread_register_receiver(t->ctx.queue, &t->stop_rx, on_stop);
    h2o_timeout_init(t->loop, &t->accept_pause, HTTP_ACCEPT_PAUSE_MS);
    t->accept_resume.cb = on_accept_resume;
    t->accept_warned_ns = INT64_MIN / 2;
    t->listener = h2o_evloop_socket_create(t->loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    t->listener->data = t;
    h2o_socket_read_start(t->listener, on_accept);
}

http_server *http_server_new(const http_server_opts *opts)
{
    http_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->opts = *opts;
    h2o_config_init(&s->config);
    pthread_mutex_init(&s->start_mu, NULL);
    pthread_cond_init(&s->start_cv, NULL);
    s->config.max_request_entity_size = opts->max_body;
    s->config.server_name = h2o_iovec_init(H2O_STRLIT("chime")); /* not h2o's name and version */
    h2o_hostconf_t *host = h2o_config_register_host(&s->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    chime_handler *h = (chime_handler *)h2o_create_handler(path, sizeof *h);
    h->srv = s;
    h->super.on_req = on_req;
    add_json_error_filter(s, path);
    add_json_error_filter(s, &host->fallback_path);
    unsigned char rnd[3];
    base_random(rnd, sizeof rnd);
    snprintf(s->id_prefix, sizeof s->id_prefix, "%02x%02x%02x-", rnd[0], rnd[1], rnd[2]);
    return s;
}

int http_route(http_server *s, unsigned methods, const char *pattern, http_handler_fn fn, void *arg,
               unsigned flags)
{
    return router_add(&s->routes, methods, pattern, fn, arg, flags);
}

void http_server_set_auth(http_server *s, http_auth_fn authenticate, http_auth_fn admin, void *arg)
{
    s->authenticate = authenticate;
    s->admin = admin;
    s->auth_arg = arg;
}

void http_server_set_basic_auth(http_server *s, http_auth_fn authenticate, void *arg)
{
    s->basic = authenticate;
    s->basic_arg = arg;
}

void http_server_set_fallback(http_server *s, http_handler_fn fn, void *arg)
{
    s->fallback = fn;
    s->fallback_arg = arg;
}

void http_server_set_write_guard(http_server *s, http_refuse_fn refuse, void *arg)
{
    s->refuse_writes = refuse;
    s->refuse_arg = arg;
}

int http_server_on_loop(http_server *s, http_loop_fn start, http_loop_fn stop, void *arg)
{
    if (s->nhooks == HTTP_MAX_LOOP_HOOKS) return -1;
    s->hooks[s->nhooks++] = (loop_hook){.start = start, .stop = stop, .arg = arg};
    return 0;
}

int http_server_loops(const http_server *s)
{
    return s->opts.threads > 0 ? s->opts.threads : 1;
}

int http_gauge(http_server *s, const char *name, const char *help, http_gauge_fn fn, void *arg)
{
    http_metrics *m = &s->metrics;
    if (m->ngauges == METRICS_MAX_GAUGES) return -1;
    metrics_gauge *g = &m->gauges[m->ngauges++];
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->help, sizeof g->help, "%s", help);
    g->fn = fn;
    g->arg = arg;
    return 0;
}

static void handle_metrics(http_req *r, void *arg)
{
    http_server *s = arg;
    size_t len;
    char *text = metrics_render(&s->metrics, &s->routes, r->loop, &len);
    if (!text) {
        http_send_error(r, 500, "internal", NULL, "could not render metrics");
        return;
    }
    http_send_body(r, 200, "text/plain; version=0.0.4", text, len);
    free(text);
}

/* SO_REUSEPORT lets every loop have its own listener, but it would also let
 * a second chime process (same user) share the port silently and split the
 * traffic between two databases. A probe bound without it fails if anyone
 * holds the port. */
static int probe_port_free(http_server *s)
{
    int fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    int rc = bind(fd, (struct sockaddr *)&s->addr, s->addrlen);
    int err = errno;
    close(fd);
    errno = err;
    return rc;
}

int http_server_start(http_server *s)
{
    if (http_route(s, HTTP_GET, "/metrics", handle_metrics, s, 0) != 0) return -1;
    if (parse_listen(s, s->opts.listen) != 0 || http_access_log_open(s->opts.access_log, &s->access) != 0) return -1;
    s->nthreads = http_server_loops(s);
    s->threads = calloc((size_t)s->nthreads, sizeof *s->threads);
    s->pool = workers_new(s->opts.workers > 0 ? s->opts.workers : 1);
    if (!s->threads || !s->pool) return -1;
    if (probe_port_free(s) != 0) {
        log_error("listen on %s: %s", s->opts.listen, strerror(errno));
        return -1;
    }
    for (int i = 0; i < s->nthreads; i++) {
        loop_thread *t = &s->threads[i];
        *t = (loop_thread){.srv = s, .index = i, .listen_fd = open_listener(s)};
        if (t->listen_fd < 0) {
            log_error("listen on %s: %s", s->opts.listen, strerror(errno));
            return -1;
        }
    }
    int started = 0;
    while (started < s->nthreads && pthread_create(&s->threads[started].tid, NULL, loop_main, &s->threads[started]) == 0)
        s->threads[started++].started = true;
    /* Wait until each loop is set up and ran its hooks (see loop_main). */
    pthread_mutex_lock(&s->start_mu);
    while (s->loops_ready < started) pthread_cond_wait(&s->start_cv, &s->start_mu);
    pthread_mutex_unlock(&s->start_mu);
    if (started < s->nthreads) return -1;
    char host[INET6_ADDRSTRLEN] = "?";
    if (s->addr.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&s->addr)->sin6_addr, host, sizeof host);
    else
        inet_ntop(AF_INET, &((struct sockaddr_in *)&s->addr)->sin_addr, host, sizeof host);
    log_info(s->addr.ss_family == AF_INET6 ? "listening on http://[%s]:%d" : "listening on http://%s:%d", host,
             s->port);
    return 0;
}

int http_server_port(const http_server *s)
{
    return s->port;
}

void http_server_stop(http_server *s)
{
    if (!s->threads) return;
    for (int i = 0; i < s->nthreads; i++)
        if (s->threads[i].started) h2o_multithread_send_message(&s->threads[i].stop_rx, &s->threads[i].stop_msg);
    for (int i = 0; i < s->nthreads; i++)
        if (s->threads[i].started) {
            pthread_join(s->threads[i].tid, NULL);
            s->threads[i].started = false;
        }
    if (s->pool) workers_free(s->pool); /* runs what is queued, then joins */
    s->pool = NULL;
}

void http_server_free(http_server *s)
{
    if (!s) return;
    http_server_stop(s);
    /* The loops' h2o contexts are deliberately not disposed: h2o 2.2 keeps
     * idle keep-alive connections and their timers alive in the context and
     * asserts when it is disposed with any left, and it offers no call to
     * close them. The process exits right after this; the kernel closes the
     * sockets. The loops' stop hooks closed their database connections. */
    free(s->threads);
    http_access_log_close(s->access);
    pthread_mutex_destroy(&s->start_mu);
    pthread_cond_destroy(&s->start_cv);
    free(s);
}
