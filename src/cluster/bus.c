/* bus.c -- see bus.h. Two threads per node: a listener (LISTEN, or Redis
 * SUBSCRIBE) that waits in poll() on its connection and on a stop pipe,
 * and a publisher that drains a queue (NOTIFY in one transaction per
 * batch, or PUBLISH). Each reconnects on its own after a failure, a
 * second apart. A hint on the wire is "NODE|PAYLOAD". */
#define _GNU_SOURCE
#include "cluster/bus.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <libpq-fe.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

#define BUS_BATCH 256 /* hints a publisher sends per round trip */

typedef struct bus_msg {
    struct bus_msg *next;
    size_t len;
    char text[]; /* "NODE|PAYLOAD" */
} bus_msg;

struct bus {
    char *db_url, *redis_host, node[128], channel[64];
    int redis_port;
    bool enabled, started;
    bus_fn fn;
    void *arg;
    int stop_pipe[2];
    pthread_t listener, publisher;
    pthread_mutex_t mu; /* guards the queue and stopping */
    pthread_cond_t cv;
    bus_msg *head, **tail;
    size_t queued;
    bool stopping;
};

/* A host name as an address, looked up now: hiredis looks names up with
 * a blocking call at every connect, and the hot list reconnects on an
 * event loop, where a slow resolver would stall every request. NULL when
 * the lookup fails (the name is then kept, and looked up at each connect). */
static char *numeric_host(const char *name)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    char addr[NI_MAXHOST];
    if (getaddrinfo(name, NULL, &hints, &res) != 0 || !res) return NULL;
    int rc = getnameinfo(res->ai_addr, res->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST);
    freeaddrinfo(res);
    return rc == 0 ? strdup(addr) : NULL;
}

int bus_redis_address(const char *url, char **host, int *port)
{
    const char *p = strncmp(url, "redis://", 8) == 0 ? url + 8 : url;
    const char *colon = strrchr(p, ':'), *end = p + strcspn(p, "/");
    size_t hlen = colon && colon < end ? (size_t)(colon - p) : (size_t)(end - p);
    *port = colon && colon < end ? atoi(colon + 1) : 6379;
    if (hlen == 0 || *port <= 0 || *port > 65535) return -1;
    char *name = strndup(p, hlen);
    if (!name) return -1;
    *host = numeric_host(name);
    if (*host) {
        free(name);
        return 0;
    }
    log_warn("redis: cannot look up %s now; it will be looked up at each connect", name);
    *host = name;
    return 0;
}

bus *bus_new(const bus_opts *o, bus_fn fn, void *arg)
{
    bus *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->fn = fn;
    b->arg = arg;
    b->tail = &b->head;
    b->stop_pipe[0] = b->stop_pipe[1] = -1;
    snprintf(b->node, sizeof b->node, "%s", o->node_id ? o->node_id : "");
    snprintf(b->channel, sizeof b->channel, "%s", o->channel ? o->channel : "chime");
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    bool pg = o->db_url && (strncmp(o->db_url, "postgres://", 11) == 0 || strncmp(o->db_url, "postgresql://", 13) == 0);
    if (o->redis_host) {
        if (!(b->redis_host = strdup(o->redis_host))) {
            bus_free(b);
            return NULL;
        }
        b->redis_port = o->redis_port;
        b->enabled = true;
    } else if (pg) {
        if (!(b->db_url = strdup(o->db_url))) {
            bus_free(b);
            return NULL;
        }
        b->enabled = true;
    }
    return b;
}

int bus_enabled(const bus *b)
{
    return b && b->enabled;
}

/* Hands a hint from the wire to the callback, unless it is our own. */
static void deliver(bus *b, const char *text, size_t len)
{
    const char *bar = memchr(text, '|', len);
    if (!bar) return;
    size_t nlen = (size_t)(bar - text);
    if (nlen == strlen(b->node) && memcmp(text, b->node, nlen) == 0) return;
    b->fn(b->arg, bar + 1, len - nlen - 1);
}

static bool stopping(bus *b)
{
    pthread_mutex_lock(&b->mu);
    bool s = b->stopping;
    pthread_mutex_unlock(&b->mu);
    return s;
}

