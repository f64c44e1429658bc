/* hclient.c -- outbound HTTP/1.1 POSTs on an h2o event loop (hclient.h).
 *
 * Everything below the API runs on the client's one thread. A posted
 * request reaches it through h2o's multithread queue and joins its
 * origin's queue. An origin owns its connections: being opened (waiting
 * for DNS, connecting, in the TLS handshake), busy (one request, no
 * pipelining) or idle (kept alive, still read so a close by the peer is
 * seen). origin_run hands waiting requests to idle connections, or opens
 * new ones while the origin has fewer than per_origin; a request's
 * timeout starts when it is handed over.
 *
 * A kept-alive connection can die under a request at any moment (the
 * peer's idle timeout racing our reuse): when it ends before a single
 * byte of the answer, the request goes again, once, on a fresh
 * connection -- what browsers and libcurl do. The receiver deduplicates
 * on its delivery id should the first have been processed after all.
 *
 * Names resolve on threads of their own, one a lookup and at most
 * HC_LOOKUPS at once (the rest wait their turn), so a slow name holds up
 * few others; an origin has one lookup at a time. The addresses are kept
 * for HC_DNS_TTL_MS, without the refused ones (a name that failed is
 * looked up again at its next request). Connecting tries them in turn.
 *
 * h2o's multithread send still touches the queue after the message is on
 * it (the receiver's links, then the pipe that wakes the loop), so every
 * send -- posts, the stop, lookups' answers -- holds mu throughout, and
 * the loop unmakes the queue only after it has taken the stop message
 * and every answer, and then taken mu: no send is then under way, nor
 * can one start. (h2o's own DNS threads, used before, sent their answers
 * without mu: one taken on another's wakeup could still be writing the
 * pipe as the loop closed it.) */
#define _GNU_SOURCE
#include "net/hclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <h2o.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/base.h"
#include "net/h1answer.h"

#define HC_BUCKETS 1024
#define HC_KEY_MAX 300
#define HC_HOST_MAX 260
#define HC_MAX_ADDRS 8
#define HC_DNS_TTL_MS 60000
#define HC_LOOKUPS 16          /* lookup threads at once */
#define HC_SWEEP_MS 10000      /* origins with nothing left are forgotten this often */

typedef struct hc_req hc_req;
typedef struct hc_conn hc_conn;
typedef struct hc_origin hc_origin;

/* Where a URL goes. */
typedef struct hc_target {
    char key[HC_KEY_MAX];   /* "https://host:443", lowercased: the origin */
    char host[HC_HOST_MAX]; /* for DNS, SNI and the name check: no brackets */
    char port[6];
    bool tls;
} hc_target;

struct hc_req {
    h2o_multithread_message_t msg; /* first: the queue links through it */
    hc_req *next;                  /* in its origin's queue */
    hclient *c;
    hc_target to;
    hclient_done_fn done;
    void *ctx;
    bool retried; /* went again after a kept-alive connection died under it */
    size_t len;
    char buf[];   /* the whole request */
};

typedef enum { HC_DNS, HC_CONNECTING, HC_HANDSHAKE, HC_BUSY, HC_IDLE } hc_state;

struct hc_conn {
    hc_conn *next, *prev; /* the origin's connections */
    hc_origin *o;
    h2o_socket_t *sock;
    hc_state state;
    hc_req *req;          /* the request it carries (not when idle) */
    int addr_at;          /* the address being tried */
    unsigned uses;        /* requests it carried to the end */
    bool got_bytes;       /* of the answer */
    h1answer answer;
    h2o_timeout_entry_t timer; /* the request's timeout, or the idle one */
};

struct hc_origin {
    hc_origin *next; /* in its bucket */
    hclient *c;
    hc_target to;
    hc_conn *conns;
    int nconns;
    hc_req *wait_head, *wait_tail;
    struct sockaddr_storage addrs[HC_MAX_ADDRS];
    socklen_t addrlens[HC_MAX_ADDRS];
    int naddrs;
    char refused[64]; /* the first address refused, for the error */
    int64_t addrs_until;
    bool lookup;  /* a lookup's answer is to come (or it waits its turn) */
    hc_origin *lookup_next; /* in the client's queue of lookups waiting for a thread */
    bool running; /* in origin_run */
};

