/* webhooks_http.c -- registering webhook endpoints. A user sees and
 * deletes only their own rows: every statement is keyed by the signed-in
 * user's id, so another user's id reads as absent (404). The URL is checked
 * for shape here; whether its address is private is decided at send time,
 * after DNS resolution, because a name can change what it points to. */
#include "notify/webhooks_http.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "time/rfc3339.h"
#include "http/json.h"
#include "deliver/channels.h"

static json_t *webhook_json(int64_t id, const char *url, int64_t created_ms)
{
    char idtext[17], created[32];
    base_id_format(id, idtext);
    rfc3339_format_ms(created_ms, created, sizeof created);
    return json_pack("{s:s,s:s,s:s}", "id", idtext, "url", url, "created", created);
}

/* Inserts unless the user already has WEBHOOKS_PER_USER; one statement, so
 * the count and the insert see the same rows. 1 inserted, 0 at the limit,
 * <0 a store error. */
static int webhook_insert(store *db, int64_t id, int64_t user_id, const char *url, const char *secret, int64_t now)
{
    store_stmt *st = store_prepare(db, "INSERT INTO webhooks (id, user_id, url, secret, created_ms)"
                                       " SELECT $1, $2, $3, $4, $5"
                                       " WHERE (SELECT count(*) FROM webhooks WHERE user_id = $6) < $7");
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, user_id);
    store_bind_str(st, 3, url);
    store_bind_str(st, 4, secret);
    store_bind_int64(st, 5, now);
    store_bind_int64(st, 6, user_id);
    store_bind_int64(st, 7, WEBHOOKS_PER_USER);
    int rc = store_step(st);
    int64_t n = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    return rc == STORE_DONE ? (int)n : rc;
}

static void handle_create(http_req *r, void *arg)
{
    static const char *const fields[] = {"url", "secret", NULL};
    webhooks_http *w = arg;
    store *db = store_pool_at(w->dbs, r->loop);
    http_err e;
    const char *url, *secret;
    char why[160];
    json_t *body = http_json_body(r, &e);
    if (!body || http_json_only(body, fields, &e) ||
        http_json_str(body, "url", true, CHANNELS_URL_MAX, &url, &e) ||
        http_json_str(body, "secret", true, WEBHOOKS_SECRET_MAX, &secret, &e))
        goto bad;
    if (channels_url_check(url, why, sizeof why) != 0) {
        http_err_set(&e, 400, "invalid_value", "url", "%s", why);
        goto bad;
    }
    if (strlen(secret) < WEBHOOKS_SECRET_MIN) {
        http_err_set(&e, 400, "too_short", "secret", "secret must be at least %d bytes", WEBHOOKS_SECRET_MIN);
        goto bad;
    }
    int64_t id = base_id_new(), now = base_now_ms();
    int rc = webhook_insert(db, id, r->user_id, url, secret, now);
    if (rc < 0) http_send_db_error(r, store_errmsg(db));
    else if (rc == 0)
        http_send_error(r, 409, "limit_reached", NULL, "at most %d webhooks per user; delete one first",
                        WEBHOOKS_PER_USER);
    else http_send_json(r, 201, webhook_json(id, url, now));
    json_decref(body);
    return;
bad:
    http_send_err(r, &e);
    json_decref(body);
}