/* Waits for fd to be readable, or the stop pipe, or ms. 1 readable, 0 not. */
static int wait_readable(bus *b, int fd, int ms)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = b->stop_pipe[0], .events = POLLIN}};
    int n = poll(p, fd >= 0 ? 2 : 1, ms), at = fd >= 0 ? 0 : -1;
    if (fd < 0) p[0] = p[1];
    return n > 0 && at == 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) ? 1 : 0;
}

static void pause_before_retry(bus *b)
{
    wait_readable(b, -1, 1000);
}

/* ---- PostgreSQL ----------------------------------------------------------- */

static PGconn *pg_connect(bus *b, const char *who)
{
    PGconn *c = PQconnectdb(b->db_url);
    if (PQstatus(c) == CONNECTION_OK) return c;
    log_warn("bus: %s cannot connect: %s", who, PQerrorMessage(c));
    PQfinish(c);
    return NULL;
}

static bool pg_listen(bus *b, PGconn *c)
{
    char sql[128];
    snprintf(sql, sizeof sql, "LISTEN \"%s\"", b->channel);
    PGresult *r = PQexec(c, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok;
}

static void *pg_listener_main(void *p)
{
    bus *b = p;
    base_thread_name("bus-listen");
    while (!stopping(b)) {
        PGconn *c = pg_connect(b, "listener");
        if (!c || !pg_listen(b, c)) {
            PQfinish(c);
            pause_before_retry(b);
            continue;
        }
        while (!stopping(b)) {
            if (!wait_readable(b, PQsocket(c), 1000)) continue;
            if (!PQconsumeInput(c)) break;
            PGnotify *n;
            while ((n = PQnotifies(c))) {
                deliver(b, n->extra, strlen(n->extra));
                PQfreemem(n);
            }
        }
        if (!stopping(b)) log_warn("bus: listener connection lost: %s", PQerrorMessage(c));
        PQfinish(c);
    }
    return NULL;
}

/* One transaction of NOTIFYs; false when the connection failed. */
static bool pg_send(bus *b, PGconn *c, bus_msg *batch)
{
    PGresult *r = PQexec(c, "BEGIN");
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    for (bus_msg *m = batch; ok && m; m = m->next) {
        const char *params[2] = {b->channel, m->text};
        r = PQexecParams(c, "SELECT pg_notify($1, $2)", 2, NULL, params, NULL, NULL, 0);
        ok = PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
    }
    r = PQexec(c, ok ? "COMMIT" : "ROLLBACK");
    ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok;
}

/* ---- Redis ---------------------------------------------------------------- */

static redisContext *redis_connect(bus *b, const char *who)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout(b->redis_host, b->redis_port, tv);
    if (c && !c->err) return c;
    log_warn("bus: %s cannot connect to redis %s:%d: %s", who, b->redis_host, b->redis_port,
             c ? c->errstr : "out of memory");
    if (c) redisFree(c);
    return NULL;
}

/* A pub/sub "message" reply: ["message", channel, payload]. */
static void redis_reply(bus *b, redisReply *r)
{
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(r->element[0]->str, "message") == 0 && r->element[2]->type == REDIS_REPLY_STRING)
        deliver(b, r->element[2]->str, r->element[2]->len);
}

static void *redis_listener_main(void *p)
{
    bus *b = p;
    base_thread_name("bus-listen");
    while (!stopping(b)) {
        redisContext *c = redis_connect(b, "listener");
        if (!c || redisAppendCommand(c, "SUBSCRIBE %s", b->channel) != REDIS_OK) {
            if (c) redisFree(c);
            pause_before_retry(b);
            continue;
        }
        int done = 0;
        while (!done && redisBufferWrite(c, &done) == REDIS_OK) continue;
        bool alive = done;
        while (alive && !stopping(b)) {
            if (!wait_readable(b, c->fd, 1000)) continue;
            if (redisBufferRead(c) != REDIS_OK) break;
            void *reply;
            while (redisGetReplyFromReader(c, &reply) == REDIS_OK && reply) {
                redis_reply(b, reply);
                freeReplyObject(reply);
            }
        }
        if (!stopping(b)) log_warn("bus: redis listener connection lost: %s", c->errstr);
        redisFree(c);
    }
    return NULL;
}

