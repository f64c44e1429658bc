/* config.c -- option table and the four layers of configuration. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* OPT_MS: seconds, stored as ms. OPT_BOOL: 0/1, and on the command line a
 * bare flag means 1. */
typedef enum { OPT_STR, OPT_INT, OPT_SIZE, OPT_MS, OPT_BOOL } opt_type;

typedef struct opt_def {
    const char *name; /* flag without "--", file key; env is CHIME_ + upper */
    opt_type type;
    size_t offset;
    size_t size;      /* for strings: buffer size */
    int64_t min, max; /* for numbers */
    const char *help;
} opt_def;

#define TEXT(n, f, h) {n, OPT_STR, offsetof(chime_config, f), sizeof(((chime_config *)0)->f), 0, 0, h}
#define NUM(n, f, t, lo, hi, h) {n, t, offsetof(chime_config, f), 0, lo, hi, h}

static const opt_def opts[] = {
    TEXT("listen", listen,
        "address to serve HTTP on, HOST:PORT (default 127.0.0.1:8080)"),
    TEXT("db", db, "database: sqlite:PATH (default sqlite:var/chime.db) or a PostgreSQL URI"),
    TEXT("access-log", access_log,
        "access log: - for stderr (default), off, or a file path"),
    TEXT("web-root", web_root,
        "directory of the web app's files, or off (default: web/ in the working directory "
        "or beside the binary's build/)"),
    TEXT("log-level", log_level,
        "debug, info (default), warn or error"),
    TEXT("admin-email", admin_email,
        "email of the user who is admin (default: the first registered user)"),
    NUM("threads", threads, OPT_INT, 0, 256, "event loops (default 0: one per core)"),
    NUM("max-body", max_body, OPT_SIZE, 1024, (int64_t)1 << 30,
        "largest request body in bytes, k/m suffixes allowed (default 1m)"),
    NUM("session-ttl", session_ttl, OPT_INT, 1, 366LL * 86400, "sign-in session lifetime, seconds (default 2592000)"),
    NUM("session-cache", session_cache, OPT_MS, 0, 3600000,
        "seconds a node trusts a bearer token it checked, fractions allowed; 0 checks every request "
        "in the database (default 60)"),
    NUM("signin-limit", signin_limit, OPT_INT, 1, 1000000, "failed sign-ins per account per window (default 5)"),
    NUM("signin-ip-limit", signin_ip_limit, OPT_INT, 1, 1000000,
        "failed sign-ins per client address per window (default 50)"),
    NUM("signin-window", signin_window, OPT_INT, 1, 86400, "rate-limit window, seconds (default 900)"),
    NUM("password-ops", password_ops, OPT_INT, 1, 10, "argon2id passes (default 2)"),
    NUM("password-mem", password_mem, OPT_INT, 8, 4 * 1024 * 1024, "argon2id memory in KiB (default 65536)"),
    NUM("workers", workers, OPT_INT, 1, 256, "background worker threads (default 2)"),
    NUM("lease-heartbeat", lease_heartbeat, OPT_MS, 10, 3600000,
        "seconds between job lease renewals, fractions or an ms suffix allowed (default 5)"),
    NUM("lease-ttl", lease_ttl, OPT_MS, 30, 36000000,
        "seconds a job lease lasts unless renewed; more than the heartbeat (default 15)"),
    NUM("job-runners", job_runners, OPT_INT, 1, 64, "threads running due jobs, each with a connection (default 2)"),
    TEXT("node-id", node_id,
        "this node's id among the nodes sharing the database (default: made up at start)"),
    NUM("test-tick-job", test_tick_job, OPT_INT, -1, 60000,
        "for tests: run the per-second 'tick' job with N ms of pretend work (default -1: off)"),
    NUM("bench-jobs", bench_jobs, OPT_INT, 0, 100000, "for bench/jobs: register N no-op jobs (default 0)"),
    NUM("bench-every", bench_every, OPT_INT, 1, 60,
        "for bench/jobs: seconds between runs of each, a divisor of 60 (default 60)"),
    NUM("reminder-grace", reminder_grace, OPT_INT, 0, 7LL * 86400000,
        "ms a reminder may be late before --reminder-late-policy applies (default 60000)"),
    TEXT("reminder-late-policy", reminder_late_policy,
        "reminders found later than the grace: deliver (marked late, default) or skip (recorded missed)"),
    NUM("reminder-shards", reminder_shards, OPT_INT, 1, 65536,
        "micro-shards of the reminders, by organizer; keep it fixed for a database (default 1024)"),
    NUM("reminder-window", reminder_window, OPT_INT, 10, 60000,
        "ms ahead that the scanner claims due reminders into its timer (default 2000)"),
    NUM("reminder-min-interval", reminder_min_interval, OPT_MS, 0, 7LL * 86400000,
        "seconds: a series' reminder fires at most this often, skipping instances in between; 0 = off (default 300)"),
    NUM("deliveries-per-user-hour", deliveries_per_user_hour, OPT_INT, 0, 1000000000,
        "deliveries a user may get per hour; more are recorded dropped_quota; 0 = no limit (default 1000)"),
    NUM("deliveries-per-user-day", deliveries_per_user_day, OPT_INT, 0, 1000000000,
        "deliveries a user may get per day (UTC); more are recorded dropped_quota; 0 = no limit (default 10000)"),
    NUM("inbox-max-per-user", inbox_max_per_user, OPT_INT, 0, 1000000000,
        "in-app inbox rows kept per user: the cleanup prunes the oldest read ones; 0 = no cap (default 10000)"),
    NUM("deliveries-keep-days", deliveries_keep_days, OPT_INT, 0, 36500,
        "days a finished delivery (done, dead, missed, cancelled, dropped_quota) is kept before the cleanup "
        "deletes it; 0 = kept forever (default 30)"),
    NUM("delivery-workers", delivery_workers, OPT_INT, 1, 64, "reminder delivery threads (default 2)"),
    NUM("delivery-max-attempts", delivery_max_attempts, OPT_INT, 1, 100,
        "attempts before a delivery is dead-lettered (default 8)"),
    NUM("delivery-backoff", delivery_backoff, OPT_INT, 1, 3600000,
        "ms before the first delivery retry; doubles each attempt, plus jitter (default 1000)"),
    TEXT("smtp-url", smtp_url,
        "SMTP server for reminder email, smtp://HOST:PORT or smtps:// (default: email disabled)"),
    TEXT("smtp-from", smtp_from,
        "From: of reminder email (default \"chime <noreply@localhost>\")"),
    NUM("webhook-allow-private", webhook_allow_private, OPT_BOOL, 0, 1,
        "let webhooks reach loopback, private and link-local addresses (default off)"),
    NUM("webhook-timeout", webhook_timeout, OPT_INT, 100, 600000,
        "milliseconds each webhook or email attempt may take (default 10000)"),
    NUM("send-max-in-flight", send_max_in_flight, OPT_INT, 1, 65536,
        "webhook and email sends outstanding at once; more wait their turn (default 1024)"),
    TEXT("redis", redis, "Redis for hints between nodes (and the hot list), redis://HOST:PORT (default: none)"),
    NUM("group-max-members", group_max_members, OPT_INT, 2, 100000, "members a group conversation may have (default 500)"),
    NUM("sync-retention-days", sync_retention_days, OPT_INT, 1, 3650,
        "days of chat changes kept for /v1/sync; older cursors get 410 (default 30)"),
    NUM("ws-ping", ws_ping, OPT_MS, 100, 3600000,
        "seconds between WebSocket pings; two missed pongs close it (default 25)"),
    NUM("ws-max-per-user", ws_max_per_user, OPT_INT, 1, 1000,
        "WebSocket connections a user may have on a node; the oldest goes (default 10)"),
    NUM("chat-rate", chat_rate, OPT_INT, 1, 100000,
        "chat messages, new conversations and member additions a user may make per second, twice that in a "
        "burst (default 20)"),
    NUM("post-rate", post_rate, OPT_INT, 1, 100000,
        "posts, comments and shares a user may publish a minute, as many in a burst (default 60)"),
    NUM("feed-active-days", feed_active_days, OPT_INT, 1, 3650,
        "days since a sign-in or a timeline read for new posts to be pushed to a user (default 30)"),
    NUM("feed-push-max-followers", feed_push_max_followers, OPT_INT, 0, 1000000000,
        "accounts with more followers are never pushed: merged in at read time (default 10000)"),
    NUM("feed-timeline-max", feed_timeline_max, OPT_INT, 10, 100000,
        "pushed entries kept in a home timeline; reading further pulls (default 800)"),
    NUM("caldav-sync-ttl", caldav_sync_ttl, OPT_MS, 0, 3660LL * 86400000,
        "seconds a deleted event is still reported to CalDAV sync; older sync tokens expire (default 7776000)"),
    TEXT("hot-formula", hot_formula,
        "hot list ranking: hn (Hacker News, default) or reddit"),
    TEXT("hot-weights", hot_weights,
        "points per action, e.g. views=1,likes=5,comments=10,shares=20 (the default)"),
    TEXT("hot-gravity", hot_gravity,
        "the hn formula's gravity, the age exponent (default 1.8)"),
    NUM("hot-window-days", hot_window_days, OPT_INT, 1, 3650, "posts older than this never enter the hot list (default 7)"),
    NUM("hot-size", hot_size, OPT_INT, 1, 1000, "posts in the hot list (default 50)"),
    NUM("hot-every", hot_every, OPT_MS, 100, 86400000,
        "seconds between hot list recomputes, fractions or an ms suffix allowed (default 60)"),
};
#define NOPTS (sizeof opts / sizeof opts[0])