struct hclient {
    hclient_config cfg;
    char refused_why[200];
    pthread_t thread;
    h2o_evloop_t *loop; /* this and all below: the client's thread's */
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t submit_rx, dns_rx, stop_rx;
    h2o_multithread_message_t stop_msg;
    h2o_timeout_t req_timeout, idle_timeout, sweep_timeout;
    h2o_timeout_entry_t sweep;
    SSL_CTX *ssl;
    hc_origin *origins[HC_BUCKETS];
    int lookups; /* DNS answers still to come, waiting ones too (the loop's) */
    int lookup_threads; /* lookups running (the loop's) */
    hc_origin *lookup_head, *lookup_tail; /* waiting for a thread (the loop's) */
    bool stop_taken; /* the loop's: the stop message arrived */
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* state left HC_STARTING */
    enum { HC_STARTING, HC_RUNNING, HC_FAILED } state; /* under mu */
    bool stopping;   /* under mu */
    int outstanding; /* under mu: posted, not yet answered */
};

static void origin_run(hc_origin *o);

static hclient *client_of(const hc_origin *o)
{
    return o->c;
}

/* ---- requests ------------------------------------------------------------- */

/* Splits an http(s) URL into its target and the request line's target
 * (path and query, "/" when empty). -1 when it is not one we can send. */
static int target_parse(const char *url, hc_target *t, const char **path)
{
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) return -1;
    const char *rest;
    if (strncasecmp(url, "http://", 7) == 0) {
        rest = url + 7;
        t->tls = false;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        rest = url + 8;
        t->tls = true;
    } else {
        return -1;
    }
    size_t auth = strcspn(rest, "/?#");
    if (auth == 0 || memchr(rest, '@', auth) || strchr(rest, '#')) return -1;
    const char *close = rest[0] == '[' ? memchr(rest, ']', auth) : NULL;
    if (rest[0] == '[' && !close) return -1;
    const char *colon = memchr(close ? close : rest, ':', auth - (size_t)((close ? close : rest) - rest));
    size_t hlen = colon ? (size_t)(colon - rest) : auth;
    const char *h = rest;
    if (close) { /* [v6]: without the brackets */
        h++;
        hlen = (size_t)(close - rest) - 1;
    }
    if (hlen == 0 || hlen >= sizeof t->host) return -1;
    memcpy(t->host, h, hlen);
    t->host[hlen] = '\0';
    long port = t->tls ? 443 : 80;
    if (colon) {
        char *end;
        port = strtol(colon + 1, &end, 10);
        if (end != rest + auth || end == colon + 1 || port < 1 || port > 65535) return -1;
    }
    snprintf(t->port, sizeof t->port, "%ld", port);
    int n = snprintf(t->key, sizeof t->key, "%s://%s:%ld", t->tls ? "https" : "http", t->host, port);
    if (n < 0 || (size_t)n >= sizeof t->key) return -1;
    for (char *p = t->key; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p + 32);
    *path = rest + auth;
    return 0;
}

int hclient_post(hclient *c, const char *url, const char *headers, const char *body, size_t body_len,
                 hclient_done_fn done, void *ctx)
{
    hc_target to;
    const char *path;
    if (!c || !url || !done || (!body && body_len) || target_parse(url, &to, &path) != 0) return -1;
    const char *auth = strstr(url, "://") + 3;
    int auth_len = (int)strcspn(auth, "/?#");
    headers = headers ? headers : "";
    size_t room = strlen(path) + (size_t)auth_len + strlen(headers) + body_len + 96;
    hc_req *r = malloc(sizeof *r + room);
    if (!r) return -1;
    *r = (hc_req){.c = c, .to = to, .done = done, .ctx = ctx};
    int n = snprintf(r->buf, room, "POST %s%s HTTP/1.1\r\nHost: %.*s\r\nContent-Length: %zu\r\n%s\r\n",
                     path[0] == '/' ? "" : "/", path, auth_len, auth, body_len, headers);
    if (n < 0 || (size_t)n + body_len >= room) {
        free(r);
        return -1;
    }
    if (body_len) memcpy(r->buf + n, body, body_len);
    r->len = (size_t)n + body_len;
    pthread_mutex_lock(&c->mu);
    bool ok = !c->stopping;
    if (ok) {
        c->outstanding++;
        h2o_multithread_send_message(&c->submit_rx, &r->msg); /* under mu: see the top */
    }
    pthread_mutex_unlock(&c->mu);
    if (!ok) {
        free(r);
        return -1;
    }
    return 0;
}

