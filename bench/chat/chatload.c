/* chatload.c -- the load client of bench/chat: one epoll loop, one thread,
 * for both servers, so both get the same client, counts and pattern.
 *
 *   chime: each device is a WebSocket (GET /v1/ws, Bearer) plus HTTP/1.1
 *          keep-alive connections: one for its sends (POST .../messages),
 *          one for its pulls (GET /v1/sync?since=N after a sync frame
 *          with news: the device's own message, whose number the 201
 *          gives as user_seq, needs no pull).
 *   xmpp:  each device is an RFC 7395 WebSocket (subprotocol xmpp): open,
 *          SASL PLAIN, open, bind, presence; messages are stanzas on it.
 *
 * Modes (all print one JSON line on stdout at the end):
 *   idle   open --conns N device connections (users round-robin from the
 *          users file), print "READY <n>" once every one is up or failed,
 *          then hold them (answering pings) until stdin closes.
 *   pairs  users 2p and 2p+1 are pair p (--pairs P); --rate R messages a
 *          second in total, message k from pair k mod P, the direction
 *          alternating each pass; for --seconds S after --warmup W.
 *          chime: send -> 201, send -> the receiver's sync frame (push),
 *          send -> the message in the receiver's /v1/sync (pulled).
 *          xmpp: send -> the stanza at the receiver (push = pulled).
 *   group  users 0..G-1 are the group (--members G), user 0 sends
 *          --rounds R messages, one at a time (at least --interval-ms
 *          apart); for each, the time until the last of the other G-1
 *          members has it.
 * Times are CLOCK_MONOTONIC; "sent" is when the request or stanza is
 * written to the socket. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

typedef int64_t ns_t;
static ns_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ns_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "chatload: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* ---- options ------------------------------------------------------------ */

enum { P_CHIME, P_XMPP };
enum { M_IDLE, M_PAIRS, M_GROUP };

static struct {
    int proto, mode;
    char host[64];
    int port;
    const char *users_file, *convs_file, *domain, *room, *group_conv;
    int conns, first, pairs, members, rounds, warmup_rounds, interval_ms, concurrency;
    double rate, seconds, warmup, drain, timeout;
    char srcs[16][32];
    int nsrcs;
    char run[16];
} O = {.host = "127.0.0.1", .domain = "localhost", .conns = 0, .pairs = 1000, .members = 500, .rounds = 200,
       .warmup_rounds = 5, .interval_ms = 100, .concurrency = 256, .rate = 200, .seconds = 10, .warmup = 2,
       .drain = 20, .timeout = 60};

/* ---- buffers -------------------------------------------------------------- */

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void buf_reserve(buf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 512;
    while (cap < b->len + more + 1) cap *= 2;
    b->p = realloc(b->p, cap);
    if (!b->p) die("out of memory");
    b->cap = cap;
}

static void buf_add(buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_consume(buf *b, size_t n)
{
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    if (b->p) b->p[b->len] = '\0';
}

static void buf_free(buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- users, messages ------------------------------------------------------- */

enum { K_WS, K_HTTP_SEND, K_HTTP_PULL };
enum { S_CONNECTING, S_HANDSHAKE, S_OPEN, S_DEAD };
enum { X_OPEN1 = 1, X_AUTH, X_OPEN2, X_BIND, X_PRES, X_READY, X_JOIN, X_JOINED };

struct user;

typedef struct conn {
    int fd;
    uint8_t kind, state, xstate;
    bool want_out, counted_ready, in_epoll, reconnect;
    struct user *u;
    int dev;          /* device number (xmpp resource) */
    buf in, out;
    size_t out_off;
    buf frag;         /* a fragmented WebSocket message */
    int busy;         /* HTTP: a request in flight */
    int attempts;     /* set-up retries */
    int64_t req_msg;  /* HTTP send: its message */
    ns_t t_begin;     /* connect started */
} conn;

#define FLOG 64
typedef struct user {
    int idx;
    char id[24], token[96]; /* chime */
    char name[40], pass[40]; /* xmpp */
    char conv[24];           /* chime: the pair's conversation */
    int peer;
    conn *ws, *hs, *hp;
    int64_t pulled, frame_seq;
    bool hello, pull_again;
    char wsconn[24]; /* chime: its WebSocket's "connection", named in its sends */
    int64_t fseq[FLOG];
    ns_t ft[FLOG];
    int64_t nf;
    /* changes pulled before their frame came: (seq, message) */
    int64_t pend_seq[256], pend_msg[256];
    int npend;
    /* sends waiting for the send connection */
    int64_t *q;
    size_t qh, qt, qcap;
} user;

typedef struct msg {
    ns_t sched, sent, ack, push, pull;
    int from, to, status;
} msg;

static user *U;
static int NU;
static msg *M;
static int64_t NM, NM_SENT;
static int EP, TFD;
static struct sockaddr_in DST;

/* group mode: per round, per member */
static ns_t *G_sent, *G_push, *G_pull;
static int G_round = -1, G_left;
static ns_t G_round_start;

static struct {
    int64_t ready, failed, closed, reconnects, setup_retries, http_errors, status_429, ws_errors, frames, pulls, bytes_in;
} ST;

/* ---- sockets ---------------------------------------------------------------- */

static void ep_set(conn *c, bool out)
{
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(EP, c->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) != 0) die("epoll_ctl: %s", strerror(errno));
    c->in_epoll = true;
    c->want_out = out;
}

static int NEXT_SRC;
static int CONNECTING; /* connections not yet open (connect or handshake) */

static conn *conn_new(user *u, int kind, int dev)
{
    conn *c = calloc(1, sizeof *c);
    if (!c) die("out of memory");
    c->u = u;
    c->kind = (uint8_t)kind;
    c->dev = dev;
    c->fd = -1;
    return c;
}

static void conn_fail(conn *c, const char *why);
static void on_open(conn *c);

static void conn_start(conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        c->state = S_DEAD;
        ST.failed++;
        fprintf(stderr, "chatload: socket: %s\n", strerror(errno));
        return;
    }
    int on = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (O.nsrcs) {
        struct sockaddr_in src = {.sin_family = AF_INET};
        inet_pton(AF_INET, O.srcs[NEXT_SRC++ % O.nsrcs], &src.sin_addr);
        setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
        if (bind(c->fd, (struct sockaddr *)&src, sizeof src) != 0) die("bind: %s", strerror(errno));
    }
    c->state = S_CONNECTING;
    c->t_begin = now_ns();
    CONNECTING++;
    int rc = connect(c->fd, (struct sockaddr *)&DST, sizeof DST);
    if (rc != 0 && errno != EINPROGRESS) {
        conn_fail(c, strerror(errno));
        return;
    }
    ep_set(c, true);
}

