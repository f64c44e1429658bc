/* notify_http.c -- the in-app inbox (GET /v1/notifications?after=CURSOR,
 * read marks), GET /v1/admin/deliveries?state=... for admins and
 * GET /v1/me/deliveries?state=... for a user's own outbox rows.
 *
 * A client keeps the last cursor ("next") it saw and asks for what came
 * after it, never by time. A cursor must never be handed out while a row
 * that sorts before it can still appear. On SQLite one writer at a time
 * gives seq in commit order, and the cursor holds the seq. On
 * PostgreSQL delivering transactions on several connections commit out of
 * seq order, so the inbox is read in (xid, seq) order -- the writing
 * transaction's id, then seq within it -- and only rows of transactions
 * older than every write transaction still running (xid below the
 * snapshot's xmin) are shown: those are all final, so nothing can later
 * appear before them. The cursor holds XID and SEQ there (rows written
 * before migration 8 have xid 0, so a cursor of a seq alone still reads
 * on); either way it is concealed (format_cursor). The
 * price is that a row waits for older write transactions to end: an idle
 * open transaction holding an xid delays every inbox in the cluster (set
 * idle_in_transaction_session_timeout). */
#include "notify/notify_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "time/rfc3339.h"
#include "http/json.h"
#include "notify/notify.h"

#define NOTIFY_PAGE_DEFAULT 100
#define NOTIFY_PAGE_MAX 1000

static json_t *time_json(int64_t ms)
{
    char buf[32];
    rfc3339_format_ms(ms, buf, sizeof buf);
    return json_string(buf);
}

