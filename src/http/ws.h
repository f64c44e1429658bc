/* ws.h -- the WebSocket hub: the server's persistent connections, by user.
 *
 * Each event loop keeps the WebSocket connections it accepted, indexed by
 * user, and only that loop touches them. Other threads reach them in two
 * ways, both batched through one wake-up of the loop:
 *   - ws_hub_signal(news): "these users' numbers moved", each with the
 *     number it moved to and the count that goes with it when the sender
 *     knows them (the writer that moved it does; seq 0: not known).
 *     Coalesced: however many signals arrive while a loop is busy, it
 *     later calls the hub's on_signal once with one item per user it has
 *     connections for -- the highest number signalled, or "not known" when
 *     any signal for the user was -- and the domain (the chat gateway)
 *     sends the frames, reading the numbers not known. A burst of changes
 *     thus gives one frame. Only the loops with a connection of the
 *     users that does not know the news yet are woken for it; the others
 *     drop it when they next wake. A connection never gets a frame of a
 *     number at or below one it was already sent or told (hello,
 *     ws_hub_told), so signals that cross on their way here (two nodes'
 *     writers) never leave a stale frame last.
 *   - ws_hub_send_user(user, text): a frame for every connection of the
 *     user on this node (a fired reminder).
 * The hub pings every connection every ping_ms and closes one that has
 * been silent for one and a half intervals (the ping before last went
 * unanswered: a killed client, a lost network), so a vanished device
 * stops counting within two ping intervals of its last sign of life. A user has at most
 * max_per_user connections on a node: the oldest is closed for a new one.
 * Client frames: text up to max_frame bytes reaches on_text; a larger one
 * is closed with 1009, a binary one with 1008, as is one on_text refuses.
 *
 * Memory per idle connection is what h2o and wslay need (about 9 KB,
 * most of it wslay's two fixed 4 KB buffers) plus this hub's 96 bytes,
 * and about 200 bytes a user in its registry of users (with the default
 * cap of 10 connections a user). */
#ifndef CHIME_HTTP_WS_H
#define CHIME_HTTP_WS_H

#include <stddef.h>
#include <stdint.h>

#include "http/server.h"

typedef struct ws_hub ws_hub;

/* A user's news: their number moved to seq, with unread unread (seq 0:
 * the numbers are not known; the domain reads them). */
typedef struct ws_news {
    int64_t user_id, seq, unread;
} ws_news;

typedef struct ws_hub_events {
    void *arg;
    /* On the loop thread, the first connection of a user on this node
     * opened / its last one closed (presence). */
    void (*on_online)(void *arg, int64_t user_id);
    void (*on_offline)(void *arg, int64_t user_id);
    /* On the loop thread: news of users signalled since the last call that
     * have a connection on this loop, one item a user, sorted by user. */
    void (*on_signal)(void *arg, int loop, const ws_news *news, size_t n);
    /* On the loop thread: a text frame from a client. Return 0, or -1 to
     * close the connection with 1008 (policy violation). reply, when the
     * callback sets it (malloc'd), is sent back on that connection. */
    int (*on_text)(void *arg, int64_t user_id, const char *text, size_t len, char **reply);
} ws_hub_events;

typedef struct ws_hub_opts {
    int64_t ping_ms;    /* between pings (--ws-ping), default 25000 */
    int max_per_user;   /* connections a user may have on a node, default 10 */
    size_t max_frame;   /* largest client frame, default 65536 */
    int max_queued;     /* frames waiting for a slow client before it is closed, default 256 */
} ws_hub_opts;

/* Makes the hub and hooks it into every loop of s (call before
 * http_server_start). The events are copied. NULL when out of memory. */
ws_hub *ws_hub_new(http_server *s, const ws_hub_opts *o, const ws_hub_events *ev);
/* After http_server_free (the loops have closed every connection). */
void ws_hub_free(ws_hub *h);

/* A new connection's token for a request on loop: random, so a client
 * can name its own connection (ws_hub_told) but not guess another's, and
 * it tells the hub the connection's loop. Never 0. */
uint64_t ws_hub_token(ws_hub *h, int loop);

/* In a handler: upgrades the request to a WebSocket of user_id with the
 * token from ws_hub_token, queueing hello (a text frame, may be NULL) as
 * its first frame; hello_seq is the user's number it tells (0: none).
 * 0: answered with 101. -1: not a WebSocket handshake; nothing answered. */
int ws_hub_upgrade(ws_hub *h, http_req *r, int64_t user_id, uint64_t token, const char *hello, int64_t hello_seq);

/* From any thread. */
void ws_hub_signal(ws_hub *h, const ws_news *news, size_t n);
/* The connection token of user_id already knows the user's number seq
 * (the device was told in an HTTP answer): ws_hub_send_local skips it
 * for a frame of that number or below, and ws_hub_signal wakes no loop
 * for it (a 1:1 message from a user's one device wakes the receiver's
 * loop alone). Call before the ws_hub_signal of the same change. A token
 * of another user's connection does nothing. */
void ws_hub_told(ws_hub *h, int64_t user_id, uint64_t token, int64_t seq);
void ws_hub_send_user(ws_hub *h, int64_t user_id, const char *text, size_t len);

/* On a loop thread, to the user's connections on that loop; seq > 0 is
 * the user's number the frame tells, which a connection that was sent or
 * told that number or a higher one does not get. */
void ws_hub_send_local(ws_hub *h, int loop, int64_t user_id, int64_t seq, const char *text, size_t len);

/* This node's open connections and distinct users on them. */
void ws_hub_counts(ws_hub *h, int64_t *connections, int64_t *users);
/* Whether the user has a connection on this node. */
int ws_hub_is_online(ws_hub *h, int64_t user_id);

#endif
