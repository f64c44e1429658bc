/* push.h -- the WebSocket push channel: reaching a user's online devices,
 * on whichever node they are connected, from any thread of any node.
 *
 * Two kinds of push, both hints (a device that misses one catches up by
 * pulling; see src/cluster/bus.h):
 *   - push_signal: "these users' sequences moved". Every node's hub
 *     coalesces the signals and lets the domain that owns the connections
 *     (the chat gateway) send each device the news once.
 *   - push_frame: a whole frame for one user's devices (a reminder that
 *     fired, a feed's unread count). Frames for users online nowhere cost
 *     a hash lookup on the node that fires them, and a hint on the bus.
 * This node's devices are reached at once; other nodes' through the bus. */
#ifndef CHIME_DELIVER_PUSH_H
#define CHIME_DELIVER_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "cluster/bus.h"
#include "http/ws.h"

typedef struct push push;

/* The hub is borrowed. NULL when out of memory. */
push *push_new(ws_hub *hub);
/* The bus the hints go through (borrowed; made with push_on_bus and this
 * push as its callback). Before any push. */
void push_set_bus(push *p, bus *b);
void push_free(push *p);

/* news: each user's new number and unread count (seq 0: not known). */
void push_signal(push *p, const ws_news *news, size_t n);
void push_frame(push *p, int64_t user, const char *text, size_t len);

/* As many of news as fit cap bytes, as one signal hint for the bus, into
 * buf (*len bytes, not terminated); how many. */
size_t push_news_encode(const ws_news *news, size_t n, char *buf, size_t cap, size_t *len);
/* The news in a signal hint from the bus ("n..." or "u..."), at most max
 * items into news; the count. Stops at the first malformed item. */
size_t push_news_parse(const char *s, size_t len, ws_news *news, size_t max);

/* The bus's callback (bus_fn): a hint from another node. */
void push_on_bus(void *arg, const char *payload, size_t len);

#endif
