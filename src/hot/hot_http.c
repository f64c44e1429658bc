/* hot_http.c -- the hot list over HTTP:
 *     GET    /v1/hot?limit=N                      the list (no sign-in)
 *     PUT    /v1/posts/{id}/like                  like (idempotent) -> the counts
 *     DELETE /v1/posts/{id}/like                  unlike (idempotent) -> the counts
 *     POST   /v1/posts/{id}/comments {"text"}     201 the comment
 *     GET    /v1/posts/{id}/comments              ?cursor=&limit= oldest first
 *     DELETE /v1/posts/{id}/comments/{comment}    your own -> 204
 *     POST   /v1/posts/{id}/shares {"text"?}      201 the repost (200: shared before)
 *     POST   /v1/posts/{id}/views                 204 once durable
 * Everything but GET /v1/hot needs a signed-in user. A post that does not
 * exist or was deleted is 404 everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "feed/feed_body.h"
#include "hot/hot_body.h"
#include "hot/hot_int.h"
#include "http/json.h"

static store *db_of(hot_service *h, const http_req *r)
{
    return store_pool_at(h->o.dbs, r->loop);
}

static void db_error(hot_service *h, http_req *r)
{
    http_send_db_error(r, store_errmsg(db_of(h, r)));
}

/* The post of the path: answers 404 (or 503) and returns false when it
 * does not exist, was deleted, or the path is not a post id. */
static bool path_post(hot_service *h, http_req *r, int64_t *id, int64_t *created_ms, int64_t *author)
{
    int rc = feed_id_parse(r->params[0].ptr, r->params[0].len, id) == 0
                 ? hot_post_find(db_of(h, r), *id, created_ms, author)
                 : HOT_NOT_FOUND;
    if (rc == HOT_OK) return true;
    if (rc == HOT_ERROR) db_error(h, r);
    else http_send_error(r, 404, "not_found", NULL, "no such post");
    return false;
}

/* A query parameter into buf: its value, NULL when absent, or answers
 * 400 and sets *bad. */
static const char *query(http_req *r, const char *name, char *buf, size_t size, bool *bad)
{
    int q = http_query(r, name, buf, size);
    if (q < 0) {
        http_send_error(r, 400, "invalid_value", name, "%s is malformed or too long", name);
        *bad = true;
    }
    return q > 0 ? buf : NULL;
}

/* ---- the list ---------------------------------------------------------------------- */

static void handle_hot(http_req *r, void *arg)
{
    hot_service *h = arg;
    char buf[16];
    bool bad = false;
    http_err e;
    int limit;
    const char *v = query(r, "limit", buf, sizeof buf, &bad);
    if (bad) return;
    if (hot_query_limit(v, h->o.size, HOT_LIMIT_MAX, &limit, &e) != 0) return http_send_err(r, &e);
    const hot_snap *s = hot_cache_get(h->cache, r->loop);
    if (!s) return http_send_error(r, 503, "unavailable", NULL, "the hot list is not loaded yet");
    http_add_header(r, "Cache-Control", "no-cache");
    if ((size_t)limit >= s->n) return http_send_body(r, 200, "application/json", s->body, s->len);
    /* The first `limit` items: head and items as they are, closed early. */
    size_t len = s->ends[limit - 1];
    char *page = malloc(len + 2);
    if (!page) return http_send_error(r, 503, "unavailable", NULL, "out of memory");
    memcpy(page, s->body, len);
    memcpy(page + len, "]}", 2);
    http_send_body(r, 200, "application/json", page, len + 2);
    free(page);
}

/* ---- likes ---------------------------------------------------------------------------- */

static void send_counts(hot_service *h, http_req *r, int64_t id)
{
    char pid[24];
    snprintf(pid, sizeof pid, "%lld", (long long)id);
    json_t *out = json_pack("{s:s}", "id", pid);
    if (!out || hot_counts_into(db_of(h, r), id, r->user_id, out) != HOT_OK) {
        json_decref(out);
        return db_error(h, r);
    }
    http_send_json(r, 200, out);
}

/* A like or an unlike goes to the action writer with the views; the
 * answer (hot_answer_action) reads the counts once it is durable. */
