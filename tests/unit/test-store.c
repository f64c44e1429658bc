/* test-store.c -- the store API on both backends: open, migrations, binding
 * and columns, RETURNING / ON CONFLICT, errors, the statement cache,
 * store_changes, the server clock and $N placeholders. Transactions and
 * concurrency are in test-store-tx.c, bad URLs in test-store-open.c. */
#include "testutil.h"
#include "testdb.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "store/store.h"

static store_stmt *prep(store *s, const char *sql)
{
    store_stmt *st = store_prepare(s, sql);
    if (!st)
        fail_msg("store_prepare(%s): %s", sql, store_errmsg(s));
    return st;
}

static int64_t query_int(store *s, const char *sql)
{
    int64_t v = -12345;
    int rc = store_query_int64(s, sql, &v);
    if (rc != STORE_ROW)
        fail_msg("%s: rc %d: %s", sql, rc, store_errmsg(s));
    return v;
}

static void test_open_close(void **state)
{
    testdb *db = *state;
    assert_int_equal(store_backend_of(db->s),
                     strncmp(db->url, "sqlite:", 7) == 0 ? STORE_SQLITE : STORE_PG);
    assert_int_equal(query_int(db->s, "SELECT 1 + 1"), 2);
    store *second = testdb_open(db);
    assert_non_null(second);
    store_close(second);
    store_close(NULL);
}

static void test_migrate_twice(void **state)
{
    store *s = ((testdb *)*state)->s;
    assert_int_equal(store_schema_version(s), 0);
    assert_int_equal(testdb_migrate(s), STORE_OK);
    assert_int_equal(store_schema_version(s), testdb_latest());
    assert_int_equal(testdb_migrate(s), STORE_OK);
    assert_int_equal(store_schema_version(s), testdb_latest());
    assert_int_equal(query_int(s, "SELECT count(*) FROM schema_migrations"), testdb_nsteps());
    assert_int_equal(query_int(s, "SELECT count(*) FROM users"), 0);
}

/* The one list keeps the domains' steps in version order whatever order
 * they are added in, and refuses a version claimed twice. */
static void test_schema_list(void **state)
{
    (void)state;
    static const store_migration a[] = {{3, "c", "SELECT 1", NULL}, {10, "d", "SELECT 1", NULL}};
    static const store_migration b[] = {{1, "a", "SELECT 1", NULL}, {7, "b", "SELECT 1", NULL}};
    static const store_migration dup[] = {{7, "again", "SELECT 1", NULL}};
    static const store_migration zero[] = {{0, "zero", "SELECT 1", NULL}};
    store_schema s = {0};
    assert_int_equal(store_schema_add(&s, a, 2), 0);
    assert_int_equal(store_schema_add(&s, b, 2), 0);
    assert_int_equal(s.n, 4);
    int want[] = {1, 3, 7, 10};
    for (int i = 0; i < 4; i++) assert_int_equal(s.steps[i]->version, want[i]);
    assert_int_equal(store_schema_latest(&s), 10);
    assert_int_equal(store_schema_add(&s, dup, 1), -1);
    assert_int_equal(store_schema_add(&s, zero, 1), -1);
    assert_int_equal(s.n, 4);
    /* chime's own: every domain's steps, no version twice, in order. */
    assert_int_equal(chime_schema(&s), 0);
    for (int i = 1; i < s.n; i++) assert_true(s.steps[i - 1]->version < s.steps[i]->version);
}

/* Migration 1's tables as specified: defaults, the unique lower-cased email,
 * the session foreign key with ON DELETE CASCADE (foreign keys are on). */
static void test_schema_users(void **state)
{
    store *s = ((testdb *)*state)->s;
    const char *ins = "INSERT INTO users (id, email, email_lower, name, password_hash, created_ms)"
                      " VALUES ($1, $2, lower($2), 'n', 'h', 1)";
    store_stmt *st = prep(s, ins);
    store_bind_int64(st, 1, 7);
    store_bind_str(st, 2, "A@x.org");
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);
    store_bind_int64(st, 1, 8);
    store_bind_str(st, 2, "a@X.org");
    assert_int_equal(store_step(st), STORE_CONSTRAINT);
    store_reset(st);
    assert_int_equal(query_int(s, "SELECT is_admin FROM users WHERE id = 7"), 0);

    EXEC_OK(s, "INSERT INTO sessions VALUES ('t1', 7, 1, 2)");
    EXEC_OK(s, "INSERT INTO auth_failures (key, failures, window_start_ms) VALUES ('k', 1, 5)");
    assert_int_equal(query_int(s, "SELECT locked_until_ms FROM auth_failures"), 0);
    assert_int_equal(store_exec(s, "INSERT INTO sessions VALUES ('t2', 99, 1, 2)"),
                     STORE_CONSTRAINT);
    EXEC_OK(s, "DELETE FROM users WHERE id = 7");
    assert_int_equal(query_int(s, "SELECT count(*) FROM sessions"), 0);
}

