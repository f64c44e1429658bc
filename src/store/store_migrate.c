/* store_migrate.c -- applying the schema: one ordered list of steps,
 * which each domain fills with its own (users_schema.c, cal_schema.c, ...;
 * src/schema.c gathers them). The rules of a step are in store.h.
 *
 * Each step runs in its own transaction together with the row recording it
 * in schema_migrations, so a crash leaves the schema at a step boundary. On
 * PostgreSQL every step first takes a transaction-scoped advisory lock:
 * processes starting at once queue on it, and each re-checks under the lock
 * whether the step is still to do. On SQLite BEGIN IMMEDIATE does the same.
 */
#include "store/store_int.h"

#include <string.h>

int store_schema_add(store_schema *s, const store_migration *steps, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        const store_migration *m = &steps[k];
        if (s->n == STORE_SCHEMA_MAX || m->version < 1) return -1;
        int i = s->n;
        while (i > 0 && s->steps[i - 1]->version > m->version) i--;
        if (i > 0 && s->steps[i - 1]->version == m->version) return -1;
        memmove(&s->steps[i + 1], &s->steps[i], (size_t)(s->n - i) * sizeof s->steps[0]);
        memmove(&s->fns[i + 1], &s->fns[i], (size_t)(s->n - i) * sizeof s->fns[0]);
        s->steps[i] = m;
        s->fns[i] = NULL;
        s->n++;
    }
    return 0;
}

int store_schema_add_fn(store_schema *s, int version, store_migration_fn fn)
{
    for (int i = 0; i < s->n; i++)
        if (s->steps[i]->version == version) {
            s->fns[i] = fn;
            return 0;
        }
    return -1;
}

/* "chime" in ASCII: the advisory lock key every chime migrator agrees on. */
#define MIGRATE_LOCK_SQL "SELECT pg_advisory_xact_lock(426953502053)"

static const char *table_exists_sql(store *s)
{
    return store_backend_of(s) == STORE_PG
               ? "SELECT count(*) FROM pg_catalog.pg_tables"
                 " WHERE schemaname = current_schema() AND tablename = 'schema_migrations'"
               : "SELECT count(*) FROM sqlite_master"
                 " WHERE type = 'table' AND name = 'schema_migrations'";
}

int store_schema_version(store *s)
{
    int64_t n = 0;
    int rc = store_query_int64(s, table_exists_sql(s), &n);
    if (rc < 0)
        return rc;
    if (n == 0)
        return 0;
    rc = store_query_int64(s, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &n);
    return rc < 0 ? rc : (int)n;
}

/* Prefixes the current error with the step, for a message that says where. */
static int step_fail(store *s, const store_migration *m, int rc)
{
    char keep[STORE_ERRLEN];
    memcpy(keep, s->err, sizeof keep);
    return store_fail(s, rc, "migration %d (%s): %s", m->version, m->name, keep);
}

/* Inside the transaction: applies m (and fn, its C part, if any) unless
 * another process already did. */
static int apply_locked(store *s, const store_migration *m, store_migration_fn fn)
{
    int rc;
    bool pg = store_backend_of(s) == STORE_PG;
    /* Startup may queue behind another node's long migration: wait longer
     * than the session's usual lock_timeout. */
    if (pg && ((rc = store_exec(s, "SET LOCAL lock_timeout = '120s'")) < 0 ||
               (rc = store_exec(s, MIGRATE_LOCK_SQL)) < 0))
        return rc;
    rc = store_exec(s, "CREATE TABLE IF NOT EXISTS schema_migrations ("
                       " version BIGINT PRIMARY KEY,"
                       " name TEXT NOT NULL,"
                       " applied_ms BIGINT NOT NULL)");
    if (rc < 0)
        return rc;
    store_stmt *st = store_prepare(s, "SELECT count(*) FROM schema_migrations WHERE version = $1");
    if (!st)
        return STORE_ERROR;
    store_bind_int64(st, 1, m->version);
    rc = store_step(st);
    int64_t done = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    if (rc < 0 || done)
        return rc < 0 ? rc : STORE_OK;
    rc = store_exec(s, pg && m->sql_pg ? m->sql_pg : m->sql_sqlite);
    if (rc >= 0 && fn)
        rc = fn(s);
    if (rc < 0)
        return rc;
    int64_t now = 0;
    if ((rc = store_now_ms(s, &now)) < 0)
        return rc;
    st = store_prepare(s, "INSERT INTO schema_migrations (version, name, applied_ms)"
                          " VALUES ($1, $2, $3)");
    if (!st)
        return STORE_ERROR;
    store_bind_int64(st, 1, m->version);
    store_bind_str(st, 2, m->name);
    store_bind_int64(st, 3, now);
    rc = store_step(st);
    store_reset(st);
    return rc < 0 ? rc : STORE_OK;
}

static int apply_one(store *s, const store_migration *m, store_migration_fn fn)
{
    int rc = store_begin(s);
    if (rc < 0)
        return step_fail(s, m, rc);
    rc = apply_locked(s, m, fn);
    if (rc < 0) {
        step_fail(s, m, rc);
        char keep[STORE_ERRLEN];
        memcpy(keep, s->err, sizeof keep);
        store_rollback(s);
        memcpy(s->err, keep, sizeof keep);
        return rc;
    }
    rc = store_commit(s);
    return rc < 0 ? step_fail(s, m, rc) : STORE_OK;
}

int store_schema_latest(const store_schema *schema)
{
    return schema->n ? schema->steps[schema->n - 1]->version : 0;
}

int store_migrate(store *s, const store_schema *schema)
{
    int latest = store_schema_latest(schema);
    int have = store_schema_version(s);
    if (have < 0)
        return have;
    /* A newer program has migrated this database; running old code on a
     * schema it does not know could corrupt data, so refuse. */
    if (have > latest)
        return store_fail(s, STORE_ERROR,
                          "database schema version %d is newer than this program's %d",
                          have, latest);
    /* Apply every step not recorded yet, not just those above the highest:
     * a database may have a later step and miss an earlier one (branches
     * merged in another order). Each step re-checks under the lock. */
    bool done[STORE_SCHEMA_MAX] = {0};
    store_stmt *st = have ? store_prepare(s, "SELECT version FROM schema_migrations") : NULL;
    while (st && store_step(st) == STORE_ROW)
        for (int i = 0; i < schema->n; i++)
            if (schema->steps[i]->version == store_col_int64(st, 0)) done[i] = true;
    store_reset(st);
    for (int i = 0; i < schema->n; i++) {
        if (done[i])
            continue;
        int rc = apply_one(s, schema->steps[i], schema->fns[i]);
        if (rc < 0)
            return rc;
    }
    return STORE_OK;
}
