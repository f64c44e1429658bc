/* hot_cache.c -- the hot list as a node serves it.
 *
 * Local tier: an immutable snapshot per version (hot_int.h), the newest
 * under a mutex; each loop keeps its own reference and compares one
 * atomic version per request, so a request takes no lock unless a new
 * version arrived, and an old snapshot is freed by whoever drops the last
 * reference. It never expires: a node keeps serving what it has while
 * Redis or the database is down.
 *
 * Shared tiers, checked by two threads of the cache's own:
 *   - Redis (with --redis): hiredis's async API on an h2o event loop of
 *     this thread, so no call waits for the network. Every REDIS_POLL_MS it
 *     reads chime:hot:version; newer than ours: it reads chime:hot (the
 *     list) and installs it; older: it writes ours, through a script that
 *     sets both keys only if ours is newer, so the publisher (or any node,
 *     once Redis is back from a restart) brings Redis up to date and it
 *     never goes back a version. Keys have no TTL. A command unanswered
 *     for REDIS_TIMEOUT_MS drops the connection (hiredis 0.14 has no
 *     async timeout); reconnects are REDIS_RETRY_MS apart.
 *   - The database: every DB_POLL_MS it reads hot_lists' version, and the
 *     list when newer. It is the tier of record (the job writes it first).
 * So a node learns of a new version within about half a second, whichever
 * tier has it first. */
#define _GNU_SOURCE
#include <h2o.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "hot/hot_int.h"
#include "http/json.h"
#include "time/rfc3339.h"

#define HOT_KEY "chime:hot"
#define HOT_VERSION_KEY "chime:hot:version"
#define REDIS_POLL_MS 250
#define REDIS_TIMEOUT_MS 1000
#define REDIS_RETRY_MS 1000
#define DB_POLL_MS 500

/* Sets both keys only when ARGV[1] is newer than what Redis holds. */
#define SET_IF_NEWER                                                                 \
    "local v = tonumber(redis.call('GET', KEYS[1]) or '0') "                        \
    "if tonumber(ARGV[1]) > v then redis.call('SET', KEYS[2], ARGV[2]) "             \
    "redis.call('SET', KEYS[1], ARGV[1]) return 1 end return 0"

typedef struct loop_slot {
    hot_snap *snap;
    int64_t version;
    char pad[48]; /* a cache line each: loops never share one */
} loop_slot;

struct hot_cache {
    int loops;
    loop_slot *slots;
    pthread_mutex_t mu; /* guards cur */
    hot_snap *cur;
    atomic_llong version, computed_ms;
    char db_url[1024];
    char *redis_host;
    int redis_port;

    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
    bool stopping;
    pthread_t db_thread, redis_thread;
    bool db_started, redis_started;

    /* The Redis thread's own; publish and ok_ms are read elsewhere. */
    atomic_bool publish;
    atomic_llong redis_ok_ms; /* monotonic ms of the last good answer */
    h2o_loop_t *loop;
    redisAsyncContext *ac;
    h2o_socket_t *sock;
    bool write_armed, down_logged;
    int pending;
    int64_t pending_since, retry_at, next_poll;
};

static int64_t mono_ms(void)
{
    return base_mono_ns() / 1000000;
}

/* ---- snapshots ------------------------------------------------------------------ */

static void snap_release(hot_snap *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    free(s->body);
    free(s->ends);
    free(s);
}

static int64_t parse_time_ms(const char *text)
{
    rfc3339 t;
    if (!text || rfc3339_parse(text, strlen(text), &t) != 0 || !t.has_offset) return 0;
    return (civil_to_seconds(&t.local) - t.offset) * 1000 + t.millis;
}

/* The body laid out again as head, items and tail, each item where ends
 * says: the same JSON, cut where a shorter page ends. */
