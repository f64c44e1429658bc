/* feed_http.c -- the feed over HTTP (routes in feed_http.h). Everything
 * runs on the request's loop with its connection; a post is durable when
 * answered, and the fan-out engine is woken to push it. */
#include "feed/feed_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "feed/feed_body.h"
#include "http/json.h"
#include "users/users.h"
#include "users/users_http.h"

static store *db_of(feed_http *f, const http_req *r)
{
    return store_pool_at(f->dbs, r->loop);
}

static void db_error(feed_http *f, http_req *r)
{
    http_send_db_error(r, store_errmsg(db_of(f, r)));
}

/* The other rooms' additions to posts (feed_http.h). */
static void decorate(feed_http *f, http_req *r, json_t *posts)
{
    if (f->decorate && posts) f->decorate(f->decorate_arg, db_of(f, r), r->user_id, posts);
}

static void decorate_one(feed_http *f, http_req *r, json_t *post)
{
    json_t *list = f->decorate && post ? json_pack("[O]", post) : NULL;
    decorate(f, r, list);
    json_decref(list);
}

/* ---- inputs ----------------------------------------------------------------- */

/* A registered user named by the path: answers 404 when there is none. */
static bool path_user(feed_http *f, http_req *r, int i, int64_t *id)
{
    users_account u;
    if (base_id_parse(r->params[i].ptr, r->params[i].len, id) == 0) {
        int rc = users_get(db_of(f, r), *id, &u);
        if (rc == USERS_OK) return true;
        if (rc == USERS_ERROR) return db_error(f, r), false;
    }
    http_send_error(r, 404, "not_found", NULL, "no such user");
    return false;
}

/* A {user} of the follow paths: an id or an email (any case; %40 for the
 * @ is decoded), as a conversation or a group's members may name one. */
static bool path_user_ref(feed_http *f, http_req *r, int i, int64_t *id)
{
    int rc = users_http_path_user(db_of(f, r), r, i, id);
    if (rc == USERS_OK) return true;
    if (rc == USERS_ERROR) return db_error(f, r), false;
    http_send_error(r, 404, "not_found", NULL, "no such user");
    return false;
}

static bool path_post(http_req *r, int i, int64_t *id)
{
    if (feed_id_parse(r->params[i].ptr, r->params[i].len, id) == 0) return true;
    http_send_error(r, 404, "not_found", NULL, "no such post");
    return false;
}

/* ?name=: a post id (1), absent (0), or answered 400 (-1). */
static int query_id(http_req *r, const char *name, int64_t *id)
{
    char buf[32];
    int q = http_query(r, name, buf, sizeof buf);
    *id = 0;
    if (q == 0 || (q > 0 && !buf[0])) return 0;
    if (q > 0 && feed_id_parse(buf, strlen(buf), id) == 0) return 1;
    http_send_error(r, 400, "invalid_value", name, "%s must be a post id", name);
    return -1;
}

static bool query_limit(http_req *r, int def, int max, int *out)
{
    char buf[16], *end;
    int q = http_query(r, "limit", buf, sizeof buf);
    *out = def;
    if (q == 0) return true;
    long v = q > 0 ? strtol(buf, &end, 10) : 0;
    if (q < 0 || !buf[0] || *end || v < 1 || v > max) {
        http_send_error(r, 400, "invalid_value", "limit", "limit must be 1 to %d", max);
        return false;
    }
    *out = (int)v;
    return true;
}

/* ---- follows ------------------------------------------------------------------ */

static void handle_follow(http_req *r, void *arg)
{
    feed_http *f = arg;
    int64_t followee;
    bool created;
    json_t *profile;
    if (!path_user_ref(f, r, 0, &followee)) return;
    if (followee == r->user_id) return http_send_error(r, 422, "invalid_value", "user", "you cannot follow yourself");
    if (feed_follow(db_of(f, r), r->user_id, followee, &f->lim, base_now_ms(), &created) != FEED_OK ||
        feed_profile(db_of(f, r), r->user_id, followee, &profile) != FEED_OK)
        return db_error(f, r);
    http_send_json(r, 200, profile);
}

static void handle_unfollow(http_req *r, void *arg)
{
    feed_http *f = arg;
    int64_t followee;
    bool removed;
    if (!path_user_ref(f, r, 0, &followee)) return;
    if (feed_unfollow(db_of(f, r), r->user_id, followee, &removed) != FEED_OK) return db_error(f, r);
    http_send_empty(r, 204);
}

