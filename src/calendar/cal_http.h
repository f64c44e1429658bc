/* cal_http.h -- what the calendar's two handler files (calendar_http.c,
 * ical_http.c) share: the request context and its common answers. */
#ifndef CHIME_CAL_HTTP_H
#define CHIME_CAL_HTTP_H

#include <stdint.h>

#include "http/http.h"
#include "store/store.h"
#include "time/tz.h"

typedef struct ctx {
    http_req *r;
    store *db;
    tz_db *tz;
    int64_t me;
} ctx;

ctx cal_http_ctx(http_req *r);
/* 503 with the database's message logged (not shown to the client). */
void cal_http_db_error(ctx *c);

#endif