/* Column name:type:nullability of a table, in order, as the backend
 * reports them. */
static void columns_of(store *s, const char *table, char *out, size_t n)
{
    const char *sql = store_backend_of(s) == STORE_SQLITE
        ? "SELECT name || ':' || lower(type) || ':' || \"notnull\" FROM pragma_table_info($1)"
          " ORDER BY cid"
        : "SELECT column_name || ':' || data_type || ':' ||"
          " CASE is_nullable WHEN 'NO' THEN 1 ELSE 0 END"
          " FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position";
    store_stmt *st = prep(s, sql);
    store_bind_str(st, 1, table);
    out[0] = '\0';
    while (store_step(st) == STORE_ROW) {
        strncat(out, store_col_text(st, 0), n - strlen(out) - 2);
        strcat(out, " ");
    }
    store_reset(st);
}

static void test_schema_columns(void **state)
{
    store *s = ((testdb *)*state)->s;
    bool lite = store_backend_of(s) == STORE_SQLITE;
    char got[512];
    columns_of(s, "users", got, sizeof got);
    assert_string_equal(got, lite
        ? "id:bigint:0 email:text:1 email_lower:text:1 name:text:1 password_hash:text:1 "
          "is_admin:integer:1 created_ms:bigint:1 email_skeleton:text:0 "
        : "id:bigint:1 email:text:1 email_lower:text:1 name:text:1 password_hash:text:1 "
          "is_admin:integer:1 created_ms:bigint:1 email_skeleton:text:0 ");
    columns_of(s, "sessions", got, sizeof got);
    assert_string_equal(got, lite
        ? "token_hash:text:0 user_id:bigint:1 created_ms:bigint:1 expires_ms:bigint:1 "
        : "token_hash:text:1 user_id:bigint:1 created_ms:bigint:1 expires_ms:bigint:1 ");
    columns_of(s, "auth_failures", got, sizeof got);
    assert_string_equal(got, lite
        ? "key:text:0 failures:integer:1 window_start_ms:bigint:1 locked_until_ms:bigint:1 "
        : "key:text:1 failures:integer:1 window_start_ms:bigint:1 locked_until_ms:bigint:1 ");
    const char *idx = lite
        ? "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'sessions_user'"
        : "SELECT count(*) FROM pg_indexes WHERE indexname = 'sessions_user'";
    assert_int_equal(query_int(s, idx), 1);
}

