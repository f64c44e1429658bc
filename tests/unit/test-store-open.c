/* test-store-open.c -- store_open's failures (bad URL, no server, a path
 * SQLite cannot write), the $N scanner on its own, and the cache bound. */
#include "testutil.h"
#include "testdb.h"

#include <string.h>
#include <sys/stat.h>

#include "store/store.h"
#include "store/store_int.h"

static void expect_open_fails(const char *url, const char *mention)
{
    char err[512];
    memset(err, 'x', sizeof err);
    store *s = store_open(url, err, sizeof err);
    if (s) {
        store_close(s);
        fail_msg("store_open(%s) succeeded", url ? url : "NULL");
    }
    assert_true(strlen(err) > 0 && strlen(err) < sizeof err);
    if (mention && !strstr(err, mention))
        fail_msg("store_open(%s): \"%s\" does not mention \"%s\"", url, err, mention);
}

static void test_bad_urls(void **state)
{
    (void)state;
    expect_open_fails(NULL, "no URL");
    expect_open_fails("", "unsupported");
    expect_open_fails("mysql://localhost/x", "unsupported");
    expect_open_fails("SQLITE:/tmp/x.db", "unsupported");
    expect_open_fails("sqlite:", "empty path");
    expect_open_fails("postgres://%zz@/x", NULL);
    assert_null(store_open("nope", NULL, 0));     /* no buffer: still no crash */
}

static void test_missing_pg_server(void **state)
{
    (void)state;
    expect_open_fails("postgresql://chime@/postgres?host=/nonexistent-chime-dir", "postgres:");
    /* a port nothing listens on, over TCP on loopback */
    expect_open_fails("postgres://chime@127.0.0.1:1/postgres?connect_timeout=2", "postgres:");
}

static void test_unwritable_sqlite(void **state)
{
    (void)state;
    char path[768], url[800];
    testdb_sqlite_path(path, sizeof path, NULL, 0);
    snprintf(url, sizeof url, "sqlite:%s/missing-dir/x.db", path);
    expect_open_fails(url, "missing-dir");
    /* a directory where the file should be */
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(url, sizeof url, "sqlite:%s", path);
    expect_open_fails(url, path);
    rmdir(path);
    /* /proc takes no new files, even for root */
    expect_open_fails("sqlite:/proc/chime-test.db", "/proc/chime-test.db");
}

static void test_sqlite_memory(void **state)
{
    (void)state;
    char err[256];
    store *s = store_open("sqlite::memory:", err, sizeof err);
    assert_non_null(s);
    assert_int_equal(store_backend_of(s), STORE_SQLITE);
    assert_int_equal(testdb_migrate(s), STORE_OK);
    assert_int_equal(store_schema_version(s), testdb_latest());
    store_close(s);
}

static void scan(const char *sql, const char *want, int want_max)
{
    char out[512], err[128];
    int max = -1;
    assert_int_equal(store_sql_params(sql, out, &max, err, sizeof err), 0);
    assert_string_equal(out, want);
    assert_int_equal(max, want_max);
}

