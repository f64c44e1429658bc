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
    /* A supervisor that restarts unhealthy nodes restarts this one. */
    if (store_disk_failed(db)) {
        http_send_error(r, 503, "disk_failed", NULL, STORE_DISK_FAILED_MSG);
        return;
    }
    http_send_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

/* The write guard: once a sync to disk failed (store_disk_failed), every
 * request that may write is 503 with the same words as /healthz, rather
 * than each handler's "the database did not answer; try again". */
static bool refuse_writes(void *arg, int loop, http_err *e)
{
    app *a = arg;
    if (!store_disk_failed(store_pool_at(a->dbs, loop))) return false;
    http_err_set(e, 503, "disk_failed", NULL, STORE_DISK_FAILED_MSG);
    return true;
}

static double gauge_users(void *arg, int loop)
{
    app *a = arg;
    int64_t n = 0;
    return users_count(store_pool_at(a->dbs, loop), &n) == USERS_OK ? (double)n : -1;
}

/* chime_reminders_suppressed_total{reason=...}: arg is the counter. */
static double gauge_suppressed(void *arg, int loop)
{
    (void)loop;
    return (double)atomic_load_explicit((_Atomic uint64_t *)arg, memory_order_relaxed);
}

static void suppressed_gauges(app *a, http_server *s)
{
    for (int r = 0; r < NOTIFY_SUPPRESS_N; r++) {
        char name[64];
        snprintf(name, sizeof name, "chime_reminders_suppressed_total{reason=\"%s\"}", notify_reason_name(r));
        http_gauge(s, name, "What the flood bounds held back on this node: instances a series' reminder skipped for "
                   "--reminder-min-interval, deliveries dropped for a budget, read inbox rows pruned for the cap.",
                   gauge_suppressed, &a->suppressed.suppressed[r]);
    }
}

/* The web app's files; a server without them still serves the API. */
static void web_setup(app *a, http_server *s)
{
    char root[1024], err[512];
    if (strcmp(a->cfg.web_root, "off") == 0) return;
    if (a->cfg.web_root[0]) snprintf(root, sizeof root, "%s", a->cfg.web_root);
    else if (!web_root_find(root, sizeof root)) {
        log_warn("web: no web/ directory found; the web app is off (see --web-root)");
        return;
    }
    if (!(a->web = web_site_load(root, err, sizeof err))) log_error("web: %s; the web app is off", err);
    else log_info("web: serving %zu files from %s", a->web->n, root);
    web_http_register(a->web, s);
}

/* The chat and its WebSocket gateway: the hub hooks into the loops. */
static int chat_setup(app *a, http_server *s)
{
    chat_opts co = {.dbs = a->dbs, .db_url = a->cfg.db, .node_id = a->node_id,
                    .group_max_members = a->cfg.group_max_members, .retention_days = a->cfg.sync_retention_days,
                    .rate = a->cfg.chat_rate, .lease_ttl_ms = a->cfg.lease_ttl};
    if (!(a->chat = chat_new(&co))) return -1;
    ws_hub_opts ho = {.ping_ms = a->cfg.ws_ping, .max_per_user = (int)a->cfg.ws_max_per_user, .max_frame = 65536};
    ws_hub_events ev = chat_ws_events(a->chat);
    if (!(a->hub = ws_hub_new(s, &ho, &ev)) || !(a->push = push_new(a->hub))) return -1;
    chat_attach(a->chat, a->hub, a->push);
    chat_register(a->chat, s);
    return 0;
}

static int users_start(app *a)
{
    users_http_opts o = {.dbs = a->dbs, .session_ttl_s = a->cfg.session_ttl, .signin_limit = a->cfg.signin_limit,
                         .signin_ip_limit = a->cfg.signin_ip_limit, .signin_window_s = a->cfg.signin_window,
                         .password_ops = a->cfg.password_ops, .password_mem_kib = a->cfg.password_mem,
                         .admin_email = a->cfg.admin_email, .on_signin = feed_on_signin, .on_signin_arg = &a->feed};
    if (!(a->sessions = users_sessions_new(USERS_SESSIONS_SLOTS, a->cfg.session_cache))) return -1;
    o.sessions = a->sessions;
    a->users = users_http_new(&o);
    return a->users ? 0 : -1;
}