int hclient_outstanding(hclient *c)
{
    pthread_mutex_lock(&c->mu);
    int n = c->outstanding;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* The request's end: its slot is free before done runs, so a done that
 * posts again at once finds room. */
static void req_finish(hc_req *r, int status, const char *error)
{
    hclient *c = r->c;
    pthread_mutex_lock(&c->mu);
    c->outstanding--;
    pthread_mutex_unlock(&c->mu);
    r->done(r->ctx, status, error);
    free(r);
}

/* ---- connections ---------------------------------------------------------- */

static void conn_close(hc_conn *k)
{
    hc_origin *o = k->o;
    if (h2o_timeout_is_linked(&k->timer)) h2o_timeout_unlink(&k->timer);
    if (k->sock) {
        k->sock->data = NULL;
        h2o_socket_close(k->sock);
    }
    if (k->prev) k->prev->next = k->next;
    else o->conns = k->next;
    if (k->next) k->next->prev = k->prev;
    o->nconns--;
    free(k);
    origin_run(o); /* room for a waiting request */
}

/* Ends the request the connection carries, then the connection. */
static void conn_fail(hc_conn *k, const char *error)
{
    hc_req *r = k->req;
    k->req = NULL;
    conn_close(k);
    if (r) req_finish(r, 0, error);
}

static void conn_failf(hc_conn *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void conn_failf(hc_conn *k, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    conn_fail(k, msg);
}

static void on_idle_timeout(h2o_timeout_entry_t *entry)
{
    conn_close(H2O_STRUCT_FROM_MEMBER(hc_conn, timer, entry));
}

static void on_req_timeout(h2o_timeout_entry_t *entry)
{
    hc_conn *k = H2O_STRUCT_FROM_MEMBER(hc_conn, timer, entry);
    conn_failf(k, "timed out after %lld ms", (long long)client_of(k->o)->cfg.timeout_ms);
}

/* The answer is complete: done with its status; the connection goes idle
 * (or closes) and takes the next waiting request. */
static void conn_answered(hc_conn *k)
{
    hc_req *r = k->req;
    hclient *c = client_of(k->o);
    k->req = NULL;
    k->uses++;
    h2o_timeout_unlink(&k->timer);
    int status = k->answer.status;
    /* An answer can come before the whole request is written (a receiver
     * refusing a large body at its head). h2o still writes from r->buf,
     * freed below, and takes one write at a time: the connection ends. */
    if (k->answer.close_after || h2o_socket_is_writing(k->sock)) {
        conn_close(k);
    } else {
        k->state = HC_IDLE;
        k->timer.cb = on_idle_timeout;
        h2o_timeout_link(c->loop, &c->idle_timeout, &k->timer);
        origin_run(k->o);
    }
    req_finish(r, status, NULL);
}

/* Reads what has arrived of the answer; true when the connection is gone
 * (answered and closed, or failed) or handed on -- the caller must not
 * touch it then. */
static bool conn_parse(hc_conn *k)
{
    h2o_buffer_t **in = &k->sock->input;
    size_t used;
    const char *why;
    h1answer_rc rc = h1answer_feed(&k->answer, (*in)->bytes, (*in)->size, &used, &why);
    h2o_buffer_consume(in, used);
    if (rc == H1_MORE) return false;
    if (rc == H1_ERROR) conn_fail(k, why);
    else conn_answered(k);
    return true;
}

/* The connection ended or broke (err) under its request, or while idle. */
static void conn_broken(hc_conn *k, const char *err)
{
    hc_req *r = k->req;
    if (!r) {
        conn_close(k);
        return;
    }
    const char *why;
    if (h1answer_eof(&k->answer, &why) == H1_DONE) {
        conn_answered(k); /* the close ends this body */
        return;
    }
    if (!k->got_bytes && k->uses > 0 && !r->retried) {
        /* A kept-alive connection the peer closed as we reused it. */
        hc_origin *o = k->o;
        r->retried = true;
        k->req = NULL;
        r->next = o->wait_head;
        o->wait_head = r;
        if (!o->wait_tail) o->wait_tail = r;
        conn_close(k); /* runs the origin: r goes again */
        return;
    }
    if (err == h2o_socket_error_closed) conn_fail(k, why);
    else conn_failf(k, "the connection failed: %s", err);
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    hc_conn *k = sock->data;
    if (!k) return;
    if (err) {
        conn_broken(k, err);
        return;
    }
    if (k->state != HC_BUSY || !k->req) {
        conn_close(k); /* an idle connection should not speak: drop it */
        return;
    }
    if (sock->input->size) k->got_bytes = true;
    conn_parse(k);
}

static void on_written(h2o_socket_t *sock, const char *err)
{
    hc_conn *k = sock->data;
    if (k && err) conn_broken(k, err);
}

/* Sends the connection's request (it is connected, and idle or new). */
static void conn_send(hc_conn *k)
{
    hc_req *r = k->req;
    k->state = HC_BUSY;
    k->got_bytes = false;
    h1answer_init(&k->answer);
    h2o_iovec_t buf = h2o_iovec_init(r->buf, r->len);
    h2o_socket_write(k->sock, &buf, 1, on_written);
}

static void conn_connect(hc_conn *k);

static void on_handshake(h2o_socket_t *sock, const char *err)
{
    hc_conn *k = sock->data;
    if (!k) return;
    if (err) {
        conn_failf(k, "TLS with %s failed: %s", k->o->to.host, err);
        return;
    }
    h2o_socket_read_start(sock, on_read);
    conn_send(k);
}

static void on_connect(h2o_socket_t *sock, const char *err)
{
    hc_conn *k = sock->data;
    if (!k) return;
    if (err) {
        sock->data = NULL;
        h2o_socket_close(sock);
        k->sock = NULL;
        k->addr_at++;
        conn_connect(k);
        return;
    }
    if (k->o->to.tls) {
        k->state = HC_HANDSHAKE;
        h2o_socket_ssl_handshake(sock, client_of(k->o)->ssl, k->o->to.host, on_handshake);
        return;
    }
    h2o_socket_read_start(sock, on_read);
    conn_send(k);
}

/* Connects to the origin's next address (k->addr_at), or fails. */
static void conn_connect(hc_conn *k)
{
    hc_origin *o = k->o;
    hclient *c = client_of(o);
    if (o->naddrs == 0) {
        conn_failf(k, "refused: %s %s", o->refused, c->refused_why);
        return;
    }
    while (k->addr_at < o->naddrs) {
        k->state = HC_CONNECTING;
        k->sock = h2o_socket_connect(c->loop, (struct sockaddr *)&o->addrs[k->addr_at], o->addrlens[k->addr_at],
                                     on_connect);
        if (k->sock) {
            k->sock->data = k;
            return;
        }
        k->addr_at++;
    }
    conn_failf(k, "cannot connect to %s port %s", o->to.host, o->to.port);
}

/* ---- origins -------------------------------------------------------------- */

static size_t bucket_of(const char *key)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)(h % HC_BUCKETS);
}