static void test_param_scanner(void **state)
{
    (void)state;
    scan("SELECT 1", "SELECT 1", 0);
    scan("SELECT $1, $2", "SELECT ?1, ?2", 2);
    scan("SELECT $2, $1, $2", "SELECT ?2, ?1, ?2", 2);
    scan("SELECT $12+$3", "SELECT ?12+?3", 12);
    scan("SELECT '$1', $1", "SELECT '$1', ?1", 1);
    scan("SELECT 'a''$1''b', $1", "SELECT 'a''$1''b', ?1", 1);
    scan("SELECT \"$1\" FROM t", "SELECT \"$1\" FROM t", 0);
    scan("SELECT a$1 FROM t", "SELECT a$1 FROM t", 0);            /* identifier */
    scan("SELECT 1 -- $1\n, $2", "SELECT 1 -- $1\n, ?2", 2);
    scan("SELECT /* $1 */ $2", "SELECT /* $1 */ ?2", 2);
    scan("SELECT $$ $1 $$, $tag$ $2 $tag$, $3", "SELECT $$ $1 $$, $tag$ $2 $tag$, ?3", 3);
    scan("SELECT 'unterminated $1", "SELECT 'unterminated $1", 0);
    scan("SELECT $a, $", "SELECT $a, $", 0);
    char err[128];
    int max;
    assert_int_equal(store_sql_params("SELECT $0", NULL, &max, err, sizeof err), -1);
    assert_non_null(strstr(err, "$0"));
    assert_int_equal(store_sql_params("SELECT $32767", NULL, &max, err, sizeof err), -1);
    assert_int_equal(store_sql_params("SELECT $99999999999999999999", NULL, &max, err,
                                      sizeof err), -1);
    assert_int_equal(store_sql_params("SELECT $32766", NULL, &max, err, sizeof err), 0);
    assert_int_equal(max, 32766);
}

/* SQL built from data would grow the cache forever; past the bound
 * store_prepare refuses instead. */
static void test_cache_bound(void **state)
{
    (void)state;
    char err[256], sql[64];
    store *s = store_open("sqlite::memory:", err, sizeof err);
    assert_non_null(s);
    int i;
    for (i = 0; i < STORE_MAX_STMTS; i++) {
        snprintf(sql, sizeof sql, "SELECT %d", i);
        if (!store_prepare(s, sql))
            fail_msg("prepare %d: %s", i, store_errmsg(s));
    }
    snprintf(sql, sizeof sql, "SELECT %d", i);
    assert_null(store_prepare(s, sql));
    assert_non_null(strstr(store_errmsg(s), "cache full"));
    assert_non_null(store_prepare(s, "SELECT 17"));               /* cached ones still work */
    store_close(s);
}

/* The hot path reuses the statement's text buffer: once it has held the
 * largest bindings, later rounds never move it; a huge one is let go at
 * reset. */
static void test_bind_buffer_reused(void **state)
{
    (void)state;
    char err[256], text[300];
    store *s = store_open("sqlite::memory:", err, sizeof err);
    assert_non_null(s);
    memset(text, 'a', sizeof text);
    const char *sql = "SELECT length($1) + length($2)";
    store_stmt *st = store_prepare(s, sql);
    assert_non_null(st);
    const char *buf = NULL;
    size_t cap = 0;
    for (int i = 0; i < 100; i++) {
        assert_ptr_equal(store_prepare(s, sql), st);
        assert_int_equal(store_bind_text(st, 1, text, 100 + i % 7), STORE_OK);
        assert_int_equal(store_bind_text(st, 2, text, 150), STORE_OK);
        assert_int_equal(store_step(st), STORE_ROW);
        assert_int_equal(store_col_int64(st, 0), 250 + i % 7);
        store_reset(st);
        if (i == 6) { buf = st->text; cap = st->text_cap; }   /* largest sizes seen */
        if (i < 6)
            continue;
        assert_ptr_equal(st->text, buf);
        assert_int_equal(st->text_cap, cap);
    }
    size_t big = STORE_KEEP_TEXT_BYTES + 1;
    char *huge = malloc(big);
    memset(huge, 'b', big);
    assert_int_equal(store_bind_text(st, 1, huge, big), STORE_OK);
    assert_int_equal(store_bind_str(st, 2, ""), STORE_OK);
    assert_int_equal(store_step(st), STORE_ROW);
    assert_int_equal(store_col_int64(st, 0), (int64_t)big);
    store_reset(st);
    assert_int_equal(st->text_cap, 0);
    free(huge);
    store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_missing_pg_server),
        cmocka_unit_test(test_unwritable_sqlite),
        cmocka_unit_test(test_sqlite_memory),
        cmocka_unit_test(test_param_scanner),
        cmocka_unit_test(test_cache_bound),
        cmocka_unit_test(test_bind_buffer_reused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
