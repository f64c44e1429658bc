/* app.c -- wires the domains' routes into the server and gives each loop
 * thread its own database connection. */
#include "app.h"

#include <stdio.h>
#include <stdlib.h>

#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "calendar/calendar_http.h"
#include "jobs/jobs_http.h"
#include "notify/notify_http.h"
#include "notify/webhooks_http.h"
#include "users/users_http.h"

static void *app_thread_init(void *p, int index)
{
    app *a = p;
    app_thread *t = calloc(1, sizeof *t);
    char err[256];
    if (!t) abort();
    t->app = a;
    t->index = index;
    t->db = store_open(a->cfg.db, err, sizeof err);
    if (!t->db) {
        /* The main thread opened the same database a moment ago, so this
         * is exceptional; a loop without a database cannot serve. */
        log_error("loop %d: cannot open the database: %s", index, err);
        exit(1);
    }
    return t;
}

static void app_thread_fini(void *p)
{
    app_thread *t = p;
    store_close(t->db);
    free(t);
}

static void handle_healthz(http_req *r)
{
    app_thread *t = r->thread;
    int64_t one;
    if (store_query_int64(t->db, "SELECT 1", &one) != STORE_ROW) {
        http_send_error(r, 503, "unavailable", NULL, "database: %s", store_errmsg(t->db));
        return;
    }
    http_send_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static double gauge_users(void *state)
{
    app_thread *t = state;
    int64_t n = 0;
    return users_count(t->db, &n) == USERS_OK ? (double)n : -1;
}

http_server *app_http_new(app *a)
{
    http_server_opts opts = {
        .listen = a->cfg.listen,
        .threads = (int)a->cfg.threads,
        .workers = (int)a->cfg.workers,
        .max_body = (size_t)a->cfg.max_body,
        .access_log = a->cfg.access_log,
        .app = a,
        .thread_init = app_thread_init,
        .thread_fini = app_thread_fini,
        .authenticate = users_http_authenticate,
    };
    http_server *s = http_server_new(&opts);
    if (!s) return NULL;
    http_route(s, HTTP_GET, "/healthz", handle_healthz, 0);
    http_gauge(s, "chime_users_registered", "Registered user accounts.", gauge_users);
    users_http_register(s);
    calendar_http_register(s);
    jobs_http_register(s);
    notify_http_register(s);
    webhooks_http_register(s);
    return s;
}

/* host-pid-random: readable in logs, unique among live processes. */
static void make_node_id(char *buf, size_t size)
{
    char host[32] = "node";
    unsigned char raw[3];
    char hex[7];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    base_random(raw, sizeof raw);
    base_hex(raw, sizeof raw, hex);
    snprintf(buf, size, "%s-%ld-%s", host, (long)getpid(), hex);
}

static int register_jobs(app *a)
{
    char err[256];
    a->cleanup.signin_window_ms = a->cfg.signin_window * 1000;
    jobs_def cleanup = {.name = "cleanup", .schedule = "0 */10 * * * *", .time_zone = "UTC",
                        .handler = jobs_cleanup_handler, .arg = &a->cleanup, .enabled = true,
                        .misfire = JOBS_MISFIRE_RUN_ONCE, .max_run_ms = 5 * 60000};
    if (jobs_register(a->jobs, &cleanup, err, sizeof err) != 0) goto fail;
    if (a->cfg.test_tick_job >= 0) {
        /* Late by under a minute: every missed tick is run in turn. */
        jobs_def tick = {.name = "tick", .schedule = "* * * * * *", .time_zone = "UTC",
                         .handler = jobs_tick_handler, .arg = &a->cfg.test_tick_job, .enabled = true,
                         .misfire = JOBS_MISFIRE_SKIP, .misfire_after_ms = 60000};
        if (jobs_register(a->jobs, &tick, err, sizeof err) != 0) goto fail;
    }
    /* Spread over the seconds of the period, as many users' jobs would be. */
    for (int64_t i = 0; i < a->cfg.bench_jobs; i++) {
        char name[32], sched[64];
        snprintf(name, sizeof name, "bench-%05lld", (long long)i);
        snprintf(sched, sizeof sched, "%lld/%lld * * * * *", (long long)(i % a->cfg.bench_every),
                 (long long)a->cfg.bench_every);
        jobs_def b = {.name = name, .schedule = sched, .handler = jobs_noop_handler, .enabled = true,
                      .misfire = JOBS_MISFIRE_SKIP};
        if (jobs_register(a->jobs, &b, err, sizeof err) != 0) goto fail;
    }
    return 0;
fail:
    log_error("jobs: %s", err);
    return -1;
}

int app_jobs_start(app *a)
{
    if (a->cfg.node_id[0]) snprintf(a->node_id, sizeof a->node_id, "%s", a->cfg.node_id);
    else make_node_id(a->node_id, sizeof a->node_id);
    a->jobs = jobs_registry_new(a->tz);
    if (!a->jobs || register_jobs(a) != 0) {
        app_jobs_stop(a);
        return -1;
    }
    /* The address other nodes and admins see: the bound port, not 0. */
    char address[300];
    const char *colon = strrchr(a->cfg.listen, ':');
    int hostlen = colon ? (int)(colon - a->cfg.listen) : (int)strlen(a->cfg.listen);
    snprintf(address, sizeof address, "%.*s:%d", hostlen, a->cfg.listen, http_server_port(a->http));
    jobs_scheduler_opts o = {.db_url = a->cfg.db, .node_id = a->node_id, .address = address,
                             .heartbeat_ms = a->cfg.lease_heartbeat, .ttl_ms = a->cfg.lease_ttl,
                             .runners = (int)a->cfg.job_runners};
    a->scheduler = jobs_scheduler_new(a->jobs, &o);
    if (!a->scheduler || jobs_scheduler_start(a->scheduler) != 0) {
        log_error("jobs: cannot start the scheduler");
        app_jobs_stop(a);
        return -1;
    }
    return 0;
}

void app_jobs_stop(app *a)
{
    jobs_scheduler_free(a->scheduler); /* stops it first */
    a->scheduler = NULL;
    jobs_registry_free(a->jobs);
    a->jobs = NULL;
}

int app_notify_start(app *a)
{
    notify_opts o = {.db_url = a->cfg.db, .node_id = a->node_id, .tz = a->tz, .shards = (int)a->cfg.reminder_shards,
                     .groups = 64, .window_ms = a->cfg.reminder_window, .grace_ms = a->cfg.reminder_grace,
                     .late_policy = strcmp(a->cfg.reminder_late_policy, "skip") == 0 ? NOTIFY_LATE_SKIP
                                                                                    : NOTIFY_LATE_DELIVER,
                     .workers = (int)a->cfg.delivery_workers, .max_attempts = (int)a->cfg.delivery_max_attempts,
                     .backoff_ms = a->cfg.delivery_backoff, .lease_ttl_ms = a->cfg.lease_ttl,
                     .heartbeat_ms = a->cfg.lease_heartbeat, .channels = a->channels};
    a->notify = notify_engine_new(&o);
    if (!a->notify || notify_engine_start(a->notify) != 0) {
        app_notify_stop(a);
        return -1;
    }
    return 0;
}

void app_notify_stop(app *a)
{
    notify_engine_free(a->notify); /* waits for its sends; app_channels_stop comes after */
    a->notify = NULL;
}

void app_calendar_changed(app_thread *t)
{
    int done = 0;
    if (notify_sync_dirty(t->db, t->app->tz, (int)t->app->cfg.reminder_shards, 64, &done) != STORE_OK)
        log_warn("reminders not recomputed yet (the scanner will): %s", store_errmsg(t->db));
}
int app_channels_start(app *a)
{
    channels_config cfg = {.smtp_url = a->cfg.smtp_url[0] ? a->cfg.smtp_url : NULL,
                           .smtp_from = a->cfg.smtp_from,
                           .allow_private = a->cfg.webhook_allow_private != 0,
                           .timeout_ms = a->cfg.webhook_timeout,
                           .max_in_flight = (int)a->cfg.send_max_in_flight};
    a->channels = channels_new(&cfg);
    if (!a->channels) return -1;
    if (cfg.allow_private) log_warn("webhooks may reach private networks (--webhook-allow-private)");
    return 0;
}

void app_channels_stop(app *a)
{
    channels_free(a->channels);
    a->channels = NULL;
}
