/* server_int.h -- what server.c shares with the rest of src/http (the
 * WebSocket hub). h2o types stay inside src/http. */
#ifndef CHIME_HTTP_SERVER_INT_H
#define CHIME_HTTP_SERVER_INT_H

#include <h2o.h>
#include <h2o/websocket.h>

#include "http/server.h"

/* The loop's h2o context (its event loop, its message queue). */
h2o_context_t *http_server_context(http_server *s, int loop);
/* Whether r is a WebSocket handshake http_server_upgrade_ws takes. */
bool http_server_is_ws(http_req *r);
/* Upgrades r (HTTP/1 only) and records it as answered with 101 (metrics,
 * access log). h2o writes the 101 before this returns, so the client may
 * act on it at once. NULL, with nothing answered, when r is not a
 * WebSocket handshake. */
h2o_websocket_conn_t *http_server_upgrade_ws(http_req *r, void *data, h2o_websocket_msg_callback cb);

#endif