static void like(http_req *r, hot_service *h, bool on)
{
    int64_t id, created, author;
    if (!path_post(h, r, &id, &created, &author)) return;
    hot_act a = {.kind = on ? HOT_ACT_LIKE : HOT_ACT_UNLIKE, .post_id = id, .user_id = r->user_id,
                 .created_ms = created};
    hot_writer_submit(h->writer, r, &a);
}

static void handle_like(http_req *r, void *arg)
{
    like(r, arg, true);
}

static void handle_unlike(http_req *r, void *arg)
{
    like(r, arg, false);
}

/* ---- comments ------------------------------------------------------------------------- */

static void handle_comment(http_req *r, void *arg)
{
    hot_service *h = arg;
    int64_t id, created, author;
    http_err e;
    const char *text;
    json_t *body = http_json_body(r, &e), *out;
    if (!body || hot_body_comment(body, &text, &e) != 0) {
        json_decref(body);
        return http_send_err(r, &e);
    }
    if (!path_post(h, r, &id, &created, &author) || !feed_may_publish(h->o.feed, r)) return json_decref(body);
    int64_t cid = idgen_next(h->o.feed->ids);
    int rc = cid > 0 ? hot_comment_add(db_of(h, r), cid, id, r->user_id, text, created, base_now_ms(), &out) : HOT_ERROR;
    json_decref(body);
    if (cid <= 0) {
        http_add_header(r, "Retry-After", "1");
        return http_send_error(r, 503, "unavailable", NULL, "this node holds no id range right now; try again");
    }
    if (rc != HOT_OK) return db_error(h, r);
    http_send_json(r, 201, out);
}

static void handle_comments(http_req *r, void *arg)
{
    hot_service *h = arg;
    int64_t id, created, author, cursor, next;
    char lbuf[16], cbuf[32];
    bool bad = false;
    http_err e;
    int limit;
    const char *lv = query(r, "limit", lbuf, sizeof lbuf, &bad);
    const char *cv = bad ? NULL : query(r, "cursor", cbuf, sizeof cbuf, &bad);
    if (bad) return;
    if (hot_query_limit(lv, HOT_PAGE_DEFAULT, HOT_PAGE_MAX, &limit, &e) != 0 || hot_query_cursor(cv, &cursor, &e) != 0)
        return http_send_err(r, &e);
    if (!path_post(h, r, &id, &created, &author)) return;
    json_t *items;
    if (hot_comments_page(db_of(h, r), id, cursor, limit, &items, &next) != HOT_OK) return db_error(h, r);
    char n[24];
    snprintf(n, sizeof n, "%lld", (long long)next);
    http_send_json(r, 200, json_pack("{s:o,s:o}", "items", items, "next_cursor", next ? json_string(n) : json_null()));
}