static hot_snap *snap_make(const char *text, size_t len)
{
    http_err e;
    json_t *obj = http_json_decode(text, len, &e), *items = json_object_get(obj, "items");
    json_t *v = json_object_get(obj, "version"), *at = json_object_get(obj, "computed_at");
    hot_snap *s = NULL;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || !json_is_array(items) || !(json_is_string(at) || json_is_null(at)))
        goto out;
    size_t n = json_array_size(items), cap = 64 + len + n;
    if (!(s = calloc(1, sizeof *s)) || !(s->body = malloc(cap)) || !(s->ends = calloc(n ? n : 1, sizeof *s->ends))) goto fail;
    atomic_init(&s->refs, 1);
    s->version = json_integer_value(v);
    s->computed_ms = parse_time_ms(json_string_value(at));
    char *head = json_dumps(at, JSON_ENCODE_ANY);
    if (!head) goto fail;
    int w = snprintf(s->body, cap, "{\"version\":%lld,\"computed_at\":%s,\"items\":[", (long long)s->version, head);
    free(head);
    if (w < 0 || (size_t)w >= cap) goto fail;
    s->head = s->len = (size_t)w;
    for (size_t i = 0; i < n; i++) {
        char *item = json_dumps(json_array_get(items, i), JSON_COMPACT);
        size_t il = item ? strlen(item) : 0;
        /* Re-encoding may differ from the input's spacing; grow as needed. */
        if (item && s->len + il + 4 > cap) {
            char *grown = realloc(s->body, cap = s->len + il + 64 + (n - i) * 256);
            if (grown) s->body = grown;
            else il = 0, free(item), item = NULL;
        }
        if (!item) goto fail;
        if (i) s->body[s->len++] = ',';
        memcpy(s->body + s->len, item, il);
        s->len += il;
        s->ends[i] = s->len;
        free(item);
    }
    memcpy(s->body + s->len, "]}", 3);
    s->len += 2;
    s->n = n;
    goto out;
fail:
    if (s) {
        free(s->body);
        free(s->ends);
        free(s);
    }
    s = NULL;
out:
    json_decref(obj);
    return s;
}

int hot_cache_install(hot_cache *c, const char *body, size_t len)
{
    hot_snap *s = snap_make(body, len), *old = NULL;
    if (!s) return -1;
    pthread_mutex_lock(&c->mu);
    bool newer = !c->cur || s->version > c->cur->version;
    if (newer) {
        old = c->cur;
        c->cur = s;
        atomic_store(&c->computed_ms, s->computed_ms);
        atomic_store(&c->version, s->version);
    }
    pthread_mutex_unlock(&c->mu);
    snap_release(newer ? old : s);
    if (newer) log_debug("hot: serving version %lld", (long long)hot_cache_version(c));
    return newer ? 1 : 0;
}

static hot_snap *snap_current(hot_cache *c)
{
    pthread_mutex_lock(&c->mu);
    hot_snap *s = c->cur;
    if (s) atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&c->mu);
    return s;
}

const hot_snap *hot_cache_get(hot_cache *c, int loop)
{
    loop_slot *slot = &c->slots[loop];
    if (!slot->snap || slot->version != atomic_load(&c->version)) {
        hot_snap *s = snap_current(c);
        snap_release(slot->snap);
        slot->snap = s;
        slot->version = s ? s->version : -1;
    }
    return slot->snap;
}

int64_t hot_cache_version(hot_cache *c)
{
    return atomic_load(&c->version);
}

int64_t hot_cache_computed_ms(hot_cache *c)
{
    return atomic_load(&c->computed_ms);
}

int hot_cache_redis_up(hot_cache *c)
{
    if (!c->redis_host) return -1;
    int64_t ok = atomic_load(&c->redis_ok_ms);
    return ok && mono_ms() - ok < REDIS_TIMEOUT_MS + REDIS_POLL_MS ? 1 : 0;
}

void hot_cache_publish(hot_cache *c)
{
    atomic_store(&c->publish, true);
}

/* ---- the Redis tier: hiredis async on this thread's h2o loop ------------------------ */

static void rd_on_read(h2o_socket_t *sock, const char *err)
{
    hot_cache *c = sock->data;
    if (c->ac) redisAsyncHandleRead(c->ac);
}