/* A non-negative decimal of at most 18 digits, or -1. */
static int64_t parse_seq(const char *s, size_t len)
{
    if (len == 0 || len > 18) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* ?name=N within [1, max], default def; false after answering 400. */
static bool query_limit(http_req *r, int64_t def, int64_t max, int64_t *out)
{
    char buf[32];
    int q = http_query(r, "limit", buf, sizeof buf);
    *out = def;
    if (q == 0) return true;
    int64_t v = q > 0 ? parse_seq(buf, strlen(buf)) : -1;
    if (v < 1 || v > max) {
        http_send_error(r, 400, "invalid_value", "limit", "limit must be an integer from 1 to %lld", (long long)max);
        return false;
    }
    *out = v;
    return true;
}

typedef struct inbox_cursor {
    int64_t xid, seq;
} inbox_cursor;

/* A cursor is opaque: the seq (and on PostgreSQL the xid), each plus one
 * under the inbox's id key (base_id_conceal works on [1, 2^63)), as 16
 * hex digits: "ID" or "ID-ID". A plain seq would count the server's
 * deliveries between two reads, as the item ids did before they were
 * concealed. Cursors of before -- decimal "SEQ" or "XID-SEQ", each part
 * under 16 digits -- still read. */
static int64_t cursor_part(const unsigned char key[BASE_ID_KEY_LEN], const char *s, size_t len)
{
    int64_t id;
    if (len < 16) return parse_seq(s, len);
    if (base_id_parse(s, len, &id) != 0) return -1;
    int64_t v = base_id_reveal(key, id);
    return v > 0 ? v - 1 : -1;
}

/* false if s is no cursor. */
static bool parse_cursor(const unsigned char key[BASE_ID_KEY_LEN], const char *s, size_t len, inbox_cursor *c)
{
    const char *dash = memchr(s, '-', len);
    c->xid = dash ? cursor_part(key, s, (size_t)(dash - s)) : 0;
    c->seq = dash ? cursor_part(key, dash + 1, len - (size_t)(dash - s) - 1) : cursor_part(key, s, len);
    return c->xid >= 0 && c->seq >= 0;
}

static void format_cursor(const unsigned char key[BASE_ID_KEY_LEN], const inbox_cursor *c, char buf[34])
{
    char seq[17];
    base_id_format(base_id_conceal(key, c->seq + 1), seq);
    if (c->xid) {
        base_id_format(base_id_conceal(key, c->xid + 1), buf);
        buf[16] = '-';
        memcpy(buf + 17, seq, 17);
    } else {
        memcpy(buf, seq, 17);
    }
}

static bool query_cursor(http_req *r, const unsigned char key[BASE_ID_KEY_LEN], const char *name,
                         inbox_cursor *out)
{
    char buf[48];
    int q = http_query(r, name, buf, sizeof buf);
    *out = (inbox_cursor){0, 0};
    if (q == 0 || (q > 0 && buf[0] == '\0')) return true;
    if (q < 0 || !parse_cursor(key, buf, strlen(buf), out)) {
        http_send_error(r, 400, "invalid_value", name, "%s must be a cursor returned as \"next\"", name);
        return false;
    }
    return true;
}

static void bind_xid(store_stmt *st, int at, int64_t xid)
{
    char text[24];
    snprintf(text, sizeof text, "%lld", (long long)xid);
    store_bind_str(st, at, text);
}

/* The id key, read once (every node reads the same row). */
static bool inbox_key(notify_http *n, store *db, unsigned char key[BASE_ID_KEY_LEN])
{
    pthread_mutex_lock(&n->key_mu);
    if (!n->have_key) n->have_key = notify_inbox_key(db, n->key) == STORE_OK;
    memcpy(key, n->key, BASE_ID_KEY_LEN);
    bool ok = n->have_key;
    pthread_mutex_unlock(&n->key_mu);
    return ok;
}

/* An item's id in a path: 16 hex digits (a concealed seq); or, from
 * clients of before the ids were concealed, the seq itself in decimal
 * (accepted for clients that kept them). -1 if neither. */
static int64_t item_seq(const unsigned char key[BASE_ID_KEY_LEN], const char *s, size_t len)
{
    int64_t id;
    if (base_id_parse(s, len, &id) == 0) return base_id_reveal(key, id);
    return len < 16 ? parse_seq(s, len) : -1;
}

#define INBOX_COLS                                                                                         \
    "user_id, seq, delivery_id, event_id, summary, original_start_ms, due_ms, fired_ms, late, method, read"

/* The page after c: $1 user, $2 seq, $3 limit, and on PostgreSQL $4 the
 * xid (as text: xid8 takes no bigint); the twelfth column is the row's
 * xid. */
static store_stmt *inbox_page(store *db, int64_t user_id, const inbox_cursor *c, int64_t limit)
{
    bool pg = store_backend_of(db) == STORE_PG;
    store_stmt *st = store_prepare(
        db, pg ? "SELECT " INBOX_COLS ", CAST(CAST(xid AS text) AS BIGINT) FROM notifications WHERE user_id = $1 "
                 "AND (xid, seq) > (CAST($4 AS xid8), $2) AND xid < pg_snapshot_xmin(pg_current_snapshot()) "
                 "ORDER BY xid, seq LIMIT $3"
               : "SELECT " INBOX_COLS ", 0 FROM notifications WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3");
    store_bind_int64(st, 1, user_id);
    store_bind_int64(st, 2, c->seq);
    store_bind_int64(st, 3, limit);
    if (pg) bind_xid(st, 4, c->xid);
    return st;
}

static void handle_inbox(http_req *r, void *arg)
{
    notify_http *n = arg;
    store *db = store_pool_at(n->dbs, r->loop);
    inbox_cursor last;
    int64_t limit;
    unsigned char key[BASE_ID_KEY_LEN];
    if (!inbox_key(n, db, key)) return http_send_db_error(r, "the inbox id key cannot be read");
    if (!query_cursor(r, key, "after", &last) || !query_limit(r, NOTIFY_PAGE_DEFAULT, NOTIFY_PAGE_MAX, &limit)) return;
    store_stmt *st = inbox_page(db, r->user_id, &last, limit);
    json_t *items = json_array();
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        notify_inbox_item it;
        last = (inbox_cursor){.xid = store_col_int64(st, 11), .seq = store_col_int64(st, 1)};
        if (notify_inbox_item_read(st, 0, &it)) {
            it.id = base_id_conceal(key, it.seq);
            json_array_append_new(items, notify_inbox_item_json(&it));
        }
        notify_inbox_item_free(&it);
    }
    store_reset(st);
    if (rc != STORE_DONE) {
        json_decref(items);
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    char next[34];
    format_cursor(key, &last, next);
    http_send_json(r, 200, json_pack("{s:o,s:s}", "items", items, "next", next));
}

static void handle_read_one(http_req *r, void *arg)
{
    notify_http *n = arg;
    store *db = store_pool_at(n->dbs, r->loop);
    unsigned char key[BASE_ID_KEY_LEN];
    if (!inbox_key(n, db, key)) return http_send_db_error(r, "the inbox id key cannot be read");
    int64_t seq = item_seq(key, r->params[0].ptr, r->params[0].len);
    if (seq <= 0) {
        http_send_error(r, 404, "not_found", NULL, "no such notification");
        return;
    }
    store_stmt *st = store_prepare(db, "UPDATE notifications SET read = 1 WHERE seq = $1 AND user_id = $2");
    store_bind_int64(st, 1, seq);
    store_bind_int64(st, 2, r->user_id);
    int rc = store_step(st);
    int64_t changed = store_changes(st);
    store_reset(st);
    if (rc != STORE_DONE) http_send_db_error(r, store_errmsg(db));
    else if (!changed) http_send_error(r, 404, "not_found", NULL, "no such notification");
    else http_send_empty(r, 204);
}

/* {"up_to": CURSOR}: everything of the user's up to it is read. */
static void handle_read_upto(http_req *r, void *arg)
{
    notify_http *n = arg;
    store *db = store_pool_at(n->dbs, r->loop);
    http_err e;
    unsigned char key[BASE_ID_KEY_LEN];
    if (!inbox_key(n, db, key)) return http_send_db_error(r, "the inbox id key cannot be read");
    json_t *body = http_json_body(r, &e);
    if (!body) {
        http_send_err(r, &e);
        return;
    }
    json_t *v = json_object_get(body, "up_to");
    inbox_cursor upto;
    bool ok = json_is_string(v) && parse_cursor(key, json_string_value(v), json_string_length(v), &upto);
    json_decref(body);
    if (!ok) {
        http_send_error(r, 400, "invalid_value", "up_to", "up_to must be a cursor returned as \"next\"");
        return;
    }
    /* Everything at or before a cursor was final when it was handed out. */
    bool pg = store_backend_of(db) == STORE_PG;
    store_stmt *st = store_prepare(db, pg ? "UPDATE notifications SET read = 1 WHERE user_id = $1 AND "
                                               "(xid, seq) <= (CAST($3 AS xid8), $2) AND read = 0"
                                             : "UPDATE notifications SET read = 1 WHERE user_id = $1 AND "
                                               "seq <= $2 AND read = 0");
    store_bind_int64(st, 1, r->user_id);
    store_bind_int64(st, 2, upto.seq);
    if (pg) bind_xid(st, 3, upto.xid);
    int rc = store_step(st);
    int64_t changed = store_changes(st);
    store_reset(st);
    if (rc != STORE_DONE) http_send_db_error(r, store_errmsg(db));
    else http_send_json(r, 200, json_pack("{s:I}", "marked", (json_int_t)changed));
}

/* ?state=: one of the outbox states (ended: only the end states other
 * than done, the ones with an index); false after answering 400. */
static bool query_state(http_req *r, bool ended, char state[16])
{
    static const char *const states[] = {"dead", "missed", "cancelled", "dropped_quota", "pending", "done"};
    size_t n = ended ? 4 : 6;
    int q = http_query(r, "state", state, 16);
    for (size_t i = 0; q > 0 && i < n; i++)
        if (strcmp(state, states[i]) == 0) return true;
    http_send_error(r, 400, "invalid_value", "state", "state must be dead, missed, cancelled, dropped_quota%s",
                    ended ? "" : ", pending or done");
    return false;
}

/* The end states other than done have an index, by state and by user (a
 * partial one: its predicate has to appear in the query, word for word). */
#define ENDED "state IN ('dead', 'missed', 'cancelled', 'dropped_quota')"
#define DELIVERY_COLS                                                                                      \
    "SELECT id, event_id, user_id, channel, endpoint_id, occurrence_ms, due_ms, fired_ms, late, attempts, "  \
    "next_attempt_ms, last_error, updated_ms FROM deliveries WHERE state = $1 AND "

/* One outbox row as the listings show it; the user's own omit user_id. */
static json_t *delivery_json(store_stmt *st, const char *state, bool with_user)
{
    char ev[17], uid[17], ep[17];
    base_id_format(store_col_int64(st, 1), ev);
    base_id_format(store_col_int64(st, 2), uid);
    base_id_format(store_col_int64(st, 4), ep);
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:b,s:I,s:o}", "delivery_id", store_col_text(st, 0), "event_id",
                          ev, "channel", store_col_text(st, 3), "state", state, "original_start",
                          time_json(store_col_int64(st, 5)), "due", time_json(store_col_int64(st, 6)), "late",
                          store_col_int64(st, 8) != 0, "attempts", (json_int_t)store_col_int64(st, 9),
                          "next_attempt", time_json(store_col_int64(st, 10)));
    if (!o) return NULL;
    if (with_user) json_object_set_new(o, "user_id", json_string(uid));
    json_object_set_new(o, "updated", time_json(store_col_int64(st, 12)));
    json_object_set_new(o, "fired", store_col_is_null(st, 7) ? json_null() : time_json(store_col_int64(st, 7)));
    json_object_set_new(o, "last_error", store_col_is_null(st, 11) ? json_null() : json_string(store_col_text(st, 11)));
    if (store_col_int64(st, 4)) json_object_set_new(o, "endpoint_id", json_string(ep));
    return o;
}

