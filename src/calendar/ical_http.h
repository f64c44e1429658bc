/* ical_http.h -- iCalendar export, import and subscription feed routes. */
#ifndef CHIME_ICAL_HTTP_H
#define CHIME_ICAL_HTTP_H

#include "http/server.h"

void ical_http_register(http_server *s);

#endif