static void handle_comment_delete(http_req *r, void *arg)
{
    hot_service *h = arg;
    int64_t id, cid;
    if (feed_id_parse(r->params[0].ptr, r->params[0].len, &id) != 0 ||
        feed_id_parse(r->params[1].ptr, r->params[1].len, &cid) != 0)
        return http_send_error(r, 404, "not_found", NULL, "no such comment of yours");
    int rc = hot_comment_delete(db_of(h, r), id, cid, r->user_id);
    if (rc == HOT_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such comment of yours");
    if (rc != HOT_OK) return db_error(h, r);
    http_send_empty(r, 204);
}

/* ---- shares and views -------------------------------------------------------------------- */

static void handle_share(http_req *r, void *arg)
{
    hot_service *h = arg;
    int64_t id, created, author;
    http_err e;
    const char *text;
    json_t *body = NULL, *out = NULL, *list;
    if (r->body.len && !(body = http_json_body(r, &e))) return http_send_err(r, &e);
    if (hot_body_share(body, &text, &e) != 0) {
        json_decref(body);
        return http_send_err(r, &e);
    }
    if (!path_post(h, r, &id, &created, &author)) return json_decref(body);
    if (author == r->user_id) {
        json_decref(body);
        return http_send_error(r, 422, "invalid_value", "id", "you cannot share your own post");
    }
    if (!feed_may_publish(h->o.feed, r)) return json_decref(body);
    int64_t repost = idgen_next(h->o.feed->ids);
    int rc = repost > 0 ? hot_share(db_of(h, r), h->o.feed, repost, id, r->user_id, created, text, base_now_ms(), &out)
                        : HOT_ERROR;
    json_decref(body);
    if (repost <= 0) {
        http_add_header(r, "Retry-After", "1");
        return http_send_error(r, 503, "unavailable", NULL, "this node holds no id range right now; try again");
    }
    if (rc != HOT_OK && rc != HOT_CONFLICT) return db_error(h, r);
    if (!(list = json_pack("[O]", out))) {
        json_decref(out);
        return db_error(h, r);
    }
    hot_decorate_posts(h, db_of(h, r), r->user_id, list);
    json_decref(list);
    http_send_json(r, rc == HOT_OK ? 201 : 200, out);
}

static void handle_view(http_req *r, void *arg)
{
    hot_service *h = arg;
    int64_t id, created, author;
    if (!path_post(h, r, &id, &created, &author)) return;
    hot_act a = {.kind = HOT_ACT_VIEW, .post_id = id, .user_id = r->user_id, .created_ms = created};
    hot_writer_submit(h->writer, r, &a);
}

void hot_answer_action(http_req *r, const hot_act *a, bool ok, void *arg)
{
    if (!ok) {
        const char *what = a->kind == HOT_ACT_VIEW ? "view" : a->kind == HOT_ACT_LIKE ? "like" : "unlike";
        return http_send_error(r, 503, "unavailable", NULL, "the %s was not recorded; try again", what);
    }
    if (a->kind == HOT_ACT_VIEW) return http_send_empty(r, 204);
    send_counts(arg, r, a->post_id);
}

/* ---- metrics ------------------------------------------------------------------------------- */

static double gauge_version(void *arg, int loop)
{
    return (double)hot_cache_version(((hot_service *)arg)->cache);
}

static double gauge_age(void *arg, int loop)
{
    int64_t at = hot_cache_computed_ms(((hot_service *)arg)->cache);
    return at ? (double)(base_now_ms() - at) / 1000.0 : -1;
}

static double gauge_ok(void *arg, int loop)
{
    return (double)atomic_load(&((hot_service *)arg)->runs_ok);
}

static double gauge_failed(void *arg, int loop)
{
    return (double)atomic_load(&((hot_service *)arg)->runs_failed);
}

static double gauge_seconds(void *arg, int loop)
{
    return (double)atomic_load(&((hot_service *)arg)->last_run_ms) / 1000.0;
}

static double gauge_redis(void *arg, int loop)
{
    return hot_cache_redis_up(((hot_service *)arg)->cache);
}

void hot_register(hot_service *h, http_server *s)
{
    const unsigned A = HTTP_ROUTE_AUTH;
    http_route(s, HTTP_GET, "/v1/hot", handle_hot, h, 0);
    http_route(s, HTTP_PUT, "/v1/posts/{id}/like", handle_like, h, A);
    http_route(s, HTTP_DELETE, "/v1/posts/{id}/like", handle_unlike, h, A);
    http_route(s, HTTP_POST, "/v1/posts/{id}/comments", handle_comment, h, A);
    http_route(s, HTTP_GET, "/v1/posts/{id}/comments", handle_comments, h, A);
    http_route(s, HTTP_DELETE, "/v1/posts/{id}/comments/{comment}", handle_comment_delete, h, A);
    http_route(s, HTTP_POST, "/v1/posts/{id}/shares", handle_share, h, A);
    http_route(s, HTTP_POST, "/v1/posts/{id}/views", handle_view, h, A);
    http_gauge(s, "chime_hot_version", "Version of the hot list this node serves.", gauge_version, h);
    http_gauge(s, "chime_hot_age_seconds", "Seconds since the served hot list was computed (-1: never).", gauge_age, h);
    http_gauge(s, "chime_hot_recomputes_ok", "hot.recompute runs that published, on this node.", gauge_ok, h);
    http_gauge(s, "chime_hot_recomputes_failed",
               "hot.recompute runs that failed on this node (the previous list kept serving).", gauge_failed, h);
    http_gauge(s, "chime_hot_recompute_seconds", "Duration of this node's last hot.recompute run.", gauge_seconds, h);
    http_gauge(s, "chime_hot_redis_up", "1 when Redis answered within a second, 0 when not, -1 without Redis.",
               gauge_redis, h);
}
