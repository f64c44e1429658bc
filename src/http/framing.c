/* framing.c -- the request framing checks h2o 2.2 leaves out, and the
 * lingering close that lets a refused client read its answer.
 *
 * h2o reads a body by the first Content-Length it sees, lets
 * Transfer-Encoding: chunked win over Content-Length and keeps the
 * connection, and drops both headers from the request it hands on. Behind a
 * proxy that frames the other way, the difference is request smuggling
 * (RFC 9112 6.1, 6.3, 5.2). So before any handler runs we read the request
 * head again, as the client sent it (it is still at the front of the
 * connection's input buffer: h2o consumes a request only once its response
 * is written; it lower-cased the names in place, nothing else), and decide:
 * different lengths, a coding other than one "chunked", or a folded line
 * are a 400 and the connection closes; a length beside chunked is processed
 * as chunked and the connection closes after it.
 *
 * Lingering close. h2o closes a connection right after an error response
 * that ends it (a 413 for a body over --max-body). Whatever the client is
 * still sending then sits unread in the kernel, and closing such a socket
 * sends a reset, which destroys the response on its way: curl, Python and
 * browsers send the whole body before they read, so they saw "connection
 * reset" instead of the 413. Before such a response goes out we duplicate
 * the socket's descriptor; when h2o closes its own, ours keeps the
 * connection, sends FIN after the response and reads and discards what
 * comes, for at most HTTP_LINGER_MAX_BYTES, HTTP_LINGER_MAX_MS in all and
 * HTTP_LINGER_IDLE_MS of silence, as nginx's lingering_close does. */
#define _GNU_SOURCE
#include "http/framing.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base.h"

/* ---- framing ---------------------------------------------------------------- */

typedef struct framing_scan {
    int lengths;       /* Content-Length fields */
    bool length_bad;   /* one that is not digits, or two that differ */
    uint64_t length;
    int codings;       /* transfer codings over every Transfer-Encoding field */
    bool coding_bad;   /* one that is not "chunked", or chunked twice */
    bool folded;       /* an obs-fold continuation line */
} framing_scan;

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static void trim(const char **b, const char **e)
{
    while (*b < *e && is_ows(**b)) (*b)++;
    while (*e > *b && is_ows((*e)[-1])) (*e)--;
}

static void scan_length(framing_scan *s, const char *v, const char *end)
{
    trim(&v, &end);
    uint64_t n = 0;
    bool ok = v < end && end - v <= 18;
    for (const char *p = v; ok && p < end; p++) {
        ok = *p >= '0' && *p <= '9';
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (!ok || (s->lengths > 0 && n != s->length)) s->length_bad = true;
    s->length = n;
    s->lengths++;
}

/* A field's comma-separated codings; empty list elements do not count. */
static void scan_codings(framing_scan *s, const char *v, const char *end)
{
    while (v < end) {
        const char *comma = memchr(v, ',', (size_t)(end - v)), *stop = comma ? comma : end, *b = v, *e = stop;
        trim(&b, &e);
        if (e > b) {
            if ((size_t)(e - b) != 7 || strncasecmp(b, "chunked", 7) != 0 || s->codings > 0) s->coding_bad = true;
            s->codings++;
        }
        v = comma ? comma + 1 : end;
    }
}

static void scan_field(framing_scan *s, const char *line, const char *end)
{
    if (is_ows(*line)) {
        s->folded = true;
        return;
    }
    const char *colon = memchr(line, ':', (size_t)(end - line));
    if (!colon) return;
    size_t nlen = (size_t)(colon - line);
    if (nlen == 14 && strncasecmp(line, "content-length", 14) == 0) scan_length(s, colon + 1, end);
    else if (nlen == 17 && strncasecmp(line, "transfer-encoding", 17) == 0) scan_codings(s, colon + 1, end);
}

/* The head h2o parsed, from the front of the connection's input. */
static bool scan_head(h2o_req_t *req, framing_scan *s)
{
    h2o_socket_t *sock = req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (!sock || !sock->input) return false;
    const char *p = sock->input->bytes, *end = p + sock->input->size;
    while (p < end && (*p == '\r' || *p == '\n')) p++;
    bool request_line = true;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return false;
        const char *le = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
        if (le == p) return true; /* the empty line: end of the head */
        if (!request_line) scan_field(s, p, le);
        request_line = false;
        p = nl + 1;
    }
    return false;
}

