/* cal_http.h -- the calendar's HTTP context, shared by its handler files
 * (calendar_http.c: calendars, events, instances, RSVP, free/busy;
 * ical_http.c: iCalendar export, import and feeds).
 *
 * The calendar announces every committed write through cal_changes (the
 * shape of Redis's signalModifiedKey): the wiring subscribes the
 * reminders' recompute now, and chat, feed and push notifications can
 * subscribe the same way. A listener runs on the request's loop thread,
 * with that loop's connection, after the request was answered; it must
 * not fail the request (the reminders' scanner drains what a listener
 * left undone). */
#ifndef CHIME_CAL_HTTP_H
#define CHIME_CAL_HTTP_H

#include <stdint.h>

#include "http/server.h"
#include "store/store.h"
#include "store/store_pool.h"
#include "time/tz.h"

#define CAL_MAX_LISTENERS 8

typedef void (*cal_change_fn)(void *arg, store *db);

typedef struct cal_changes {
    struct {
        cal_change_fn fn;
        void *arg;
    } l[CAL_MAX_LISTENERS];
    int n;
} cal_changes;

/* Subscribes fn(arg, db) to every committed calendar write. Before the
 * server starts. 0, or -1 when full. */
int cal_on_change(cal_changes *c, cal_change_fn fn, void *arg);
/* Tells every listener, in the order they subscribed. */
void cal_changed(const cal_changes *c, store *db);

/* The routes' context; the caller owns it for the server's life. */
typedef struct cal_http {
    store_pool *dbs;     /* borrowed */
    tz_db *tz;           /* borrowed */
    cal_changes changes; /* who hears of writes */
} cal_http;

/* Adds every calendar route (calendar_http.c, ical_http.c, explain_http.c). */
void calendar_http_register(cal_http *c, http_server *s);
void ical_http_register(cal_http *c, http_server *s);
void explain_http_register(cal_http *c, http_server *s);

/* One request as the handlers see it: who asks, on which connection. */
typedef struct cal_req {
    http_req *r;
    cal_http *cal;
    store *db;
    tz_db *tz;
    int64_t me;
} cal_req;

cal_req cal_req_of(cal_http *c, http_req *r);
/* 503 with the database's message logged (not shown to the client). */
void cal_req_db_error(cal_req *c);

#endif
