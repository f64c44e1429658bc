/* test-store-diskfail.c -- a failed sync to disk (SQLite) fails the file
 * for every connection of the process (store.h, store_disk_failed),
 * whichever sync saw it: a commit's own (synchronous=FULL), or
 * store_sync_log's. From then on every write is refused, on every
 * connection to the file, a new one too -- begin, a change outside a
 * transaction, the commit of a transaction begun before, the syncs -- and
 * nothing of the refused writes is stored; reads go on. A connection to
 * another file writes as before.
 *
 * The disk's failure is tests/faults/failsync.c, compiled in: its
 * fdatasync and fsync, which SQLite's and the store's calls reach before
 * the C library's, answer EIO for a "-wal" file while the file
 * CHIME_FAILSYNC names exists. */
#define _GNU_SOURCE
#include "testutil.h"
#include "testdb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../faults/failsync.c"

static int64_t rows(store *s)
{
    int64_t n = -1;
    assert_int_equal(store_query_int64(s, "SELECT count(*) FROM t", &n), STORE_ROW);
    return n;
}

static void insert(store *s, int expect)
{
    store_stmt *st = store_prepare(s, "INSERT INTO t (v) VALUES (1)");
    assert_int_equal(store_step(st), expect);
    store_reset(st);
}

/* Creates the flag that fails the syncs; returns its path in flag. */
static void disk_fails(char *flag, size_t size)
{
    testdb_unique(flag, size, "/tmp/chime_failsync_");
    assert_int_equal(setenv("CHIME_FAILSYNC", flag, 1), 0);
    FILE *f = fopen(flag, "w");
    assert_non_null(f);
    fclose(f);
}

static void assert_refused(store *s)
{
    assert_true(store_disk_failed(s));
    assert_int_equal(store_begin(s), STORE_ERROR);
    assert_non_null(strstr(store_errmsg(s), "until it restarts"));
    insert(s, STORE_ERROR);
    assert_int_equal(store_sync_log(s), STORE_ERROR);
    assert_int_equal(store_sync_data(s), STORE_ERROR);
}

static void test_a_failed_commit_fails_the_file(void **state)
{
    testdb *db = *state;
    assert_int_equal(store_exec(db->s, "CREATE TABLE t (v INTEGER)"), STORE_OK);
    char err[256], flag[256];
    store *other = store_open(db->url, err, sizeof err);
    assert_non_null(other);
    assert_false(store_disk_failed(other));

    disk_fails(flag, sizeof flag);
    insert(db->s, STORE_ERROR); /* its commit's sync fails */
    assert_int_equal(unlink(flag), 0);

    /* The disk answers again; nothing more is written, on any connection. */
    assert_refused(db->s);
    assert_refused(other);
    store *late = store_open(db->url, err, sizeof err);
    assert_non_null(late);
    assert_refused(late);
    assert_int_equal(rows(late), 0); /* the failed commit is no commit; reads go on */
    store_close(late);
    store_close(other);
}

static void test_a_failed_sync_of_the_log_fails_the_file(void **state)
{
    testdb *db = *state;
    assert_int_equal(store_exec(db->s, "CREATE TABLE t (v INTEGER)"), STORE_OK);
    insert(db->s, STORE_DONE);
    char err[256], flag[256];
    store *other = store_open(db->url, err, sizeof err);
    assert_non_null(other);
    assert_int_equal(store_begin(other), STORE_OK); /* begun before the failure */
    insert(other, STORE_DONE);

    disk_fails(flag, sizeof flag);
    assert_int_equal(store_sync_log(db->s), STORE_ERROR);
    assert_int_equal(unlink(flag), 0);
    assert_int_equal(store_commit(other), STORE_ERROR);
    assert_refused(db->s);
    assert_refused(other);
    assert_int_equal(rows(db->s), 1);
    store_close(other);

    /* Another file of the same process is not touched. */
    char path[256], url[300];
    testdb_sqlite_path(path, sizeof path, url, sizeof url);
    store *elsewhere = store_open(url, err, sizeof err);
    assert_non_null(elsewhere);
    assert_false(store_disk_failed(elsewhere));
    assert_int_equal(store_exec(elsewhere, "CREATE TABLE t (v INTEGER)"), STORE_OK);
    insert(elsewhere, STORE_DONE);
    assert_int_equal(rows(elsewhere), 1);
    store_close(elsewhere);
    testdb_sqlite_remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST_SQLITE_RAW(test_a_failed_commit_fails_the_file),
        TESTDB_TEST_SQLITE_RAW(test_a_failed_sync_of_the_log_fails_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
