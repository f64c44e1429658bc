/* app.h -- the running server's state: settings and shared pieces (app),
 * and what each event-loop thread owns (app_thread: its own database
 * connection). Handlers reach both through http_req.thread. */
#ifndef CHIME_APP_H
#define CHIME_APP_H

#include "config.h"
#include "http/server.h"
#include "jobs/builtin.h"
#include "jobs/jobs.h"
#include "notify/channels.h"
#include "notify/notify.h"
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
    /* The job scheduler and what it borrows; app_jobs_start makes them. */
    char node_id[64];
    jobs_registry *jobs;
    jobs_scheduler *scheduler;
    jobs_cleanup_opts cleanup;
    /* Outbound webhooks and email; app_channels_start makes it. */
    channels *channels;
    int webhook_tests; /* test sends holding a worker now (__atomic) */
    /* Reminders: the scanner and delivery workers (they send through
     * channels). */
    notify_engine *notify;
} app;

typedef struct app_thread {
    app *app;
    store *db;
    int index;
} app_thread;

/* Builds the server with every route, ready for http_server_start. */
http_server *app_http_new(app *a);

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
/* Called by the calendar's handlers after a write commits: recomputes the
 * reminders of the events the write marked (the scanner would otherwise
 * do it within a tick). Failures are logged, never the request's. */
void app_calendar_changed(app_thread *t);
/* Starts the outbound delivery channels from the settings (--smtp-url,
 * --smtp-from, --webhook-allow-private, --webhook-timeout). Returns 0 or
 * -1 (logged). app_channels_stop waits for sends in flight; call it after
 * everything that sends has stopped. */
int app_channels_start(app *a);
void app_channels_stop(app *a);

#endif