static void rd_on_write(h2o_socket_t *sock, const char *err)
{
    hot_cache *c = sock->data;
    c->write_armed = false;
    if (c->ac) redisAsyncHandleWrite(c->ac);
}

/* The adapter hiredis asks for (the notes: no h2o adapter ships). The
 * socket is a dup of hiredis's descriptor, made with DONT_READ so h2o
 * reports readiness and hiredis does the reading; hiredis closes its own
 * descriptor after cleanup, h2o ours. */
static void ev_add_read(void *p)
{
    hot_cache *c = p;
    if (c->sock) h2o_socket_read_start(c->sock, rd_on_read);
}

static void ev_del_read(void *p)
{
    hot_cache *c = p;
    if (c->sock) h2o_socket_read_stop(c->sock);
}

static void ev_add_write(void *p)
{
    hot_cache *c = p;
    /* notify_write fires once and must not be armed twice. */
    if (c->sock && !c->write_armed) {
        c->write_armed = true;
        h2o_socket_notify_write(c->sock, rd_on_write);
    }
}

static void ev_del_write(void *p)
{
    /* Nothing to cancel: a spurious write callback finds nothing to send. */
}

static void ev_cleanup(void *p)
{
    hot_cache *c = p;
    if (c->sock) h2o_socket_close(c->sock);
    c->sock = NULL;
    c->write_armed = false;
}

static void rd_down(hot_cache *c, const char *why)
{
    c->ac = NULL; /* hiredis frees it */
    c->pending = 0;
    c->retry_at = mono_ms() + REDIS_RETRY_MS;
    if (!c->down_logged) log_warn("hot: redis %s:%d: %s; serving what this node has", c->redis_host, c->redis_port, why);
    c->down_logged = true;
}

static void rd_on_connect(const redisAsyncContext *ac, int status)
{
    hot_cache *c = ac->ev.data;
    if (status != REDIS_OK) rd_down(c, ac->errstr[0] ? ac->errstr : "cannot connect");
}

static void rd_on_disconnect(const redisAsyncContext *ac, int status)
{
    hot_cache *c = ac->ev.data;
    rd_down(c, status == REDIS_OK ? "disconnected" : ac->errstr[0] ? ac->errstr : "connection lost");
}

static void rd_answered(hot_cache *c, redisReply *r)
{
    if (c->pending > 0) c->pending--;
    if (r && r->type != REDIS_REPLY_ERROR) {
        atomic_store(&c->redis_ok_ms, mono_ms());
        if (c->down_logged) log_info("hot: redis %s:%d answers again", c->redis_host, c->redis_port);
        c->down_logged = false;
    } else if (r) {
        log_warn("hot: redis: %s", r->str);
    }
}

static void rd_command_sent(hot_cache *c, int rc)
{
    if (rc != REDIS_OK) return;
    c->pending++;
    c->pending_since = mono_ms();
}

static void rd_on_body(redisAsyncContext *ac, void *reply, void *priv)
{
    hot_cache *c = priv;
    redisReply *r = reply;
    rd_answered(c, r);
    if (r && r->type == REDIS_REPLY_STRING && hot_cache_install(c, r->str, (size_t)r->len) < 0)
        log_warn("hot: redis holds something that is not a hot list under %s", HOT_KEY);
}

static void rd_on_set(redisAsyncContext *ac, void *reply, void *priv)
{
    rd_answered(priv, reply);
}

static void rd_on_version(redisAsyncContext *ac, void *reply, void *priv)
{
    hot_cache *c = priv;
    redisReply *r = reply;
    rd_answered(c, r);
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) || !c->ac) return;
    long long theirs = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0, ours = hot_cache_version(c);
    if (theirs > ours) {
        rd_command_sent(c, redisAsyncCommand(c->ac, rd_on_body, c, "GET %s", HOT_KEY));
    } else if (theirs < ours) {
        hot_snap *s = snap_current(c);
        /* hiredis formats the command into its buffer now: s may go after. */
        if (s) rd_command_sent(c, redisAsyncCommand(c->ac, rd_on_set, c, "EVAL %s 2 %s %s %lld %b", SET_IF_NEWER,
                                                    HOT_VERSION_KEY, HOT_KEY, (long long)s->version, s->body, s->len));
        snap_release(s);
    }
}

