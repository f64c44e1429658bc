/* ws.c -- the WebSocket hub (see ws.h), on h2o's WebSocket support and
 * wslay. The pitfalls it steers around (measured on h2o 2.2.5, see
 * ../shared/notes): h2o forgets an upgraded socket (no timeouts, no
 * shutdown), so the hub pings and closes; h2o_websocket_proceed may call
 * the close callback synchronously, so nothing touches a connection
 * after proceeding it; a connection may not be closed from inside a
 * message callback, so refusals queue a close frame instead; and until
 * the 101 is written the socket is NULL, so frames are only queued. */
#define _GNU_SOURCE
#include "http/ws.h"

#include <h2o.h>
#include <h2o/websocket.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "http/server_int.h"

#define WS_CLOSE_WAIT_MS 2000 /* a closing peer gets this long to answer our close */
#define WS_WAITING_WAKE 4096 /* news or told items waiting that wake a loop whoever they are for */

typedef struct ws_loop ws_loop;

typedef struct ws_conn {
    h2o_websocket_conn_t *wc;
    ws_loop *lp;
    struct ws_conn *next; /* in its bucket of the loop's table */
    int64_t user_id;
    uint64_t id;
    uint64_t token;   /* the client's name for it (ws_hub_told) */
    int64_t known_seq; /* the user's number it was sent or told last */
    h2o_timeout_entry_t timer; /* the next look at it, or the wait for a close answer */
    uint64_t seen_ms;          /* when it last sent anything (a pong, a frame) */
    uint64_t pinged_ms;        /* when it was last pinged */
    bool closing;
    uint8_t held_len;  /* a frame header held back for its payload (ws_send) */
    uint8_t held[14];
} ws_conn;

/* A connection that knows a number already (ws_hub_told). */
typedef struct ws_told {
    int64_t user_id, seq;
    uint64_t token;
} ws_told;

/* A frame for a user, handed to a loop by another thread. */
typedef struct ws_frame {
    struct ws_frame *next;
    int64_t user_id;
    size_t len;
    char text[];
} ws_frame;

struct ws_loop {
    ws_hub *hub;
    int index;
    h2o_context_t *ctx;
    h2o_timeout_t tick_timeout, close_timeout;
    h2o_multithread_receiver_t rx;
    h2o_multithread_message_t msg;
    bool started;
    /* Handed over by other threads, under mu. */
    pthread_mutex_t mu;
    bool msg_queued;
    ws_news *signals;
    size_t nsignals, signals_cap;
    ws_told *told;
    size_t ntold, told_cap;
    ws_frame *frames, **frames_tail;
    uint64_t *kills; /* connections to close (a user over the cap) */
    size_t nkills, kills_cap;
    /* The loop's own: connections by user, chained in buckets. */
    ws_conn **buckets;
    size_t nbuckets, nconns;
    uint64_t next_id;
};

/* A connection as the registry knows it: its id (which says its loop)
 * and the token its client names it by (ws_hub_told). */
typedef struct ws_user_conn {
    uint64_t id, token;
} ws_user_conn;

/* What the hub knows of a user across loops: their connections, oldest
 * first (for the cap and for routing frames to the right loops), and the
 * last connection told a number (ws_hub_told): no loop is woken for news
 * that connection knows already (ws_hub_signal). */
typedef struct ws_user {
    int64_t user_id;
    int n;
    uint64_t told_token;
    int64_t told_seq;
    ws_user_conn conns[]; /* max_per_user + 1 */
} ws_user;

struct ws_hub {
    ws_hub_opts o;
    ws_hub_events ev;
    http_server *srv;
    int nloops;
    ws_loop *loops;
    pthread_mutex_t mu; /* guards users and the counts */
    ws_user **users;    /* open addressing by user id; NULL free, &tomb deleted */
    size_t users_cap, users_used, nusers;
    int64_t nconns;
};

static ws_user ws_tomb;

static size_t ws_hash(int64_t id)
{
    uint64_t x = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(x ^ (x >> 29));
}

/* ---- the hub's user registry (under hub->mu) ----------------------------- */