void config_defaults(chime_config *c)
{
    memset(c, 0, sizeof *c);
    strcpy(c->listen, "127.0.0.1:8080");
    strcpy(c->db, "sqlite:var/chime.db");
    strcpy(c->access_log, "-");
    strcpy(c->log_level, "info");
    c->max_body = 1 << 20;
    c->session_ttl = 30 * 86400;
    c->session_cache = 60000;
    c->signin_limit = 5;
    c->signin_ip_limit = 50;
    c->signin_window = 900;
    c->password_ops = 2;
    c->password_mem = 65536;
    c->workers = 2;
    c->lease_heartbeat = 5000;
    c->lease_ttl = 15000;
    c->job_runners = 2;
    c->test_tick_job = -1;
    c->bench_every = 60;
    c->reminder_grace = 60000;
    strcpy(c->reminder_late_policy, "deliver");
    c->reminder_shards = 1024;
    c->reminder_window = 2000;
    c->reminder_min_interval = 300000;
    c->deliveries_per_user_hour = 1000;
    c->deliveries_per_user_day = 10000;
    c->inbox_max_per_user = 10000;
    c->deliveries_keep_days = 30;
    c->delivery_workers = 2;
    c->delivery_max_attempts = 8;
    c->delivery_backoff = 1000;
    strcpy(c->smtp_from, "chime <noreply@localhost>");
    c->webhook_timeout = 10000;
    c->send_max_in_flight = 1024;
    c->group_max_members = 500;
    c->sync_retention_days = 30;
    c->ws_ping = 25000;
    c->ws_max_per_user = 10;
    c->chat_rate = 20;
    c->post_rate = 60;
    c->feed_active_days = 30;
    c->feed_push_max_followers = 10000;
    c->feed_timeline_max = 800;
    c->caldav_sync_ttl = 90LL * 86400000;
    strcpy(c->hot_formula, "hn");
    strcpy(c->hot_weights, "views=1,likes=5,comments=10,shares=20");
    strcpy(c->hot_gravity, "1.8");
    c->hot_window_days = 7;
    c->hot_size = 50;
    c->hot_every = 60000;
}

