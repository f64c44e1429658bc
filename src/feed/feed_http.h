/* feed_http.h -- the feed over HTTP (all under /v1, bearer auth):
 *     PUT    /me/following/{user}         follow (idempotent) -> the profile
 *     DELETE /me/following/{user}         unfollow -> 204
 *     GET    /users/{id}                  {id, name, followers, following, posts, followed}
 *     GET    /users/{id}/followers, /users/{id}/following   ?cursor=&limit= pages
 *     GET    /users/{id}/posts            ?max_id=&limit=
 *     POST   /posts                       {"text","client_post_id"?} -> 201 (200: a repeat)
 *     GET    /posts/{id}, DELETE /posts/{id} (the author)
 *     GET    /timeline                    ?limit=&max_id=&since_id=
 *     GET    /timeline/unread_count       {"count":K}
 *     POST   /markers, GET /markers       {"home":{"last_read_id":ID}} */
#ifndef CHIME_FEED_HTTP_H
#define CHIME_FEED_HTTP_H

#include <stdint.h>

#include "base/rate.h"
#include "cluster/idgen.h"
#include "feed/feed.h"
#include "feed/feed_fanout.h"
#include "http/server.h"
#include "store/store_pool.h"

/* The routes' context; the caller owns it for the server's life. */
typedef struct feed_http {
    store_pool *dbs;     /* borrowed */
    idgen *ids;          /* borrowed: post ids (set before serving) */
    feed_fanout *fanout; /* borrowed: woken after a post (may be NULL) */
    feed_limits lim;
    feed_unread_memo *unread; /* owned by the app: the unread counts remembered (may be NULL) */
    /* Owned by the app: what a user may publish -- posts, and the hot
     * list's comments and shares -- per minute (may be NULL: no limit). */
    rate_limiter *publish;
    /* What other rooms show on posts (the hot list's counts and `liked`),
     * added to each post object of an array before it is answered; app.c
     * connects it (may be NULL). */
    void (*decorate)(void *arg, store *db, int64_t viewer, json_t *posts);
    void *decorate_arg;
} feed_http;

void feed_http_register(feed_http *f, http_server *s);
/* Takes one of the user's publish tokens: false after answering 429 with
 * Retry-After when there is none (a spammer's posts fan out to every
 * follower; its comments and shares reach as far). */
bool feed_may_publish(feed_http *f, http_req *r);
/* The users room's sign-in hook (arg: the feed_http). */
void feed_on_signin(void *arg, store *db, int64_t user);

#endif