static void follow_list(http_req *r, feed_http *f, bool followers)
{
    int64_t user, cursor = 0, next;
    int limit;
    char buf[24];
    if (!path_user(f, r, 0, &user) || !query_limit(r, 100, 1000, &limit)) return;
    int q = http_query(r, "cursor", buf, sizeof buf);
    if (q < 0 || (q > 0 && buf[0] && base_id_parse(buf, strlen(buf), &cursor) != 0))
        return http_send_error(r, 400, "invalid_value", "cursor", "cursor must be one this server gave out");
    json_t *items;
    if (feed_follow_list(db_of(f, r), user, followers, cursor, limit, &items, &next) != FEED_OK) return db_error(f, r);
    char n[17];
    if (next) base_id_format(next, n);
    http_send_json(r, 200, json_pack("{s:o,s:o}", "items", items, "next_cursor", next ? json_string(n) : json_null()));
}

static void handle_followers(http_req *r, void *arg)
{
    follow_list(r, arg, true);
}

static void handle_following(http_req *r, void *arg)
{
    follow_list(r, arg, false);
}

static void handle_profile(http_req *r, void *arg)
{
    feed_http *f = arg;
    int64_t user;
    json_t *profile;
    if (base_id_parse(r->params[0].ptr, r->params[0].len, &user) != 0)
        return http_send_error(r, 404, "not_found", NULL, "no such user");
    int rc = feed_profile(db_of(f, r), r->user_id, user, &profile);
    if (rc == FEED_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such user");
    if (rc != FEED_OK) return db_error(f, r);
    http_send_json(r, 200, profile);
}

/* ---- posts -------------------------------------------------------------------- */

bool feed_may_publish(feed_http *f, http_req *r)
{
    if (!f->publish || rate_take(f->publish, r->user_id, base_mono_ns() / 1000000)) return true;
    int64_t per_min = (int64_t)(rate_per_s(f->publish) * 60.0 + 0.5);
    http_send_429(r, (60 + per_min - 1) / per_min, "too_many_requests",
                  "at most %lld posts, comments and shares a minute; try again shortly", (long long)per_min);
    return false;
}

static void handle_post(http_req *r, void *arg)
{
    feed_http *f = arg;
    http_err e;
    const char *text, *client_id;
    json_t *body = http_json_body(r, &e), *out;
    if (!body || feed_body_post(body, &text, &client_id, &e) != 0) {
        json_decref(body);
        return http_send_err(r, &e);
    }
    if (!feed_may_publish(f, r)) return json_decref(body);
    feed_post_in in = {.id = idgen_next(f->ids), .author = r->user_id, .text = text, .client_id = client_id};
    int rc = in.id > 0 ? feed_post(db_of(f, r), &in, &f->lim, base_now_ms(), &out) : FEED_ERROR;
    json_decref(body);
    if (in.id <= 0) {
        http_add_header(r, "Retry-After", "1");
        return http_send_error(r, 503, "unavailable", NULL, "this node holds no id range right now; try again");
    }
    if (rc == FEED_ERROR) return db_error(f, r);
    if (rc == FEED_OK) feed_fanout_wake(f->fanout);
    decorate_one(f, r, out);
    http_send_json(r, rc == FEED_CONFLICT ? 200 : 201, out);
}

static void handle_post_get(http_req *r, void *arg)
{
    feed_http *f = arg;
    int64_t id;
    json_t *out;
    if (!path_post(r, 0, &id)) return;
    int rc = feed_post_get(db_of(f, r), id, &out);
    if (rc == FEED_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such post");
    if (rc != FEED_OK) return db_error(f, r);
    decorate_one(f, r, out);
    http_send_json(r, 200, out);
}

static void handle_post_delete(http_req *r, void *arg)
{
    feed_http *f = arg;
    int64_t id;
    if (!path_post(r, 0, &id)) return;
    int rc = feed_post_delete(db_of(f, r), r->user_id, id);
    if (rc == FEED_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such post of yours");
    if (rc != FEED_OK) return db_error(f, r);
    http_send_empty(r, 204);
}

static void handle_user_posts(http_req *r, void *arg)
{
    feed_http *f = arg;
    int64_t user, max_id;
    int limit;
    int64_t next;
    json_t *items;
    if (!path_user(f, r, 0, &user) || query_id(r, "max_id", &max_id) < 0 ||
        !query_limit(r, FEED_PAGE_DEFAULT, FEED_PAGE_MAX, &limit))
        return;
    if (feed_user_posts(db_of(f, r), user, max_id, limit, &items, &next) != FEED_OK) return db_error(f, r);
    decorate(f, r, items);
    char n[24];
    snprintf(n, sizeof n, "%lld", (long long)next);
    http_send_json(r, 200, json_pack("{s:o,s:o}", "items", items, "next_max_id", next ? json_string(n) : json_null()));
}

/* ---- the timeline ---------------------------------------------------------------- */

static void handle_timeline(http_req *r, void *arg)
{
    feed_http *f = arg;
    int64_t max_id, since_id;
    int limit;
    json_t *out;
    if (query_id(r, "max_id", &max_id) < 0 || query_id(r, "since_id", &since_id) < 0 ||
        !query_limit(r, FEED_PAGE_DEFAULT, FEED_PAGE_MAX, &limit))
        return;
    if (feed_timeline(db_of(f, r), r->user_id, max_id, since_id, limit, &f->lim, base_now_ms(), &out) != FEED_OK)
        return db_error(f, r);
    decorate(f, r, json_object_get(out, "items"));
    http_send_json(r, 200, out);
}

static void handle_unread(http_req *r, void *arg)
{
    feed_http *f = arg;
    int64_t count;
    if (feed_unread(db_of(f, r), f->unread, r->user_id, &f->lim, base_now_ms(), &count) != FEED_OK) return db_error(f, r);
    char body[48];
    int len = snprintf(body, sizeof body, "{\"count\":%lld}", (long long)count);
    http_send_body(r, 200, "application/json", body, (size_t)len);
}

static void handle_markers_get(http_req *r, void *arg)
{
    feed_http *f = arg;
    json_t *out;
    if (feed_markers(db_of(f, r), r->user_id, &out) != FEED_OK) return db_error(f, r);
    http_send_json(r, 200, out);
}

static void handle_markers_set(http_req *r, void *arg)
{
    feed_http *f = arg;
    http_err e;
    int64_t id;
    json_t *body = http_json_body(r, &e), *out;
    int rc = body ? feed_body_markers(body, &id, &e) : -1;
    json_decref(body);
    if (rc != 0) return http_send_err(r, &e);
    if (feed_marker_set(db_of(f, r), r->user_id, id, base_now_ms()) != FEED_OK ||
        feed_markers(db_of(f, r), r->user_id, &out) != FEED_OK)
        return db_error(f, r);
    http_send_json(r, 200, out);
}

/* A sign-in (the users room's hook): the user is active from now on. */
void feed_on_signin(void *arg, store *db, int64_t user)
{
    feed_http *f = arg;
    if (feed_touch(db, user, &f->lim, base_now_ms()) != FEED_OK)
        log_warn("feed: cannot mark a sign-in active: %s", store_errmsg(db));
}

void feed_http_register(feed_http *f, http_server *s)
{
    const unsigned A = HTTP_ROUTE_AUTH;
    http_route(s, HTTP_PUT, "/v1/me/following/{user}", handle_follow, f, A);
    http_route(s, HTTP_DELETE, "/v1/me/following/{user}", handle_unfollow, f, A);
    http_route(s, HTTP_GET, "/v1/users/{id}", handle_profile, f, A);
    http_route(s, HTTP_GET, "/v1/users/{id}/followers", handle_followers, f, A);
    http_route(s, HTTP_GET, "/v1/users/{id}/following", handle_following, f, A);
    http_route(s, HTTP_GET, "/v1/users/{id}/posts", handle_user_posts, f, A);
    http_route(s, HTTP_POST, "/v1/posts", handle_post, f, A);
    http_route(s, HTTP_GET, "/v1/posts/{id}", handle_post_get, f, A);
    http_route(s, HTTP_DELETE, "/v1/posts/{id}", handle_post_delete, f, A);
    http_route(s, HTTP_GET, "/v1/timeline", handle_timeline, f, A);
    http_route(s, HTTP_GET, "/v1/timeline/unread_count", handle_unread, f, A);
    http_route(s, HTTP_GET, "/v1/markers", handle_markers_get, f, A);
    http_route(s, HTTP_POST, "/v1/markers", handle_markers_set, f, A);
}
