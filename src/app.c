/* app.c -- wires the domains' routes into the server and gives each loop
 * thread its own database connection. */
#include "app.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"
#include "calendar/calendar_http.h"
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
    return s;
}