static void test_types_and_null(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE t (k BIGINT PRIMARY KEY, i BIGINT, s TEXT)");
    /* Quotes, a statement separator and a comment marker: if this were ever
     * spliced into the SQL it would break it or drop the table. */
    const char *evil = "O'Brien \"q\" '); DROP TABLE t; --";
    const char *utf8 = "h\xc3\xa9llo \xe2\x98\x83 \xf0\x9d\x84\x9e";
    struct { int64_t k, i; const char *s; } rows[] = {
        {1, INT64_MAX, evil}, {2, INT64_MIN, utf8}, {3, 0, ""}, {4, -1, NULL},
    };
    store_stmt *st = prep(s, "INSERT INTO t (k, i, s) VALUES ($1, $2, $3)");
    for (size_t r = 0; r < 4; r++) {
        assert_int_equal(store_bind_int64(st, 1, rows[r].k), STORE_OK);
        assert_int_equal(store_bind_int64(st, 2, rows[r].i), STORE_OK);
        assert_int_equal(store_bind_str(st, 3, rows[r].s), STORE_OK);
        assert_int_equal(store_step(st), STORE_DONE);
        store_reset(st);
    }
    /* Explicit NULL, and a length that stops short of the terminator. */
    assert_int_equal(store_bind_int64(st, 1, 5), STORE_OK);
    assert_int_equal(store_bind_null(st, 2), STORE_OK);
    assert_int_equal(store_bind_text(st, 3, "abcdef", 3), STORE_OK);
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);

    st = prep(s, "SELECT k, i, s FROM t ORDER BY k");
    for (size_t r = 0; r < 4; r++) {
        assert_int_equal(store_step(st), STORE_ROW);
        assert_int_equal(store_col_int64(st, 0), rows[r].k);
        assert_false(store_col_is_null(st, 1));
        assert_true(store_col_int64(st, 1) == rows[r].i);
        if (rows[r].s) {
            assert_false(store_col_is_null(st, 2));
            assert_string_equal(store_col_text(st, 2), rows[r].s);
            assert_int_equal(store_col_len(st, 2), strlen(rows[r].s));
        } else {
            assert_true(store_col_is_null(st, 2));
            assert_string_equal(store_col_text(st, 2), "");
            assert_int_equal(store_col_len(st, 2), 0);
        }
    }
    assert_int_equal(store_step(st), STORE_ROW);
    assert_true(store_col_is_null(st, 1));
    assert_int_equal(store_col_int64(st, 1), 0);
    assert_string_equal(store_col_text(st, 2), "abc");
    assert_string_equal(store_col_text(st, 0), "5");      /* integers read as text too */
    assert_int_equal(store_col_int64(st, 2), 0);          /* non-numeric text reads 0 */
    assert_true(store_col_is_null(st, 9));                /* out of range: NULL, no crash */
    assert_string_equal(store_col_text(st, 9), "");
    assert_int_equal(store_step(st), STORE_DONE);
    assert_int_equal(store_step(st), STORE_DONE);         /* stays done until reset */
    assert_true(store_col_is_null(st, 0));                /* no current row */
    store_reset(st);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 5);
}

static void test_returning_and_upsert(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE kv (k TEXT PRIMARY KEY, v BIGINT NOT NULL)");
    store_stmt *st = prep(s, "INSERT INTO kv (k, v) VALUES ($1, $2)"
                             " ON CONFLICT (k) DO UPDATE SET v = kv.v + excluded.v"
                             " RETURNING v");
    int64_t expect[] = {10, 15, 35};
    int64_t add[] = {10, 5, 20};
    for (int i = 0; i < 3; i++) {
        store_bind_str(st, 1, "a");
        store_bind_int64(st, 2, add[i]);
        assert_int_equal(store_step(st), STORE_ROW);
        assert_int_equal(store_col_int64(st, 0), expect[i]);
        store_reset(st);
        assert_int_equal(store_changes(st), 1);
    }
    st = prep(s, "INSERT INTO kv (k, v) VALUES ($1, 1) ON CONFLICT (k) DO NOTHING");
    store_bind_str(st, 1, "a");
    assert_int_equal(store_step(st), STORE_DONE);
    assert_int_equal(store_changes(st), 0);
    store_reset(st);
    st = prep(s, "DELETE FROM kv WHERE k = $1 RETURNING v");
    store_bind_str(st, 1, "a");
    assert_int_equal(store_step(st), STORE_ROW);
    assert_int_equal(store_col_int64(st, 0), 35);
    assert_int_equal(store_step(st), STORE_DONE);
    assert_int_equal(store_changes(st), 1);
    store_reset(st);
}