static hc_origin *origin_get(hclient *c, const hc_target *to)
{
    hc_origin **head = &c->origins[bucket_of(to->key)], *o = *head;
    while (o && strcmp(o->to.key, to->key) != 0) o = o->next;
    if (o || !(o = calloc(1, sizeof *o))) return o;
    o->c = c;
    o->to = *to;
    o->next = *head;
    *head = o;
    return o;
}

/* Keeps the lookup's addresses, less the refused ones. */
static void origin_addrs(hc_origin *o, const struct addrinfo *res)
{
    hclient *c = o->c;
    o->naddrs = 0;
    o->refused[0] = '\0';
    for (const struct addrinfo *ai = res; ai && o->naddrs < HC_MAX_ADDRS; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof o->addrs[0]) continue;
        if (c->cfg.refused && c->cfg.refused(ai->ai_addr)) {
            if (!o->refused[0] && getnameinfo(ai->ai_addr, ai->ai_addrlen, o->refused, sizeof o->refused, NULL, 0,
                                              NI_NUMERICHOST) != 0)
                snprintf(o->refused, sizeof o->refused, "an address of family %d", ai->ai_family);
            continue;
        }
        memcpy(&o->addrs[o->naddrs], ai->ai_addr, ai->ai_addrlen);
        o->addrlens[o->naddrs++] = ai->ai_addrlen;
    }
    o->addrs_until = (int64_t)h2o_now(c->loop) + HC_DNS_TTL_MS;
}

/* A name being looked up, on its own thread; then the answer, a message
 * to the loop. */
typedef struct hc_lookup {
    h2o_multithread_message_t msg; /* first: the queue links through it */
    hclient *c;
    hc_origin *o;
    char host[HC_HOST_MAX], port[6];
    int rc;        /* getaddrinfo's */
    int sys_errno; /* its errno, for EAI_SYSTEM (errno is the thread's own) */
    struct addrinfo *res;
} hc_lookup;

