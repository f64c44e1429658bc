/* chat_gateway.c -- the WebSocket gateway: tickets, the upgrade, the
 * frames (hello, sync, pong), presence and the cluster-wide counts.
 *
 * Push-count-then-pull: a frame says only "news up to seq N, K unread";
 * the device pulls the content with GET /v1/sync. A sync frame is made
 * when the hub's coalesced signal runs (ws.h), from the numbers the
 * writer that moved them signalled (this node's or, through the bus,
 * another's), or from the database when they are not known; a burst of
 * changes gives few frames and the hub never sends a stale one last.
 * Presence: the first connection of a user on a node writes a presence
 * row (node, user), its last one deletes it and records last_seen; a
 * node's rows count only while its heartbeat (nodes) is fresh, so a dead
 * node's users stop counting within the lease TTL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "chat/chat_body.h"
#include "chat/chat_int.h"
#include "time/rfc3339.h"

#define TICKET_BYTES 32
#define TICKET_TTL_MS 30000
#define TICK_MS 1000 /* the presence ticker: this node's connection count */

/* ---- tickets -------------------------------------------------------------- */

static void handle_ticket(http_req *r, void *arg)
{
    chat_service *c = arg;
    store *db = chat_db(c, r->loop);
    unsigned char raw[TICKET_BYTES];
    char ticket[2 * TICKET_BYTES + 1], hash[65], expires[32];
    base_random(raw, sizeof raw);
    base_hex(raw, sizeof raw, ticket);
    base_sha256_hex(ticket, strlen(ticket), hash);
    int64_t until = base_now_ms() + TICKET_TTL_MS;
    store_stmt *st = store_prepare(db, "INSERT INTO ws_tickets (hash, user_id, expires_ms) VALUES ($1, $2, $3)");
    store_bind_str(st, 1, hash);
    store_bind_int64(st, 2, r->user_id);
    store_bind_int64(st, 3, until);
    int rc = store_step(st);
    store_reset(st);
    if (rc != STORE_DONE) return http_send_db_error(r, store_errmsg(db));
    rfc3339_format_ms(until, expires, sizeof expires);
    http_send_json(r, 201, json_pack("{s:s,s:s}", "ticket", ticket, "expires", expires));
}

/* Spends a ticket: its user, or 0 when it is unknown, spent or expired. */
static int ticket_use(store *db, const char *ticket, int64_t *user)
{
    char hash[65];
    base_sha256_hex(ticket, strlen(ticket), hash);
    store_stmt *st = store_prepare(db, "DELETE FROM ws_tickets WHERE hash = $1 RETURNING user_id, expires_ms");
    store_bind_str(st, 1, hash);
    int rc = store_step(st);
    *user = rc == STORE_ROW && store_col_int64(st, 1) > base_now_ms() ? store_col_int64(st, 0) : 0;
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : rc;
}

/* ---- the upgrade ------------------------------------------------------------ */

/* The first frame. "connection" names the connection, for the device's
 * sends to say (Chime-Connection) so that it is spared the frames that
 * tell it only of its own messages. */
static char *hello_of(store *db, int64_t user, uint64_t token, int64_t *seq)
{
    int64_t unread = 0;
    if (chat_seq_unread(db, &user, 1, seq, &unread) != CHAT_OK) return NULL;
    char id[17], conn[17], *text = malloc(160);
    base_id_format(user, id);
    base_id_format((int64_t)token, conn);
    if (text)
        snprintf(text, 160,
                 "{\"type\":\"hello\",\"user_id\":\"%s\",\"seq\":%lld,\"unread\":%lld,\"connection\":\"%s\"}", id,
                 (long long)*seq, (long long)unread, conn);
    return text;
}

/* Who connects: a ticket (?ticket=, browsers) or a bearer token. The 401
 * comes before any upgrade. */