static void rd_connect(hot_cache *c)
{
    redisAsyncContext *ac = redisAsyncConnect(c->redis_host, c->redis_port);
    if (!ac || ac->err) {
        if (ac) redisAsyncFree(ac);
        c->retry_at = mono_ms() + REDIS_RETRY_MS;
        return;
    }
    int fd = dup(ac->c.fd);
    if (fd < 0 || !(c->sock = h2o_evloop_socket_create(c->loop, fd, H2O_SOCKET_FLAG_DONT_READ))) {
        if (fd >= 0) close(fd);
        redisAsyncFree(ac);
        c->retry_at = mono_ms() + REDIS_RETRY_MS;
        return;
    }
    c->sock->data = c;
    ac->ev.data = c;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    redisAsyncSetConnectCallback(ac, rd_on_connect);
    redisAsyncSetDisconnectCallback(ac, rd_on_disconnect);
    c->ac = ac;
    c->pending = 0;
    c->next_poll = 0;
}

static void rd_tick(hot_cache *c)
{
    int64_t now = mono_ms();
    if (!c->ac) {
        if (now >= c->retry_at) rd_connect(c);
        return;
    }
    if (c->pending && now - c->pending_since > REDIS_TIMEOUT_MS) {
        /* Stopped or unreachable Redis: its answers would come too late. */
        redisAsyncContext *ac = c->ac;
        redisAsyncFree(ac); /* callbacks see NULL; the disconnect one marks it down */
        if (c->ac) rd_down(c, "no answer within a second");
        return;
    }
    bool publish = atomic_exchange(&c->publish, false);
    if (c->pending || (!publish && now < c->next_poll)) {
        if (publish) atomic_store(&c->publish, true);
        return;
    }
    c->next_poll = now + REDIS_POLL_MS;
    rd_command_sent(c, redisAsyncCommand(c->ac, rd_on_version, c, "GET %s", HOT_VERSION_KEY));
}

static bool stopping(hot_cache *c)
{
    pthread_mutex_lock(&c->stop_mu);
    bool s = c->stopping;
    pthread_mutex_unlock(&c->stop_mu);
    return s;
}

static void *redis_main(void *p)
{
    hot_cache *c = p;
    base_thread_name("hot-redis");
    /* Made on this thread: h2o sockets take buffers from the thread's own
     * allocator (see hclient.c). */
    c->loop = h2o_evloop_create();
    while (!stopping(c)) {
        rd_tick(c);
        h2o_evloop_run(c->loop, 50);
    }
    if (c->ac) redisAsyncFree(c->ac);
    c->ac = NULL;
    for (int i = 0; i < 3; i++) h2o_evloop_run(c->loop, 0);
    h2o_evloop_destroy(c->loop);
    return NULL;
}

/* ---- the database tier ----------------------------------------------------------------- */

/* Installs the stored list when it is newer than ours. 0, or -1. */
static int db_check(hot_cache *c, store *db, bool always)
{
    int64_t v = 0;
    int rc = always ? STORE_ROW : store_query_int64(db, "SELECT version FROM hot_lists WHERE id = 1", &v);
    if (rc == STORE_DONE || (rc == STORE_ROW && !always && v <= hot_cache_version(c))) return 0;
    if (rc < 0) return -1;
    store_stmt *st = store_prepare(db, "SELECT body FROM hot_lists WHERE id = 1");
    rc = store_step(st);
    if (rc == STORE_ROW && hot_cache_install(c, store_col_text(st, 0), store_col_len(st, 0)) < 0)
        log_warn("hot: hot_lists holds something that is not a hot list");
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? 0 : -1;
}