static ws_user **users_slot(ws_hub *h, int64_t user_id, bool for_insert)
{
    size_t mask = h->users_cap - 1, i = ws_hash(user_id) & mask;
    ws_user **tomb = NULL;
    for (;;) {
        ws_user *u = h->users[i];
        if (!u) return for_insert && tomb ? tomb : &h->users[i];
        if (u == &ws_tomb) {
            if (!tomb) tomb = &h->users[i];
        } else if (u->user_id == user_id) {
            return &h->users[i];
        }
        i = (i + 1) & mask;
    }
}

static bool users_grow(ws_hub *h)
{
    if ((h->users_used + 1) * 2 <= h->users_cap) return true;
    size_t old_cap = h->users_cap, cap = old_cap ? old_cap * 2 : 1024;
    while (h->nusers * 4 >= cap) cap *= 2;
    ws_user **old = h->users, **grown = calloc(cap, sizeof *grown);
    if (!grown) return false;
    h->users = grown;
    h->users_cap = cap;
    h->users_used = h->nusers;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i] && old[i] != &ws_tomb) *users_slot(h, old[i]->user_id, true) = old[i];
    free(old);
    return true;
}

/* Adds a connection; *evict gets the oldest one to close when the user is
 * over the cap (0: none). That one leaves the registry at once: its close
 * can take the peer's answer or WS_CLOSE_WAIT_MS, and the user's next
 * connections must neither overrun conns[] nor pick it again. False when
 * out of memory. */
static bool users_add(ws_hub *h, int64_t user_id, uint64_t conn, uint64_t token, uint64_t *evict, bool *first)
{
    *evict = 0;
    if (!users_grow(h)) return false;
    ws_user **slot = users_slot(h, user_id, true), *u = *slot;
    *first = !u || u == &ws_tomb;
    if (*first) {
        u = calloc(1, sizeof *u + (size_t)(h->o.max_per_user + 1) * sizeof u->conns[0]);
        if (!u) return false;
        u->user_id = user_id;
        if (!*slot) h->users_used++;
        *slot = u;
        h->nusers++;
    }
    u->conns[u->n++] = (ws_user_conn){.id = conn, .token = token};
    h->nconns++;
    if (u->n > h->o.max_per_user) {
        *evict = u->conns[0].id;
        u->n--;
        memmove(&u->conns[0], &u->conns[1], (size_t)u->n * sizeof u->conns[0]);
        h->nconns--;
    }
    return true;
}

/* True when it was the user's last connection on this node. An evicted
 * connection is no longer listed: its removal changes nothing. */
static bool users_remove(ws_hub *h, int64_t user_id, uint64_t conn)
{
    ws_user **slot = users_slot(h, user_id, false), *u = *slot;
    if (!u) return false;
    for (int i = 0; i < u->n; i++)
        if (u->conns[i].id == conn) {
            memmove(&u->conns[i], &u->conns[i + 1], (size_t)(u->n - i - 1) * sizeof u->conns[0]);
            u->n--;
            h->nconns--;
            break;
        }
    if (u->n > 0) return false;
    free(u);
    *slot = &ws_tomb;
    h->nusers--;
    return true;
}

/* ---- a loop's connections ------------------------------------------------ */

static ws_conn **bucket_of(ws_loop *lp, int64_t user_id)
{
    return &lp->buckets[ws_hash(user_id) & (lp->nbuckets - 1)];
}

static bool conns_grow(ws_loop *lp)
{
    if (lp->nconns < 2 * lp->nbuckets) return true;
    size_t n = lp->nbuckets ? lp->nbuckets * 2 : 256;
    ws_conn **grown = calloc(n, sizeof *grown), **old = lp->buckets;
    if (!grown) return false;
    size_t old_n = lp->nbuckets;
    lp->buckets = grown;
    lp->nbuckets = n;
    for (size_t i = 0; i < old_n; i++)
        for (ws_conn *c = old[i], *next; c; c = next) {
            next = c->next;
            ws_conn **b = bucket_of(lp, c->user_id);
            c->next = *b;
            *b = c;
        }
    free(old);
    return true;
}

static void conns_unlink(ws_loop *lp, ws_conn *c)
{
    for (ws_conn **p = bucket_of(lp, c->user_id); *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            lp->nconns--;
            return;
        }
}

