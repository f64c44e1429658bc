/* jobs_http.c -- the HTTP face of the scheduler. Everything is read from
 * the database, so any node answers for the whole cluster. */
#include "jobs/jobs_http.h"

#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "time/rfc3339.h"
#include "jobs/jobs.h"
#include "cluster/nodes.h"

/* RFC 3339 text, or JSON null for a missing time. */
static json_t *time_json(int64_t ms, bool present)
{
    if (!present) return json_null();
    char buf[32];
    rfc3339_format_ms(ms, buf, sizeof buf);
    return json_string(buf);
}

static json_t *opt_str(store_stmt *st, int col)
{
    return store_col_is_null(st, col) ? json_null() : json_string(store_col_text(st, col));
}

static void add_node(const node_info *n, void *arg)
{
    json_array_append_new(arg, json_pack("{s:s,s:s,s:o,s:o}", "id", n->id, "address", n->address, "started",
                                         time_json(n->started_ms, true), "last_heartbeat",
                                         time_json(n->heartbeat_ms, true)));
}

static void handle_nodes(http_req *r, void *arg)
{
    jobs_http *j = arg;
    store *db = store_pool_at(j->dbs, r->loop);
    json_t *items = json_array();
    if (nodes_list(db, j->lease_ttl_ms, add_node, items) < 0) {
        json_decref(items);
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

static void handle_leases(http_req *r, void *arg)
{
    jobs_http *j = arg;
    store *db = store_pool_at(j->dbs, r->loop);
    int64_t now;
    if (store_now_ms(db, &now) < 0) {
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    store_stmt *st = store_prepare(db, "SELECT name, owner, epoch, expires_ms FROM leases ORDER BY name");
    json_t *items = json_array();
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        /* An expired lease has no owner, whatever the row still says. */
        bool held = !store_col_is_null(st, 1) && store_col_int64(st, 3) > now;
        json_array_append_new(items, json_pack("{s:s,s:o,s:I,s:o}", "name", store_col_text(st, 0), "owner",
                                               held ? json_string(store_col_text(st, 1)) : json_null(), "epoch",
                                               (json_int_t)store_col_int64(st, 2), "expires",
                                               time_json(store_col_int64(st, 3), held)));
    }
    store_reset(st);
    if (rc != STORE_DONE) {
        json_decref(items);
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

static json_t *last_run_json(store_stmt *st, int c)
{
    if (store_col_is_null(st, c)) return json_null();
    return json_pack("{s:o,s:o,s:s,s:I,s:s,s:o}", "started", time_json(store_col_int64(st, c), true), "finished",
                     time_json(store_col_int64(st, c + 1), true), "node", store_col_text(st, c + 2), "epoch",
                     (json_int_t)store_col_int64(st, c + 3), "outcome", store_col_text(st, c + 4), "error",
                     opt_str(st, c + 5));
}

static void handle_jobs(http_req *r, void *arg)
{
    jobs_http *j = arg;
    store *db = store_pool_at(j->dbs, r->loop);
    int64_t now;
    if (store_now_ms(db, &now) < 0) {
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    /* One statement: the newest run of each job comes from the history's
     * (job, started_ms) index, however many jobs there are. */
    store_stmt *st = store_prepare(
        db, "SELECT j.name, j.schedule, j.time_zone, j.next_run_ms, j.enabled, l.owner, l.expires_ms,"
               " j.run_requested_ms, r.started_ms, r.finished_ms, r.node, r.epoch, r.outcome, r.error"
               " FROM jobs j LEFT JOIN leases l ON l.name = 'job:' || j.name"
               " LEFT JOIN job_runs r ON r.id = (SELECT id FROM job_runs WHERE job = j.name"
               " ORDER BY started_ms DESC, finished_ms DESC LIMIT 1) ORDER BY j.name");
    json_t *items = json_array();
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        bool owned = !store_col_is_null(st, 5) && store_col_int64(st, 6) > now;
        bool has_next = !store_col_is_null(st, 3) && store_col_int64(st, 3) >= 0 && store_col_int64(st, 4);
        json_array_append_new(
            items, json_pack("{s:s,s:s,s:s,s:b,s:o,s:o,s:o,s:o}", "name", store_col_text(st, 0), "schedule",
                             store_col_text(st, 1), "time_zone", store_col_text(st, 2), "enabled",
                             (int)store_col_int64(st, 4), "next_run", time_json(store_col_int64(st, 3), has_next),
                             "owner", owned ? json_string(store_col_text(st, 5)) : json_null(), "run_requested",
                             time_json(store_col_int64(st, 7), !store_col_is_null(st, 7)), "last_run",
                             last_run_json(st, 8)));
    }
    store_reset(st);
    if (rc != STORE_DONE) {
        json_decref(items);
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

static void handle_run(http_req *r, void *arg)
{
    jobs_http *j = arg;
    store *db = store_pool_at(j->dbs, r->loop);
    char name[JOBS_NAME_MAX + 1];
    if (r->params[0].len == 0 || r->params[0].len > JOBS_NAME_MAX) {
        http_send_error(r, 404, "not_found", "name", "no such job");
        return;
    }
    memcpy(name, r->params[0].ptr, r->params[0].len);
    name[r->params[0].len] = '\0';
    int64_t requested = 0;
    int rc = jobs_request_run(db, name, &requested);
    if (rc < 0) http_send_db_error(r, store_errmsg(db));
    else if (rc == JOBS_NOT_FOUND) http_send_error(r, 404, "not_found", "name", "no such job");
    else http_send_json(r, 202, json_pack("{s:s,s:o}", "name", name, "requested", time_json(requested, true)));
}

void jobs_http_register(jobs_http *j, http_server *s)
{
    const unsigned A = HTTP_ROUTE_ADMIN;
    http_route(s, HTTP_GET, "/v1/admin/nodes", handle_nodes, j, A);
    http_route(s, HTTP_GET, "/v1/admin/leases", handle_leases, j, A);
    http_route(s, HTTP_GET, "/v1/admin/jobs", handle_jobs, j, A);
    http_route(s, HTTP_POST, "/v1/admin/jobs/{name}/run", handle_run, j, A);
}