/* Answers with the rows st selects (bound; reset here). */
static void send_deliveries(http_req *r, store *db, store_stmt *st, const char *state, bool with_user)
{
    json_t *items = json_array();
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        json_t *o = delivery_json(st, state, with_user);
        if (o) json_array_append_new(items, o);
    }
    store_reset(st);
    if (rc != STORE_DONE) {
        json_decref(items);
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

/* Outbox rows in a state, newest first: the admin sees every user's
 * (GET /v1/admin/deliveries); a user sees their own in an end state
 * (GET /v1/me/deliveries) -- how they learn that reminders were dropped
 * for the delivery budget, dead-lettered or missed. */
static void list_deliveries(http_req *r, notify_http *n, bool mine)
{
    store *db = store_pool_at(n->dbs, r->loop);
    char state[16];
    int64_t limit;
    if (!query_state(r, mine, state) || !query_limit(r, NOTIFY_PAGE_DEFAULT, NOTIFY_PAGE_MAX, &limit)) return;
    bool ended = strcmp(state, "pending") != 0 && strcmp(state, "done") != 0;
    store_stmt *st = store_prepare(
        db, mine    ? DELIVERY_COLS "user_id = $3 AND " ENDED " ORDER BY updated_ms DESC, id LIMIT $2"
            : ended ? DELIVERY_COLS ENDED " ORDER BY updated_ms DESC, id LIMIT $2"
                    : DELIVERY_COLS "true ORDER BY updated_ms DESC, id LIMIT $2");
    store_bind_str(st, 1, state);
    store_bind_int64(st, 2, limit);
    if (mine) store_bind_int64(st, 3, r->user_id);
    send_deliveries(r, db, st, state, !mine);
}

static void handle_deliveries(http_req *r, void *arg)
{
    list_deliveries(r, arg, false);
}

static void handle_my_deliveries(http_req *r, void *arg)
{
    list_deliveries(r, arg, true);
}

void notify_http_register(notify_http *n, http_server *s)
{
    pthread_mutex_init(&n->key_mu, NULL);
    http_route(s, HTTP_GET, "/v1/notifications", handle_inbox, n, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_POST, "/v1/notifications/read", handle_read_upto, n, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_POST, "/v1/notifications/{id}/read", handle_read_one, n, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_GET, "/v1/admin/deliveries", handle_deliveries, n, HTTP_ROUTE_ADMIN);
    http_route(s, HTTP_GET, "/v1/me/deliveries", handle_my_deliveries, n, HTTP_ROUTE_AUTH);
}
