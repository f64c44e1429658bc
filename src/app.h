/* app.h -- the running server: its settings and the pieces app.c wires
 * together. Only main.c includes this; no domain does (each gets what it
 * needs through its own context, made here). */
#ifndef CHIME_APP_H
#define CHIME_APP_H

#include "caldav/caldav_http.h"
#include "calendar/cal_http.h"
#include "chat/chat_cleanup.h"
#include "chat/chat_http.h"
#include "cluster/bus.h"
#include "cluster/identity.h"
#include "deliver/push.h"
#include "feed/feed_http.h"
#include "config.h"
#include "http/server.h"
#include "hot/hot.h"
#include "http/ws.h"
#include "jobs/jobs.h"
#include "jobs/jobs_http.h"
#include "notify/notify.h"
#include "notify/notify_cleanup.h"
#include "notify/notify_http.h"
#include "notify/webhooks_http.h"
#include "store/store_pool.h"
#include "time/tz.h"
#include "users/users_cleanup.h"
#include "users/users_http.h"
#include "web/web.h"

struct channels;

typedef struct app {
    chime_config cfg;
    tz_db *tz;         /* zones, shared by every thread */
    http_server *http;
    web_site *web;     /* the web app's files, read at start */
    store_pool *dbs;   /* one connection per event loop */
    /* The domains' HTTP contexts (app_http_new makes them). */
    users_http *users;
    users_sessions *sessions; /* the bearer tokens checked lately */
    cal_http cal;
    caldav_http caldav;
    jobs_http jobs_routes;
    notify_http inbox;
    webhooks_http webhooks;
    notify_sync_opts sync; /* the calendar's change listener's */
    chat_service *chat;
    feed_http feed;
    idgen *ids;           /* post ids (feed) */
    feed_fanout *fanout;
    hot_service *hot;     /* the hot list (made with the routes) */
    /* The WebSocket gateway: the hub (connections by user, on the loops),
     * the push channel through it, and the bus between nodes. */
    ws_hub *hub;
    push *push;
    bus *bus;
    /* This node's id and the lock that proves it ours (identity.h). */
    node_identity *identity;
    char node_id[64];
    /* --redis as an address, looked up once at start (app_http_new), for
     * the bus and the hot list; redis_host[0] == 0 without --redis. */
    char redis_host[256];
    int redis_port;
    /* The job scheduler and what it borrows; app_jobs_start makes them. */
    jobs_registry *jobs;
    jobs_scheduler *scheduler;
    users_cleanup_opts cleanup;
    chat_cleanup_opts chat_cleanup;
    notify_cleanup_opts notify_cleanup;
    caldav_prune_opts caldav_prune;
    /* Outbound webhooks and email; app_channels_start makes it. */
    struct channels *channels;
    /* Reminders: the scanner and delivery workers (they send through
     * channels). */
    notify_engine *notify;
    /* What the flood bounds held back (the engine and notify.cleanup
     * count, /metrics reads): the app's, so it outlives both. */
    notify_counters suppressed;
} app;

/* Claims the node's id (--node-id, or the first free "<host>-N") into
 * a->node_id; first, since every lease and presence row is named by it.
 * 0, or -1 (logged) when the id is held by a live node. Released last,
 * after every lease it named. */
int app_identity_claim(app *a);
void app_identity_release(app *a);

/* Builds the server with every route and the domains' contexts, ready for
 * http_server_start (after app_channels_start: webhook tests send through
 * the channels). NULL on failure (logged). */
http_server *app_http_new(app *a);
/* Frees the server (stopping it first) and the domains' contexts. */
void app_http_free(app *a);

/* Registers the jobs and starts the scheduler on its own threads; call
 * after the HTTP server has started (the node's address includes its
 * port). Returns 0 or -1 (logged). */
int app_jobs_start(app *a);
/* Stops the scheduler, releasing every lease this node holds, and frees
 * what app_jobs_start made. Safe to call when it was not started. */
void app_jobs_stop(app *a);

/* Starts the reminder engine (after app_jobs_start: it uses the node id
 * and the node registry). Returns 0 or -1 (logged). */
int app_notify_start(app *a);
/* Stops it, releasing its leases; safe when it was not started. */
void app_notify_stop(app *a);
/* Starts the feed's id generator and fan-out engine (after app_identity,
 * before the server takes requests). 0 or -1 (logged). */
int app_feed_start(app *a);
void app_feed_stop(app *a);
/* Preloads the hot list and starts its threads (after app_feed_start,
 * before the server takes requests: a node is healthy only with its list
 * loaded). 0 or -1 (logged). app_http_free stops them. */
int app_hot_start(app *a);

/* Starts the bus between nodes and the chat's writer (after
 * app_jobs_start: presence rows carry the node id). 0 or -1 (logged). */
int app_chat_start(app *a);
/* After the HTTP server has stopped (its parked requests answered). */
void app_chat_stop(app *a);

/* Starts the outbound delivery channels from the settings (--smtp-url,
 * --smtp-from, --webhook-allow-private, --webhook-timeout). Returns 0 or
 * -1 (logged). app_channels_stop waits for sends in flight; call it after
 * everything that sends has stopped. */
int app_channels_start(app *a);
void app_channels_stop(app *a);

#endif
