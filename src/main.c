/* main.c -- the chime command line: serve, migrate, rrule. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "cli_rrule.h"
#include "base/base.h"
#include "config.h"
#include "schema.h"
#include "store/store.h"

#define CHIME_VERSION "0.1.0"

static void usage(FILE *f)
{
    fprintf(f, "usage: chime VERB [options]\n\n"
               "verbs:\n"
               "  serve     run the server (chime serve --help for every option)\n"
               "  migrate   apply database migrations and exit\n"
               "  rrule     expand RFC 5545 recurrence rules (chime rrule --help)\n"
               "  version   print the version\n");
}

/* "sqlite:var/chime.db" needs var/ to exist; make it, one level deep. */
static void make_sqlite_dir(const char *url)
{
    if (strncmp(url, "sqlite:", 7) != 0) return;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", url + 7);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return;
    *slash = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) log_warn("cannot create %s: %s", dir, strerror(errno));
}

static store *open_and_migrate(const chime_config *cfg)
{
    char err[512];
    make_sqlite_dir(cfg->db);
    store *db = store_open(cfg->db, err, sizeof err);
    if (!db) {
        log_error("cannot open database %s: %s", cfg->db, err);
        return NULL;
    }
    store_schema schema;
    if (chime_schema(&schema) != 0 || store_migrate(db, &schema) != STORE_OK) {
        log_error("migrations failed: %s", store_errmsg(db));
        store_close(db);
        return NULL;
    }
    return db;
}

static int load_config(chime_config *cfg, const char *verb, int argc, char **argv)
{
    config_defaults(cfg);
    int rc = config_load(cfg, verb, argc, argv);
    if (rc != 0) return rc;
    if (strcmp(cfg->reminder_late_policy, "deliver") != 0 && strcmp(cfg->reminder_late_policy, "skip") != 0) {
        fprintf(stderr, "chime: reminder-late-policy must be deliver or skip\n");
        return -1;
    }
    hot_rank_opts hot;
    char err[200];
    if (hot_rank_config(cfg->hot_formula, cfg->hot_weights, cfg->hot_gravity, &hot, err, sizeof err) != 0) {
        fprintf(stderr, "chime: %s\n", err);
        return -1;
    }
    static const char *levels[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(cfg->log_level, levels[i]) == 0) {
            log_set_level((log_level)i);
            return 0;
        }
    fprintf(stderr, "chime: log-level must be debug, info, warn or error\n");
    return -1;
}

static int cmd_migrate(int argc, char **argv)
{
    chime_config cfg;
    int rc = load_config(&cfg, "migrate", argc, argv);
    if (rc != 0) return rc > 0 ? 0 : 2;
    store *db = open_and_migrate(&cfg);
    if (!db) return 1;
    printf("schema version %d\n", store_schema_version(db));
    store_close(db);
    return 0;
}

/* A clean stop's jobs half (cmd_serve): the scheduler stops and its
 * leases go while the reminders drain on the main thread. */
static void *jobs_stop_main(void *p)
{
    base_thread_name("jobs-stop");
    app_jobs_stop(p);
    return NULL;
}

static int cmd_serve(int argc, char **argv)
{
    app *a = calloc(1, sizeof *a);
    if (!a) return 1;
    int rc = load_config(&a->cfg, "serve", argc, argv);
    if (rc != 0) {
        free(a);
        return rc > 0 ? 0 : 2;
    }
    if (a->cfg.threads == 0) a->cfg.threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    store *db = open_and_migrate(&a->cfg);
    if (!db) {
        free(a);
        return 1;
    }
    store_close(db);
    if (app_identity_claim(a) != 0) {
        free(a);
        return 1;
    }

    /* Loop threads inherit this mask; only sigwait below sees the signals. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    const char *tzdir = getenv("TZDIR"); /* as the C library reads it: unset or empty, the system's */
    a->tz = tz_db_new(tzdir && tzdir[0] ? tzdir : NULL);
    if (a->tz && app_channels_start(a) != 0) {
        tz_db_free(a->tz);
        app_identity_release(a);
        free(a);
        return 1;
    }
    if (!a->tz || !app_http_new(a) || app_feed_start(a) != 0 || app_hot_start(a) != 0 ||
        http_server_start(a->http) != 0) {
        app_feed_stop(a);
        app_http_free(a);
        app_channels_stop(a);
        tz_db_free(a->tz);
        app_identity_release(a);
        free(a);
        return 1;
    }
    if (app_jobs_start(a) != 0 || app_chat_start(a) != 0 || app_notify_start(a) != 0) {
        app_notify_stop(a);
        app_jobs_stop(a);
        http_server_stop(a->http);
        app_chat_stop(a);
        app_feed_stop(a);
        app_http_free(a);
        app_channels_stop(a);
        tz_db_free(a->tz);
        app_identity_release(a);
        free(a);
        return 1;
    }
    log_info("chime %s serving, database %s", CHIME_VERSION, a->cfg.db);
    int sig = 0;
    sigwait(&set, &sig);
    log_info("received %s: finishing in-flight requests", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    /* First hand the leases over, so other nodes take the jobs and the
     * reminder shards at once -- the reminders' once what this node
     * claimed is delivered (a few seconds at most; see drain in
     * notify_engine.c), through the inbox, the hub and the channels,
     * all stopped below. The jobs stop beside that drain, not after it. */
    pthread_t jobs_stopper;
    bool beside = pthread_create(&jobs_stopper, NULL, jobs_stop_main, a) == 0;
    app_notify_stop(a);
    if (beside) pthread_join(jobs_stopper, NULL);
    else app_jobs_stop(a);
    /* The server stops (its parked requests answered by the chat's
     * writer), then the writer, then what the loops used. */
    http_server_stop(a->http);
    app_chat_stop(a);
    app_feed_stop(a);
    app_http_free(a);
    /* After everything that sends: waits for deliveries in flight. */
    app_channels_stop(a);
    tz_db_free(a->tz);
    app_identity_release(a); /* last: every lease it named is released */
    free(a);
    log_info("stopped cleanly");
    return 0;
}

int main(int argc, char **argv)
{
    if (base_init() != 0) {
        fprintf(stderr, "chime: cannot initialise libsodium\n");
        return 1;
    }
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("chime %s\n", CHIME_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "rrule") == 0) return cli_rrule_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "serve") == 0) return cmd_serve(argc - 2, argv + 2);
    if (strcmp(argv[1], "migrate") == 0) return cmd_migrate(argc - 2, argv + 2);
    fprintf(stderr, "chime: unknown verb '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
