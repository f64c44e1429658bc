/* test-store-tx.c -- transactions, error mapping under contention, several
 * connections at once, PostgreSQL reconnecting after a lost connection, the
 * guard of a connection shared under a lock, and syncing SQLite's WAL. */
#include "testutil.h"
#include "testdb.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"

static int64_t query_int(store *s, const char *sql)
{
    int64_t v = -12345;
    int rc = store_query_int64(s, sql, &v);
    if (rc != STORE_ROW)
        fail_msg("%s: rc %d: %s", sql, rc, store_errmsg(s));
    return v;
}

static void test_commit_rollback(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE t (i BIGINT PRIMARY KEY)");
    assert_int_equal(store_begin(s), STORE_OK);
    EXEC_OK(s, "INSERT INTO t VALUES (1)");
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 1);  /* own writes visible */
    assert_int_equal(store_rollback(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 0);

    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(store_begin(s), STORE_ERROR);                /* no nesting */
    store_stmt *st = store_prepare(s, "INSERT INTO t VALUES ($1)");
    assert_non_null(st);
    for (int i = 1; i <= 3; i++) {
        store_bind_int64(st, 1, i);
        assert_int_equal(store_step(st), STORE_DONE);
        store_reset(st);
    }
    assert_int_equal(store_commit(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 3);

    assert_int_equal(store_commit(s), STORE_ERROR);               /* nothing to commit */
    assert_int_equal(store_rollback(s), STORE_OK);                /* harmless */

    /* a transaction begun by hand is still one to commit or roll back */
    EXEC_OK(s, "BEGIN");
    EXEC_OK(s, "DELETE FROM t");
    assert_int_equal(store_rollback(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 3);
    EXEC_OK(s, "BEGIN");
    EXEC_OK(s, "DELETE FROM t WHERE i = 1");
    assert_int_equal(store_commit(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 2);
}

/* After a failed statement the transaction is aborted on both backends:
 * later statements fail, and COMMIT reports an error having rolled back. */
static void test_failed_statement_aborts(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE t (i BIGINT PRIMARY KEY)");
    EXEC_OK(s, "INSERT INTO t VALUES (1)");
    assert_int_equal(store_begin(s), STORE_OK);
    EXEC_OK(s, "INSERT INTO t VALUES (2)");
    assert_int_equal(store_exec(s, "INSERT INTO t VALUES (1)"), STORE_CONSTRAINT);
    assert_true(store_exec(s, "INSERT INTO t VALUES (3)") < 0);
    assert_int_equal(store_commit(s), STORE_ERROR);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 1);

    /* and a rollback clears it */
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(store_exec(s, "INSERT INTO t VALUES (1)"), STORE_CONSTRAINT);
    assert_int_equal(store_rollback(s), STORE_OK);
    assert_int_equal(store_begin(s), STORE_OK);
    EXEC_OK(s, "INSERT INTO t VALUES (4)");
    assert_int_equal(store_commit(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 2);
}

/* A writer that cannot get the lock in time gets STORE_BUSY, not an error. */
static void test_busy_mapped(void **state)
{
    testdb *db = *state;
    store *a = db->s, *b = testdb_open(db);
    assert_non_null(b);
    EXEC_OK(a, "CREATE TABLE t (i BIGINT PRIMARY KEY, v BIGINT)");
    EXEC_OK(a, "INSERT INTO t VALUES (1, 0)");
    if (db->backend == STORE_SQLITE)
        EXEC_OK(b, "PRAGMA busy_timeout = 0");
    else
        EXEC_OK(b, "SET lock_timeout = 50");
    assert_int_equal(store_begin(a), STORE_OK);
    EXEC_OK(a, "UPDATE t SET v = 1 WHERE i = 1");
    int rc = store_begin(b);
    if (rc == STORE_OK)                     /* PostgreSQL locks the row, not the db */
        rc = store_exec(b, "UPDATE t SET v = 2 WHERE i = 1");
    assert_int_equal(rc, STORE_BUSY);
    assert_int_equal(store_rollback(b), STORE_OK);
    assert_int_equal(store_commit(a), STORE_OK);
    assert_int_equal(query_int(b, "SELECT v FROM t"), 1);
    store_close(b);
}

/* PostgreSQL serialization failure (SQLSTATE 40001) is STORE_BUSY too. */
static void test_pg_serialization_busy(void **state)
{
    testdb *db = *state;
    store *a = db->s, *b = testdb_open(db);
    assert_non_null(b);
    EXEC_OK(a, "CREATE TABLE t (i BIGINT PRIMARY KEY, v BIGINT)");
    EXEC_OK(a, "INSERT INTO t VALUES (1, 0)");
    assert_int_equal(store_begin(a), STORE_OK);
    EXEC_OK(a, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    assert_int_equal(query_int(a, "SELECT v FROM t"), 0);
    EXEC_OK(b, "UPDATE t SET v = 5 WHERE i = 1");
    assert_int_equal(store_exec(a, "UPDATE t SET v = v + 1 WHERE i = 1"), STORE_BUSY);
    assert_int_equal(store_rollback(a), STORE_OK);
    store_close(b);
}

/* ---------------------------------------------------------- threads */

enum { INCREMENTS = 150 };

typedef struct worker {
    const testdb *db;
    pthread_barrier_t *go;
    int rc;
    int retries;
    char err[256];
} worker;

static void *increment_worker(void *arg)
{
    worker *w = arg;
    store *s = store_open(w->db->url, w->err, sizeof w->err);
    pthread_barrier_wait(w->go);
    if (!s) { w->rc = -100; return NULL; }
    for (int i = 0; i < INCREMENTS && w->rc == 0; i++) {
        int rc;
        while ((rc = store_begin(s)) == STORE_BUSY) w->retries++;
        int64_t v = 0;
        if (rc == STORE_OK) rc = store_query_int64(s, "SELECT v FROM counter", &v);
        if (rc == STORE_ROW) {
            store_stmt *st = store_prepare(s, "UPDATE counter SET v = $1");
            rc = st ? store_bind_int64(st, 1, v + 1) : STORE_ERROR;
            if (rc == STORE_OK) rc = store_step(st);
            if (st) store_reset(st);
        }
        if (rc == STORE_DONE) rc = store_commit(s);
        if (rc != STORE_OK) {
            w->rc = rc;
            snprintf(w->err, sizeof w->err, "%s", store_errmsg(s));
            store_rollback(s);
        }
    }
    store_close(s);
    return NULL;
}

/* Read-modify-write in BEGIN IMMEDIATE transactions from two connections on
 * one SQLite file: the write lock is taken up front, so no update is lost
 * and no transaction fails on lock upgrade. */
static void test_sqlite_two_writers(void **state)
{
    testdb *db = *state;
    EXEC_OK(db->s, "CREATE TABLE counter (v BIGINT NOT NULL)");
    EXEC_OK(db->s, "INSERT INTO counter VALUES (0)");
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    worker w[2] = {{.db = db, .go = &go}, {.db = db, .go = &go}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, increment_worker, &w[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
    for (int i = 0; i < 2; i++)
        if (w[i].rc != 0) fail_msg("worker %d: rc %d: %s", i, w[i].rc, w[i].err);
    assert_int_equal(query_int(db->s, "SELECT v FROM counter"), 2 * INCREMENTS);
}

static void *migrate_worker(void *arg)
{
    worker *w = arg;
    store *s = store_open(w->db->url, w->err, sizeof w->err);
    pthread_barrier_wait(w->go);
    if (!s) { w->rc = -100; return NULL; }
    w->rc = testdb_migrate(s);
    if (w->rc != STORE_OK) snprintf(w->err, sizeof w->err, "%s", store_errmsg(s));
    store_close(s);
    return NULL;
}

/* Drops everything the migrations made (tables, and on PostgreSQL the
 * trigger functions too). Table names come from the catalog, not input. */
static void drop_all_tables(store *s)
{
    if (store_backend_of(s) == STORE_PG) {
        EXEC_OK(s, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
        return;
    }
    char names[64][64];
    int n = 0;
    store_stmt *st = store_prepare(s, "SELECT name FROM sqlite_master WHERE type = 'table'"
                                      " AND name NOT LIKE 'sqlite_%'");
    while (n < 64 && store_step(st) == STORE_ROW) snprintf(names[n++], sizeof names[0], "%s", store_col_text(st, 0));
    store_reset(st);
    EXEC_OK(s, "PRAGMA foreign_keys=OFF");
    for (int i = 0; i < n; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP TABLE %s", names[i]);
        EXEC_OK(s, sql);
    }
    EXEC_OK(s, "PRAGMA foreign_keys=ON");
}

/* Two processes starting at once on a fresh database: both migrate
 * successfully and the schema is applied once. */
static void test_concurrent_migrate(void **state)
{
    testdb *db = *state;
    for (int round = 0; round < 3; round++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        worker w[2] = {{.db = db, .go = &go}, {.db = db, .go = &go}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, migrate_worker, &w[i]);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        for (int i = 0; i < 2; i++)
            if (w[i].rc != 0) fail_msg("migrator %d: rc %d: %s", i, w[i].rc, w[i].err);
        assert_int_equal(store_schema_version(db->s), testdb_latest());
        assert_int_equal(query_int(db->s, "SELECT count(*) FROM schema_migrations"), testdb_nsteps());
        if (round == 2)
            break;
        /* start again from nothing */
        drop_all_tables(db->s);
        assert_int_equal(store_schema_version(db->s), 0);
    }
}

/* A step missing below the highest one applied (branches merged in another
 * order) is still applied. */
static void test_migrate_fills_gap(void **state)
{
    store *s = ((testdb *)*state)->s;
    bool pg = store_backend_of(s) == STORE_PG;
    assert_int_equal(testdb_migrate(s), STORE_OK);
    EXEC_OK(s, "DELETE FROM schema_migrations WHERE version = 2");
    if (!pg) EXEC_OK(s, "PRAGMA foreign_keys=OFF");
    EXEC_OK(s, pg ? "DROP TABLE attendees, event_overrides, events, calendars CASCADE"
                  : "DROP TABLE attendees; DROP TABLE event_overrides; DROP TABLE events; DROP TABLE calendars");
    if (!pg) EXEC_OK(s, "PRAGMA foreign_keys=ON");
    assert_int_equal(testdb_migrate(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM schema_migrations WHERE version = 2"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM calendars"), 0);
}

/* A database migrated by a newer program is refused, not touched. */
static void test_migrate_refuses_newer(void **state)
{
    store *s = ((testdb *)*state)->s;
    assert_int_equal(testdb_migrate(s), STORE_OK);
    EXEC_OK(s, "INSERT INTO schema_migrations VALUES (9999, 'future', 0)");
    assert_int_equal(testdb_migrate(s), STORE_ERROR);
    assert_non_null(strstr(store_errmsg(s), "newer"));
    assert_int_equal(store_schema_version(s), 9999);
}

/* ------------------------------------------------- lost connections */

static void kill_backend(store *s)
{
    int64_t pid = query_int(s, "SELECT pg_backend_pid()");
    PGconn *admin = testdb_pg_admin();
    assert_non_null(admin);
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%lld)", (long long)pid);
    PGresult *r = PQexec(admin, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    PQfinish(admin);
}

static void test_pg_reconnect(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE t (i BIGINT)");
    store_stmt *ins = store_prepare(s, "INSERT INTO t VALUES ($1)");
    assert_non_null(ins);
    store_bind_int64(ins, 1, 1);
    assert_int_equal(store_step(ins), STORE_DONE);
    store_reset(ins);

    /* Outside a transaction: one call reports the loss, the next reconnects
     * and re-prepares the cached statement on the new connection. */
    kill_backend(s);
    store_bind_int64(ins, 1, 2);
    assert_int_equal(store_step(ins), STORE_CONN);
    store_reset(ins);
    store_bind_int64(ins, 1, 3);
    assert_int_equal(store_step(ins), STORE_DONE);
    store_reset(ins);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 2);

    /* Inside one: nothing runs until the caller rolls back. */
    assert_int_equal(store_begin(s), STORE_OK);
    store_bind_int64(ins, 1, 4);
    assert_int_equal(store_step(ins), STORE_DONE);
    store_reset(ins);
    kill_backend(s);
    store_bind_int64(ins, 1, 5);
    assert_int_equal(store_step(ins), STORE_CONN);
    store_reset(ins);
    store_bind_int64(ins, 1, 6);
    assert_int_equal(store_step(ins), STORE_CONN);
    store_reset(ins);
    assert_int_equal(store_exec(s, "SELECT 1"), STORE_CONN);
    assert_int_equal(store_rollback(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 2);

    /* a transaction begun by hand is protected the same way */
    EXEC_OK(s, "BEGIN");
    kill_backend(s);
    assert_int_equal(store_exec(s, "INSERT INTO t VALUES (8)"), STORE_CONN);
    assert_int_equal(store_exec(s, "INSERT INTO t VALUES (9)"), STORE_CONN);
    assert_int_equal(store_rollback(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 2);

    /* commit after the loss reports it */
    assert_int_equal(store_begin(s), STORE_OK);
    kill_backend(s);
    assert_int_equal(store_exec(s, "INSERT INTO t VALUES (7)"), STORE_CONN);
    assert_int_equal(store_commit(s), STORE_CONN);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 2);
}

/* Migration 6 reshapes the outbox: a database holding rows in the old
 * shape keeps every row, and gets the new indexes (a partial queue index;
 * on SQLite a table clustered on the id). */
static void test_migrate_reshapes_outbox(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    bool pg = db->backend == STORE_PG;
    assert_int_equal(testdb_migrate(s), STORE_OK);
    EXEC_OK(s, "DROP TABLE deliveries");
    EXEC_OK(s, "CREATE TABLE deliveries (id TEXT PRIMARY KEY, reminder_id BIGINT NOT NULL, event_id BIGINT NOT NULL,"
               " user_id BIGINT NOT NULL, channel TEXT NOT NULL, endpoint_id BIGINT NOT NULL DEFAULT 0,"
               " summary TEXT NOT NULL, occurrence_ms BIGINT NOT NULL, due_ms BIGINT NOT NULL, fired_ms BIGINT,"
               " late INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
               " next_attempt_ms BIGINT NOT NULL, last_error TEXT, created_ms BIGINT NOT NULL,"
               " updated_ms BIGINT NOT NULL)");
    EXEC_OK(s, "CREATE INDEX deliveries_queue ON deliveries(state, next_attempt_ms)");
    EXEC_OK(s, "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, summary, occurrence_ms, due_ms,"
               " state, attempts, next_attempt_ms, last_error, created_ms, updated_ms) VALUES"
               " ('d1', 1, 2, 3, 'webhook', 'standup', 10, 11, 'dead', 8, 12, 'status 500', 13, 14),"
               " ('d2', 1, 2, 3, 'inapp', 'standup', 20, 21, 'pending', 0, 22, NULL, 23, 24)");
    EXEC_OK(s, "DELETE FROM schema_migrations WHERE version = 6");
    assert_int_equal(testdb_migrate(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM deliveries WHERE id = 'd1' AND state = 'dead' AND "
                                  "attempts = 8 AND last_error = 'status 500' AND updated_ms = 14"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM deliveries WHERE id = 'd2' AND state = 'pending' AND "
                                  "next_attempt_ms = 22 AND last_error IS NULL"), 1);
    if (pg) {
        assert_int_equal(query_int(s, "SELECT count(*) FROM pg_indexes WHERE indexname = 'deliveries_queue' "
                                      "AND indexdef LIKE '%WHERE%pending%'"), 1);
        assert_int_equal(query_int(s, "SELECT count(*) FROM pg_indexes WHERE indexname = 'deliveries_ended'"), 1);
    } else {
        assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_master WHERE name = 'deliveries' AND "
                                      "sql LIKE '%WITHOUT ROWID'"), 1);
        assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
                                      "('deliveries_queue', 'deliveries_ended') AND sql LIKE '%WHERE state%'"), 2);
    }
    /* the id stays unique */
    assert_true(store_exec(s, "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, summary, "
                              "occurrence_ms, due_ms, state, next_attempt_ms, created_ms, updated_ms) VALUES "
                              "('d1', 1, 2, 3, 'inapp', 'x', 1, 1, 'pending', 1, 1, 1)") < 0);
}

/* Migration 9: the due index leaves out reminders whose series ended
 * (next_fire_ms NULL), and keeps the rows still to fire, in order. */
static void test_migrate_partial_due_index(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    bool pg = db->backend == STORE_PG;
    assert_int_equal(testdb_migrate(s), STORE_OK);
    EXEC_OK(s, "DROP INDEX reminders_due");
    EXEC_OK(s, "CREATE INDEX reminders_due ON reminders(shard, next_fire_ms)");
    EXEC_OK(s, "DELETE FROM schema_migrations WHERE version = 9");
    assert_int_equal(testdb_migrate(s), STORE_OK);
    assert_int_equal(query_int(s, pg ? "SELECT count(*) FROM pg_indexes WHERE indexname = 'reminders_due' "
                                       "AND indexdef LIKE '%(shard, next_fire_ms) WHERE (next_fire_ms IS NOT NULL)'"
                                     : "SELECT count(*) FROM sqlite_master WHERE name = 'reminders_due' "
                                       "AND sql LIKE '%(shard, next_fire_ms) WHERE next_fire_ms IS NOT NULL'"),
                     1);
}

/* Migrations 7 and 8 (PostgreSQL): the inbox loses its unique index on
 * delivery_id and gains the writing transaction's id. Rows already there
 * get xid 0, so cursors handed out before still read on after them; new
 * rows get their transaction's id. */
static void test_migrate_inbox_commit_order(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    assert_int_equal(testdb_migrate(s), STORE_OK);
    EXEC_OK(s, "ALTER TABLE notifications DROP COLUMN xid");
    EXEC_OK(s, "CREATE INDEX notifications_user ON notifications(user_id, seq)");
    EXEC_OK(s, "ALTER TABLE notifications ADD CONSTRAINT notifications_delivery_id_key UNIQUE (delivery_id)");
    EXEC_OK(s, "INSERT INTO users (id, email, email_lower, name, password_hash, created_ms) "
               "VALUES (7, 'a@x', 'a@x', 'a', 'h', 0)");
    EXEC_OK(s, "INSERT INTO notifications (user_id, delivery_id, event_id, summary, original_start_ms, due_ms, "
               "fired_ms, method, created_ms) VALUES (7, 'old', 1, 's', 0, 0, 0, 'push', 0)");
    EXEC_OK(s, "DELETE FROM schema_migrations WHERE version IN (7, 8)");
    assert_int_equal(testdb_migrate(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM notifications WHERE delivery_id = 'old' AND xid = '0'"), 1);
    EXEC_OK(s, "INSERT INTO notifications (user_id, delivery_id, event_id, summary, original_start_ms, due_ms, "
               "fired_ms, method, created_ms) VALUES (7, 'new', 1, 's', 0, 0, 0, 'push', 0)");
    assert_int_equal(query_int(s, "SELECT count(*) FROM notifications WHERE delivery_id = 'new' AND xid > '0'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pg_indexes WHERE indexname = 'notifications_user' "
                                  "AND indexdef LIKE '%(user_id, xid, seq)%'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pg_constraint WHERE conname = "
                                  "'notifications_delivery_id_key'"), 0);
}

/* Migration 10 (PostgreSQL): the outbox's key and the reminders' method
 * compare bytewise (collation "C"), whatever the database's collation;
 * rows already there keep their ids, and the key stays unique. */
static void test_migrate_bytewise_keys(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    assert_int_equal(testdb_migrate(s), STORE_OK);
    EXEC_OK(s, "ALTER TABLE deliveries ALTER COLUMN id TYPE TEXT COLLATE \"default\"");
    EXEC_OK(s, "ALTER TABLE reminders ALTER COLUMN method TYPE TEXT COLLATE \"default\"");
    EXEC_OK(s, "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, summary, occurrence_ms, "
               "due_ms, state, next_attempt_ms, created_ms, updated_ms) VALUES "
               "('b1', 1, 2, 3, 'inapp', 'x', 1, 1, 'pending', 1, 1, 1), "
               "('B2', 1, 2, 3, 'inapp', 'x', 1, 1, 'pending', 1, 1, 1)");
    EXEC_OK(s, "DELETE FROM schema_migrations WHERE version = 10");
    assert_int_equal(testdb_migrate(s), STORE_OK);
    const char *coll = "SELECT count(*) FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation "
                       "WHERE c.collname = 'C' AND ((a.attrelid = 'deliveries'::regclass AND a.attname = 'id') "
                       "OR (a.attrelid = 'reminders'::regclass AND a.attname = 'method'))";
    assert_int_equal(query_int(s, coll), 2);
    /* bytewise: 'B' (0x42) sorts before 'b' (0x62) */
    assert_int_equal(query_int(s, "SELECT count(*) FROM (SELECT id, row_number() OVER (ORDER BY id) AS n "
                                  "FROM deliveries) o WHERE (id = 'B2' AND n = 1) OR (id = 'b1' AND n = 2)"),
                     2);
    assert_true(store_exec(s, "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, summary, "
                              "occurrence_ms, due_ms, state, next_attempt_ms, created_ms, updated_ms) VALUES "
                              "('b1', 1, 2, 3, 'inapp', 'x', 1, 1, 'pending', 1, 1, 1)") < 0);
}

/* store_sync_log: SQLite writes its WAL back without a lock, whatever
 * another connection is doing, and without a WAL there is nothing to do;
 * PostgreSQL has nothing to do. The committed rows are all still there. */
static void test_sync_log(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    EXEC_OK(s, "CREATE TABLE t (i BIGINT PRIMARY KEY)");
    store *other = testdb_open(db);
    assert_non_null(other);
    assert_int_equal(store_begin(other), STORE_OK);   /* holds the write lock */
    EXEC_OK(other, "INSERT INTO t VALUES (1)");
    assert_int_equal(store_sync_log(s), STORE_OK);    /* does not wait for it */
    assert_int_equal(store_commit(other), STORE_OK);
    assert_int_equal(store_sync_log(s), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 1);
    store_close(other);
    store *mem = store_open("sqlite::memory:", NULL, 0);
    assert_non_null(mem);
    assert_int_equal(store_sync_log(mem), STORE_OK);
    store_close(mem);
}

/* store_set_guard: a shared connection's owner check. */
static bool guard_flag(void *ctx)
{
    return *(bool *)ctx;
}

/* Runs one store call in a child and says whether the guard stopped it
 * (SIGABRT) before it touched the connection. */
static bool aborts_in_child(store *s, store_stmt *st, int call)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGABRT, SIG_DFL);
        switch (call) {
        case 0: store_begin(s); break;
        case 1: store_commit(s); break;
        case 2: store_rollback(s); break;
        case 3: store_exec(s, "SELECT 1"); break;
        case 4: store_prepare(s, "SELECT 2"); break;
        case 5: store_step(st); break;
        case 6: store_reset(st); break;
        default: break;
        }
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void test_guard(void **state)
{
    store *s = ((testdb *)*state)->s;
    bool held = true;
    store_set_guard(s, guard_flag, &held);
    /* Held: every call works as usual. */
    assert_int_equal(store_begin(s), STORE_OK);
    store_stmt *st = store_prepare(s, "SELECT $1 + 1");
    store_bind_int64(st, 1, 41);
    assert_int_equal(store_step(st), STORE_ROW);
    assert_int_equal(store_col_int64(st, 0), 42);
    store_reset(st);
    assert_int_equal(store_commit(s), STORE_OK);
    /* Not held: each call stops the process, even with no other thread
     * about (the check does not wait for a collision), a statement
     * prepared under the lock included. */
    held = false;
    for (int call = 0; call <= 6; call++) assert_true(aborts_in_child(s, st, call));
    /* Unguarded again: the connection was never touched. */
    store_set_guard(s, NULL, NULL);
    assert_int_equal(query_int(s, "SELECT 7"), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST_RAW(test_commit_rollback),
        TESTDB_TEST_RAW(test_failed_statement_aborts),
        TESTDB_TEST_RAW(test_busy_mapped),
        TESTDB_TEST_PG_RAW(test_pg_serialization_busy),
        TESTDB_TEST_SQLITE_RAW(test_sqlite_two_writers),
        TESTDB_TEST_RAW(test_concurrent_migrate),
        TESTDB_TEST_RAW(test_migrate_refuses_newer),
        TESTDB_TEST_RAW(test_migrate_fills_gap),
        TESTDB_TEST_RAW(test_migrate_reshapes_outbox),
        TESTDB_TEST_PG_RAW(test_migrate_inbox_commit_order),
        TESTDB_TEST_PG_RAW(test_migrate_bytewise_keys),
        TESTDB_TEST_RAW(test_migrate_partial_due_index),
        TESTDB_TEST_PG_RAW(test_pg_reconnect),
        TESTDB_TEST_RAW(test_guard),
        TESTDB_TEST_RAW(test_sync_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
