/* notify_http.c -- the in-app inbox (GET /v1/notifications?after=CURSOR,
 * read marks) and GET /v1/admin/deliveries?state=... for admins.
 *
 * Cursors are the inbox's sequence numbers as decimal text: a client keeps
 * the last "next" it saw and asks for what came after it, never by time. */
#include "notify/notify_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app.h"
#include "base/base.h"
#include "http/json.h"

#define NOTIFY_PAGE_DEFAULT 100
#define NOTIFY_PAGE_MAX 1000

static void db_error(http_req *r, store *db)
{
    log_error("request %s: database: %s", r->request_id, store_errmsg(db));
    http_send_error(r, 503, "unavailable", NULL, "the database did not answer; try again");
}

static json_t *time_json(int64_t ms)
{
    char buf[32];
    base_format_rfc3339_ms(ms, buf, sizeof buf);
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
        http_send_error(r, 400, "invalid", "limit", "limit must be an integer from 1 to %lld", (long long)max);
        return false;
    }
    *out = v;
    return true;
}

static bool query_cursor(http_req *r, const char *name, int64_t *out)
{
    char buf[32];
    int q = http_query(r, name, buf, sizeof buf);
    *out = 0;
    if (q == 0 || (q > 0 && buf[0] == '\0')) return true;
    int64_t v = q > 0 ? parse_seq(buf, strlen(buf)) : -1;
    if (v < 0) {
        http_send_error(r, 400, "invalid", name, "%s must be a cursor returned as \"next\"", name);
        return false;
    }
    *out = v;
    return true;
}

static void handle_inbox(http_req *r)
{
    app_thread *t = r->thread;
    int64_t after, limit;
    if (!query_cursor(r, "after", &after) || !query_limit(r, NOTIFY_PAGE_DEFAULT, NOTIFY_PAGE_MAX, &limit)) return;
    store_stmt *st = store_prepare(
        t->db, "SELECT seq, delivery_id, event_id, summary, original_start_ms, due_ms, fired_ms, late, method, read "
               "FROM notifications WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3");
    store_bind_int64(st, 1, r->user_id);
    store_bind_int64(st, 2, after);
    store_bind_int64(st, 3, limit);
    json_t *items = json_array();
    int64_t last = after;
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        char id[24], ev[17];
        last = store_col_int64(st, 0);
        snprintf(id, sizeof id, "%lld", (long long)last);
        base_id_format(store_col_int64(st, 2), ev);
        json_array_append_new(
            items, json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:b,s:s,s:b}", "id", id, "delivery_id",
                             store_col_text(st, 1), "event_id", ev, "summary", store_col_text(st, 3), "original_start",
                             time_json(store_col_int64(st, 4)), "due", time_json(store_col_int64(st, 5)), "fired",
                             time_json(store_col_int64(st, 6)), "late", store_col_int64(st, 7) != 0, "method",
                             store_col_text(st, 8), "read", store_col_int64(st, 9) != 0));
    }
    store_reset(st);
    if (rc != STORE_DONE) {
        json_decref(items);
        db_error(r, t->db);
        return;
    }
    char next[24];
    snprintf(next, sizeof next, "%lld", (long long)last);
    http_send_json(r, 200, json_pack("{s:o,s:s}", "items", items, "next", next));
}

static void handle_read_one(http_req *r)
{
    app_thread *t = r->thread;
    int64_t seq = parse_seq(r->params[0].ptr, r->params[0].len);
    if (seq < 0) {
        http_send_error(r, 404, "not_found", NULL, "no such notification");
        return;
    }
    store_stmt *st = store_prepare(t->db, "UPDATE notifications SET read = 1 WHERE seq = $1 AND user_id = $2");
    store_bind_int64(st, 1, seq);
    store_bind_int64(st, 2, r->user_id);
    int rc = store_step(st);
    int64_t changed = store_changes(st);
    store_reset(st);
    if (rc != STORE_DONE) db_error(r, t->db);
    else if (!changed) http_send_error(r, 404, "not_found", NULL, "no such notification");
    else http_send_empty(r, 204);
}

/* {"up_to": CURSOR}: everything of the user's up to it is read. */
static void handle_read_upto(http_req *r)
{
    app_thread *t = r->thread;
    http_err e;
    json_t *body = http_json_body(r, &e);
    if (!body) {
        http_send_err(r, &e);
        return;
    }
    json_t *v = json_object_get(body, "up_to");
    int64_t upto = json_is_string(v) ? parse_seq(json_string_value(v), json_string_length(v)) : -1;
    json_decref(body);
    if (upto < 0) {
        http_send_error(r, 400, "invalid", "up_to", "up_to must be a cursor returned as \"next\"");
        return;
    }
    store_stmt *st = store_prepare(t->db, "UPDATE notifications SET read = 1 WHERE user_id = $1 AND seq <= $2 "
                                          "AND read = 0");
    store_bind_int64(st, 1, r->user_id);
    store_bind_int64(st, 2, upto);
    int rc = store_step(st);
    int64_t changed = store_changes(st);
    store_reset(st);
    if (rc != STORE_DONE) db_error(r, t->db);
    else http_send_json(r, 200, json_pack("{s:I}", "marked", (json_int_t)changed));
}