static void conn_close_fd(conn *c)
{
    if (c->fd >= 0) {
        if (c->in_epoll) epoll_ctl(EP, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->in_epoll = false;
    buf_free(&c->in);
    buf_free(&c->out);
    buf_free(&c->frag);
    c->out_off = 0;
}

static conn **RECONNECT;
static size_t NRECONNECT, CAPRECONNECT;

static void conn_fail(conn *c, const char *why)
{
    static int logged;
    if (c->state == S_DEAD) return;
    if (O.mode != M_IDLE && c->kind == K_WS && !c->counted_ready && c->state != S_DEAD && c->attempts < 3) {
        /* a login that failed during the set-up: try again (counted) */
        if (logged++ < 5) fprintf(stderr, "chatload: set-up of user %d failed (%s): again\n", c->u->idx, why);
        ST.setup_retries++;
        c->attempts++;
        CONNECTING--;
        c->state = S_DEAD;
        c->reconnect = true;
        conn_close_fd(c);
        if (NRECONNECT == CAPRECONNECT) {
            CAPRECONNECT = CAPRECONNECT ? 2 * CAPRECONNECT : 64;
            RECONNECT = realloc(RECONNECT, CAPRECONNECT * sizeof *RECONNECT);
            if (!RECONNECT) die("out of memory");
        }
        RECONNECT[NRECONNECT++] = c;
        return;
    }
    if (c->kind != K_WS && c->state == S_OPEN && O.mode != M_IDLE) {
        /* The server closed a keep-alive connection (h2o does after 10 s
         * idle): open it again after this event; what was in flight goes
         * again (a send is idempotent by its client_msg_id). */
        ST.reconnects++;
        c->state = S_DEAD;
        c->reconnect = true;
        conn_close_fd(c);
        if (NRECONNECT == CAPRECONNECT) {
            CAPRECONNECT = CAPRECONNECT ? 2 * CAPRECONNECT : 64;
            RECONNECT = realloc(RECONNECT, CAPRECONNECT * sizeof *RECONNECT);
            if (!RECONNECT) die("out of memory");
        }
        RECONNECT[NRECONNECT++] = c;
        return;
    }
    if (c->state != S_OPEN || (c->kind == K_WS && !c->counted_ready)) {
        ST.failed++;
        CONNECTING--;
    } else {
        ST.closed++;
        if (c->counted_ready) ST.ready--;
    }
    if (logged++ < 5) fprintf(stderr, "chatload: connection of user %d (kind %d) lost: %s\n", c->u->idx, c->kind, why);
    c->state = S_DEAD;
    conn_close_fd(c);
}

static void conn_flush(conn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = write(c->fd, c->out.p + c->out_off, c->out.len - c->out_off);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        conn_fail(c, n < 0 ? strerror(errno) : "write returned 0");
        return;
    }
    if (c->out_off == c->out.len) {
        c->out.len = 0;
        c->out_off = 0;
        if (c->want_out) ep_set(c, false);
    } else if (!c->want_out) {
        ep_set(c, true);
    }
}

static void conn_write(conn *c, const void *p, size_t n)
{
    if (c->state == S_DEAD) return;
    buf_add(&c->out, p, n);
    if (c->state != S_CONNECTING) conn_flush(c);
}

/* ---- WebSocket framing ---------------------------------------------------------- */

static void ws_send(conn *c, int opcode, const char *p, size_t n)
{
    unsigned char h[14];
    size_t hl = 0;
    h[hl++] = (unsigned char)(0x80 | opcode);
    if (n < 126) {
        h[hl++] = (unsigned char)(0x80 | n);
    } else if (n < 65536) {
        h[hl++] = 0x80 | 126;
        h[hl++] = (unsigned char)(n >> 8);
        h[hl++] = (unsigned char)n;
    } else {
        h[hl++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--) h[hl++] = (unsigned char)((uint64_t)n >> (8 * i));
    }
    static const unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
    memcpy(h + hl, key, 4);
    hl += 4;
    buf_reserve(&c->out, hl + n);
    memcpy(c->out.p + c->out.len, h, hl);
    unsigned char *d = (unsigned char *)c->out.p + c->out.len + hl;
    for (size_t i = 0; i < n; i++) d[i] = (unsigned char)p[i] ^ key[i & 3];
    c->out.len += hl + n;
    conn_flush(c);
}

static void ws_text(conn *c, const char *s)
{
    ws_send(c, 1, s, strlen(s));
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static void b64(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[o++] = B64[v >> 18 & 63];
        out[o++] = B64[v >> 12 & 63];
        out[o++] = i + 1 < n ? B64[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? B64[v & 63] : '=';
    }
    out[o] = '\0';
}

/* ---- chime: HTTP requests ---------------------------------------------------------- */

static const char TEXT[] = "the quick brown fox jumps over the lazy dog";

static void http_post_next(user *u)
{
    conn *c = u->hs;
    if (!c || c->state != S_OPEN || c->busy || u->qh == u->qt) return;
    int64_t k = u->q[u->qh++ % u->qcap];
    char body[256], req[768];
    int bl = snprintf(body, sizeof body, "{\"client_msg_id\":\"c%s-%" PRId64 "\",\"text\":\"L%s-%" PRId64 " %s\"}", O.run, k,
                      O.run, k, TEXT);
    const char *conv = O.mode == M_GROUP ? O.group_conv : u->conv;
    char named[48] = "";
    if (u->wsconn[0]) snprintf(named, sizeof named, "Chime-Connection: %s\r\n", u->wsconn);
    int rl = snprintf(req, sizeof req,
                      "POST /v1/conversations/%s/messages HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n"
                      "%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                      conv, O.host, O.port, u->token, named, bl, body);
    c->busy = 1;
    c->req_msg = k;
    ns_t t = now_ns();
    if (O.mode == M_GROUP) {
        if (!G_sent[k]) G_sent[k] = t;
    } else if (!M[k].sent) {
        M[k].sent = t;
    }
    conn_write(c, req, (size_t)rl);
}

static void http_pull(user *u)
{
    conn *c = u->hp;
    if (!c) return;
    if (c->state != S_OPEN || c->busy) { /* (re)connecting: on_open pulls */
        u->pull_again = true;
        return;
    }
    u->pull_again = false;
    char req[512];
    int rl = snprintf(req, sizeof req,
                      "GET /v1/sync?since=%" PRId64 "&limit=200 HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n\r\n",
                      u->pulled, O.host, O.port, u->token);
    c->busy = 1;
    ST.pulls++;
    conn_write(c, req, (size_t)rl);
}

/* The earliest frame that covered change seq s, or 0. */
static ns_t frame_time(user *u, int64_t s)
{
    int64_t lo = u->nf > FLOG ? u->nf - FLOG : 0;
    for (int64_t i = lo; i < u->nf; i++)
        if (u->fseq[i % FLOG] >= s) return u->ft[i % FLOG];
    return 0;
}

static void got_message(user *u, int64_t k, int64_t change_seq, ns_t t);

/* A message (run id checked) found at p: "c<run>-<k>" or "L<run>-<k>". */
static int64_t parse_mark(const char *p)
{
    size_t rl = strlen(O.run);
    if (strncmp(p, O.run, rl) != 0 || p[rl] != '-') return -1;
    return strtoll(p + rl + 1, NULL, 10);
}

static void on_sync_body(user *u, const char *b, ns_t t)
{
    /* {"changes":[{"seq":N,"kind":"message",...,"message":{...,"client_msg_id":"c<run>-<k>",...}},...],"seq":L,"has_more":x} */
    const char *end = strstr(b, "],\"seq\":");
    if (!end) {
        ST.http_errors++;
        return;
    }
    const char *p = b;
    while ((p = strstr(p, "{\"seq\":")) && p < end) {
        int64_t s = strtoll(p + 7, NULL, 10);
        const char *next = strstr(p + 7, "{\"seq\":");
        if (!next || next > end) next = end;
        const char *m = strstr(p, "\"client_msg_id\":\"c");
        if (m && m < next) {
            int64_t k = parse_mark(m + 18);
            if (k >= 0) got_message(u, k, s, t);
        }
        p = next;
    }
    int64_t last = strtoll(end + 8, NULL, 10);
    if (last > u->pulled) u->pulled = last;
    if (strstr(end, "\"has_more\":true") || u->frame_seq > u->pulled) u->pull_again = true;
}

static int64_t num_after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static void resolve_pending(user *u, int64_t seq, ns_t t);

/* The device heard at t that its number is seq (a frame, or its 201). */
static void note_news(user *u, int64_t seq, ns_t t)
{
    u->frame_seq = seq;
    u->fseq[u->nf % FLOG] = seq;
    u->ft[u->nf % FLOG] = t;
    u->nf++;
    if (u->npend) resolve_pending(u, seq, t);
}

static void on_http_response(conn *c, int status, const char *body, ns_t t)
{
    user *u = c->u;
    c->busy = 0;
    if (c->kind == K_HTTP_SEND) {
        int64_t k = c->req_msg;
        if (status == 429) ST.status_429++;
        if (status != 201 && status != 200) {
            ST.http_errors++;
            if (ST.http_errors < 5) fprintf(stderr, "chatload: send answered %d: %.200s\n", status, body);
        }
        if (O.mode == M_PAIRS) {
            M[k].ack = t;
            M[k].status = status;
        }
        /* The sender's own change: applied without a pull when it is the
         * next one (user_seq); then a pull only for what else came. The
         * 201 is news like a frame: the server spares the sending
         * connection the frame of that number (Chime-Connection), which
         * may also have been the only frame of changes before it. */
        int64_t own = (status == 201 || status == 200) ? num_after(body, "\"user_seq\":") : -1;
        if (own > u->frame_seq) note_news(u, own, t);
        if (own == u->pulled + 1) u->pulled = own;
        if (u->frame_seq > u->pulled) http_pull(u);
        http_post_next(u);
    } else {
        if (status != 200) {
            ST.http_errors++;
            if (ST.http_errors < 5) fprintf(stderr, "chatload: sync answered %d: %.200s\n", status, body);
        } else {
            on_sync_body(u, body, t);
        }
        if (u->pull_again) http_pull(u);
    }
}

/* Parses complete responses out of c->in. */
static void http_read(conn *c)
{
    for (;;) {
        char *hend = strstr(c->in.p ? c->in.p : "", "\r\n\r\n");
        if (!hend) return;
        int status = 0;
        if (sscanf(c->in.p, "HTTP/1.%*d %d", &status) != 1) {
            conn_fail(c, "bad HTTP response");
            return;
        }
        long clen = -1;
        for (char *h = c->in.p; h < hend; h++)
            if ((*h == '\n') && strncasecmp(h + 1, "content-length:", 15) == 0) clen = strtol(h + 16, NULL, 10);
        if (clen < 0) {
            conn_fail(c, "HTTP response without content-length");
            return;
        }
        size_t hl = (size_t)(hend + 4 - c->in.p);
        if (c->in.len < hl + (size_t)clen) return;
        ns_t t = now_ns();
        char save = c->in.p[hl + clen];
        c->in.p[hl + clen] = '\0';
        on_http_response(c, status, c->in.p + hl, t);
        if (c->state == S_DEAD) return;
        c->in.p[hl + clen] = save;
        buf_consume(&c->in, hl + (size_t)clen);
    }
}

/* ---- message bookkeeping ------------------------------------------------------------ */

/* User u has message k (change seq for chime pulls, 0 for xmpp). */
static void got_message(user *u, int64_t k, int64_t change_seq, ns_t t)
{
    if (O.mode == M_PAIRS) {
        if (k >= NM_SENT || M[k].to != u->idx || M[k].pull) return;
        M[k].pull = t;
        if (O.proto == P_XMPP) {
            M[k].push = t;
            return;
        }
        ns_t ft = frame_time(u, change_seq);
        if (ft) M[k].push = ft;
        else if (u->npend < 256) {
            u->pend_seq[u->npend] = change_seq;
            u->pend_msg[u->npend++] = k;
        }
    } else if (O.mode == M_GROUP) {
        if (k < 0 || k >= O.rounds || u->idx == 0 || u->idx >= O.members) return;
        size_t i = (size_t)k * (size_t)O.members + (size_t)u->idx;
        if (G_pull[i]) return;
        G_pull[i] = t;
        if (O.proto == P_XMPP) {
            G_push[i] = t;
        } else {
            ns_t ft = frame_time(u, change_seq);
            if (ft) G_push[i] = ft;
            else if (u->npend < 256) {
                u->pend_seq[u->npend] = change_seq;
                u->pend_msg[u->npend++] = k;
            }
        }
        if (k == G_round) G_left--;
    }
}

static void resolve_pending(user *u, int64_t seq, ns_t t)
{
    int j = 0;
    for (int i = 0; i < u->npend; i++) {
        if (u->pend_seq[i] <= seq) {
            int64_t k = u->pend_msg[i];
            if (O.mode == M_PAIRS) {
                if (!M[k].push) M[k].push = t;
            } else {
                size_t gi = (size_t)k * (size_t)O.members + (size_t)u->idx;
                if (!G_push[gi]) G_push[gi] = t;
            }
        } else {
            u->pend_seq[j] = u->pend_seq[i];
            u->pend_msg[j++] = u->pend_msg[i];
        }
    }
    u->npend = j;
}

/* ---- frames from the server ------------------------------------------------------------ */

static void xmpp_text(conn *c, const char *s, size_t n, ns_t t);

static void mark_ready(conn *c)
{
    if (c->counted_ready) return;
    c->counted_ready = true;
    ST.ready++;
    CONNECTING--;
}

static void chime_text(conn *c, const char *s, size_t n, ns_t t)
{
    user *u = c->u;
    int64_t seq = num_after(s, "\"seq\":");
    if (strstr(s, "\"type\":\"hello\"")) {
        const char *k = strstr(s, "\"connection\":\"");
        if (c == u->ws) snprintf(u->wsconn, sizeof u->wsconn, "%.16s", k ? k + 14 : "");
        if (!u->hello) {
            u->pulled = u->frame_seq = seq;
            u->hello = true;
        }
        mark_ready(c);
        return;
    }
    if (strstr(s, "\"type\":\"sync\"")) {
        if (c != u->ws) return; /* extra devices (idle mode) only listen */
        if (seq > u->frame_seq) note_news(u, seq, t);
        /* One change past what the device has, while its own send is not
         * answered yet: most likely that send's change; its 201 says. */
        bool own_maybe = seq == u->pulled + 1 && u->hs && u->hs->busy;
        if (seq > u->pulled && O.mode != M_IDLE && !own_maybe) http_pull(u);
    }
}

static void ws_message(conn *c, int op, const char *p, size_t n, ns_t t)
{
    ST.frames++;
    if (op == 9) { /* ping */
        ws_send(c, 10, p, n);
        return;
    }
    if (op == 8) {
        char why[160];
        snprintf(why, sizeof why, "closed by the server (code %d%s%.*s)", n >= 2 ? ((unsigned char)p[0] << 8 | (unsigned char)p[1]) : 0,
                 n > 2 ? ": " : "", n > 2 ? (int)(n - 2 > 100 ? 100 : n - 2) : 0, n > 2 ? p + 2 : "");
        ws_send(c, 8, p, n < 2 ? n : 2);
        conn_fail(c, why);
        return;
    }
    if (op != 1) return;
    /* NUL-terminated for strstr (the buffer has room: buf_add keeps one). */
    if (O.proto == P_CHIME) chime_text(c, p, n, t);
    else xmpp_text(c, p, n, t);
}

static void ws_read(conn *c)
{
    ns_t t = now_ns();
    for (;;) {
        unsigned char *b = (unsigned char *)c->in.p;
        size_t len = c->in.len;
        if (len < 2) return;
        int fin = b[0] & 0x80, op = b[0] & 15;
        bool masked = b[1] & 0x80;
        uint64_t pl = b[1] & 127;
        size_t hl = 2;
        if (pl == 126) {
            if (len < 4) return;
            pl = (uint64_t)b[2] << 8 | b[3];
            hl = 4;
        } else if (pl == 127) {
            if (len < 10) return;
            pl = 0;
            for (int i = 0; i < 8; i++) pl = pl << 8 | b[2 + i];
            hl = 10;
        }
        if (masked) hl += 4;
        if (len < hl + pl) return;
        char *payload = c->in.p + hl;
        if (masked)
            for (uint64_t i = 0; i < pl; i++) payload[i] ^= (char)b[hl - 4 + (i & 3)];
        char save = payload[pl];
        payload[pl] = '\0';
        if (op == 0 || (!fin && op < 8)) { /* fragments */
            if (op != 0) c->frag.len = 0;
            buf_add(&c->frag, payload, pl);
            if (fin) {
                ws_message(c, 1, c->frag.p, c->frag.len, t);
                c->frag.len = 0;
            }
        } else {
            ws_message(c, op, payload, pl, t);
        }
        if (c->state == S_DEAD) return;
        payload[pl] = save;
        buf_consume(&c->in, hl + pl);
    }
}

/* ---- xmpp ------------------------------------------------------------------------------- */

static void xmpp_open(conn *c)
{
    char s[256];
    snprintf(s, sizeof s, "<open xmlns=\"urn:ietf:params:xml:ns:xmpp-framing\" to=\"%s\" version=\"1.0\"/>", O.domain);
    ws_text(c, s);
}

static void xmpp_join(conn *c)
{
    char s[512];
    snprintf(s, sizeof s,
             "<presence xmlns=\"jabber:client\" to=\"%s/%s\"><x xmlns=\"http://jabber.org/protocol/muc\">"
             "<history maxstanzas=\"0\"/></x></presence>",
             O.room, c->u->name);
    c->xstate = X_JOIN;
    ws_text(c, s);
}

static int JOINED;
static bool FIRST_JOINED;

static void xmpp_text(conn *c, const char *s, size_t n, ns_t t)
{
    user *u = c->u;
    char out[512];
    if (strncmp(s, "<message", 8) == 0) {
        const char *b = strstr(s, "<body>L");
        if (b) {
            int64_t k = parse_mark(b + 7);
            if (k >= 0) got_message(u, k, 0, t);
        }
        return;
    }
    if (strncmp(s, "<close", 6) == 0 || strstr(s, "<stream:error")) {
        static int logged;
        if (logged++ < 5) fprintf(stderr, "chatload: %s (state %d) got: %.300s\n", u->name, c->xstate, s);
    }
    if (strstr(s, "<failure") || strstr(s, "<stream:error") || strstr(s, "type='error'")) {
        if (c->xstate != X_READY && c->xstate != X_JOINED) {
            fprintf(stderr, "chatload: xmpp error for %s: %.300s\n", u->name, s);
            conn_fail(c, "xmpp error");
        }
        return;
    }
    switch (c->xstate) {
    case X_OPEN1:
        if (strstr(s, "mechanisms")) {
            unsigned char raw[128];
            size_t nl = strlen(u->name), pl = strlen(u->pass);
            raw[0] = 0;
            memcpy(raw + 1, u->name, nl);
            raw[1 + nl] = 0;
            memcpy(raw + 2 + nl, u->pass, pl);
            char enc[200];
            b64(raw, 2 + nl + pl, enc);
            snprintf(out, sizeof out, "<auth xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\" mechanism=\"PLAIN\">%s</auth>", enc);
            c->xstate = X_AUTH;
            ws_text(c, out);
        }
        break;
    case X_AUTH:
        if (strncmp(s, "<success", 8) == 0) {
            c->xstate = X_OPEN2;
            xmpp_open(c);
        }
        break;
    case X_OPEN2:
        if (strstr(s, "urn:ietf:params:xml:ns:xmpp-bind")) {
            snprintf(out, sizeof out,
                     "<iq xmlns=\"jabber:client\" type=\"set\" id=\"b1\"><bind xmlns=\"urn:ietf:params:xml:ns:xmpp-bind\">"
                     "<resource>r%d</resource></bind></iq>",
                     c->dev);
            c->xstate = X_BIND;
            ws_text(c, out);
        }
        break;
    case X_BIND:
        if (strncmp(s, "<iq", 3) == 0 && (strstr(s, "type='result'") || strstr(s, "type=\"result\""))) {
            c->xstate = X_PRES;
            ws_text(c, "<presence xmlns=\"jabber:client\"/>");
        }
        break;
    case X_PRES:
        if (strncmp(s, "<presence", 9) == 0) {
            c->xstate = X_READY;
            mark_ready(c);
            if (O.mode == M_GROUP && u->idx == 0) xmpp_join(c);
            else if (O.mode == M_GROUP && FIRST_JOINED && u->idx < O.members) xmpp_join(c);
        }
        break;
    case X_JOIN:
        if (strncmp(s, "<presence", 9) == 0 && (strstr(s, "code='110'") || strstr(s, "code=\"110\""))) {
            c->xstate = X_JOINED;
            JOINED++;
            if (u->idx == 0 && !FIRST_JOINED) {
                FIRST_JOINED = true;
                for (int i = 1; i < O.members && i < NU; i++)
                    if (U[i].ws && U[i].ws->xstate == X_READY) xmpp_join(U[i].ws);
            }
        }
        break;
    default:
        break;
    }
}

/* ---- connection events ------------------------------------------------------------------ */

static void on_open(conn *c)
{
    user *u = c->u;
    c->state = S_HANDSHAKE;
    if (c->kind != K_WS) {
        c->state = S_OPEN;
        CONNECTING--;
        if (c->kind == K_HTTP_SEND) http_post_next(u);
        else if (u->pull_again) http_pull(u);
        conn_flush(c);
        return;
    }
    char req[768];
    int n;
    if (O.proto == P_CHIME)
        n = snprintf(req, sizeof req,
                     "GET /v1/ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                     "Authorization: Bearer %s\r\n\r\n",
                     O.host, O.port, u->token);
    else
        n = snprintf(req, sizeof req,
                     "GET /ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Protocol: xmpp\r\n\r\n",
                     O.host, O.port);
    buf_add(&c->out, req, (size_t)n);
    conn_flush(c);
}

static void on_readable(conn *c)
{
    for (;;) {
        buf_reserve(&c->in, 16384);
        size_t room = c->in.cap - c->in.len - 1;
        ssize_t n = read(c->fd, c->in.p + c->in.len, room);
        if (n > 0) {
            c->in.len += (size_t)n;
            c->in.p[c->in.len] = '\0';
            ST.bytes_in += n;
            /* A short read drained the socket: the epoll is level-triggered
             * and reports it again when more comes, so no read to see
             * EAGAIN (half the client's reads in the group phase). */
            bool drained = (size_t)n < room;
            if (c->state == S_HANDSHAKE) {
                char *e = strstr(c->in.p, "\r\n\r\n");
                if (!e && drained) return;
                if (!e) continue;
                if (strncmp(c->in.p, "HTTP/1.1 101", 12) != 0) {
                    char why[200];
                    snprintf(why, sizeof why, "upgrade refused: %.150s", c->in.p);
                    conn_fail(c, why);
                    return;
                }
                buf_consume(&c->in, (size_t)(e + 4 - c->in.p));
                c->state = S_OPEN;
                if (O.proto == P_XMPP) {
                    c->xstate = X_OPEN1;
                    xmpp_open(c);
                }
            }
            if (c->kind == K_WS) ws_read(c);
            else http_read(c);
            if (c->state == S_DEAD || drained) return;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        conn_fail(c, n == 0 ? "closed by the peer" : strerror(errno));
        return;
    }
}

static void on_event(conn *c, uint32_t ev)
{
    if (c->state == S_DEAD) return;
    if (c->state == S_CONNECTING) {
        if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err) {
            conn_fail(c, strerror(err));
            return;
        }
        on_open(c);
        if (c->state == S_DEAD) return;
    }
    if (ev & EPOLLOUT) conn_flush(c);
    if (c->state == S_DEAD) return;
    if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
}

/* ---- files ---------------------------------------------------------------------------------- */

static void read_users(void)
{
    FILE *f = fopen(O.users_file, "r");
    if (!f) die("%s: %s", O.users_file, strerror(errno));
    int cap = 1024;
    U = calloc((size_t)cap, sizeof *U);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (NU == cap) {
            U = realloc(U, (size_t)(cap *= 2) * sizeof *U);
            memset(U + NU, 0, (size_t)(cap - NU) * sizeof *U);
        }
        user *u = &U[NU];
        int idx;
        if (O.proto == P_CHIME) {
            if (sscanf(line, "%d %23s %95s", &idx, u->id, u->token) != 3) continue;
        } else {
            if (sscanf(line, "%d %39s %39s", &idx, u->name, u->pass) != 3) continue;
        }
        u->idx = NU++;
        u->peer = -1;
    }
    fclose(f);
    if (!NU) die("no users in %s", O.users_file);
}

static void read_convs(void)
{
    FILE *f = fopen(O.convs_file, "r");
    if (!f) die("%s: %s", O.convs_file, strerror(errno));
    char line[256];
    int p = 0;
    while (p < O.pairs && fgets(line, sizeof line, f)) {
        char id[24];
        if (sscanf(line, "%23s", id) != 1) continue;
        snprintf(U[2 * p].conv, sizeof U[2 * p].conv, "%s", id);
        snprintf(U[2 * p + 1].conv, sizeof U[2 * p + 1].conv, "%s", id);
        p++;
    }
    fclose(f);
    if (p < O.pairs) die("%s has %d conversations, %d pairs wanted", O.convs_file, p, O.pairs);
}

/* ---- stats ------------------------------------------------------------------------------------ */

static int cmp_ns(const void *a, const void *b)
{
    ns_t x = *(const ns_t *)a, y = *(const ns_t *)b;
    return x < y ? -1 : x > y;
}

/* {"n":..,"missing":..,"p50":..,"p90":..,"p99":..,"max":..} in ms; v sorted in place. */
static void print_dist(const char *name, ns_t *v, size_t n, size_t missing)
{
    qsort(v, n, sizeof *v, cmp_ns);
    size_t all = n + missing;
#define PCT(q) (all && (size_t)((double)all * (q)) < n ? (double)v[(size_t)((double)all * (q))] / 1e6 : -1.0)
    printf("\"%s\":{\"n\":%zu,\"missing\":%zu,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f}", name, n, missing,
           PCT(0.5), PCT(0.9), PCT(0.99), n && !missing ? (double)v[n - 1] / 1e6 : -1.0);
#undef PCT
}

/* A user's queue of sends: q[qh % qcap] .. q[(qt - 1) % qcap]. */
static void q_grow(user *u)
{
    size_t cap = u->qcap ? u->qcap * 2 : 16, n = u->qt - u->qh;
    int64_t *q = malloc(cap * sizeof *q);
    if (!q) die("out of memory");
    for (size_t i = 0; i < n; i++) q[1 + i] = u->q[(u->qh + i) % u->qcap];
    free(u->q);
    u->q = q;
    u->qh = 1; /* room for one in front */
    u->qt = 1 + n;
    u->qcap = cap;
}

static void q_push(user *u, int64_t k)
{
    if (!u->qcap || u->qt - u->qh + 1 >= u->qcap) q_grow(u);
    u->q[u->qt++ % u->qcap] = k;
}

static void q_push_front(user *u, int64_t k)
{
    if (!u->qcap || u->qh == 0 || u->qt - u->qh + 1 >= u->qcap) q_grow(u);
    u->q[--u->qh % u->qcap] = k;
}

/* ---- main loop ----------------------------------------------------------------------------------- */

static volatile sig_atomic_t STOP;
static void on_sig(int s)
{
    (void)s;
    STOP = 1;
}

static conn **ALL;
static size_t NALL, CAPALL;
static size_t NEXT_START; /* idle/setup: the next connection to start */

static void add_conn(conn *c)
{
    if (NALL == CAPALL) {
        CAPALL = CAPALL ? CAPALL * 2 : 4096;
        ALL = realloc(ALL, CAPALL * sizeof *ALL);
        if (!ALL) die("out of memory");
    }
    ALL[NALL++] = c;
}

static void start_more(void)
{
    while (NEXT_START < NALL && CONNECTING < O.concurrency) conn_start(ALL[NEXT_START++]);
}

/* Handshakes that take too long fail. */
static void check_timeouts(ns_t now)
{
    for (size_t i = 0; i < NEXT_START; i++) {
        conn *c = ALL[i];
        if (c->state == S_DEAD) continue;
        bool pending = c->state != S_OPEN || (c->kind == K_WS && !c->counted_ready);
        if (pending && now - c->t_begin > (ns_t)(O.timeout * 1e9)) conn_fail(c, "timed out");
    }
}

static void poll_once(int timeout_ms)
{
    struct epoll_event ev[512];
    int n = epoll_wait(EP, ev, 512, timeout_ms);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.ptr == NULL) {
            uint64_t x;
            if (read(TFD, &x, sizeof x) < 0) {
            }
            continue;
        }
        on_event(ev[i].data.ptr, ev[i].events);
    }
    for (size_t i = 0; i < NRECONNECT; i++) {
        conn *c = RECONNECT[i];
        user *u = c->u;
        c->reconnect = false;
        c->xstate = 0;
        if (c->busy) {
            if (c->kind == K_HTTP_SEND) q_push_front(u, c->req_msg); /* again, first in line */
            else {
                u->pull_again = true;
            }
            c->busy = 0;
        }
        conn_start(c);
    }
    NRECONNECT = 0;
    start_more();
}