static void lookup_answer(hc_lookup *l)
{
    hclient *c = l->c;
    pthread_mutex_lock(&c->mu); /* see the top: nothing of c is touched after */
    h2o_multithread_send_message(&c->dns_rx, &l->msg);
    pthread_mutex_unlock(&c->mu);
}

static void *lookup_main(void *p)
{
    hc_lookup *l = p;
    base_thread_name("webhooks-dns");
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP,
                             .ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV};
    l->rc = getaddrinfo(l->host, l->port, &hints, &l->res);
    if (l->rc == EAI_SYSTEM) l->sys_errno = errno;
    lookup_answer(l);
    return NULL;
}

static void on_lookup(hc_lookup *l)
{
    hc_origin *o = l->o;
    const char *err = l->rc == 0 ? NULL : l->rc == EAI_SYSTEM ? strerror(l->sys_errno) : gai_strerror(l->rc);
    o->lookup = false;
    o->c->lookups--;
    if (!err) origin_addrs(o, l->res);
    hc_conn *k = o->conns;
    while (k) {
        hc_conn *next = k->next;
        if (k->state == HC_DNS) {
            if (err) conn_failf(k, "cannot resolve %s: %s", o->to.host, err);
            else conn_connect(k);
        }
        k = next; /* (a failed connection only runs the origin, which adds new ones at the front) */
    }
}

static void lookup_start(hc_origin *o);

static void on_dns(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages)
{
    hclient *c = H2O_STRUCT_FROM_MEMBER(hclient, dns_rx, rx);
    while (!h2o_linklist_is_empty(messages)) {
        hc_lookup *l = H2O_STRUCT_FROM_MEMBER(hc_lookup, msg.link, messages->next);
        h2o_linklist_unlink(&l->msg.link);
        c->lookup_threads--;
        on_lookup(l);
        if (l->res) freeaddrinfo(l->res);
        free(l);
    }
    while (c->lookup_head && c->lookup_threads < HC_LOOKUPS) {
        hc_origin *o = c->lookup_head;
        c->lookup_head = o->lookup_next;
        if (!c->lookup_head) c->lookup_tail = NULL;
        o->lookup_next = NULL;
        lookup_start(o);
    }
}

/* Looks o's name up on a thread of its own; the answer comes to on_dns. */
static void lookup_start(hc_origin *o)
{
    hclient *c = o->c;
    hc_lookup *l = calloc(1, sizeof *l);
    if (!l) { /* the requests time out */
        o->lookup = false;
        c->lookups--;
        return;
    }
    l->c = c;
    l->o = o;
    snprintf(l->host, sizeof l->host, "%s", o->to.host);
    snprintf(l->port, sizeof l->port, "%s", o->to.port);
    c->lookup_threads++;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, lookup_main, l) != 0) {
        l->rc = EAI_SYSTEM;
        l->sys_errno = EAGAIN; /* "Resource temporarily unavailable": no thread */
        lookup_answer(l);      /* answered on the next turn of the loop, as any other */
    }
    pthread_attr_destroy(&attr);
}

/* Starts looking o's name up, or queues it behind HC_LOOKUPS others. */
static void origin_lookup(hc_origin *o)
{
    hclient *c = o->c;
    o->lookup = true;
    c->lookups++;
    if (c->lookup_threads < HC_LOOKUPS) return lookup_start(o);
    if (c->lookup_tail) c->lookup_tail->lookup_next = o;
    else c->lookup_head = o;
    c->lookup_tail = o;
}

/* Opens a connection for r: from the addresses known, or after a lookup. */
static void origin_open(hc_origin *o, hc_req *r)
{
    hclient *c = o->c;
    hc_conn *k = calloc(1, sizeof *k);
    if (!k) {
        req_finish(r, 0, "out of memory");
        return;
    }
    k->o = o;
    k->req = r;
    k->next = o->conns;
    if (o->conns) o->conns->prev = k;
    o->conns = k;
    o->nconns++;
    k->timer.cb = on_req_timeout;
    h2o_timeout_link(c->loop, &c->req_timeout, &k->timer);
    k->state = HC_DNS;
    if ((int64_t)h2o_now(c->loop) < o->addrs_until) {
        conn_connect(k);
    } else if (!o->lookup) {
        origin_lookup(o);
    }
}