static ws_conn *conn_find(ws_loop *lp, uint64_t id)
{
    for (size_t i = 0; i < lp->nbuckets; i++)
        for (ws_conn *c = lp->buckets[i]; c; c = c->next)
            if (c->id == id) return c;
    return NULL;
}

/* ---- one connection ------------------------------------------------------ */

/* The connection is gone (peer closed, error, or we closed it): forget it. */
static void conn_forget(ws_conn *c)
{
    ws_loop *lp = c->lp;
    ws_hub *h = lp->hub;
    if (h2o_timeout_is_linked(&c->timer)) h2o_timeout_unlink(&c->timer);
    conns_unlink(lp, c);
    pthread_mutex_lock(&h->mu);
    bool last = users_remove(h, c->user_id, c->id);
    pthread_mutex_unlock(&h->mu);
    if (last && h->ev.on_offline) h->ev.on_offline(h->ev.arg, c->user_id);
    free(c);
}

/* Closes the socket now (not from inside a message callback). */
static void conn_kill(ws_conn *c)
{
    h2o_websocket_conn_t *wc = c->wc;
    if (!wc->sock) return; /* the 101 is still being written: on_complete will see the peer */
    conn_forget(c);
    h2o_websocket_close(wc);
}

static void conn_proceed(ws_conn *c)
{
    if (c->wc->sock) h2o_websocket_proceed(c->wc); /* may free c */
}

/* A close frame now, the socket after the peer's answer or a wait. */
static void conn_close(ws_conn *c, uint16_t code, const char *reason)
{
    if (c->closing) return;
    c->closing = true;
    wslay_event_queue_close(c->wc->ws_ctx, code, (const uint8_t *)reason, strlen(reason));
    if (h2o_timeout_is_linked(&c->timer)) h2o_timeout_unlink(&c->timer);
    h2o_timeout_link(c->lp->ctx->loop, &c->lp->close_timeout, &c->timer);
}

static void conn_queue(ws_conn *c, const char *text, size_t len)
{
    struct wslay_event_msg m = {.opcode = WSLAY_TEXT_FRAME, .msg = (const uint8_t *)text, .msg_length = len};
    wslay_event_queue_msg(c->wc->ws_ctx, &m);
}

/* Queues a text frame; a client that lets frames pile up is closed (and
 * c freed: false). Not from inside a message callback (it may close the
 * socket). */
static bool conn_send(ws_conn *c, const char *text, size_t len)
{
    if (c->closing) return true;
    if (wslay_event_get_queued_msg_count(c->wc->ws_ctx) >= (size_t)c->lp->hub->o.max_queued) {
        log_warn("ws: closing a connection of user %lld: %d frames unsent", (long long)c->user_id,
                 c->lp->hub->o.max_queued);
        conn_kill(c);
        return false;
    }
    conn_queue(c, text, len);
    return true;
}

/* Every half ping interval: a connection silent for one and a half
 * intervals (the ping before last went unanswered, and the last one too,
 * for half an interval) is dead; one due a ping gets it. So a live device
 * is pinged once an interval, and one that vanished stops counting within
 * two intervals of its last sign of life. */
static void on_timer(h2o_timeout_entry_t *entry)
{
    ws_conn *c = H2O_STRUCT_FROM_MEMBER(ws_conn, timer, entry);
    uint64_t now = h2o_now(c->lp->ctx->loop), every = (uint64_t)c->lp->hub->o.ping_ms;
    if (c->closing || now - c->seen_ms >= every + every / 2) {
        conn_kill(c);
        return;
    }
    h2o_timeout_link(c->lp->ctx->loop, &c->lp->tick_timeout, &c->timer);
    if (now - c->pinged_ms + every / 4 < every) return; /* (ticks drift: a quarter's slack) */
    c->pinged_ms = now;
    struct wslay_event_msg m = {.opcode = WSLAY_PING, .msg = (const uint8_t *)"", .msg_length = 0};
    wslay_event_queue_msg(c->wc->ws_ctx, &m);
    conn_proceed(c);
}

/* ---- writing frames ------------------------------------------------------ */