static void arm_timer(ns_t at)
{
    struct itimerspec its = {.it_value = {.tv_sec = at / 1000000000LL, .tv_nsec = at % 1000000000LL}};
    if (at <= 0) its.it_value.tv_nsec = 1;
    timerfd_settime(TFD, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Connects everything in ALL; returns when every one is ready or failed. */
static void connect_all(void)
{
    ns_t last_check = now_ns(), t0 = last_check;
    size_t want = NALL;
    start_more();
    while (!STOP) {
        poll_once(100);
        ns_t now = now_ns();
        if (now - last_check > 1000000000LL) {
            check_timeouts(now);
            last_check = now;
            fprintf(stderr, "chatload: %" PRId64 " ready, %" PRId64 " failed of %zu (%.0f s)\n", ST.ready, ST.failed, want,
                    (double)(now - t0) / 1e9);
        }
        if (NEXT_START == NALL && CONNECTING <= 0) break;
    }
}

static void send_message(int64_t k)
{
    msg *m = &M[k];
    user *u = &U[m->from];
    if (O.proto == P_CHIME) {
        q_push(u, k);
        http_post_next(u);
    } else {
        char s[512];
        snprintf(s, sizeof s,
                 "<message xmlns=\"jabber:client\" to=\"%s@%s\" type=\"chat\" id=\"m%" PRId64 "\"><body>L%s-%" PRId64
                 " %s</body></message>",
                 U[m->to].name, O.domain, k, O.run, k, TEXT);
        m->sent = now_ns();
        ws_text(u->ws, s);
    }
}

static void run_pairs(void)
{
    int need = 2 * O.pairs;
    if (NU < need) die("%d users, %d pairs need %d", NU, O.pairs, need);
    if (O.proto == P_CHIME) read_convs();
    for (int i = 0; i < need; i++) {
        user *u = &U[i];
        u->peer = i ^ 1;
        add_conn(u->ws = conn_new(u, K_WS, 0));
        if (O.proto == P_CHIME) {
            add_conn(u->hs = conn_new(u, K_HTTP_SEND, 0));
            add_conn(u->hp = conn_new(u, K_HTTP_PULL, 0));
        }
    }
    connect_all();
    if (ST.failed) die("%" PRId64 " connections failed", ST.failed);
    double total = O.rate * (O.warmup + O.seconds);
    NM = (int64_t)total;
    M = calloc((size_t)NM, sizeof *M);
    ns_t start = now_ns() + 200000000LL, step = (ns_t)(1e9 / O.rate);
    for (int64_t k = 0; k < NM; k++) {
        int p = (int)(k % O.pairs);
        bool back = (k / O.pairs) % 2;
        M[k].from = 2 * p + back;
        M[k].to = 2 * p + !back;
        M[k].sched = start + k * step;
    }
    fprintf(stderr, "chatload: %d pairs ready; sending %" PRId64 " messages at %.0f/s\n", O.pairs, NM, O.rate);
    ns_t lag_max = 0;
    int64_t lagged = 0;
    arm_timer(M[0].sched);
    while (!STOP && NM_SENT < NM) {
        poll_once(50);
        ns_t now = now_ns();
        while (NM_SENT < NM && M[NM_SENT].sched <= now) {
            ns_t lag = now - M[NM_SENT].sched;
            if (lag > lag_max) lag_max = lag;
            if (lag > 1000000) lagged++;
            send_message(NM_SENT++);
        }
        if (NM_SENT < NM) arm_timer(M[NM_SENT].sched);
    }
    ns_t end_send = now_ns();
    /* drain */
    ns_t deadline = end_send + (ns_t)(O.drain * 1e9);
    ns_t last_look = 0;
    while (!STOP && now_ns() < deadline) {
        poll_once(50);
        if (now_ns() - last_look < 100000000LL) continue;
        last_look = now_ns();
        bool done = true;
        for (int64_t k = 0; k < NM && done; k++)
            if (!M[k].pull || (O.proto == P_CHIME && !M[k].push)) done = false;
        if (done) break;
    }
    ns_t first = M[0].sched + (ns_t)(O.warmup * 1e9);
    size_t n = 0;
    ns_t *ack = malloc((size_t)NM * sizeof(ns_t)), *push = malloc((size_t)NM * sizeof(ns_t)),
         *pull = malloc((size_t)NM * sizeof(ns_t));
    size_t nack = 0, npush = 0, npull = 0, mack = 0, mpush = 0, mpull = 0;
    int64_t measured = 0, late_sent = 0;
    for (int64_t k = 0; k < NM; k++) {
        msg *m = &M[k];
        if (m->sched < first) continue;
        measured++;
        if (m->sent - m->sched > 1000000) late_sent++;
        if (O.proto == P_CHIME) {
            if (m->ack && m->status == 201) ack[nack++] = m->ack - m->sent;
            else mack++;
        }
        if (m->push) push[npush++] = m->push - m->sent;
        else mpush++;
        if (m->pull) pull[npull++] = m->pull - m->sent;
        else mpull++;
        n++;
    }
    /* CHATLOAD_DUMP=prefix: a "# t0_monotonic_ms" line, then one line a
     * message (sent ms since the first,
     * ack, push, pull ms after sent; -1 when missing), to see when the
     * slow ones happen, in prefix.<proto>.<rate> (a full run keeps every
     * phase's). */
    const char *dump = getenv("CHATLOAD_DUMP");
    char dname[4096];
    if (dump) snprintf(dname, sizeof dname, "%s.%s.%.0f", dump, O.proto == P_CHIME ? "chime" : "xmpp", O.rate);
    FILE *df = dump ? fopen(dname, "w") : NULL;
    /* The first send on CLOCK_MONOTONIC, to line the lines up with a
     * server's own timestamps (the same clock on the same machine). */
    if (df && NM > 0) fprintf(df, "# t0_monotonic_ms %.3f\n", (double)M[0].sent / 1e6);
    for (int64_t k = 0; df && k < NM; k++) {
        msg *m = &M[k];
        fprintf(df, "%.3f %.3f %.3f %.3f\n", (double)(m->sent - M[0].sent) / 1e6,
                m->ack ? (double)(m->ack - m->sent) / 1e6 : -1.0, m->push ? (double)(m->push - m->sent) / 1e6 : -1.0,
                m->pull ? (double)(m->pull - m->sent) / 1e6 : -1.0);
    }
    if (df) fclose(df);
    double span = (double)(end_send - M[0].sched) / 1e9;
    printf("{\"mode\":\"pairs\",\"proto\":\"%s\",\"pairs\":%d,\"rate\":%.0f,\"achieved_rate\":%.1f,\"messages\":%" PRId64
           ",\"measured\":%" PRId64 ",",
           O.proto == P_CHIME ? "chime" : "xmpp", O.pairs, O.rate, (double)NM / span, NM, measured);
    if (O.proto == P_CHIME) {
        print_dist("ack", ack, nack, mack);
        printf(",");
    }
    print_dist("push", push, npush, mpush);
    printf(",");
    print_dist("pull", pull, npull, mpull);
    printf(",\"client_lag_max_ms\":%.3f,\"sends_late_1ms\":%" PRId64 ",\"http_errors\":%" PRId64 ",\"status_429\":%" PRId64
           ",\"closed\":%" PRId64 ",\"reconnects\":%" PRId64 ",\"pulls\":%" PRId64 ",\"frames\":%" PRId64
           ",\"late_sent_1ms\":%" PRId64 ",\"setup_retries\":%" PRId64 "}\n",
           (double)lag_max / 1e6, lagged, ST.http_errors, ST.status_429, ST.closed, ST.reconnects, ST.pulls, ST.frames,
           late_sent, ST.setup_retries);
    (void)n;
    free(ack);
    free(push);
    free(pull);
}

/* CHATLOAD_DUMP=prefix: one line a round (the first, the
 * median and the last member's push and pull, ms after the send; -1 when
 * missing), to see where a round's time goes, in prefix.<proto>.group. */
static void group_dump(void)
{
    const char *dump = getenv("CHATLOAD_DUMP");
    if (!dump) return;
    char dname[4096];
    snprintf(dname, sizeof dname, "%s.%s.group", dump, O.proto == P_CHIME ? "chime" : "xmpp");
    FILE *df = fopen(dname, "w");
    int G = O.members;
    ns_t *v = malloc((size_t)G * sizeof *v);
    for (int r = 0; df && v && r < O.rounds; r++) {
        fprintf(df, "%d", r);
        for (int kind = 0; kind < 2; kind++) {
            const ns_t *at = kind ? G_pull : G_push;
            int n = 0;
            for (int i = 1; i < G; i++)
                if (at[(size_t)r * G + i]) v[n++] = at[(size_t)r * G + i] - G_sent[r];
            qsort(v, (size_t)n, sizeof *v, cmp_ns);
            if (n == 0) fprintf(df, " -1 -1 -1");
            else fprintf(df, " %.3f %.3f %.3f", v[0] / 1e6, v[n / 2] / 1e6, v[n - 1] / 1e6);
        }
        fprintf(df, "\n");
    }
    free(v);
    if (df) fclose(df);
}

static void run_group(void)
{
    int G = O.members;
    if (NU < G) die("%d users, the group needs %d", NU, G);
    for (int i = 0; i < G; i++) {
        user *u = &U[i];
        add_conn(u->ws = conn_new(u, K_WS, 0));
        if (O.proto == P_CHIME) {
            if (i == 0) add_conn(u->hs = conn_new(u, K_HTTP_SEND, 0));
            add_conn(u->hp = conn_new(u, K_HTTP_PULL, 0));
        }
    }
    connect_all();
    if (ST.failed) die("%" PRId64 " connections failed", ST.failed);
    if (O.proto == P_XMPP) {
        ns_t t0 = now_ns();
        while (!STOP && JOINED < G && now_ns() - t0 < (ns_t)(O.timeout * 1e9)) poll_once(100);
        if (JOINED < G) die("only %d of %d joined the room", JOINED, G);
        /* let the join presences settle */
        ns_t t1 = now_ns();
        while (now_ns() - t1 < 1000000000LL) poll_once(50);
    }
    fprintf(stderr, "chatload: group of %d ready; %d rounds\n", G, O.rounds);
    size_t cells = (size_t)O.rounds * (size_t)G;
    G_sent = calloc((size_t)O.rounds, sizeof *G_sent);
    G_push = calloc(cells, sizeof *G_push);
    G_pull = calloc(cells, sizeof *G_pull);
    user *s = &U[0];
    ns_t per_round_timeout = 5000000000LL;
    for (int r = 0; r < O.rounds && !STOP; r++) {
        ns_t start = now_ns();
        G_round = r;
        G_left = G - 1;
        G_round_start = start;
        if (O.proto == P_CHIME) {
            q_push(s, r);
            http_post_next(s);
        } else {
            char m[512];
            snprintf(m, sizeof m,
                     "<message xmlns=\"jabber:client\" to=\"%s\" type=\"groupchat\" id=\"g%d\"><body>L%s-%d %s</body></message>",
                     O.room, r, O.run, r, TEXT);
            G_sent[r] = now_ns();
            ws_text(s->ws, m);
        }
        while (!STOP && G_left > 0 && now_ns() - start < per_round_timeout) poll_once(20);
        /* the pushes of the chime receivers may come after the pulls, rarely: give them the interval */
        ns_t next = start + (ns_t)O.interval_ms * 1000000LL;
        while (!STOP && now_ns() < next) poll_once((int)((next - now_ns()) / 1000000) + 1);
    }
    /* per round: the last member's time; all deliveries */
    ns_t *last_push = malloc((size_t)O.rounds * sizeof(ns_t)), *last_pull = malloc((size_t)O.rounds * sizeof(ns_t));
    ns_t *all_push = malloc(cells * sizeof(ns_t)), *all_pull = malloc(cells * sizeof(ns_t));
    size_t nlp = 0, nlq = 0, mlp = 0, mlq = 0, nap = 0, naq = 0, map = 0, maq = 0;
    for (int r = O.warmup_rounds; r < O.rounds; r++) {
        ns_t lp = 0, lq = 0;
        bool misp = false, misq = false;
        for (int i = 1; i < G; i++) {
            size_t c = (size_t)r * (size_t)G + (size_t)i;
            if (G_push[c]) {
                all_push[nap++] = G_push[c] - G_sent[r];
                if (G_push[c] - G_sent[r] > lp) lp = G_push[c] - G_sent[r];
            } else {
                misp = true;
                map++;
            }
            if (G_pull[c]) {
                all_pull[naq++] = G_pull[c] - G_sent[r];
                if (G_pull[c] - G_sent[r] > lq) lq = G_pull[c] - G_sent[r];
            } else {
                misq = true;
                maq++;
            }
        }
        if (misp) mlp++;
        else last_push[nlp++] = lp;
        if (misq) mlq++;
        else last_pull[nlq++] = lq;
    }
    group_dump();
    printf("{\"mode\":\"group\",\"proto\":\"%s\",\"members\":%d,\"rounds\":%d,\"measured_rounds\":%d,",
           O.proto == P_CHIME ? "chime" : "xmpp", G, O.rounds, O.rounds - O.warmup_rounds);
    print_dist("last_push", last_push, nlp, mlp);
    printf(",");
    print_dist("last_pull", last_pull, nlq, mlq);
    printf(",");
    print_dist("each_push", all_push, nap, map);
    printf(",");
    print_dist("each_pull", all_pull, naq, maq);
    printf(",\"http_errors\":%" PRId64 ",\"closed\":%" PRId64 ",\"pulls\":%" PRId64 ",\"frames\":%" PRId64
           ",\"setup_retries\":%" PRId64 "}\n",
           ST.http_errors, ST.closed, ST.pulls, ST.frames, ST.setup_retries);
}

static void run_idle(void)
{
    if (O.conns <= 0) die("--conns N");
    for (int i = 0; i < O.conns; i++) {
        int ui = (O.first + i) % NU, dev = O.first + i;
        user *u = &U[ui];
        conn *c = conn_new(u, K_WS, dev);
        if (!u->ws) u->ws = c;
        add_conn(c);
    }
    ns_t t0 = now_ns();
    connect_all();
    double secs = (double)(now_ns() - t0) / 1e9;
    printf("READY %" PRId64 " %" PRId64 " %.1f\n", ST.ready, ST.failed, secs);
    fflush(stdout);
    /* hold until stdin closes (or a signal) */
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = (void *)1};
    int in_ep = epoll_ctl(EP, EPOLL_CTL_ADD, 0, &ev) == 0;
    while (!STOP) {
        struct epoll_event evs[512];
        int n = epoll_wait(EP, evs, 512, 1000);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == (void *)1) {
                char b[64];
                ssize_t r = read(0, b, sizeof b);
                if (r <= 0) STOP = 1;
                continue;
            }
            if (evs[i].data.ptr == NULL) continue;
            on_event(evs[i].data.ptr, evs[i].events);
        }
        (void)in_ep;
    }
    printf("{\"mode\":\"idle\",\"proto\":\"%s\",\"wanted\":%d,\"ready\":%" PRId64 ",\"failed\":%" PRId64 ",\"closed\":%" PRId64
           ",\"connect_seconds\":%.1f,\"frames\":%" PRId64 "}\n",
           O.proto == P_CHIME ? "chime" : "xmpp", O.conns, ST.ready, ST.failed, ST.closed, secs, ST.frames);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: chatload idle|pairs|group --proto chime|xmpp --port P --users FILE [--host H] [--src A,B,..]\n"
            "  idle:  --conns N [--first K] [--concurrency C] [--timeout S]\n"
            "  pairs: --pairs P --rate R --seconds S [--warmup W] [--drain D] [--convs FILE (chime)]\n"
            "  group: --members G --rounds R [--warmup-rounds W] [--interval-ms I] --conv ID (chime) | --room JID (xmpp)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2) usage();
    if (!strcmp(argv[1], "idle")) O.mode = M_IDLE;
    else if (!strcmp(argv[1], "pairs")) O.mode = M_PAIRS;
    else if (!strcmp(argv[1], "group")) O.mode = M_GROUP;
    else usage();
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage();
        i++;
        if (!strcmp(a, "--proto")) O.proto = !strcmp(v, "xmpp") ? P_XMPP : P_CHIME;
        else if (!strcmp(a, "--host")) snprintf(O.host, sizeof O.host, "%s", v);
        else if (!strcmp(a, "--port")) O.port = atoi(v);
        else if (!strcmp(a, "--users")) O.users_file = v;
        else if (!strcmp(a, "--convs")) O.convs_file = v;
        else if (!strcmp(a, "--conv")) O.group_conv = v;
        else if (!strcmp(a, "--room")) O.room = v;
        else if (!strcmp(a, "--domain")) O.domain = v;
        else if (!strcmp(a, "--conns")) O.conns = atoi(v);
        else if (!strcmp(a, "--first")) O.first = atoi(v);
        else if (!strcmp(a, "--pairs")) O.pairs = atoi(v);
        else if (!strcmp(a, "--members")) O.members = atoi(v);
        else if (!strcmp(a, "--rounds")) O.rounds = atoi(v);
        else if (!strcmp(a, "--warmup-rounds")) O.warmup_rounds = atoi(v);
        else if (!strcmp(a, "--interval-ms")) O.interval_ms = atoi(v);
        else if (!strcmp(a, "--concurrency")) O.concurrency = atoi(v);
        else if (!strcmp(a, "--rate")) O.rate = atof(v);
        else if (!strcmp(a, "--seconds")) O.seconds = atof(v);
        else if (!strcmp(a, "--warmup")) O.warmup = atof(v);
        else if (!strcmp(a, "--drain")) O.drain = atof(v);
        else if (!strcmp(a, "--timeout")) O.timeout = atof(v);
        else if (!strcmp(a, "--src")) {
            char tmp[512];
            snprintf(tmp, sizeof tmp, "%s", v);
            for (char *s = strtok(tmp, ","); s && O.nsrcs < 16; s = strtok(NULL, ","))
                snprintf(O.srcs[O.nsrcs++], sizeof O.srcs[0], "%s", s);
        } else usage();
    }
    if (!O.port || !O.users_file) usage();
    if (O.mode == M_PAIRS && O.proto == P_CHIME && !O.convs_file) usage();
    if (O.mode == M_GROUP && ((O.proto == P_CHIME && !O.group_conv) || (O.proto == P_XMPP && !O.room))) usage();
    if (O.warmup_rounds >= O.rounds) O.warmup_rounds = 0;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    snprintf(O.run, sizeof O.run, "%lx", (unsigned long)(time(NULL) ^ ((unsigned long)getpid() << 16)) & 0xffffffUL);
    DST.sin_family = AF_INET;
    DST.sin_port = htons((uint16_t)O.port);
    if (inet_pton(AF_INET, O.host, &DST.sin_addr) != 1) die("--host must be an IPv4 address");
    read_users();
    EP = epoll_create1(EPOLL_CLOEXEC);
    TFD = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(EP, EPOLL_CTL_ADD, TFD, &ev);
    if (O.mode == M_IDLE) run_idle();
    else if (O.mode == M_PAIRS) run_pairs();
    else run_group();
    fflush(stdout);
    return 0;
}