/* The hot list: its routes, and its counts on the feed's posts. */
static int hot_setup(app *a, http_server *s)
{
    char err[200] = "out of memory";
    hot_opts o = {.db_url = a->cfg.db, .redis_host = a->redis_host[0] ? a->redis_host : NULL,
                  .redis_port = a->redis_port, .node_id = a->node_id, .dbs = a->dbs,
                  .feed = &a->feed, .window_ms = a->cfg.hot_window_days * 86400000, .every_ms = a->cfg.hot_every,
                  .size = (int)a->cfg.hot_size};
    if (hot_rank_config(a->cfg.hot_formula, a->cfg.hot_weights, a->cfg.hot_gravity, &o.rank, err, sizeof err) != 0 ||
        !(a->hot = hot_new(&o, http_server_loops(s)))) {
        log_error("cannot set up the hot list: %s", err);
        return -1;
    }
    hot_register(a->hot, s);
    a->feed.decorate = hot_decorate_posts;
    a->feed.decorate_arg = a->hot;
    return 0;
}

int app_hot_start(app *a)
{
    return hot_start(a->hot);
}

/* --redis, looked up once for the bus and the hot list. -1 (logged) when
 * it is not redis://HOST:PORT. */
static int redis_resolve(app *a)
{
    a->redis_host[0] = '\0';
    if (!a->cfg.redis[0]) return 0;
    char *host = NULL;
    if (bus_redis_address(a->cfg.redis, &host, &a->redis_port) != 0) {
        log_error("--redis '%s' is not redis://HOST:PORT", a->cfg.redis);
        return -1;
    }
    snprintf(a->redis_host, sizeof a->redis_host, "%s", host);
    free(host);
    return 0;
}

http_server *app_http_new(app *a)
{
    if (redis_resolve(a) != 0) return NULL;
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
    http_server_set_write_guard(s, refuse_writes, a);
    web_setup(a, s);
    http_gauge(s, "chime_users_registered", "Registered user accounts.", gauge_users, a);
    suppressed_gauges(a, s);
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
    if (chat_setup(a, s) != 0) {
        log_error("cannot set up the chat (out of memory)");
        return NULL;
    }
    a->feed.dbs = a->dbs;
    if (!(a->feed.unread = feed_unread_memo_new(FEED_UNREAD_MEMO_SLOTS))) return NULL;
    if (!(a->feed.publish = rate_new((double)a->cfg.post_rate / 60.0, (double)a->cfg.post_rate))) return NULL;
    a->feed.lim = (feed_limits){.active_ms = a->cfg.feed_active_days * 86400000,
                                .push_max_followers = a->cfg.feed_push_max_followers,
                                .timeline_max = a->cfg.feed_timeline_max};
    feed_http_register(&a->feed, s);
    return hot_setup(a, s) == 0 ? s : NULL;
}

void app_http_free(app *a)
{
    http_server_free(a->http); /* stops the loops: their connections close */
    a->http = NULL;
    web_site_free(a->web);
    a->web = NULL;
    ws_hub_free(a->hub);
    a->hub = NULL;
    push_free(a->push);
    a->push = NULL;
    chat_free(a->chat);
    a->chat = NULL;
    users_http_free(a->users);
    a->users = NULL;
    users_sessions_free(a->sessions);
    feed_unread_memo_free(a->feed.unread); /* after the fan-out, which stopped first */
    a->feed.unread = NULL;
    a->sessions = NULL;
    hot_free(a->hot); /* after the server: its parked views are answered */
    a->hot = NULL;
    rate_free(a->feed.publish);
    a->feed.publish = NULL;
    store_pool_free(a->dbs);
    a->dbs = NULL;
}