static void test_constraint_errors(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE p (id BIGINT PRIMARY KEY, n TEXT NOT NULL UNIQUE,"
               " c BIGINT CHECK (c >= 0))");
    EXEC_OK(s, "CREATE TABLE ch (id BIGINT PRIMARY KEY, p BIGINT REFERENCES p(id))");
    EXEC_OK(s, "INSERT INTO p (id, n, c) VALUES (1, 'one', 0)");
    const char *bad[] = {
        "INSERT INTO p (id, n) VALUES (1, 'x')",           /* primary key */
        "INSERT INTO p (id, n) VALUES (2, 'one')",         /* unique */
        "INSERT INTO p (id, n) VALUES (3, NULL)",          /* not null */
        "INSERT INTO p (id, n, c) VALUES (4, 'y', -1)",    /* check */
        "INSERT INTO ch (id, p) VALUES (1, 42)",           /* foreign key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        store_stmt *st = prep(s, bad[i]);
        int rc = store_step(st);
        if (rc != STORE_CONSTRAINT)
            fail_msg("%s: rc %d (%s)", bad[i], rc, store_errmsg(s));
        assert_true(strlen(store_errmsg(s)) > 0);
        assert_int_equal(store_step(st), STORE_CONSTRAINT);   /* repeats until reset */
        store_reset(st);
        assert_int_equal(store_exec(s, bad[i]), STORE_CONSTRAINT);
    }
    assert_int_equal(query_int(s, "SELECT count(*) FROM p"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM ch"), 0);
}

static void test_bad_sql_and_binds(void **state)
{
    store *s = ((testdb *)*state)->s;
    /* SQLite rejects at prepare, PostgreSQL at the first step (prepared
     * lazily); either way the caller sees an error with a message. */
    store_stmt *st = store_prepare(s, "SELEC nonsense");
    if (st)
        assert_true(store_step(st) < 0);
    assert_true(strlen(store_errmsg(s)) > 0);
    /* a failed prepare's NULL flows through to store_step's error */
    st = store_prepare(s, "SELECT $0");
    assert_null(st);
    assert_int_equal(store_bind_int64(st, 1, 1), STORE_ERROR);
    assert_int_equal(store_bind_str(st, 1, NULL), STORE_ERROR);
    assert_int_equal(store_step(st), STORE_ERROR);
    assert_true(store_col_is_null(st, 0));
    assert_string_equal(store_col_text(st, 0), "");
    store_reset(st);
    assert_non_null(strstr(store_errmsg(s), "$0"));
    /* one statement per prepare; trailing blanks and comments are fine */
    st = store_prepare(s, "SELECT 1; SELECT 2");
    if (st)
        assert_true(store_step(st) < 0);
    st = prep(s, "SELECT 3; -- three\n ;  /* done */ ");
    assert_int_equal(store_step(st), STORE_ROW);
    assert_int_equal(store_col_int64(st, 0), 3);
    store_reset(st);
    assert_null(store_prepare(s, "SELECT $99999"));

    st = prep(s, "SELECT $1");
    assert_int_equal(store_bind_int64(st, 0, 1), STORE_ERROR);
    assert_int_equal(store_bind_int64(st, 2, 1), STORE_ERROR);
    assert_int_equal(store_bind_int64(st, 1, 5), STORE_OK);
    assert_int_equal(store_step(st), STORE_ROW);
    assert_int_equal(store_bind_int64(st, 1, 6), STORE_ERROR);  /* not reset */
    store_reset(st);
    assert_int_equal(store_step(st), STORE_ROW);                /* unbound is NULL */
    assert_true(store_col_is_null(st, 0));
    store_reset(st);
    assert_int_equal(query_int(s, "SELECT 41 + 1"), 42);        /* still usable */
}

static void test_cache_reuse(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE n (i BIGINT, name TEXT)");
    EXEC_OK(s, "INSERT INTO n VALUES (1, 'one'), (2, 'two'), (3, 'three')");
    const char *sql = "SELECT name FROM n WHERE i = $1";
    char copy[64];
    strcpy(copy, sql);
    store_stmt *st = prep(s, sql);
    assert_ptr_equal(prep(s, copy), st);          /* keyed by text, not pointer */
    const char *want[] = {"one", "two", "three"};
    for (int round = 0; round < 50; round++) {
        int i = round % 3;
        st = prep(s, sql);
        store_bind_int64(st, 1, i + 1);
        assert_int_equal(store_step(st), STORE_ROW);
        assert_string_equal(store_col_text(st, 0), want[i]);
        assert_int_equal(store_step(st), STORE_DONE);
        store_reset(st);
    }
    /* Left mid-iteration and bound: the next prepare hands it back reset. */
    st = prep(s, "SELECT i FROM n WHERE i >= $1 ORDER BY i");
    store_bind_int64(st, 1, 1);
    assert_int_equal(store_step(st), STORE_ROW);
    assert_ptr_equal(prep(s, "SELECT i FROM n WHERE i >= $1 ORDER BY i"), st);
    assert_int_equal(store_step(st), STORE_DONE);     /* $1 is NULL again: no rows */
    store_reset(st);
    assert_ptr_not_equal(prep(s, "SELECT name FROM n WHERE i = $1 "), prep(s, sql));
}

/* The cache looks a text up by its address first: one buffer filled
 * with one text and then another must give each its own statement. */
static void test_cache_same_buffer(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE n (i BIGINT, name TEXT)");
    EXEC_OK(s, "INSERT INTO n VALUES (1, 'one'), (2, 'two')");
    char buf[64];
    for (int round = 0; round < 3; round++) {
        strcpy(buf, "SELECT name FROM n WHERE i = 1");
        store_stmt *one = prep(s, buf);
        assert_int_equal(store_step(one), STORE_ROW);
        assert_string_equal(store_col_text(one, 0), "one");
        store_reset(one);
        strcpy(buf, "SELECT name FROM n WHERE i = 2");
        store_stmt *two = prep(s, buf);
        assert_ptr_not_equal(two, one);
        assert_int_equal(store_step(two), STORE_ROW);
        assert_string_equal(store_col_text(two, 0), "two");
        store_reset(two);
    }
}

/* A cached statement keeps working after DDL changes its table's shape
 * (PostgreSQL refuses the old plan; the store prepares it again). */
static void test_schema_change_under_cache(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE sc (a BIGINT)");
    EXEC_OK(s, "INSERT INTO sc VALUES (1)");
    const char *sql = "SELECT * FROM sc";
    store_stmt *st = prep(s, sql);
    assert_int_equal(store_step(st), STORE_ROW);
    store_reset(st);
    EXEC_OK(s, "ALTER TABLE sc ADD COLUMN b TEXT DEFAULT 'x'");
    st = prep(s, sql);
    int rc = store_step(st);
    if (rc != STORE_ROW)
        fail_msg("after ALTER: rc %d: %s", rc, store_errmsg(s));
    assert_string_equal(store_col_text(st, 1), "x");
    store_reset(st);
}

static void test_changes(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE c (i BIGINT)");
    store_stmt *ins = prep(s, "INSERT INTO c VALUES ($1)");
    for (int i = 0; i < 5; i++) {
        store_bind_int64(ins, 1, i);
        assert_int_equal(store_step(ins), STORE_DONE);
        assert_int_equal(store_changes(ins), 1);
        store_reset(ins);
    }
    store_stmt *up = prep(s, "UPDATE c SET i = i + 100 WHERE i < $1");
    store_bind_int64(up, 1, 3);
    assert_int_equal(store_step(up), STORE_DONE);
    assert_int_equal(store_changes(up), 3);
    store_reset(up);
    store_bind_int64(up, 1, -1);
    assert_int_equal(store_step(up), STORE_DONE);
    assert_int_equal(store_changes(up), 0);
    store_reset(up);
    store_stmt *del = prep(s, "DELETE FROM c WHERE i >= 100");
    assert_int_equal(store_step(del), STORE_DONE);
    assert_int_equal(store_changes(del), 3);
    store_reset(del);
    store_stmt *sel = prep(s, "SELECT i FROM c");
    while (store_step(sel) == STORE_ROW) {}
    assert_int_equal(store_changes(sel), 0);     /* a query changes nothing */
    store_reset(sel);
    assert_int_equal(store_changes(ins), 1);     /* per statement, not per connection */
    store_stmt *ddl = prep(s, "CREATE TABLE c2 (i BIGINT)");
    assert_int_equal(store_step(ddl), STORE_DONE);
    assert_int_equal(store_changes(ddl), 0);     /* DDL changes no rows */
    store_reset(ddl);
}

static void test_now_ms(void **state)
{
    store *s = ((testdb *)*state)->s;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t before = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    int64_t now = 0, later = 0;
    assert_int_equal(store_now_ms(s, &now), STORE_OK);
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t after = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    assert_true(now >= before - 50 && now <= after + 50);
    struct timespec nap = {0, 20 * 1000000};
    nanosleep(&nap, NULL);
    assert_int_equal(store_now_ms(s, &later), STORE_OK);
    assert_true(later - now >= 15 && later - now < 5000);   /* advances in real time */
}

static bool stamp_same(const store_stamp *a, const store_stamp *b)
{
    return a->others == b->others && a->mine == b->mine;
}

/* SQLite: a stamp moves with a commit on this connection or another, and
 * only then (reads and a rolled-back nothing leave it). PostgreSQL cannot
 * tell and says so. */
static void test_change_stamp(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    store_stamp a, b;
    if (store_backend_of(s) == STORE_PG) {
        assert_int_equal(store_change_stamp(s, &a), STORE_ERROR);
        return;
    }
    assert_int_equal(store_exec(s, "CREATE TABLE t (x INTEGER)"), STORE_OK);
    assert_int_equal(store_change_stamp(s, &a), STORE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM t"), 0);
    assert_int_equal(store_change_stamp(s, &b), STORE_OK);
    assert_true(stamp_same(&a, &b));
    assert_int_equal(store_exec(s, "INSERT INTO t VALUES (1)"), STORE_OK); /* ours */
    assert_int_equal(store_change_stamp(s, &b), STORE_OK);
    assert_false(stamp_same(&a, &b));
    a = b;
    store *other = testdb_open(db);
    assert_non_null(other);
    assert_int_equal(store_exec(other, "INSERT INTO t VALUES (2)"), STORE_OK); /* another connection's */
    assert_int_equal(store_change_stamp(s, &b), STORE_OK);
    assert_false(stamp_same(&a, &b));
    a = b;
    assert_int_equal(store_change_stamp(s, &b), STORE_OK);
    assert_true(stamp_same(&a, &b));
    store_close(other);
}

/* Integers, fractions and comparisons read through store_col_int64 alike
 * on both backends (PostgreSQL answers booleans as t/f, numerics as text). */
static void test_int64_reading(void **state)
{
    store *s = ((testdb *)*state)->s;
    store_stmt *st = prep(s, "SELECT 7 > 3, 7 < 3, CAST(2.75 AS REAL), -2.75 * 1, "
                             "1e15 + 0.5, CAST('123' AS TEXT), 4000000000000 * 2");
    assert_int_equal(store_step(st), STORE_ROW);
    assert_int_equal(store_col_int64(st, 0), 1);
    assert_int_equal(store_col_int64(st, 1), 0);
    assert_int_equal(store_col_int64(st, 2), 2);
    assert_int_equal(store_col_int64(st, 3), -2);
    assert_true(store_col_int64(st, 4) == INT64_C(1000000000000000));
    assert_int_equal(store_col_int64(st, 5), 123);
    assert_true(store_col_int64(st, 6) == INT64_C(8000000000000));
    store_reset(st);
}

static void test_placeholders(void **state)
{
    store *s = ((testdb *)*state)->s;
    EXEC_OK(s, "CREATE TABLE ph (a TEXT, b TEXT)");
    store_stmt *st = prep(s, "INSERT INTO ph (a, b) VALUES ($2, $1)");
    store_bind_str(st, 1, "first");
    store_bind_str(st, 2, "second");
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);
    st = prep(s, "SELECT a, b FROM ph");
    assert_int_equal(store_step(st), STORE_ROW);
    assert_string_equal(store_col_text(st, 0), "second");
    assert_string_equal(store_col_text(st, 1), "first");
    store_reset(st);

    /* Repeated and out of order; integers add as bigint on PostgreSQL. */
    st = prep(s, "SELECT $2 * 1000 + $1 + $1");
    store_bind_int64(st, 1, 1700000000000);
    store_bind_int64(st, 2, 3);
    assert_int_equal(store_step(st), STORE_ROW);
    assert_true(store_col_int64(st, 0) == 3000 + 2 * INT64_C(1700000000000));
    store_reset(st);

    /* $1 in a literal, a quoted identifier and comments stays as written. */
    st = prep(s, "SELECT '$1', 'it''s $2', $1 AS \"$1\" -- $3 here\n /* and $4 */");
    store_bind_str(st, 1, "bound");
    assert_int_equal(store_step(st), STORE_ROW);
    assert_string_equal(store_col_text(st, 0), "$1");
    assert_string_equal(store_col_text(st, 1), "it's $2");
    assert_string_equal(store_col_text(st, 2), "bound");
    store_reset(st);
    assert_int_equal(store_bind_int64(st, 2, 1), STORE_ERROR);   /* only $1 counts */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST_RAW(test_open_close),
        TESTDB_TEST_RAW(test_migrate_twice),
        cmocka_unit_test(test_schema_list),
        TESTDB_TEST(test_schema_users),
        TESTDB_TEST(test_schema_columns),
        TESTDB_TEST_RAW(test_types_and_null),
        TESTDB_TEST_RAW(test_returning_and_upsert),
        TESTDB_TEST_RAW(test_constraint_errors),
        TESTDB_TEST_RAW(test_bad_sql_and_binds),
        TESTDB_TEST_RAW(test_cache_reuse),
        TESTDB_TEST_RAW(test_cache_same_buffer),
        TESTDB_TEST_RAW(test_schema_change_under_cache),
        TESTDB_TEST_RAW(test_changes),
        TESTDB_TEST_RAW(test_now_ms),
        TESTDB_TEST_RAW(test_change_stamp),
        TESTDB_TEST_RAW(test_int64_reading),
        TESTDB_TEST_RAW(test_placeholders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