/* "2", "0.5", "1.25" seconds or "500ms", to whole milliseconds. */
static int parse_ms(const char *value, long long *out)
{
    char *end;
    errno = 0;
    size_t n = strlen(value);
    if (n > 2 && strcmp(value + n - 2, "ms") == 0) {
        long long v = strtoll(value, &end, 10);
        if (end != value + n - 2 || errno == ERANGE || !isdigit((unsigned char)*value)) return -1;
        *out = v;
        return 0;
    }
    if (!isdigit((unsigned char)*value)) return -1;
    double d = strtod(value, &end);
    if (*end != '\0' || errno == ERANGE || d > 1e12) return -1;
    *out = (long long)(d * 1000.0 + 0.5);
    return 0;
}

/* 1/0, true/false, yes/no, on/off in any case; -1 for anything else. */
static int parse_bool(const char *value)
{
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(value, yes[i]) == 0) return 1;
        if (strcasecmp(value, no[i]) == 0) return 0;
    }
    return -1;
}

static const opt_def *opt_find(const char *name, size_t len)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0) return &opts[i];
    return NULL;
}

static int opt_set(chime_config *c, const opt_def *o, const char *value, const char *source)
{
    char *field = (char *)c + o->offset;
    if (o->type == OPT_STR) {
        if (strlen(value) >= o->size) {
            fprintf(stderr, "chime: %s: %s is too long (at most %zu bytes)\n", source, o->name, o->size - 1);
            return -1;
        }
        strcpy(field, value);
        return 0;
    }
    char *end;
    errno = 0;
    long long v = 0;
    if (o->type == OPT_BOOL) {
        int b = parse_bool(value);
        if (b < 0) {
            fprintf(stderr, "chime: %s: %s is a switch: 1/0, true/false, yes/no or on/off, not '%s'\n", source,
                    o->name, value);
            return -1;
        }
        *(int64_t *)field = b;
        return 0;
    }
    if (o->type == OPT_MS) {
        if (parse_ms(value, &v) != 0 || v < o->min || v > o->max) {
            fprintf(stderr, "chime: %s: %s must be seconds (\"2\", \"0.5\") or milliseconds (\"500ms\")"
                            " from %lldms to %llds, not '%s'\n", source, o->name, (long long)o->min,
                    (long long)o->max / 1000, value);
            return -1;
        }
        *(int64_t *)field = v;
        return 0;
    }
    v = strtoll(value, &end, 10);
    if (o->type == OPT_SIZE && end != value) {
        int k = tolower((unsigned char)*end);
        if (k == 'k' || k == 'm' || k == 'g') {
            int shift = k == 'k' ? 10 : k == 'm' ? 20 : 30;
            v = v > (LLONG_MAX >> shift) ? LLONG_MAX : v << shift;
            end++;
        }
    }
    if (end == value || *end != '\0' || errno == ERANGE || v < o->min || v > o->max) {
        fprintf(stderr, "chime: %s: %s must be a whole number from %lld to %lld, not '%s'\n", source,
                o->name, (long long)o->min, (long long)o->max, value);
        return -1;
    }
    *(int64_t *)field = v;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

/* "key = value" lines; '#' starts a comment; keys are the flag names. */
static int config_load_file(chime_config *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "chime: config: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[2048], source[1200];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = trim(line);
        if (*s == '\0') continue;
        char *eq = strchr(s, '=');
        snprintf(source, sizeof source, "%s:%d", path, lineno);
        if (!eq) {
            fprintf(stderr, "chime: %s: expected 'key = value'\n", source);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        const opt_def *o = opt_find(key, strlen(key));
        if (!o) {
            fprintf(stderr, "chime: %s: unknown setting '%s'\n", source, key);
            rc = -1;
        } else {
            rc = opt_set(c, o, value, source);
        }
    }
    fclose(f);
    return rc;
}

static int config_load_env(chime_config *c)
{
    for (size_t i = 0; i < NOPTS; i++) {
        char env[64] = "CHIME_";
        size_t n = 6;
        for (const char *p = opts[i].name; *p && n < sizeof env - 1; p++)
            env[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        env[n] = '\0';
        const char *v = getenv(env);
        if (v && opt_set(c, &opts[i], v, env) != 0) return -1;
    }
    return 0;
}

void config_print_help(const char *verb)
{
    printf("usage: chime %s [options]\n\noptions (flag, or CHIME_NAME in the environment, or\n"
           "'name = value' in the file given by --config):\n",
           verb);
    printf("  --%-18s %s\n", "config FILE", "read settings from FILE (flags and environment win)");
    for (size_t i = 0; i < NOPTS; i++) {
        char flag[64];
        static const char *metavar[] = {[OPT_STR] = " TEXT", [OPT_INT] = " N", [OPT_SIZE] = " N",
                                         [OPT_MS] = " SECONDS", [OPT_BOOL] = ""};
        snprintf(flag, sizeof flag, "%s%s", opts[i].name, metavar[opts[i].type]);
        printf("  --%-18s %s\n", flag, opts[i].help);
    }
    printf("  --%-18s %s\n", "help", "print this help");
}

/* Splits "--name=value" or "--name value". Returns the value or NULL. A
 * switch takes the next argument only when it is not itself a flag (serve
 * has no positional arguments, so "--switch 1" keeps its old meaning);
 * bare, it means on. */
static const char *flag_value(int argc, char **argv, int *i, const char **name, size_t *name_len)
{
    const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
    *name = arg;
    *name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    if (eq) return eq + 1;
    const opt_def *o = opt_find(arg, *name_len);
    bool next_is_flag = *i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0;
    if (o && o->type == OPT_BOOL && next_is_flag) return "1";
    if (*i + 1 < argc) return argv[++*i];
    return NULL;
}

int config_load(chime_config *c, const char *verb, int argc, char **argv)
{
    /* The file goes first whatever its position on the command line. */
    const char *file = getenv("CHIME_CONFIG");
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            config_print_help(verb);
            return 1;
        }
        if (strncmp(argv[i], "--config=", 9) == 0) file = argv[i] + 9;
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) file = argv[i + 1];
    }
    if (file) {
        snprintf(c->config_file, sizeof c->config_file, "%s", file);
        if (config_load_file(c, file) != 0) return -1;
    }
    if (config_load_env(c) != 0) return -1;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0) {
            fprintf(stderr, "chime: unexpected argument '%s' (see chime %s --help)\n", argv[i], verb);
            return -1;
        }
        const char *name;
        size_t len;
        const char *value = flag_value(argc, argv, &i, &name, &len);
        if (len == 6 && memcmp(name, "config", 6) == 0) continue;
        const opt_def *o = opt_find(name, len);
        if (!o) {
            fprintf(stderr, "chime: unknown option '--%.*s' (see chime %s --help)\n", (int)len, name, verb);
            return -1;
        }
        if (!value) {
            fprintf(stderr, "chime: option --%s needs a value\n", o->name);
            return -1;
        }
        if (opt_set(c, o, value, "command line") != 0) return -1;
    }
    /* A lease that expires before its next renewal would change hands
     * between every two heartbeats. */
    if (c->lease_ttl <= c->lease_heartbeat) {
        fprintf(stderr, "chime: lease-ttl (%lldms) must be longer than lease-heartbeat (%lldms)\n",
                (long long)c->lease_ttl, (long long)c->lease_heartbeat);
        return -1;
    }
    return 0;
}