static void handle_list(http_req *r, void *arg)
{
    webhooks_http *w = arg;
    store *db = store_pool_at(w->dbs, r->loop);
    store_stmt *st = store_prepare(db, "SELECT id, url, created_ms FROM webhooks WHERE user_id = $1"
                                          " ORDER BY created_ms, id");
    store_bind_int64(st, 1, r->user_id);
    json_t *items = json_array();
    int rc;
    while ((rc = store_step(st)) == STORE_ROW)
        json_array_append_new(items, webhook_json(store_col_int64(st, 0), store_col_text(st, 1), store_col_int64(st, 2)));
    store_reset(st);
    if (rc != STORE_DONE) {
        json_decref(items);
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

static void handle_delete(http_req *r, void *arg)
{
    webhooks_http *w = arg;
    store *db = store_pool_at(w->dbs, r->loop);
    int64_t id;
    if (base_id_parse(r->params[0].ptr, r->params[0].len, &id) != 0) {
        http_send_error(r, 404, "not_found", NULL, "no such webhook");
        return;
    }
    store_stmt *st = store_prepare(db, "DELETE FROM webhooks WHERE id = $1 AND user_id = $2");
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, r->user_id);
    int rc = store_step(st);
    int64_t n = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    if (rc != STORE_DONE) http_send_db_error(r, store_errmsg(db));
    else if (n == 0) http_send_error(r, 404, "not_found", NULL, "no such webhook");
    else http_send_empty(r, 204);
}

/* ---- test send ------------------------------------------------------------
 * The user asks for a ping and hears the outcome in the answer, so the send
 * runs on a worker that waits for the channel's report (bounded by the
 * per-attempt timeout). Only one test send holds a worker at a time, so
 * they can never starve sign-ins of workers. */

#define WEBHOOK_TESTS_MAX 1

typedef struct webhooks_ping {
    webhooks_http *w;
    char *url, *secret;
    char delivery[40];
    char body[200];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool finished, queued, ok;
    int status;
    char error[512];
} webhooks_ping;

static void ping_free(webhooks_ping *p)
{
    __atomic_fetch_sub(&p->w->tests, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->url);
    free(p->secret);
    free(p);
}

static void ping_reported(void *ctx, bool ok, int status, const char *error)
{
    webhooks_ping *p = ctx;
    pthread_mutex_lock(&p->mu);
    p->ok = ok;
    p->status = status;
    snprintf(p->error, sizeof p->error, "%s", error ? error : "");
    p->finished = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void ping_work(void *arg)
{
    webhooks_ping *p = arg;
    p->queued = channels_webhook(p->w->channels, p->url, p->secret, p->delivery, p->body, strlen(p->body),
                                 ping_reported, p) == 0;
    if (!p->queued) return;
    /* channels reports every send exactly once, within its timeout. */
    pthread_mutex_lock(&p->mu);
    while (!p->finished) pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* The test send's slot is given back before the answer: h2o writes the
 * answer at once, and a client that sends its next test on reading it
 * (maybe to the other loop) was told another one was in progress. */
static void ping_done(http_req *r, void *arg)
{
    webhooks_ping *p = arg;
    bool queued = p->queued;
    json_t *j = NULL;
    if (r && queued) {
        j = json_pack("{s:s,s:b}", "delivery", p->delivery, "delivered", p->ok);
        json_object_set_new(j, "status", p->status ? json_integer(p->status) : json_null());
        json_object_set_new(j, "error", p->ok ? json_null() : json_string(p->error));
    }
    ping_free(p);
    if (r && !queued) {
        http_send_429(r, 1, "busy", "too many deliveries in flight; try again");
    } else if (r) {
        http_send_json(r, 200, j);
    }
}

/* Copies the user's own webhook into p; 1 found, 0 not, <0 store error. */
static int ping_load(store *db, int64_t id, int64_t user_id, webhooks_ping *p)
{
    store_stmt *st = store_prepare(db, "SELECT url, secret FROM webhooks WHERE id = $1 AND user_id = $2");
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, user_id);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        p->url = strdup(store_col_text(st, 0));
        p->secret = strdup(store_col_text(st, 1));
    }
    store_reset(st);
    if (rc == STORE_ROW) return p->url && p->secret ? 1 : STORE_ERROR;
    return rc == STORE_DONE ? 0 : rc;
}

static void handle_test(http_req *r, void *arg)
{
    webhooks_http *w = arg;
    store *db = store_pool_at(w->dbs, r->loop);
    int64_t id;
    if (base_id_parse(r->params[0].ptr, r->params[0].len, &id) != 0) {
        http_send_error(r, 404, "not_found", NULL, "no such webhook");
        return;
    }
    if (__atomic_fetch_add(&w->tests, 1, __ATOMIC_SEQ_CST) >= WEBHOOK_TESTS_MAX) {
        __atomic_fetch_sub(&w->tests, 1, __ATOMIC_SEQ_CST);
        http_send_429(r, 1, "busy", "another test delivery is in progress; try again");
        return;
    }
    webhooks_ping *p = calloc(1, sizeof *p);
    if (!p) {
        __atomic_fetch_sub(&w->tests, 1, __ATOMIC_SEQ_CST);
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    p->w = w;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    int rc = ping_load(db, id, r->user_id, p);
    if (rc <= 0) {
        if (rc == 0) http_send_error(r, 404, "not_found", NULL, "no such webhook");
        else http_send_db_error(r, store_errmsg(db));
        ping_free(p);
        return;
    }
    unsigned char raw[8];
    char hex[17], idtext[17], sent[32];
    base_random(raw, sizeof raw);
    base_hex(raw, sizeof raw, hex);
    base_id_format(id, idtext);
    rfc3339_format_ms(base_now_ms(), sent, sizeof sent);
    snprintf(p->delivery, sizeof p->delivery, "ping-%s", hex);
    snprintf(p->body, sizeof p->body, "{\"type\":\"ping\",\"webhook\":\"%s\",\"delivery\":\"%s\",\"sent\":\"%s\"}",
             idtext, p->delivery, sent);
    http_defer(r, ping_work, ping_done, p);
}

void webhooks_http_register(webhooks_http *w, http_server *s)
{
    http_route(s, HTTP_POST, "/v1/me/webhooks/{id}/test", handle_test, w, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_POST, "/v1/me/webhooks", handle_create, w, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_GET, "/v1/me/webhooks", handle_list, w, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_DELETE, "/v1/me/webhooks/{id}", handle_delete, w, HTTP_ROUTE_AUTH);
}