static bool redis_send(bus *b, redisContext *c, bus_msg *batch)
{
    int n = 0;
    for (bus_msg *m = batch; m; m = m->next, n++)
        if (redisAppendCommand(c, "PUBLISH %s %b", b->channel, m->text, m->len) != REDIS_OK) return false;
    for (int i = 0; i < n; i++) {
        void *reply;
        if (redisGetReply(c, &reply) != REDIS_OK) return false;
        freeReplyObject(reply);
    }
    return true;
}

/* ---- the publisher -------------------------------------------------------- */

static bus_msg *take_batch(bus *b)
{
    pthread_mutex_lock(&b->mu);
    while (!b->head && !b->stopping) pthread_cond_wait(&b->cv, &b->mu);
    bus_msg *batch = b->head, **end = &b->head;
    for (int i = 0; *end && i < BUS_BATCH; i++) end = &(*end)->next;
    b->head = *end;
    *end = NULL;
    if (!b->head) b->tail = &b->head;
    for (bus_msg *m = batch; m; m = m->next) b->queued--;
    pthread_mutex_unlock(&b->mu);
    return batch;
}

static void free_batch(bus_msg *m)
{
    while (m) {
        bus_msg *next = m->next;
        free(m);
        m = next;
    }
}

static void *publisher_main(void *p)
{
    bus *b = p;
    base_thread_name("bus-publish");
    PGconn *pg = NULL;
    redisContext *rc = NULL;
    bus_msg *batch;
    while ((batch = take_batch(b))) {
        if (b->redis_host && !rc) rc = redis_connect(b, "publisher");
        if (!b->redis_host && !pg) pg = pg_connect(b, "publisher");
        bool ok = b->redis_host ? rc && redis_send(b, rc, batch) : pg && pg_send(b, pg, batch);
        if (!ok && (rc || pg)) {
            /* Hints lost: devices pull what they missed. Reconnect next. */
            log_warn("bus: a batch of hints was not published; reconnecting");
            if (rc) redisFree(rc);
            PQfinish(pg);
            rc = NULL;
            pg = NULL;
        }
        free_batch(batch);
    }
    if (rc) redisFree(rc);
    PQfinish(pg);
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------ */

int bus_start(bus *b)
{
    if (!b->enabled) return 0;
    if (pipe2(b->stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    void *(*listen)(void *) = b->redis_host ? redis_listener_main : pg_listener_main;
    if (pthread_create(&b->listener, NULL, listen, b) != 0) return -1;
    if (pthread_create(&b->publisher, NULL, publisher_main, b) != 0) {
        pthread_mutex_lock(&b->mu);
        b->stopping = true;
        pthread_mutex_unlock(&b->mu);
        ssize_t w = write(b->stop_pipe[1], "x", 1);
        (void)w;
        pthread_join(b->listener, NULL);
        return -1;
    }
    b->started = true;
    log_info("bus: hints between nodes go through %s", b->redis_host ? "Redis pub/sub" : "PostgreSQL NOTIFY");
    return 0;
}

void bus_publish(bus *b, const char *payload, size_t len)
{
    if (!b || !b->enabled) return;
    if (len > BUS_PAYLOAD_MAX) {
        log_warn("bus: a hint of %zu bytes is too long to publish", len);
        return;
    }
    size_t nlen = strlen(b->node);
    bus_msg *m = malloc(sizeof *m + nlen + 1 + len + 1);
    if (!m) return;
    m->next = NULL;
    m->len = nlen + 1 + len;
    memcpy(m->text, b->node, nlen);
    m->text[nlen] = '|';
    memcpy(m->text + nlen + 1, payload, len);
    m->text[m->len] = '\0';
    pthread_mutex_lock(&b->mu);
    if (b->stopping || b->queued > 100000) { /* no publisher, or it cannot keep up */
        pthread_mutex_unlock(&b->mu);
        free(m);
        return;
    }
    *b->tail = m;
    b->tail = &m->next;
    b->queued++;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void bus_free(bus *b)
{
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    b->stopping = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (b->started) {
        ssize_t w = write(b->stop_pipe[1], "x", 1);
        (void)w;
        pthread_join(b->listener, NULL);
        pthread_join(b->publisher, NULL);
    }
    if (b->stop_pipe[0] >= 0) close(b->stop_pipe[0]);
    if (b->stop_pipe[1] >= 0) close(b->stop_pipe[1]);
    free_batch(b->head);
    free(b->db_url);
    free(b->redis_host);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
}