static bool ws_user(chat_service *c, http_req *r, int64_t *user)
{
    char ticket[2 * TICKET_BYTES + 8];
    int q = http_query(r, "ticket", ticket, sizeof ticket);
    if (q != 0) {
        store *db = chat_db(c, r->loop);
        if (q < 0 || ticket_use(db, ticket, user) != STORE_OK) {
            if (q < 0) *user = 0;
            else return http_send_db_error(r, store_errmsg(db)), false;
        }
        if (*user) return true;
        http_send_error(r, 401, "invalid_ticket", "ticket", "the ticket is unknown, used or expired");
        return false;
    }
    http_err e;
    if (http_authenticate(r, &e) == 0) {
        *user = r->user_id;
        return true;
    }
    if (e.status == 401) http_add_header(r, "WWW-Authenticate", "Bearer");
    http_send_err(r, &e);
    return false;
}

static void handle_ws(http_req *r, void *arg)
{
    chat_service *c = arg;
    int64_t user;
    if (!ws_user(c, r, &user)) return;
    uint64_t token = ws_hub_token(c->hub, r->loop);
    int64_t seq = 0;
    char *hello = hello_of(chat_db(c, r->loop), user, token, &seq);
    if (!hello) return http_send_db_error(r, store_errmsg(chat_db(c, r->loop)));
    if (ws_hub_upgrade(c->hub, r, user, token, hello, seq) != 0)
        http_send_error(r, 400, "not_websocket", NULL, "this is a WebSocket endpoint: send an upgrade request");
    free(hello);
}

/* ---- the hub's events (on loop threads) ------------------------------------ */

static void on_online(void *arg, int64_t user)
{
    chat_presence(arg, user, true);
}

static void on_offline(void *arg, int64_t user)
{
    chat_presence(arg, user, false);
}

/* The news of users connected to this loop: the numbers signalled, or
 * the database's when they are not known (seq 0). */
static void on_signal(void *arg, int loop, const ws_news *news, size_t n)
{
    chat_service *c = arg;
    for (size_t i = 0; i < n; i++) {
        int64_t seq = news[i].seq, unread = news[i].unread;
        if (seq <= 0 && chat_seq_unread(chat_db(c, loop), &news[i].user_id, 1, &seq, &unread) != CHAT_OK) {
            log_warn("chat: a sync frame not sent: %s", store_errmsg(chat_db(c, loop)));
            continue;
        }
        char frame[96];
        int len = snprintf(frame, sizeof frame, "{\"type\":\"sync\",\"seq\":%lld,\"unread\":%lld}",
                           (long long)seq, (long long)unread);
        ws_hub_send_local(c->hub, loop, news[i].user_id, seq, frame, (size_t)len);
    }
}

/* Frames from devices: {"type":"ping"} only (a keep-alive for clients
 * with no WebSocket ping API); anything else closes the connection. */
static int on_text(void *arg, int64_t user, const char *text, size_t len, char **reply)
{
    return chat_ws_frame(text, len, reply);
}

ws_hub_events chat_ws_events(chat_service *c)
{
    return (ws_hub_events){.arg = c, .on_online = on_online, .on_offline = on_offline, .on_signal = on_signal,
                           .on_text = on_text};
}

void chat_attach(chat_service *c, ws_hub *hub, push *p)
{
    c->hub = hub;
    c->push = p;
}

/* ---- presence --------------------------------------------------------------- */

static void presence_done(chat_op *op)
{
    chat_op_free(op);
}

static void submit_quiet(chat_service *c, chat_op *op)
{
    op->finish = presence_done;
    snprintf(op->node, sizeof op->node, "%s", c->o.node_id);
    chat_writer *w = atomic_load(&c->writer);
    if (!w || chat_writer_submit(w, op) != 0) chat_op_free(op);
}