static hc_conn *origin_idle(hc_origin *o)
{
    for (hc_conn *k = o->conns; k; k = k->next)
        if (k->state == HC_IDLE) return k;
    return NULL;
}

/* Hands waiting requests to idle connections, or to new ones while there
 * is room. Not reentrant: a connection failing inside sets off another
 * pass, which the running one's loop covers. */
static void origin_run(hc_origin *o)
{
    if (o->running) return;
    o->running = true;
    while (o->wait_head) {
        hc_conn *k = origin_idle(o);
        if (!k && o->nconns >= o->c->cfg.per_origin) break;
        hc_req *r = o->wait_head;
        o->wait_head = r->next;
        if (!o->wait_head) o->wait_tail = NULL;
        r->next = NULL;
        if (!k) {
            origin_open(o, r);
            continue;
        }
        h2o_timeout_unlink(&k->timer);
        k->req = r;
        k->timer.cb = on_req_timeout;
        h2o_timeout_link(o->c->loop, &o->c->req_timeout, &k->timer);
        conn_send(k);
    }
    o->running = false;
}

static void on_submit(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages)
{
    hclient *c = H2O_STRUCT_FROM_MEMBER(hclient, submit_rx, rx);
    while (!h2o_linklist_is_empty(messages)) {
        hc_req *r = H2O_STRUCT_FROM_MEMBER(hc_req, msg.link, messages->next);
        h2o_linklist_unlink(&r->msg.link);
        hc_origin *o = origin_get(c, &r->to);
        if (!o) {
            req_finish(r, 0, "out of memory");
            continue;
        }
        if (o->wait_tail) o->wait_tail->next = r;
        else o->wait_head = r;
        o->wait_tail = r;
        origin_run(o);
    }
}

/* Forgets origins with nothing going on and stale addresses: a server
 * with many users' endpoints would otherwise keep one for each forever. */
static void on_sweep(h2o_timeout_entry_t *entry)
{
    hclient *c = H2O_STRUCT_FROM_MEMBER(hclient, sweep, entry);
    int64_t now = (int64_t)h2o_now(c->loop);
    for (size_t b = 0; b < HC_BUCKETS; b++)
        for (hc_origin **pp = &c->origins[b]; *pp;) {
            hc_origin *o = *pp;
            if (!o->conns && !o->wait_head && !o->lookup && now >= o->addrs_until) {
                *pp = o->next;
                free(o);
            } else {
                pp = &o->next;
            }
        }
    h2o_timeout_link(c->loop, &c->sweep_timeout, &c->sweep);
}

/* ---- the thread ----------------------------------------------------------- */

static void on_stop(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages)
{
    hclient *c = H2O_STRUCT_FROM_MEMBER(hclient, stop_rx, rx);
    while (!h2o_linklist_is_empty(messages)) h2o_linklist_unlink(messages->next);
    c->stop_taken = true;
}

/* Not on `stopping` alone: hclient_free sets it before its stop message
 * is on the queue, and a loop that went on to unregister the receiver
 * and close the pipe then made that send fail (a segfault unlinking the
 * receiver in h2o_multithread_send_message, once at the end of
 * test-channels' test_webhook_timeout). The stop can be taken while its
 * sender is still writing the pipe: taking mu waits that out. */
static bool done_running(hclient *c)
{
    pthread_mutex_lock(&c->mu);
    bool done = c->stop_taken && c->outstanding == 0;
    pthread_mutex_unlock(&c->mu);
    return done && c->lookups == 0;
}

/* The loop and everything on it are made and unmade on the client's own
 * thread: h2o's sockets take their buffers from the creating thread's
 * (thread-local) allocator, so a queue made on the caller's thread would
 * have its pipe's buffers freed under the loop at exit (ASan caught it). */
static bool loop_setup(hclient *c)
{
    if (!(c->loop = h2o_evloop_create())) return false;
    h2o_timeout_init(c->loop, &c->req_timeout, (uint64_t)c->cfg.timeout_ms);
    h2o_timeout_init(c->loop, &c->idle_timeout, (uint64_t)c->cfg.idle_ms);
    h2o_timeout_init(c->loop, &c->sweep_timeout, HC_SWEEP_MS);
    c->queue = h2o_multithread_create_queue(c->loop);
    h2o_multithread_register_receiver(c->queue, &c->submit_rx, on_submit);
    h2o_multithread_register_receiver(c->queue, &c->dns_rx, on_dns);
    h2o_multithread_register_receiver(c->queue, &c->stop_rx, on_stop);
    c->sweep.cb = on_sweep;
    h2o_timeout_link(c->loop, &c->sweep_timeout, &c->sweep);
    return true;
}