/* h2o's own send callback writes a frame's header and its payload in two
 * writes, each a TCP segment the client must wake for, and reports each
 * one's completion on the loop's next pass (the notes). A sync frame is
 * about 40 bytes: the second write was a third of the loops' writev calls
 * in bench/chat's group phase. This one holds the header back and writes
 * it with the payload: one write, one segment, one pass a frame. */
static void ws_written(h2o_socket_t *sock, const char *err)
{
    h2o_websocket_conn_t *wc = sock->data;
    if (err) {
        wc->cb(wc, NULL); /* as h2o's: the connection is closed */
        return;
    }
    h2o_websocket_proceed(wc);
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *arg)
{
    h2o_websocket_conn_t *wc = arg;
    ws_conn *c = wc->data;
    if (h2o_socket_is_writing(wc->sock)) { /* one write in flight, as h2o's */
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    /* wslay sends a header with MSG_MORE when a payload follows, and the
     * payload right after it, in the same wslay_event_send. */
    if ((flags & WSLAY_MSG_MORE) && !c->held_len && len <= sizeof c->held) {
        memcpy(c->held, data, len);
        c->held_len = (uint8_t)len;
        return (ssize_t)len;
    }
    /* The bytes must outlive a partial write: h2o's own buffer for them,
     * kept at its largest until the connection closes (as h2o keeps it). */
    size_t n = c->held_len + len;
    wc->_write_buf = h2o_mem_realloc(wc->_write_buf, n);
    memcpy(wc->_write_buf, c->held, c->held_len);
    memcpy((char *)wc->_write_buf + c->held_len, data, len);
    c->held_len = 0;
    h2o_iovec_t buf = h2o_iovec_init(wc->_write_buf, n);
    h2o_socket_write(wc->sock, &buf, 1, ws_written);
    return (ssize_t)len;
}

static void on_ws_msg(h2o_websocket_conn_t *wc, const struct wslay_event_on_msg_recv_arg *arg)
{
    ws_conn *c = wc->data;
    if (!arg) { /* closed by the peer, an error, or wslay after a close */
        conn_forget(c);
        h2o_websocket_close(wc);
        return;
    }
    ws_hub *h = c->lp->hub;
    c->seen_ms = h2o_now(c->lp->ctx->loop);
    switch (arg->opcode) {
    case WSLAY_PONG:
        break;
    case WSLAY_TEXT_FRAME: {
        char *reply = NULL;
        if (!h->ev.on_text || h->ev.on_text(h->ev.arg, c->user_id, (const char *)arg->msg, arg->msg_length, &reply) != 0)
            conn_close(c, 1008, "unexpected frame");
        else if (reply && !c->closing)
            conn_queue(c, reply, strlen(reply)); /* the proceed in progress sends it */
        free(reply);
        break;
    }
    case WSLAY_BINARY_FRAME:
        conn_close(c, 1008, "binary frames are not accepted");
        break;
    default: /* ping and close: wslay answers them */
        break;
    }
}

/* ---- work handed to a loop ----------------------------------------------- */

static void loop_wake(ws_loop *lp)
{
    if (!lp->msg_queued && lp->started) {
        lp->msg_queued = true;
        h2o_multithread_send_message(&lp->rx, &lp->msg);
    }
}

static bool has_local(ws_loop *lp, int64_t user_id)
{
    if (!lp->nbuckets) return false;
    for (ws_conn *c = *bucket_of(lp, user_id); c; c = c->next)
        if (c->user_id == user_id) return true;
    return false;
}

static int cmp_news(const void *a, const void *b)
{
    const ws_news *x = a, *y = b;
    if (x->user_id != y->user_id) return x->user_id < y->user_id ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Signals: one item per user with a connection here, to on_signal. In
 * (user, seq) order a user's not-known items come first and its highest
 * number last: one not known makes the user's item not known (the domain
 * reads the newest), else the highest number stands. */
static void run_signals(ws_loop *lp, ws_news *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (has_local(lp, v[i].user_id)) v[k++] = v[i];
    if (k == 0) return;
    qsort(v, k, sizeof *v, cmp_news);
    size_t u = 0;
    for (size_t i = 0; i < k; i++) {
        if (u > 0 && v[u - 1].user_id == v[i].user_id) {
            if (v[u - 1].seq > 0) v[u - 1] = v[i];
        } else {
            v[u++] = v[i];
        }
    }
    ws_hub *h = lp->hub;
    if (h->ev.on_signal) h->ev.on_signal(h->ev.arg, lp->index, v, u);
}

/* Before the signals of the same changes: the connections that know. */
static void apply_told(ws_loop *lp, const ws_told *t, size_t n)
{
    for (size_t i = 0; i < n && lp->nbuckets; i++)
        for (ws_conn *c = *bucket_of(lp, t[i].user_id); c; c = c->next)
            if (c->user_id == t[i].user_id && c->token == t[i].token && t[i].seq > c->known_seq)
                c->known_seq = t[i].seq;
}

static void on_loop_message(h2o_multithread_receiver_t *rx, h2o_linklist_t *messages)
{
    ws_loop *lp = H2O_STRUCT_FROM_MEMBER(ws_loop, rx, rx);
    while (!h2o_linklist_is_empty(messages)) h2o_linklist_unlink(messages->next);
    pthread_mutex_lock(&lp->mu);
    lp->msg_queued = false;
    ws_news *sig = lp->signals;
    size_t nsig = lp->nsignals;
    ws_frame *frames = lp->frames;
    uint64_t *kills = lp->kills;
    size_t nkills = lp->nkills;
    ws_told *told = lp->told;
    size_t ntold = lp->ntold;
    lp->signals = NULL;
    lp->nsignals = lp->signals_cap = 0;
    lp->told = NULL;
    lp->ntold = lp->told_cap = 0;
    lp->frames = NULL;
    lp->frames_tail = &lp->frames;
    lp->kills = NULL;
    lp->nkills = lp->kills_cap = 0;
    pthread_mutex_unlock(&lp->mu);
    for (size_t i = 0; i < nkills; i++) {
        ws_conn *c = conn_find(lp, kills[i]);
        log_info("ws: user %lld has too many connections: closing the oldest (%s)",
                 c ? (long long)c->user_id : 0LL, c ? "found" : "already gone");
        if (c) {
            conn_close(c, 4001, "too many connections for this user");
            conn_proceed(c);
        }
    }
    free(kills);
    while (frames) {
        ws_frame *f = frames;
        frames = f->next;
        ws_hub_send_local(lp->hub, lp->index, f->user_id, 0, f->text, f->len);
        free(f);
    }
    apply_told(lp, told, ntold);
    free(told);
    run_signals(lp, sig, nsig);
    free(sig);
}

static void loop_start(void *arg, int loop)
{
    ws_hub *h = arg;
    ws_loop *lp = &h->loops[loop];
    lp->ctx = http_server_context(h->srv, loop);
    h2o_timeout_init(lp->ctx->loop, &lp->tick_timeout, (uint64_t)h->o.ping_ms / 2);
    h2o_timeout_init(lp->ctx->loop, &lp->close_timeout, WS_CLOSE_WAIT_MS);
    h2o_multithread_register_receiver(lp->ctx->queue, &lp->rx, on_loop_message);
    pthread_mutex_lock(&lp->mu);
    lp->started = true;
    if (lp->nsignals || lp->frames || lp->nkills || lp->ntold) loop_wake(lp);
    pthread_mutex_unlock(&lp->mu);
}

/* The loop has stopped: its connections go (clients reconnect elsewhere). */
static void loop_stop(void *arg, int loop)
{
    ws_hub *h = arg;
    ws_loop *lp = &h->loops[loop];
    pthread_mutex_lock(&lp->mu);
    lp->started = false;
    pthread_mutex_unlock(&lp->mu);
    for (size_t i = 0; i < lp->nbuckets; i++)
        while (lp->buckets[i]) {
            ws_conn *c = lp->buckets[i];
            if (c->wc->sock) {
                conn_kill(c);
            } else { /* the 101 never finished: nothing of h2o's to close */
                conns_unlink(lp, c);
                free(c);
            }
        }
    h2o_multithread_unregister_receiver(lp->ctx->queue, &lp->rx);
}

/* ---- the API ------------------------------------------------------------- */

ws_hub *ws_hub_new(http_server *s, const ws_hub_opts *o, const ws_hub_events *ev)
{
    ws_hub *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->o = *o;
    if (h->o.ping_ms < 10) h->o.ping_ms = 25000;
    if (h->o.max_per_user < 1) h->o.max_per_user = 10;
    if (h->o.max_frame < 1) h->o.max_frame = 65536;
    if (h->o.max_queued < 1) h->o.max_queued = 256;
    h->ev = *ev;
    h->srv = s;
    h->nloops = http_server_loops(s);
    h->loops = calloc((size_t)h->nloops, sizeof *h->loops);
    if (!h->loops) {
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->mu, NULL);
    for (int i = 0; i < h->nloops; i++) {
        ws_loop *lp = &h->loops[i];
        lp->hub = h;
        lp->index = i;
        lp->frames_tail = &lp->frames;
        pthread_mutex_init(&lp->mu, NULL);
    }
    http_server_on_loop(s, loop_start, loop_stop, h);
    return h;
}

void ws_hub_free(ws_hub *h)
{
    if (!h) return;
    for (int i = 0; i < h->nloops; i++) {
        ws_loop *lp = &h->loops[i];
        free(lp->signals);
        free(lp->told);
        free(lp->kills);
        while (lp->frames) {
            ws_frame *f = lp->frames;
            lp->frames = f->next;
            free(f);
        }
        free(lp->buckets);
        pthread_mutex_destroy(&lp->mu);
    }
    for (size_t i = 0; i < h->users_cap; i++)
        if (h->users[i] != &ws_tomb) free(h->users[i]);
    free(h->users);
    free(h->loops);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* The loop of a connection id or token (ws_hub_token puts it there). */
static int loop_index(const ws_hub *h, uint64_t id)
{
    return (int)(id % (uint64_t)h->nloops);
}

/* A loop's bit in a mask of loops (past 64 loops, bits are shared: a
 * mask then wakes more loops than it must, never fewer). */
static uint64_t loop_bit(int i)
{
    return (uint64_t)1 << (i % 64);
}

/* Queues the close of an older connection of a user over the cap. */
static void evict(ws_hub *h, uint64_t id)
{
    ws_loop *lp = &h->loops[loop_index(h, id)];
    pthread_mutex_lock(&lp->mu);
    uint64_t *grown = lp->nkills < lp->kills_cap ? lp->kills : base_grow(lp->kills, sizeof *grown, &lp->kills_cap);
    if (grown) {
        lp->kills = grown;
        lp->kills[lp->nkills++] = id;
        loop_wake(lp);
    }
    pthread_mutex_unlock(&lp->mu);
}

uint64_t ws_hub_token(ws_hub *h, int loop)
{
    uint64_t t;
    do {
        base_random(&t, sizeof t);
        t >>= 2; /* shown as an id: at most INT64_MAX */
        t = t - t % (uint64_t)h->nloops + (uint64_t)loop;
    } while (t == 0);
    return t;
}

int ws_hub_upgrade(ws_hub *h, http_req *r, int64_t user_id, uint64_t token, const char *hello, int64_t hello_seq)
{
    if (!http_server_is_ws(r)) return -1;
    ws_loop *lp = &h->loops[r->loop];
    ws_conn *c = calloc(1, sizeof *c);
    if (!c || !conns_grow(lp)) {
        free(c);
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
        return 0;
    }
    c->lp = lp;
    c->user_id = user_id;
    c->id = ++lp->next_id * (uint64_t)h->nloops + (uint64_t)r->loop;
    c->token = token;
    c->known_seq = hello_seq;
    c->timer.cb = on_timer;
    c->seen_ms = c->pinged_ms = h2o_now(lp->ctx->loop);
    /* Listed before the 101 goes out: h2o writes it at once, and a client
     * that opens its next connection on hearing it (maybe on another loop)
     * must find this one older, or the cap closes the wrong one. */
    uint64_t old = 0;
    bool first = false;
    pthread_mutex_lock(&h->mu);
    bool added = users_add(h, user_id, c->id, token, &old, &first);
    pthread_mutex_unlock(&h->mu);
    if (!added) log_error("ws: out of memory registering a connection");
    c->wc = http_server_upgrade_ws(r, c, on_ws_msg);
    if (!c->wc) { /* not after the check above; unlisted as if closed */
        pthread_mutex_lock(&h->mu);
        users_remove(h, user_id, c->id);
        pthread_mutex_unlock(&h->mu);
        free(c);
        if (old) evict(h, old);
        return -1;
    }
    wslay_event_config_set_max_recv_msg_length(c->wc->ws_ctx, h->o.max_frame);
    c->wc->ws_callbacks.send_callback = ws_send;
    wslay_event_config_set_callbacks(c->wc->ws_ctx, &c->wc->ws_callbacks);
    ws_conn **b = bucket_of(lp, user_id);
    c->next = *b;
    *b = c;
    lp->nconns++;
    h2o_timeout_link(lp->ctx->loop, &lp->tick_timeout, &c->timer);
    if (hello) conn_queue(c, hello, strlen(hello));
    if (first && h->ev.on_online) h->ev.on_online(h->ev.arg, user_id);
    if (old) evict(h, old);
    /* News listed here before the user was woke no one (ws_hub_signal):
     * it runs once this handler is done. */
    pthread_mutex_lock(&lp->mu);
    if (lp->nsignals) loop_wake(lp);
    pthread_mutex_unlock(&lp->mu);
    return 0;
}

/* Under h->mu: the loops with a connection of the user that does not
 * know its number seq yet (seq <= 0: any connection), as loop_bits. */
static uint64_t user_loops(ws_hub *h, int64_t user_id, int64_t seq)
{
    ws_user *u = h->users_cap ? *users_slot(h, user_id, false) : NULL;
    uint64_t mask = 0;
    for (int k = 0; u && k < u->n; k++) {
        bool knows = seq > 0 && u->conns[k].token == u->told_token && seq <= u->told_seq;
        if (!knows) mask |= loop_bit(loop_index(h, u->conns[k].id));
    }
    return mask;
}

/* Which loops have a connection of the news' users that does not know
 * the news yet, as loop_bits. The sender's own
 * connection knows its message's number from the 201 (ws_hub_told), so
 * a 1:1 message from a user's one device wakes the receiver's loop
 * alone, and news of users with no connection here wakes none. */
static uint64_t signal_loops(ws_hub *h, const ws_news *news, size_t n)
{
    uint64_t mask = 0;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < n; i++) mask |= user_loops(h, news[i].user_id, news[i].seq);
    pthread_mutex_unlock(&h->mu);
    return mask;
}

/* The news goes on every loop's list, and only the loops with someone to
 * tell are woken (signal_loops); the others sort it out (run_signals)
 * when they next wake for anything, or once WS_WAITING_WAKE items wait.
 * Listed first and looked up after, so a connection that opens meanwhile
 * misses nothing: either the look-up finds its user, or its loop finds
 * the news waiting once the upgrade has listed it (ws_hub_upgrade wakes
 * its own loop). */
void ws_hub_signal(ws_hub *h, const ws_news *news, size_t n)
{
    for (int i = 0; i < h->nloops; i++) {
        ws_loop *lp = &h->loops[i];
        pthread_mutex_lock(&lp->mu);
        while (lp->nsignals + n > lp->signals_cap) {
            ws_news *grown = base_grow(lp->signals, sizeof *grown, &lp->signals_cap);
            if (!grown) break;
            lp->signals = grown;
        }
        if (lp->nsignals + n <= lp->signals_cap) {
            memcpy(lp->signals + lp->nsignals, news, n * sizeof *news);
            lp->nsignals += n;
        }
        if (lp->nsignals >= WS_WAITING_WAKE) loop_wake(lp);
        pthread_mutex_unlock(&lp->mu);
    }
    uint64_t mask = signal_loops(h, news, n);
    for (int i = 0; i < h->nloops; i++) {
        if (!(mask & loop_bit(i))) continue;
        ws_loop *lp = &h->loops[i];
        pthread_mutex_lock(&lp->mu);
        loop_wake(lp);
        pthread_mutex_unlock(&lp->mu);
    }
}

/* Applied by its loop before the news it goes with (on_loop_message), so
 * it wakes no one by itself: the news that follows wakes the loop if
 * another connection there needs it (signal_loops reads the record). */
void ws_hub_told(ws_hub *h, int64_t user_id, uint64_t token, int64_t seq)
{
    ws_loop *lp = &h->loops[loop_index(h, token)];
    pthread_mutex_lock(&lp->mu);
    if (lp->ntold == lp->told_cap) {
        ws_told *grown = base_grow(lp->told, sizeof *grown, &lp->told_cap);
        if (grown) lp->told = grown;
    }
    bool listed = lp->ntold < lp->told_cap; /* out of memory: the device just gets its frame */
    if (listed) lp->told[lp->ntold++] = (ws_told){.user_id = user_id, .seq = seq, .token = token};
    if (lp->ntold >= WS_WAITING_WAKE) loop_wake(lp);
    pthread_mutex_unlock(&lp->mu);
    if (!listed) return;
    pthread_mutex_lock(&h->mu);
    ws_user *u = h->users_cap ? *users_slot(h, user_id, false) : NULL;
    if (u && (u->told_token != token || seq > u->told_seq)) {
        u->told_token = token;
        u->told_seq = seq;
    }
    pthread_mutex_unlock(&h->mu);
}

void ws_hub_send_user(ws_hub *h, int64_t user_id, const char *text, size_t len)
{
    pthread_mutex_lock(&h->mu);
    uint64_t on = user_loops(h, user_id, 0);
    pthread_mutex_unlock(&h->mu);
    for (int i = 0; on && i < h->nloops; i++) {
        if (!(on & loop_bit(i))) continue;
        ws_frame *f = malloc(sizeof *f + len + 1);
        if (!f) return;
        f->next = NULL;
        f->user_id = user_id;
        f->len = len;
        memcpy(f->text, text, len);
        f->text[len] = '\0';
        ws_loop *lp = &h->loops[i];
        pthread_mutex_lock(&lp->mu);
        *lp->frames_tail = f;
        lp->frames_tail = &f->next;
        loop_wake(lp);
        pthread_mutex_unlock(&lp->mu);
    }
}

/* Whether c is one of the user's open connections, not sent or told seq
 * or a later number already. */
static bool gets_frame(const ws_conn *c, int64_t user_id, int64_t seq)
{
    return c->user_id == user_id && !c->closing && (seq <= 0 || seq > c->known_seq);
}

void ws_hub_send_local(ws_hub *h, int loop, int64_t user_id, int64_t seq, const char *text, size_t len)
{
    ws_loop *lp = &h->loops[loop];
    if (!lp->nbuckets) return;
    /* Frames first, then proceed each: proceeding may free a connection.
     * A user may have up to --ws-max-per-user (1000) connections here. */
    size_t n = 0;
    for (ws_conn *c = *bucket_of(lp, user_id); c; c = c->next) n += gets_frame(c, user_id, seq);
    ws_conn *stack[64], **todo = n <= 64 ? stack : malloc(n * sizeof *todo);
    if (!todo) return; /* out of memory: the devices pull at their next frame */
    n = 0;
    for (ws_conn *c = *bucket_of(lp, user_id); c; c = c->next)
        if (gets_frame(c, user_id, seq)) todo[n++] = c;
    for (size_t i = 0; i < n; i++) {
        if (seq > 0) todo[i]->known_seq = seq;
        if (!conn_send(todo[i], text, len)) todo[i] = NULL; /* killed and freed */
    }
    for (size_t i = 0; i < n; i++)
        if (todo[i]) conn_proceed(todo[i]); /* may free todo[i], and no other */
    if (todo != stack) free(todo);
}

void ws_hub_counts(ws_hub *h, int64_t *connections, int64_t *users)
{
    pthread_mutex_lock(&h->mu);
    *connections = h->nconns;
    *users = (int64_t)h->nusers;
    pthread_mutex_unlock(&h->mu);
}

int ws_hub_is_online(ws_hub *h, int64_t user_id)
{
    pthread_mutex_lock(&h->mu);
    ws_user *u = h->users_cap ? *users_slot(h, user_id, false) : NULL;
    int on = u && u != &ws_tomb && u->n > 0;
    pthread_mutex_unlock(&h->mu);
    return on;
}