int app_identity_claim(app *a)
{
    char err[300];
    a->identity = node_identity_claim(a->cfg.db, a->cfg.node_id, err, sizeof err);
    if (!a->identity) {
        log_error("%s", err);
        return -1;
    }
    snprintf(a->node_id, sizeof a->node_id, "%s", node_identity_id(a->identity));
    /* Before anyone can connect: what a dead incarnation of this id left
     * (its WebSockets' presence) is not true of this process. */
    store *db = store_open(a->cfg.db, err, sizeof err);
    if (!db || chat_forget_node(db, a->node_id) != STORE_OK) {
        log_error("cannot clear this node's old presence: %s", db ? store_errmsg(db) : err);
        store_close(db);
        app_identity_release(a);
        return -1;
    }
    store_close(db);
    return 0;
}

void app_identity_release(app *a)
{
    node_identity_release(a->identity);
    a->identity = NULL;
}

/* Every heartbeat: the id's lock still ours (see identity.h). */
static void identity_check(void *arg)
{
    app *a = arg;
    char err[300];
    if (node_identity_keep(a->identity, err, sizeof err) != 0) log_error("%s", err);
}

static int register_jobs(app *a)
{
    char err[256];
    a->cleanup.signin_window_ms = a->cfg.signin_window * 1000;
    jobs_def cleanup = {.name = "cleanup", .schedule = "0 */10 * * * *", .time_zone = "UTC",
                        .handler = users_cleanup_job, .arg = &a->cleanup, .enabled = true,
                        .misfire = JOBS_MISFIRE_RUN_ONCE, .max_run_ms = 5 * 60000};
    if (jobs_register(a->jobs, &cleanup, err, sizeof err) != 0) goto fail;
    a->chat_cleanup = (chat_cleanup_opts){.retention_ms = a->cfg.sync_retention_days * 86400000,
                                          .dead_after_ms = 4 * a->cfg.lease_ttl, .tail = chat_tail_of(a->chat)};
    jobs_def chat = {.name = "chat.cleanup", .schedule = "30 * * * * *", .time_zone = "UTC",
                     .handler = chat_cleanup_job, .arg = &a->chat_cleanup, .enabled = true,
                     .misfire = JOBS_MISFIRE_RUN_ONCE, .max_run_ms = 5 * 60000};
    if (jobs_register(a->jobs, &chat, err, sizeof err) != 0) goto fail;
    a->notify_cleanup = (notify_cleanup_opts){.inbox_max = a->cfg.inbox_max_per_user,
                                               .keep_ms = a->cfg.deliveries_keep_days * 86400000,
                                               .counters = &a->suppressed};
    jobs_def inbox = {.name = "notify.cleanup", .schedule = "15 */10 * * * *", .time_zone = "UTC",
                      .handler = notify_cleanup_job, .arg = &a->notify_cleanup, .enabled = true,
                      .misfire = JOBS_MISFIRE_RUN_ONCE, .max_run_ms = 5 * 60000};
    if (jobs_register(a->jobs, &inbox, err, sizeof err) != 0) goto fail;
    a->caldav_prune.ttl_ms = a->cfg.caldav_sync_ttl;
    jobs_def prune = {.name = "caldav-tombstones", .schedule = "0 20 * * * *", .time_zone = "UTC",
                      .handler = caldav_prune_job, .arg = &a->caldav_prune, .enabled = true,
                      .misfire = JOBS_MISFIRE_RUN_ONCE, .max_run_ms = 5 * 60000};
    if (jobs_register(a->jobs, &prune, err, sizeof err) != 0) goto fail;
    if (hot_register_job(a->hot, a->jobs, err, sizeof err) != 0) goto fail;
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
                             .runners = (int)a->cfg.job_runners, .on_beat = identity_check, .beat_arg = a};
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

/* Reminders fired into the inbox of someone online: a "reminder" frame
 * to their devices (the notify room's hook, the chat's presence and the
 * push channel, joined here). */
