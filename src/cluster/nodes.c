/* nodes.c -- node rows, timed by the database clock. */
#include "cluster/nodes.h"

#include <stdio.h>
#include <string.h>

static int exec_changes(store_stmt *st, int64_t *changes)
{
    int rc = store_step(st);
    if (changes) *changes = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc;
}

int nodes_register(store *db, const char *id, const char *address)
{
    int64_t now;
    int rc = store_now_ms(db, &now);
    if (rc < 0) return rc;
    store_stmt *st = store_prepare(db, "INSERT INTO nodes (id, address, started_ms, heartbeat_ms)"
                                       " VALUES ($1, $2, $3, $3) ON CONFLICT (id) DO UPDATE SET"
                                       " address = excluded.address, started_ms = excluded.started_ms,"
                                       " heartbeat_ms = excluded.heartbeat_ms");
    store_bind_str(st, 1, id);
    store_bind_str(st, 2, address);
    store_bind_int64(st, 3, now);
    return exec_changes(st, NULL);
}

int nodes_heartbeat(store *db, const char *id, const char *address)
{
    int64_t now, n = 0;
    int rc = store_now_ms(db, &now);
    if (rc < 0) return rc;
    store_stmt *st = store_prepare(db, "UPDATE nodes SET heartbeat_ms = $2 WHERE id = $1");
    store_bind_str(st, 1, id);
    store_bind_int64(st, 2, now);
    rc = exec_changes(st, &n);
    if (rc < 0) return rc;
    /* Someone collected our row while we were paused: we are back. */
    return n == 1 ? STORE_OK : nodes_register(db, id, address);
}

int nodes_unregister(store *db, const char *id)
{
    store_stmt *st = store_prepare(db, "DELETE FROM nodes WHERE id = $1");
    store_bind_str(st, 1, id);
    return exec_changes(st, NULL);
}

int nodes_gc(store *db, int64_t dead_ms)
{
    int64_t now;
    int rc = store_now_ms(db, &now);
    if (rc < 0) return rc;
    store_stmt *st = store_prepare(db, "DELETE FROM nodes WHERE heartbeat_ms < $1");
    store_bind_int64(st, 1, now - dead_ms);
    return exec_changes(st, NULL);
}

int nodes_list(store *db, int64_t live_ms, void (*fn)(const node_info *n, void *arg), void *arg)
{
    int64_t now;
    int rc = store_now_ms(db, &now);
    if (rc < 0) return rc;
    store_stmt *st = store_prepare(db, "SELECT id, address, started_ms, heartbeat_ms FROM nodes"
                                       " WHERE heartbeat_ms >= $1 ORDER BY started_ms, id");
    store_bind_int64(st, 1, now - live_ms);
    while ((rc = store_step(st)) == STORE_ROW) {
        node_info n;
        snprintf(n.id, sizeof n.id, "%s", store_col_text(st, 0));
        snprintf(n.address, sizeof n.address, "%s", store_col_text(st, 1));
        n.started_ms = store_col_int64(st, 2);
        n.heartbeat_ms = store_col_int64(st, 3);
        fn(&n, arg);
    }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc;
}

int nodes_live_count(store *db, int64_t live_ms, int64_t *count)
{
    int64_t now;
    int rc = store_now_ms(db, &now);
    if (rc < 0) return rc;
    store_stmt *st = store_prepare(db, "SELECT count(*) FROM nodes WHERE heartbeat_ms >= $1");
    store_bind_int64(st, 1, now - live_ms);
    rc = store_step(st);
    if (rc == STORE_ROW) *count = store_col_int64(st, 0);
    store_reset(st);
    return rc == STORE_ROW ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}
