/* app.h -- the running server's state: settings and shared pieces (app),
 * and what each event-loop thread owns (app_thread: its own database
 * connection). Handlers reach both through http_req.thread. */
#ifndef CHIME_APP_H
#define CHIME_APP_H

#include "config.h"
#include "http/server.h"
#include "store/store.h"
#include "time/tz.h"
#include "users/users.h"

typedef struct app {
    chime_config cfg;
    http_server *http;
    tz_db *tz; /* zones, shared by every thread */
    /* A hash of a random password: sign-ins for unknown emails verify
     * against it so they take as long as real ones. */
    char dummy_hash[USERS_HASH_MAX];
} app;

typedef struct app_thread {
    app *app;
    store *db;
    int index;
} app_thread;

/* Builds the server with every route, ready for http_server_start. */
http_server *app_http_new(app *a);

#endif