static void push_reminders(void *arg, const notify_inbox_item *items, size_t n)
{
    app *a = arg;
    for (size_t i = 0; i < n; i++) {
        if (!chat_online_anywhere(a->chat, items[i].user_id)) continue;
        json_t *frame = json_pack("{s:s}", "type", "reminder"), *item = notify_inbox_item_json(&items[i]);
        char *text = frame && item && json_object_update(frame, item) == 0 ? json_dumps(frame, JSON_COMPACT) : NULL;
        if (text) push_frame(a->push, items[i].user_id, text, strlen(text));
        free(text);
        json_decref(frame);
        json_decref(item);
    }
}

int app_notify_start(app *a)
{
    notify_opts o = {.db_url = a->cfg.db, .node_id = a->node_id, .tz = a->tz, .shards = (int)a->cfg.reminder_shards,
                     .groups = 64, .window_ms = a->cfg.reminder_window, .grace_ms = a->cfg.reminder_grace,
                     .late_policy = strcmp(a->cfg.reminder_late_policy, "skip") == 0 ? NOTIFY_LATE_SKIP
                                                                                    : NOTIFY_LATE_DELIVER,
                     .workers = (int)a->cfg.delivery_workers, .max_attempts = (int)a->cfg.delivery_max_attempts,
                     .backoff_ms = a->cfg.delivery_backoff, .lease_ttl_ms = a->cfg.lease_ttl,
                     .heartbeat_ms = a->cfg.lease_heartbeat, .channels = a->channels,
                     .on_inbox = push_reminders, .on_inbox_arg = a,
                     .min_interval_ms = a->cfg.reminder_min_interval, .budget_hour = a->cfg.deliveries_per_user_hour,
                     .budget_day = a->cfg.deliveries_per_user_day, .counters = &a->suppressed};
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

/* The feed's news for online followers: through the chat's presence and
 * the push channel. */
static bool feed_online(void *arg, int64_t user_id)
{
    app *a = arg;
    return chat_online_anywhere(a->chat, user_id);
}

static void feed_push(void *arg, int64_t user_id, const char *frame, size_t len)
{
    app *a = arg;
    push_frame(a->push, user_id, frame, len);
}

int app_feed_start(app *a)
{
    a->ids = idgen_start(a->cfg.db, a->node_id, a->cfg.lease_ttl, a->cfg.lease_heartbeat);
    feed_fanout_opts fo = {.db_url = a->cfg.db, .node_id = a->node_id, .lim = a->feed.lim,
                           .lease_ttl_ms = a->cfg.lease_ttl, .heartbeat_ms = a->cfg.lease_heartbeat,
                           .online = feed_online, .push = feed_push, .arg = a, .memo = a->feed.unread};
    a->fanout = a->ids ? feed_fanout_start(&fo) : NULL;
    a->feed.ids = a->ids;
    a->feed.fanout = a->fanout;
    return a->fanout ? 0 : -1;
}

void app_feed_stop(app *a)
{
    feed_fanout_stop(a->fanout);
    a->fanout = NULL;
    idgen_stop(a->ids);
    a->ids = NULL;
}

/* A hint from another node: a sign-out, or a push. */
static void app_on_bus(void *arg, const char *payload, size_t len)
{
    app *a = arg;
    if (!users_sessions_on_hint(a->sessions, payload, len)) push_on_bus(a->push, payload, len);
}

int app_chat_start(app *a)
{
    bus_opts bo = {.db_url = a->cfg.db, .redis_host = a->redis_host[0] ? a->redis_host : NULL,
                   .redis_port = a->redis_port, .node_id = a->node_id};
    if (!(a->bus = bus_new(&bo, app_on_bus, a)) || bus_start(a->bus) != 0) {
        log_error("cannot start the bus between nodes");
        return -1;
    }
    push_set_bus(a->push, a->bus);
    if (a->users) users_http_set_bus(a->users, a->bus);
    if (chat_start(a->chat, a->ids) != 0) {
        log_error("cannot start the chat's writer");
        return -1;
    }
    return 0;
}

void app_chat_stop(app *a)
{
    if (a->chat) chat_stop(a->chat);
    if (a->users) users_http_set_bus(a->users, NULL);
    bus_free(a->bus);
    a->bus = NULL;
    if (a->push) push_set_bus(a->push, NULL);
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