static void *db_main(void *p)
{
    hot_cache *c = p;
    base_thread_name("hot-db");
    store *db = NULL;
    bool failing = false;
    pthread_mutex_lock(&c->stop_mu);
    while (!c->stopping) {
        pthread_mutex_unlock(&c->stop_mu);
        char err[256];
        if (!db && !(db = store_open(c->db_url, err, sizeof err)) && !failing) log_warn("hot: database: %s", err);
        int rc = db ? db_check(c, db, false) : -1;
        if (rc != 0 && !failing && db) log_warn("hot: cannot read the published list: %s", store_errmsg(db));
        failing = rc != 0;
        pthread_mutex_lock(&c->stop_mu);
        if (c->stopping) break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += DB_POLL_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&c->stop_cv, &c->stop_mu, &ts);
    }
    pthread_mutex_unlock(&c->stop_mu);
    store_close(db);
    return NULL;
}

/* ---- life ------------------------------------------------------------------------------ */

hot_cache *hot_cache_new(int loops, const char *db_url, const char *redis_host, int redis_port)
{
    hot_cache *c = calloc(1, sizeof *c);
    if (!c || !(c->slots = calloc((size_t)loops, sizeof *c->slots))) {
        free(c);
        return NULL;
    }
    c->loops = loops;
    snprintf(c->db_url, sizeof c->db_url, "%s", db_url);
    if (redis_host && !(c->redis_host = strdup(redis_host))) {
        free(c->slots);
        free(c);
        return NULL;
    }
    c->redis_port = redis_port;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->stop_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    return c;
}

static int preload_redis(hot_cache *c)
{
    struct timeval tv = {0, 500000};
    redisContext *rc = redisConnectWithTimeout(c->redis_host, c->redis_port, tv);
    int ok = -1;
    if (rc && !rc->err && redisSetTimeout(rc, tv) == REDIS_OK) {
        redisReply *r = redisCommand(rc, "GET %s", HOT_KEY);
        if (r && (r->type == REDIS_REPLY_NIL || (r->type == REDIS_REPLY_STRING && hot_cache_install(c, r->str, (size_t)r->len) >= 0)))
            ok = 0;
        if (r) freeReplyObject(r);
    }
    if (ok != 0) log_warn("hot: redis did not answer at start: %s", rc && rc->err ? rc->errstr : "no list");
    if (rc) redisFree(rc);
    return ok;
}

int hot_cache_preload(hot_cache *c)
{
    static const char empty[] = "{\"version\":0,\"computed_at\":null,\"items\":[]}";
    int from_redis = c->redis_host ? preload_redis(c) : -1;
    char err[256];
    store *db = store_open(c->db_url, err, sizeof err);
    int from_db = db ? db_check(c, db, true) : -1;
    if (from_db != 0) log_warn("hot: the database did not answer at start: %s", db ? store_errmsg(db) : err);
    store_close(db);
    hot_cache_install(c, empty, sizeof empty - 1); /* when nothing was ever published */
    log_info("hot: serving version %lld from the start", (long long)hot_cache_version(c));
    return from_redis == 0 || from_db == 0 ? 0 : -1;
}

int hot_cache_start(hot_cache *c)
{
    if (pthread_create(&c->db_thread, NULL, db_main, c) != 0) return -1;
    c->db_started = true;
    if (c->redis_host) {
        if (pthread_create(&c->redis_thread, NULL, redis_main, c) != 0) return -1;
        c->redis_started = true;
    }
    return 0;
}

void hot_cache_stop(hot_cache *c)
{
    pthread_mutex_lock(&c->stop_mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->stop_cv);
    pthread_mutex_unlock(&c->stop_mu);
    if (c->db_started) pthread_join(c->db_thread, NULL);
    if (c->redis_started) pthread_join(c->redis_thread, NULL);
    c->db_started = c->redis_started = false;
}

void hot_cache_free(hot_cache *c)
{
    if (!c) return;
    hot_cache_stop(c);
    for (int i = 0; i < c->loops; i++) snap_release(c->slots[i].snap);
    snap_release(c->cur);
    free(c->slots);
    free(c->redis_host);
    pthread_cond_destroy(&c->stop_cv);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->stop_mu);
    free(c);
}