void chat_presence(chat_service *c, int64_t user, bool online)
{
    chat_op *op = calloc(1, sizeof *op);
    if (!op) return;
    op->kind = CHAT_OP_PRESENCE;
    op->me = user;
    op->online = online;
    submit_quiet(c, op);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

bool chat_online_anywhere(chat_service *c, int64_t user)
{
    if (ws_hub_is_online(c->hub, user)) return true;
    pthread_mutex_lock(&c->mu);
    bool on = c->nremote && bsearch(&user, c->remote, c->nremote, sizeof user, cmp_i64);
    pthread_mutex_unlock(&c->mu);
    return on;
}

/* Users online on other live nodes, sorted (NULL, 0: none, or no answer). */
static void read_remote(chat_service *c, store *db, int64_t **out, size_t *n)
{
    int64_t now;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    if (!db || store_now_ms(db, &now) < 0) return;
    store_stmt *st = store_prepare(db, "SELECT DISTINCT user_id FROM presence WHERE node_id <> $1 AND node_id IN ("
                                       "SELECT id FROM nodes WHERE heartbeat_ms > $2) ORDER BY user_id");
    store_bind_str(st, 1, c->o.node_id);
    store_bind_int64(st, 2, now - c->o.lease_ttl_ms);
    while (store_step(st) == STORE_ROW) {
        if (*n == cap) {
            int64_t *grown = base_grow(*out, sizeof *grown, &cap);
            if (!grown) break;
            *out = grown;
        }
        (*out)[(*n)++] = store_col_int64(st, 0);
    }
    store_reset(st);
}

/* Once a second: the node's connection count, written when it changes,
 * so /v1/admin/stats counts every node's; and who is online elsewhere
 * (chat_online_anywhere). */
static void *ticker_main(void *p)
{
    chat_service *c = p;
    base_thread_name("chat-presence");
    int64_t written = -1;
    char err[256];
    store *db = store_open(c->o.db_url, err, sizeof err);
    if (!db) log_warn("chat: the presence ticker cannot read the database: %s", err);
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        pthread_mutex_unlock(&c->mu);
        int64_t *remote;
        size_t nremote;
        read_remote(c, db, &remote, &nremote);
        pthread_mutex_lock(&c->mu);
        free(c->remote);
        c->remote = remote;
        c->nremote = nremote;
        int64_t conns, users;
        ws_hub_counts(c->hub, &conns, &users);
        if (conns != written) {
            chat_op *op = calloc(1, sizeof *op);
            if (op) {
                op->kind = CHAT_OP_CONNS;
                op->up_to = conns;
                submit_quiet(c, op);
                written = conns;
            }
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        /* A stop that came while the lock was down has already woken us. */
        if (!c->stopping) pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    store_close(db);
    return NULL;
}

int chat_gateway_start(chat_service *c)
{
    if (pthread_create(&c->ticker, NULL, ticker_main, c) != 0) return -1;
    c->ticker_started = true;
    return 0;
}

void chat_gateway_stop(chat_service *c)
{
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (c->ticker_started) pthread_join(c->ticker, NULL);
    c->ticker_started = false;
}

/* ---- presence and counts over HTTP ------------------------------------------ */

/* Nodes whose heartbeat is fresh (after $N), by the database's clock. */
#define LIVE_NODES(N) "SELECT id FROM nodes WHERE heartbeat_ms > $" #N

static int live_since(chat_service *c, store *db, int64_t *since)
{
    int64_t now;
    if (store_now_ms(db, &now) < 0) return STORE_ERROR;
    *since = now - c->o.lease_ttl_ms;
    return STORE_OK;
}

static void handle_presence(http_req *r, void *arg)
{
    chat_service *c = arg;
    store *db = chat_db(c, r->loop);
    int64_t user, since;
    bool shared = true;
    if (base_id_parse(r->params[0].ptr, r->params[0].len, &user) != 0)
        return http_send_error(r, 404, "not_found", NULL, "no such user");
    if (user != r->user_id && chat_share(db, r->user_id, user, &shared) != CHAT_OK)
        return http_send_db_error(r, store_errmsg(db));
    if (!shared) return http_send_error(r, 404, "not_found", NULL, "no such user");
    if (live_since(c, db, &since) != STORE_OK) return http_send_db_error(r, store_errmsg(db));
    store_stmt *st = store_prepare(db, "SELECT EXISTS (SELECT 1 FROM presence WHERE user_id = $1 AND node_id IN ("
                                       LIVE_NODES(2) ")), (SELECT seen_ms FROM last_seen WHERE user_id = $1)");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, since);
    int rc = store_step(st);
    bool online = rc == STORE_ROW && store_col_int64(st, 0);
    bool seen = rc == STORE_ROW && !store_col_is_null(st, 1);
    int64_t seen_ms = seen ? store_col_int64(st, 1) : 0;
    store_reset(st);
    if (rc != STORE_ROW) return http_send_db_error(r, store_errmsg(db));
    char buf[32];
    rfc3339_format_ms(online ? base_now_ms() : seen_ms, buf, sizeof buf);
    http_send_json(r, 200, json_pack("{s:b,s:o}", "online", online, "last_seen",
                                     online || seen ? json_string(buf) : json_null()));
}

static void handle_stats(http_req *r, void *arg)
{
    chat_service *c = arg;
    store *db = chat_db(c, r->loop);
    int64_t since;
    if (live_since(c, db, &since) != STORE_OK) return http_send_db_error(r, store_errmsg(db));
    store_stmt *st = store_prepare(
        db, "SELECT (SELECT count(*) FROM users), (SELECT count(DISTINCT user_id) FROM presence WHERE node_id IN ("
            LIVE_NODES(1) ")), (SELECT COALESCE(sum(connections), 0) FROM ws_nodes WHERE node_id IN (" LIVE_NODES(1) "))");
    store_bind_int64(st, 1, since);
    int rc = store_step(st);
    int64_t users = rc == STORE_ROW ? store_col_int64(st, 0) : 0, online = rc == STORE_ROW ? store_col_int64(st, 1) : 0,
            conns = rc == STORE_ROW ? store_col_int64(st, 2) : 0;
    store_reset(st);
    if (rc != STORE_ROW) return http_send_db_error(r, store_errmsg(db));
    http_send_json(r, 200, json_pack("{s:I,s:I,s:I}", "registered_users", (json_int_t)users, "online_users",
                                     (json_int_t)online, "connections", (json_int_t)conns));
}

/* /metrics: the same counts, as this node sees the cluster. */
static double gauge_query(chat_service *c, int loop, const char *sql)
{
    store *db = chat_db(c, loop);
    int64_t since, n = -1;
    if (live_since(c, db, &since) != STORE_OK) return -1;
    store_stmt *st = store_prepare(db, sql);
    store_bind_int64(st, 1, since);
    if (store_step(st) == STORE_ROW) n = store_col_int64(st, 0);
    store_reset(st);
    return (double)n;
}

static double gauge_online(void *arg, int loop)
{
    return gauge_query(arg, loop, "SELECT count(DISTINCT user_id) FROM presence WHERE node_id IN (" LIVE_NODES(1) ")");
}

static double gauge_connections(void *arg, int loop)
{
    return gauge_query(arg, loop, "SELECT COALESCE(sum(connections), 0) FROM ws_nodes WHERE node_id IN (" LIVE_NODES(1) ")");
}

void chat_gateway_register(chat_service *c, http_server *s)
{
    http_route(s, HTTP_POST, "/v1/ws/tickets", handle_ticket, c, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_GET, "/v1/ws", handle_ws, c, HTTP_ROUTE_SECRET);
    http_route(s, HTTP_GET, "/v1/users/{id}/presence", handle_presence, c, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_GET, "/v1/admin/stats", handle_stats, c, HTTP_ROUTE_ADMIN);
    http_gauge(s, "chime_online_users", "Users with a WebSocket open on a live node (cluster-wide).", gauge_online, c);
    http_gauge(s, "chime_ws_connections", "WebSocket connections open on live nodes (cluster-wide).",
               gauge_connections, c);
}
