/* config.h -- chime's settings: flags over CHIME_* environment variables over
 * a config file over defaults. One table (config.c) describes every option,
 * so --help, the environment names and the file keys never drift apart. */
#ifndef CHIME_CONFIG_H
#define CHIME_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct chime_config {
    char listen[256];       /* HOST:PORT */
    char db[1024];          /* sqlite:PATH or postgresql://... */
    char config_file[1024];
    char access_log[1024];  /* "-" = stderr, "off", or a file path */
    char web_root[1024];    /* the web app's files: "" = found (web_root_find), "off" */
    char log_level[16];
    char admin_email[256];
    int64_t threads;        /* event loops; 0 = one per core */
    int64_t max_body;       /* bytes */
    int64_t session_ttl;    /* seconds */
    int64_t session_cache;  /* ms a checked token is trusted (0: not at all) */
    int64_t signin_limit;   /* failed sign-ins per account per window */
    int64_t signin_ip_limit;/* failed sign-ins per client address per window */
    int64_t signin_window;  /* seconds */
    int64_t password_ops;   /* argon2id passes */
    int64_t password_mem;   /* argon2id memory, KiB */
    int64_t workers;        /* background worker threads */
    int64_t lease_heartbeat;/* ms between lease renewals */
    int64_t lease_ttl;      /* ms a lease lasts unless renewed */
    int64_t job_runners;    /* threads running due jobs */
    char node_id[64];       /* "" = made up at start */
    int64_t test_tick_job;  /* -1 off; else ms of pretend work per tick */
    int64_t bench_jobs;     /* bench/jobs: this many no-op jobs ... */
    int64_t bench_every;    /* ... each firing every this many seconds */
    /* reminders (src/notify) */
    int64_t reminder_grace;       /* ms late beyond which the late policy applies */
    char reminder_late_policy[16];/* deliver | skip */
    int64_t reminder_shards;
    int64_t reminder_window;      /* ms ahead a scan claims */
    int64_t reminder_min_interval;/* ms: a series' reminder fires at most this often (0: off) */
    int64_t deliveries_per_user_hour; /* budget per recipient (0: none) */
    int64_t deliveries_per_user_day;
    int64_t inbox_max_per_user;   /* inbox rows kept per user (0: no cap) */
    int64_t deliveries_keep_days; /* finished deliveries kept (0: forever) */
    int64_t delivery_workers;
    int64_t delivery_max_attempts;
    int64_t delivery_backoff;     /* ms before the first retry */
    char smtp_url[512];     /* "" = email disabled */
    char smtp_from[256];
    int64_t webhook_allow_private; /* 0/1: webhooks may reach private networks */
    int64_t webhook_timeout;/* ms per delivery attempt */
    int64_t send_max_in_flight; /* webhook/email sends outstanding at once */
    /* chat and the WebSocket gateway (src/chat, src/http/ws.c) */
    char redis[512];              /* "" = hints between nodes through PostgreSQL */
    int64_t group_max_members;
    int64_t sync_retention_days;
    int64_t ws_ping;              /* ms between pings */
    int64_t ws_max_per_user;      /* connections a user may have on a node */
    int64_t chat_rate;            /* messages a user may send per second */
    /* the feed (src/feed) */
    int64_t feed_active_days;
    int64_t feed_push_max_followers;
    int64_t feed_timeline_max;
    int64_t post_rate;            /* posts, comments and shares a user may publish a minute */
    int64_t caldav_sync_ttl;    /* ms a CalDAV tombstone is kept */
    /* the hot list (src/hot); formula, weights and gravity are checked by
     * hot_rank_config (main.c) */
    char hot_formula[16];         /* hn | reddit */
    char hot_weights[128];        /* "views=1,likes=5,comments=10,shares=20" */
    char hot_gravity[32];         /* HN's gravity, a decimal */
    int64_t hot_window_days;
    int64_t hot_size;             /* K, the list's length */
    int64_t hot_every;            /* ms between recomputes */
} chime_config;

void config_defaults(chime_config *c);
/* Applies a config file, then the environment, then argv (flags after the
 * verb). Returns 0, 1 when --help was printed, or -1 after printing an error
 * that names the option. */
int config_load(chime_config *c, const char *verb, int argc, char **argv);
void config_print_help(const char *verb);

#endif
