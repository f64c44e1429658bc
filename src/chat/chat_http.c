/* chat_http.c -- the chat's HTTP handlers (routes in chat_http.h). Reads
 * run on the request's loop with its connection; writes are validated
 * here, then handed to the writer (chat_writer.c), and the request waits,
 * parked, for the commit. Every conversation id that is not the caller's
 * reads as absent: 404, never 403. */
#include "chat/chat_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "chat/chat_body.h"
#include "chat/chat_int.h"
#include "http/json.h"
#include "users/users.h"
#include "users/users_http.h"

store *chat_db(chat_service *c, int loop)
{
    return store_pool_at(c->o.dbs, loop);
}

/* ---- handing writes to the writer -------------------------------------- */

static void op_answer(http_req *r, void *arg)
{
    chat_op *op = arg;
    chat_result *res = &op->res;
    if (!r) {
    } else if (res->status >= 400) {
        if (res->status == 429 || res->status == 503) http_add_header(r, "Retry-After", "1");
        http_send_error(r, res->status, res->code, res->field[0] ? res->field : NULL, "%s", res->message);
    } else if (res->rendered) {
        http_send_body(r, res->status, "application/json", res->rendered, res->rendered_len);
    } else if (res->status == 204 || !res->body) {
        http_send_empty(r, res->status ? res->status : 204);
    } else {
        http_send_json(r, res->status, json_incref(res->body));
    }
    chat_op_free(op);
}

/* On the writer's thread after the commit (SQLite: the syncer's, after the sync). */
static void op_finished(chat_op *op)
{
    http_unpark(op->ctx);
}

void chat_submit(chat_service *c, http_req *r, chat_op *op)
{
    op->finish = op_finished;
    http_parked *p = http_park(r, op_answer, op);
    if (!p) {
        chat_op_free(op);
        return;
    }
    op->ctx = p;
    chat_writer *w = atomic_load(&c->writer);
    if (!w) {
        chat_refuse(&op->res, 503, "starting", NULL, "the chat is starting; try again");
        http_unpark(p);
    } else if (chat_writer_submit(w, op) != 0) {
        chat_refuse(&op->res, 503, "shutting_down", NULL, "the server is shutting down");
        http_unpark(p);
    }
}

static chat_op *op_new(http_req *r, chat_op_kind kind)
{
    chat_op *op = calloc(1, sizeof *op);
    if (!op) http_send_error(r, 503, "unavailable", NULL, "out of memory");
    else op->kind = kind, op->me = r->user_id;
    return op;
}

/* ---- inputs ------------------------------------------------------------- */

static bool path_id(http_req *r, int i, int64_t *id, const char *what)
{
    if (base_id_parse(r->params[i].ptr, r->params[i].len, id) == 0) return true;
    http_send_error(r, 404, "not_found", NULL, "no such %s", what);
    return false;
}