/* Answers 403/503 and returns false unless the user is an admin (the same
 * rule as the jobs admin routes). */
static bool require_admin(http_req *r)
{
    app_thread *t = r->thread;
    user u;
    int rc = users_get(t->db, r->user_id, &u);
    if (rc == USERS_ERROR) {
        db_error(r, t->db);
        return false;
    }
    const char *admin = t->app->cfg.admin_email;
    if (rc == USERS_OK && (u.is_admin || (admin[0] && strcasecmp(admin, u.email) == 0))) return true;
    http_send_error(r, 403, "forbidden", NULL, "this needs an admin");
    return false;
}

static void handle_deliveries(http_req *r)
{
    static const char *states[] = {"pending", "done", "dead", "missed", "cancelled"};
    if (!require_admin(r)) return;
    app_thread *t = r->thread;
    char state[16];
    int q = http_query(r, "state", state, sizeof state);
    bool ok = false;
    for (size_t i = 0; q > 0 && i < sizeof states / sizeof states[0]; i++) ok |= strcmp(state, states[i]) == 0;
    if (!ok) {
        http_send_error(r, 400, "invalid", "state", "state must be pending, done, dead, missed or cancelled");
        return;
    }
    int64_t limit;
    if (!query_limit(r, NOTIFY_PAGE_DEFAULT, NOTIFY_PAGE_MAX, &limit)) return;
    /* The end states other than done have an index (a partial one: its
     * predicate has to appear in the query, word for word). */
    bool ended = strcmp(state, "pending") != 0 && strcmp(state, "done") != 0;
    store_stmt *st = store_prepare(
        t->db, ended ? "SELECT id, event_id, user_id, channel, endpoint_id, occurrence_ms, due_ms, fired_ms, late, "
                       "attempts, next_attempt_ms, last_error, updated_ms FROM deliveries WHERE state = $1 AND state "
                       "IN ('dead', 'missed', 'cancelled') ORDER BY updated_ms DESC, id LIMIT $2"
                     : "SELECT id, event_id, user_id, channel, endpoint_id, occurrence_ms, due_ms, fired_ms, late, "
                       "attempts, next_attempt_ms, last_error, updated_ms FROM deliveries WHERE state = $1 "
                       "ORDER BY updated_ms DESC, id LIMIT $2");
    store_bind_str(st, 1, state);
    store_bind_int64(st, 2, limit);
    json_t *items = json_array();
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        char ev[17], uid[17], ep[17];
        base_id_format(store_col_int64(st, 1), ev);
        base_id_format(store_col_int64(st, 2), uid);
        base_id_format(store_col_int64(st, 4), ep);
        json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:b,s:I,s:o}", "delivery_id", store_col_text(st, 0),
                              "event_id", ev, "user_id", uid, "channel", store_col_text(st, 3), "state", state,
                              "original_start", time_json(store_col_int64(st, 5)), "due",
                              time_json(store_col_int64(st, 6)), "late", store_col_int64(st, 8) != 0, "attempts",
                              (json_int_t)store_col_int64(st, 9), "next_attempt", time_json(store_col_int64(st, 10)));
        if (!o) continue;
        json_object_set_new(o, "updated", time_json(store_col_int64(st, 12)));
        json_object_set_new(o, "fired", store_col_is_null(st, 7) ? json_null() : time_json(store_col_int64(st, 7)));
        json_object_set_new(o, "last_error", store_col_is_null(st, 11) ? json_null()
                                                                        : json_string(store_col_text(st, 11)));
        if (store_col_int64(st, 4)) json_object_set_new(o, "endpoint_id", json_string(ep));
        json_array_append_new(items, o);
    }
    store_reset(st);
    if (rc != STORE_DONE) {
        json_decref(items);
        db_error(r, t->db);
        return;
    }
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

void notify_http_register(http_server *s)
{
    http_route(s, HTTP_GET, "/v1/notifications", handle_inbox, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_POST, "/v1/notifications/read", handle_read_upto, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_POST, "/v1/notifications/{id}/read", handle_read_one, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_GET, "/v1/admin/deliveries", handle_deliveries, HTTP_ROUTE_AUTH);
}