http_framing http_framing_check(h2o_req_t *req, const char **field, const char **why)
{
    if (req->version >= 0x200) return HTTP_FRAMING_OK; /* HTTP/2 frames by itself */
    framing_scan s = {0};
    if (!scan_head(req, &s)) return HTTP_FRAMING_OK;
    *field = "headers";
    *why = "a header line is folded (obs-fold); send it on one line";
    if (s.folded) return HTTP_FRAMING_BAD;
    *field = "Transfer-Encoding";
    *why = "the only transfer coding accepted is one \"chunked\"";
    if (s.coding_bad) return HTTP_FRAMING_BAD;
    *field = "Content-Length";
    *why = "Content-Length must be one whole number, given once (or repeated with the same value)";
    if (s.codings == 0 && s.length_bad) return HTTP_FRAMING_BAD;
    /* Read as chunked (h2o did), but a proxy in front may have framed it by
     * the length; HTTP/1.0 knows no chunked. Nothing more on this
     * connection (RFC 9112 6.1). */
    if (s.codings > 0 && (s.lengths > 0 || req->version < 0x101)) return HTTP_FRAMING_CLOSE;
    return HTTP_FRAMING_OK;
}

/* ---- lingering close ------------------------------------------------------- */

struct http_linger_loop {
    h2o_evloop_t *loop;
    h2o_timeout_t total, idle;
    h2o_linklist_t active;
    int n;
};

typedef struct linger_conn {
    http_linger_loop *owner;
    int fd;
    h2o_socket_t *h2o_sock; /* h2o's, until it closes it */
    h2o_socket_t *sock; /* ours, on fd; NULL until h2o has closed its own */
    size_t discarded;
    h2o_linklist_t link;
    h2o_timeout_entry_t total, idle;
} linger_conn;

http_linger_loop *http_linger_loop_new(h2o_evloop_t *loop)
{
    http_linger_loop *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->loop = loop;
    h2o_timeout_init(loop, &l->total, HTTP_LINGER_MAX_MS);
    h2o_timeout_init(loop, &l->idle, HTTP_LINGER_IDLE_MS);
    h2o_linklist_init_anchor(&l->active);
    return l;
}

static void linger_end(linger_conn *c)
{
    if (h2o_timeout_is_linked(&c->total)) h2o_timeout_unlink(&c->total);
    if (h2o_timeout_is_linked(&c->idle)) h2o_timeout_unlink(&c->idle);
    if (h2o_linklist_is_linked(&c->link)) h2o_linklist_unlink(&c->link);
    c->owner->n--;
    if (c->sock) {
        h2o_socket_close(c->sock); /* closes fd */
    } else { /* h2o's socket is still open (the loop is ending): forget us */
        c->h2o_sock->on_close.cb = NULL;
        close(c->fd);
    }
    free(c);
}

void http_linger_loop_free(http_linger_loop *l)
{
    if (!l) return;
    while (!h2o_linklist_is_empty(&l->active))
        linger_end(H2O_STRUCT_FROM_MEMBER(linger_conn, link, l->active.next));
    h2o_timeout_dispose(l->loop, &l->total);
    h2o_timeout_dispose(l->loop, &l->idle);
    free(l);
}

static void on_total(h2o_timeout_entry_t *e)
{
    linger_end(H2O_STRUCT_FROM_MEMBER(linger_conn, total, e));
}

static void on_idle(h2o_timeout_entry_t *e)
{
    linger_end(H2O_STRUCT_FROM_MEMBER(linger_conn, idle, e));
}

static void on_discard(h2o_socket_t *sock, const char *err)
{
    linger_conn *c = sock->data;
    if (err) { /* the client closed: done */
        linger_end(c);
        return;
    }
    c->discarded += sock->input->size;
    h2o_buffer_consume(&sock->input, sock->input->size);
    if (c->discarded > HTTP_LINGER_MAX_BYTES) {
        linger_end(c);
        return;
    }
    h2o_timeout_unlink(&c->idle);
    h2o_timeout_link(c->owner->loop, &c->owner->idle, &c->idle);
}

/* h2o closed its descriptor (the response is written): ours takes over. */
static void on_h2o_closed(void *data)
{
    linger_conn *c = data;
    c->h2o_sock = NULL;
    shutdown(c->fd, SHUT_WR);
    c->sock = h2o_evloop_socket_create(c->owner->loop, c->fd, 0);
    c->sock->data = c;
    h2o_timeout_link(c->owner->loop, &c->owner->total, &c->total);
    h2o_timeout_link(c->owner->loop, &c->owner->idle, &c->idle);
    h2o_socket_read_start(c->sock, on_discard);
}

void http_linger_arm(http_linger_loop *l, h2o_req_t *req)
{
    if (!l || req->version >= 0x200 || l->n >= HTTP_LINGER_MAX_CONNS) return;
    h2o_socket_t *sock = req->conn->callbacks->get_socket ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (!sock || sock->on_close.cb) return;
    int fd = fcntl(h2o_socket_get_fd(sock), F_DUPFD_CLOEXEC, 0);
    linger_conn *c = fd >= 0 ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        if (fd >= 0) close(fd);
        return;
    }
    c->owner = l;
    c->fd = fd;
    c->h2o_sock = sock;
    c->total.cb = on_total;
    c->idle.cb = on_idle;
    h2o_linklist_insert(&l->active, &c->link);
    l->n++;
    sock->on_close.cb = on_h2o_closed;
    sock->on_close.data = c;
}