/* A list of users by id or email into ids (owned by the caller). */
static int users_of(chat_service *c, http_req *r, const json_t *list, const char *field, size_t max, int64_t **ids,
                    size_t *n, http_err *e)
{
    store *db = chat_db(c, r->loop);
    if (chat_body_users(list, field, max, e) != 0) return -1;
    *n = json_array_size(list);
    *ids = calloc(*n + 1, sizeof **ids);
    if (!*ids) {
        http_err_set(e, 503, "unavailable", NULL, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < *n; i++) {
        int rc = users_resolve(db, json_string_value(json_array_get(list, i)), &(*ids)[i]);
        if (rc == USERS_ERROR) {
            http_err_set(e, 503, "unavailable", NULL, "the database did not answer; try again");
            return -1;
        }
        if (rc != USERS_OK) {
            http_err_set(e, 422, "unknown_user", field, "%s[%zu] is not a registered user", field, i);
            return -1;
        }
    }
    return 0;
}

/* A query integer within [lo, hi]: 1 present, 0 absent, -1 answered 400. */
static int query_int(http_req *r, const char *name, int64_t lo, int64_t hi, int64_t *out)
{
    char buf[24], *end;
    int q = http_query(r, name, buf, sizeof buf);
    if (q == 0) return 0;
    long long v = q > 0 ? strtoll(buf, &end, 10) : 0;
    if (q < 0 || !buf[0] || *end || v < lo || v > hi) {
        http_send_error(r, 400, "invalid_value", name, "%s must be a whole number from %lld to %lld", name,
                        (long long)lo, (long long)hi);
        return -1;
    }
    *out = v;
    return 1;
}

/* The user's send budget, for messages, new conversations and added
 * members alike (each reaches every member's devices): false (and 429
 * answered) when it is spent. */
static bool within_rate(chat_service *c, http_req *r)
{
    if (rate_take(c->sends, r->user_id, base_mono_ns() / 1000000)) return true;
    http_send_429(r, 1, "too_many_requests",
                  "at most %lld messages, new conversations and member additions a second; try again shortly",
                  (long long)c->o.rate);
    return false;
}

/* ---- conversations ------------------------------------------------------ */

/* The users a create names, resolved; answers and returns false when
 * one is unknown. */
static int create_users(chat_service *c, http_req *r, const chat_create_in *in, chat_op *op, http_err *e)
{
    if (in->group) {
        op->kind = CHAT_OP_GROUP;
        if (!(op->title = strdup(in->title)) || (in->client_id && !(op->client_id = strdup(in->client_id))))
            return http_err_set(e, 503, "unavailable", NULL, "out of memory"), -1;
        if (!in->members) return (op->users = calloc(1, sizeof *op->users)) ? 0 : -1;
        return users_of(c, r, in->members, "members", (size_t)c->o.group_max_members, &op->users, &op->nusers, e);
    }
    int rc = users_resolve(chat_db(c, r->loop), in->user, &op->other);
    if (rc == USERS_ERROR) http_err_set(e, 503, "unavailable", NULL, "the database did not answer; try again");
    else if (rc != USERS_OK) http_err_set(e, 422, "unknown_user", "user", "user is not a registered user");
    return rc == USERS_OK ? 0 : -1;
}

static void handle_create(http_req *r, void *arg)
{
    chat_service *c = arg;
    http_err e;
    chat_create_in in;
    chat_op *op = op_new(r, CHAT_OP_DIRECT);
    json_t *body = op ? http_json_body(r, &e) : NULL;
    if (!op) return;
    if (!body || chat_body_create(body, (size_t)c->o.group_max_members, &in, &e) != 0 ||
        create_users(c, r, &in, op, &e) != 0) {
        json_decref(body);
        chat_op_free(op);
        return http_send_err(r, &e);
    }
    json_decref(body);
    if (!within_rate(c, r)) return chat_op_free(op);
    chat_submit(c, r, op);
}

static void handle_list(http_req *r, void *arg)
{
    chat_service *c = arg;
    json_t *items;
    if (chat_conversations(chat_db(c, r->loop), r->user_id, 0, &items) != CHAT_OK)
        return http_send_db_error(r, store_errmsg(chat_db(c, r->loop)));
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

static void handle_get(http_req *r, void *arg)
{
    chat_service *c = arg;
    int64_t conv;
    json_t *items;
    if (!path_id(r, 0, &conv, "conversation")) return;
    if (chat_conversations(chat_db(c, r->loop), r->user_id, conv, &items) != CHAT_OK)
        return http_send_db_error(r, store_errmsg(chat_db(c, r->loop)));
    if (json_array_size(items) == 0) http_send_error(r, 404, "not_found", NULL, "no such conversation");
    else http_send_json(r, 200, json_incref(json_array_get(items, 0)));
    json_decref(items);
}

static void handle_members_add(http_req *r, void *arg)
{
    chat_service *c = arg;
    http_err e;
    const json_t *users;
    chat_op *op = op_new(r, CHAT_OP_ADD);
    if (!op) return;
    json_t *body = NULL;
    if (!path_id(r, 0, &op->conv, "conversation")) goto out;
    body = http_json_body(r, &e);
    if (!body || chat_body_members(body, (size_t)c->o.group_max_members, &users, &e) ||
        users_of(c, r, users, "users", (size_t)c->o.group_max_members, &op->users, &op->nusers, &e)) {
        http_send_err(r, &e);
        goto out;
    }
    if (!within_rate(c, r)) goto out;
    json_decref(body);
    chat_submit(c, r, op);
    return;
out:
    json_decref(body);
    chat_op_free(op);
}

/* The {user} of a member's path: an id or an email (any case; %40 for
 * the @ is decoded), as the members added may be named; 404 otherwise. */
static bool path_member(chat_service *c, http_req *r, int i, int64_t *id)
{
    int rc = users_http_path_user(chat_db(c, r->loop), r, i, id);
    if (rc == USERS_OK) return true;
    if (rc == USERS_ERROR) http_send_db_error(r, store_errmsg(chat_db(c, r->loop)));
    else http_send_error(r, 404, "not_found", NULL, "no such member");
    return false;
}

static void handle_member_remove(http_req *r, void *arg)
{
    chat_service *c = arg;
    chat_op *op = op_new(r, CHAT_OP_REMOVE);
    if (!op) return;
    if (!path_id(r, 0, &op->conv, "conversation") || !path_member(c, r, 1, &op->other)) {
        chat_op_free(op);
        return;
    }
    chat_submit(c, r, op);
}

/* ---- messages ----------------------------------------------------------- */

/* Chime-Connection: the sender's own WebSocket (the "connection" of its
 * hello frame), optional. */
static bool sender_connection(http_req *r, int64_t *conn)
{
    http_str h;
    *conn = 0;
    if (!http_header(r, "chime-connection", &h) || base_id_parse(h.ptr, h.len, conn) == 0) return true;
    http_send_error(r, 400, "invalid_value", "Chime-Connection",
                    "Chime-Connection must be the connection your hello frame named (16 hex digits)");
    return false;
}

static void handle_send(http_req *r, void *arg)
{
    chat_service *c = arg;
    http_err e;
    const char *client_id, *text;
    chat_op *op = op_new(r, CHAT_OP_SEND);
    if (!op) return;
    json_t *body = NULL;
    if (!path_id(r, 0, &op->conv, "conversation")) goto out;
    body = http_json_body(r, &e);
    if (!body || chat_body_send(body, &client_id, &text, &e) != 0) {
        http_send_err(r, &e);
        goto out;
    }
    if (!sender_connection(r, &op->conn) || !within_rate(c, r)) goto out;
    op->client_id = strdup(client_id);
    op->text = strdup(text);
    json_decref(body);
    if (!op->client_id || !op->text) {
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
        chat_op_free(op);
        return;
    }
    chat_submit(c, r, op);
    return;
out:
    json_decref(body);
    chat_op_free(op);
}

static void handle_history(http_req *r, void *arg)
{
    chat_service *c = arg;
    int64_t conv, before = 0, after = 0, limit = CHAT_PAGE_DEFAULT;
    if (!path_id(r, 0, &conv, "conversation") || query_int(r, "before_seq", 1, INT64_MAX, &before) < 0 ||
        query_int(r, "after_seq", 0, INT64_MAX, &after) < 0 || query_int(r, "limit", 1, CHAT_PAGE_MAX, &limit) < 0)
        return;
    json_t *out;
    int rc = chat_messages(chat_db(c, r->loop), r->user_id, conv, before, after, (int)limit, &out);
    if (rc == CHAT_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such conversation");
    if (rc != CHAT_OK) return http_send_db_error(r, store_errmsg(chat_db(c, r->loop)));
    http_send_json(r, 200, out);
}

static void handle_read(http_req *r, void *arg)
{
    chat_service *c = arg;
    http_err e;
    chat_op *op = op_new(r, CHAT_OP_READ);
    if (!op) return;
    json_t *body = NULL;
    if (!path_id(r, 0, &op->conv, "conversation")) goto out;
    body = http_json_body(r, &e);
    if (!body || chat_body_read(body, &op->up_to, &e) != 0) {
        http_send_err(r, &e);
        goto out;
    }
    json_decref(body);
    chat_submit(c, r, op);
    return;
out:
    json_decref(body);
    chat_op_free(op);
}

/* ---- sync --------------------------------------------------------------- */

static void handle_sync(http_req *r, void *arg)
{
    chat_service *c = arg;
    store *db = chat_db(c, r->loop);
    int64_t since = 0, limit = CHAT_SYNC_DEFAULT, seq, pruned;
    if (query_int(r, "since", 0, INT64_MAX, &since) < 0 || query_int(r, "limit", 1, CHAT_SYNC_MAX, &limit) < 0) return;
    jsonw w;
    jw_init(&w, 1024);
    /* The pull that follows a push is answered from memory (chat_tail.h). */
    bool mem = c->tail && chat_tail_sync(c->tail, r->user_id, since, (int)limit, &w);
    if (mem) seq = pruned = since; /* within the bounds */
    if (!mem && chat_sync(db, r->user_id, since, (int)limit, &seq, &pruned, &w) != CHAT_OK)
        http_send_db_error(r, store_errmsg(db));
    else if (since > seq)
        http_send_error(r, 400, "invalid_value", "since", "since (%lld) is past your newest change (%lld)",
                        (long long)since, (long long)seq);
    else if (since < pruned)
        http_send_error(r, 410, "sync_too_old", "since",
                        "changes up to %lld are no longer kept; start again from GET /v1/conversations",
                        (long long)pruned);
    else if (jw_failed(&w))
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
    else
        http_send_body(r, 200, "application/json", w.buf, w.len);
    jw_free(&w);
}

static void handle_unread(http_req *r, void *arg)
{
    chat_service *c = arg;
    store *db = chat_db(c, r->loop);
    int64_t total, convs;
    if (chat_unread(db, r->user_id, &total, &convs) != CHAT_OK) return http_send_db_error(r, store_errmsg(db));
    http_send_json(r, 200, json_pack("{s:I,s:I}", "total", (json_int_t)total, "conversations", (json_int_t)convs));
}

/* ---- lifecycle ---------------------------------------------------------- */

chat_service *chat_new(const chat_opts *o)
{
    chat_service *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->o = *o;
    if (strncmp(o->db_url, "sqlite:", 7) == 0 && !(c->tail = chat_tail_new())) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (!(c->sends = rate_new((double)o->rate, 2.0 * (double)o->rate))) {
        chat_free(c);
        return NULL;
    }
    return c;
}

chat_tail *chat_tail_of(chat_service *c)
{
    return c->tail;
}

void chat_register(chat_service *c, http_server *s)
{
    const unsigned A = HTTP_ROUTE_AUTH;
    http_route(s, HTTP_POST, "/v1/conversations", handle_create, c, A);
    http_route(s, HTTP_GET, "/v1/conversations", handle_list, c, A);
    http_route(s, HTTP_GET, "/v1/conversations/{id}", handle_get, c, A);
    http_route(s, HTTP_POST, "/v1/conversations/{id}/members", handle_members_add, c, A);
    http_route(s, HTTP_DELETE, "/v1/conversations/{id}/members/{user}", handle_member_remove, c, A);
    http_route(s, HTTP_POST, "/v1/conversations/{id}/messages", handle_send, c, A);
    http_route(s, HTTP_GET, "/v1/conversations/{id}/messages", handle_history, c, A);
    http_route(s, HTTP_POST, "/v1/conversations/{id}/read", handle_read, c, A);
    http_route(s, HTTP_GET, "/v1/sync", handle_sync, c, A);
    http_route(s, HTTP_GET, "/v1/unread", handle_unread, c, A);
    chat_gateway_register(c, s);
}

/* A sender's device knows its own message's number from the 201: its
 * connection is spared the frame that would tell it only that. */
static void on_told(void *arg, int64_t user, int64_t conn, int64_t seq)
{
    chat_service *c = arg;
    if (c->hub) ws_hub_told(c->hub, user, (uint64_t)conn, seq);
}

/* After each commit: the users' devices hear of it, with the numbers. */
static void on_commit(void *arg, const chat_news *news, size_t n)
{
    chat_service *c = arg;
    ws_news *v = c->push ? malloc(n * sizeof *v) : NULL;
    if (!v) return; /* out of memory: devices pull at their next frame */
    for (size_t i = 0; i < n; i++) v[i] = (ws_news){.user_id = news[i].user, .seq = news[i].seq, .unread = news[i].unread};
    push_signal(c->push, v, n);
    free(v);
}

int chat_start(chat_service *c, idgen *ids)
{
    chat_writer_opts wo = {.db_url = c->o.db_url, .group_max_members = c->o.group_max_members, .ids = ids,
                           .tail = c->tail, .on_told = on_told, .on_commit = on_commit, .arg = c};
    chat_writer *w = chat_writer_new(&wo);
    if (!w || chat_writer_start(w) != 0) {
        chat_writer_free(w);
        return -1;
    }
    atomic_store(&c->writer, w);
    return chat_gateway_start(c);
}

void chat_stop(chat_service *c)
{
    chat_gateway_stop(c);
    chat_writer_free(atomic_exchange(&c->writer, NULL)); /* commits what is queued first */
}

void chat_free(chat_service *c)
{
    if (!c) return;
    rate_free(c->sends);
    free(c->remote);
    chat_tail_free(c->tail);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}