static void loop_teardown(hclient *c)
{
    /* Nothing is left but idle connections. */
    for (size_t b = 0; b < HC_BUCKETS; b++)
        while (c->origins[b]) {
            hc_origin *o = c->origins[b];
            while (o->conns) conn_close(o->conns);
            c->origins[b] = o->next;
            free(o);
        }
    h2o_timeout_unlink(&c->sweep);
    /* Let the closes (TLS close_notify included) go out. */
    for (int i = 0; i < 3; i++) h2o_evloop_run(c->loop, 0);
    h2o_multithread_unregister_receiver(c->queue, &c->submit_rx);
    h2o_multithread_unregister_receiver(c->queue, &c->dns_rx);
    h2o_multithread_unregister_receiver(c->queue, &c->stop_rx);
    h2o_multithread_destroy_queue(c->queue);
    h2o_timeout_dispose(c->loop, &c->req_timeout);
    h2o_timeout_dispose(c->loop, &c->idle_timeout);
    h2o_timeout_dispose(c->loop, &c->sweep_timeout);
    h2o_evloop_destroy(c->loop);
}

static void *client_main(void *p)
{
    hclient *c = p;
    base_thread_name("webhooks");
    bool ok = loop_setup(c);
    pthread_mutex_lock(&c->mu);
    c->state = ok ? HC_RUNNING : HC_FAILED;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (!ok) return NULL;
    while (!done_running(c)) h2o_evloop_run(c->loop, 100);
    loop_teardown(c);
    return NULL;
}

/* The chain check, with the URL's host (the name h2o sent as SNI) as the
 * name the certificate must carry: a DNS name, or an IP address for an
 * address host. Done here because Debian's libh2o checks no name at all
 * (measured: a certificate for example.org passed for localhost). */
static int verify_chain_and_host(X509_STORE_CTX *x, void *arg)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
    const char *host = ssl ? SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) : NULL;
    X509_VERIFY_PARAM *p = X509_STORE_CTX_get0_param(x);
    unsigned char ip[16];
    bool is_ip = host && (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1);
    if (!host || (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host) : X509_VERIFY_PARAM_set1_host(p, host, 0)) != 1) {
        X509_STORE_CTX_set_error(x, X509_V_ERR_HOSTNAME_MISMATCH);
        return 0;
    }
    X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_verify_cert(x);
}

static SSL_CTX *tls_context(void)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_cert_verify_callback(ctx, verify_chain_and_host, NULL);
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static void client_dispose(hclient *c)
{
    if (c->ssl) SSL_CTX_free(c->ssl);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

hclient *hclient_new(const hclient_config *cfg)
{
    hclient *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cfg = *cfg;
    if (c->cfg.timeout_ms <= 0) c->cfg.timeout_ms = 10000;
    if (c->cfg.per_origin <= 0) c->cfg.per_origin = 16;
    if (c->cfg.idle_ms <= 0) c->cfg.idle_ms = 30000;
    snprintf(c->refused_why, sizeof c->refused_why, "%s",
             cfg->refused_why ? cfg->refused_why : "is not an address this client may reach");
    c->cfg.refused_why = c->refused_why;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (!(c->ssl = tls_context())) {
        log_error("webhooks: cannot set up TLS (the system's trust store?)");
        client_dispose(c);
        return NULL;
    }
    if (pthread_create(&c->thread, NULL, client_main, c) != 0) {
        log_error("webhooks: cannot start the thread");
        client_dispose(c);
        return NULL;
    }
    pthread_mutex_lock(&c->mu);
    while (c->state == HC_STARTING) pthread_cond_wait(&c->cv, &c->mu);
    bool ok = c->state == HC_RUNNING;
    pthread_mutex_unlock(&c->mu);
    if (!ok) {
        log_error("webhooks: cannot set up the event loop");
        pthread_join(c->thread, NULL);
        client_dispose(c);
        return NULL;
    }
    return c;
}

void hclient_free(hclient *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    h2o_multithread_send_message(&c->stop_rx, &c->stop_msg); /* wakes the loop; under mu: see the top */
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    client_dispose(c);
}
