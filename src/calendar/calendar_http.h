/* calendar_http.h -- the calendar's routes under /v1. */
#ifndef CHIME_CALENDAR_HTTP_H
#define CHIME_CALENDAR_HTTP_H

#include "http/server.h"

void calendar_http_register(http_server *s);

#endif
