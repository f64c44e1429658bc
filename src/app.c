/* app.c -- wiring only: makes each domain's context from the settings,
 * connects the domains' hooks (the calendar's writes to the reminders'
 * recompute), adds their routes and jobs, and gives each event loop its
 * own database connection. */
#include "app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "deliver/channels.h"
#include "jobs/builtin.h"
#include "users/users.h"

/* Each loop opens its connection on its own thread, before it accepts. */
static void loop_db_open(void *arg, int loop)
{
    app *a = arg;
    char err[256];
    if (store_pool_open(a->dbs, loop, err, sizeof err) != 0) {
        /* The main thread opened the same database a moment ago, so this
         * is exceptional; a loop without a database cannot serve. */
        log_error("loop %d: cannot open the database: %s", loop, err);
        exit(1);
    }
}

static void loop_db_close(void *arg, int loop)
{
    app *a = arg;
    store_pool_close(a->dbs, loop);
}

static void handle_healthz(http_req *r, void *arg)
{
    app *a = arg;
    store *db = store_pool_at(a->dbs, r->loop);
    int64_t one;
    if (store_query_int64(db, "SELECT 1", &one) != STORE_ROW) {
        http_send_error(r, 503, "unavailable", NULL, "database: %s", store_errmsg(db));
        return;
    }
    http_send_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static double gauge_users(void *arg, int loop)
{
    app *a = arg;
    int64_t n = 0;
    return users_count(store_pool_at(a->dbs, loop), &n) == USERS_OK ? (double)n : -1;
}

static int users_start(app *a)
{
    users_http_opts o = {.dbs = a->dbs, .session_ttl_s = a->cfg.session_ttl, .signin_limit = a->cfg.signin_limit,
                         .signin_ip_limit = a->cfg.signin_ip_limit, .signin_window_s = a->cfg.signin_window,
                         .password_ops = a->cfg.password_ops, .password_mem_kib = a->cfg.password_mem,
                         .admin_email = a->cfg.admin_email};
    a->users = users_http_new(&o);
    return a->users ? 0 : -1;
}

http_server *app_http_new(app *a)
{
    http_server_opts opts = {
        .listen = a->cfg.listen,
        .threads = (int)a->cfg.threads,
        .workers = (int)a->cfg.workers,
        .max_body = (size_t)a->cfg.max_body,
        .access_log = a->cfg.access_log,
    };
    http_server *s = http_server_new(&opts);
    if (!s || !(a->dbs = store_pool_new(a->cfg.db, http_server_loops(s))) || users_start(a) != 0) {
        log_error("cannot set up the server (out of memory)");
        http_server_free(s);
        return NULL;
    }
    a->http = s;
    http_server_on_loop(s, loop_db_open, loop_db_close, a);
    http_route(s, HTTP_GET, "/healthz", handle_healthz, a, 0);
    http_gauge(s, "chime_users_registered", "Registered user accounts.", gauge_users, a);
    users_http_register(a->users, s);
    a->sync = (notify_sync_opts){.tz = a->tz, .shards = (int)a->cfg.reminder_shards};
    a->cal = (cal_http){.dbs = a->dbs, .tz = a->tz};
    cal_on_change(&a->cal.changes, notify_on_calendar_change, &a->sync);
    calendar_http_register(&a->cal, s);
    caldav_http_init();
    a->caldav = (caldav_http){.cal = &a->cal, .max_resource = a->cfg.max_body};
    caldav_http_register(&a->caldav, s);
    a->jobs_routes = (jobs_http){.dbs = a->dbs, .lease_ttl_ms = a->cfg.lease_ttl};
    jobs_http_register(&a->jobs_routes, s);
    a->inbox = (notify_http){.dbs = a->dbs};
    notify_http_register(&a->inbox, s);
    a->webhooks = (webhooks_http){.dbs = a->dbs, .channels = a->channels};
    webhooks_http_register(&a->webhooks, s);
    return s;
}

void app_http_free(app *a)
{
    http_server_free(a->http); /* stops the loops: their connections close */
    a->http = NULL;
    users_http_free(a->users);
    a->users = NULL;
    store_pool_free(a->dbs);
    a->dbs = NULL;
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
                        .handler = users_cleanup_job, .arg = &a->cleanup, .enabled = true,
                        .misfire = JOBS_MISFIRE_RUN_ONCE, .max_run_ms = 5 * 60000};
    if (jobs_register(a->jobs, &cleanup, err, sizeof err) != 0) goto fail;
    a->caldav_prune.ttl_ms = a->cfg.caldav_sync_ttl;
    jobs_def prune = {.name = "caldav-tombstones", .schedule = "0 20 * * * *", .time_zone = "UTC",
                      .handler = caldav_prune_job, .arg = &a->caldav_prune, .enabled = true,
                      .misfire = JOBS_MISFIRE_RUN_ONCE, .max_run_ms = 5 * 60000};
    if (jobs_register(a->jobs, &prune, err, sizeof err) != 0) goto fail;
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
