/* notify_http.h -- the in-app inbox and the delivery admin view. */
#ifndef CHIME_NOTIFY_HTTP_H
#define CHIME_NOTIFY_HTTP_H

#include "http/server.h"

void notify_http_register(http_server *s);

#endif
