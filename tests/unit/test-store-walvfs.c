/* test-store-walvfs.c -- the WAL-write VFS: a commit reaches the WAL file
 * in one write, every commit is in the file by the time it returns
 * (another connection sees it, a killed process keeps it), and
 * transactions past the largest write, spilled pages and rollbacks leave a
 * sound database. SQLite only, through SQLite's own API: the VFS sits
 * under the store. */
#include "testutil.h"
#include "testdb.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store_sqlite_vfs.h"

/* ---- a VFS under it that counts the writes to WAL files ------------------ */

static sqlite3_vfs count_vfs;
static sqlite3_io_methods count_methods;
static const sqlite3_io_methods *count_real; /* the methods of SQLite's WAL files */
static int count_writes, count_largest;
static sqlite3_int64 count_bytes;
static int count_failing; /* WAL writes fail as on a full disk */

static int count_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    if (count_failing) return SQLITE_FULL;
    count_writes++;
    count_bytes += n;
    if (n > count_largest) count_largest = n;
    return count_real->xWrite(f, p, n, off);
}

static int count_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out)
{
    sqlite3_vfs *under = vfs->pAppData;
    int rc = under->xOpen(under, name, f, flags, out);
    if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL) && f->pMethods) {
        count_real = f->pMethods;
        count_methods = *f->pMethods;
        count_methods.xWrite = count_write;
        f->pMethods = &count_methods;
    }
    return rc;
}

/* "count" (SQLite's default with WAL writes counted) and "count-wal" (the
 * VFS under test over it). */
static int setup(void **state)
{
    (void)state;
    if (!sqlite3_vfs_find("count")) {
        sqlite3_vfs *def = sqlite3_vfs_find(NULL);
        count_vfs = *def;
        count_vfs.zName = "count";
        count_vfs.pAppData = def;
        count_vfs.xOpen = count_open;
        if (sqlite3_vfs_register(&count_vfs, 0) != SQLITE_OK) return -1;
    }
    return sqlite_walvfs_register("count-wal", sqlite3_vfs_find("count")) == SQLITE_OK ? 0 : -1;
}

/* ---- helpers -------------------------------------------------------------- */

typedef struct {
    char path[768];
    sqlite3 *db;
} tdb;

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) fail_msg("%s: %s", sql, err ? err : sqlite3_errstr(rc));
}

static sqlite3 *open_with(const char *path, const char *vfs, const char *sync)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs), SQLITE_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA wal_autocheckpoint=0", sync);
    exec_ok(db, sql);
    return db;
}

static void tdb_open(tdb *t, const char *vfs, const char *sync)
{
    testdb_sqlite_path(t->path, sizeof t->path, NULL, 0);
    t->db = open_with(t->path, vfs, sync);
    exec_ok(t->db, "CREATE TABLE t (i INTEGER PRIMARY KEY, b BLOB)");
}

static void tdb_close(tdb *t)
{
    sqlite3_close(t->db);
    testdb_sqlite_remove(t->path);
}

static int64_t one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void assert_sound(const char *path, int64_t rows)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    assert_int_equal(one_int(db, "SELECT count(*) FROM t"), rows);
    sqlite3_close(db);
}

/* n rows of 3000 random bytes (a page each) in one transaction. */
static void insert_rows(sqlite3 *db, int n)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "BEGIN; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) "
             "INSERT INTO t (b) SELECT randomblob(3000) FROM c; COMMIT",
             n);
    exec_ok(db, sql);
}

/* Opens a transaction of 20 pages, in the WAL already when the cache is
 * small (a spill). */
static void begin_and_spill(sqlite3 *db)
{
    exec_ok(db, "BEGIN; WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20) "
                "INSERT INTO t (b) SELECT randomblob(3000) FROM c");
}

/* Commits 20 rows of zeroed pages. */
static void insert_zero_pages(sqlite3 *db)
{
    exec_ok(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20) "
                "INSERT INTO t (b) SELECT zeroblob(3000) FROM c");
}

/* Runs work in a child process on a connection of its own (synchronous
 * sync), then SIGKILLs the child with that connection still open. */
static void killed_after(const char *path, const char *sync, void (*work)(sqlite3 *))
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        sqlite3 *db = open_with(path, "count-wal", sync);
        work(db);
        char done = 1;
        if (write(fds[1], &done, 1) != 1) _exit(2);
        pause(); /* killed here, the connection still open */
        _exit(0);
    }
    close(fds[1]);
    char done = 0;
    assert_int_equal(read(fds[0], &done, 1), 1);
    close(fds[0]);
    kill(pid, SIGKILL);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
}

/* ---- tests ---------------------------------------------------------------- */

/* 20 pages and their index pages: SQLite alone writes every frame as two
 * writes (header, then page); through the VFS the commit is one. */
static void test_a_commit_is_one_write(void **state)
{
    (void)state;
    tdb plain, held;
    tdb_open(&plain, "count", "FULL");
    insert_rows(plain.db, 1);
    count_writes = 0;
    insert_rows(plain.db, 20);
    int plain_writes = count_writes;
    assert_true(plain_writes >= 40);

    tdb_open(&held, "count-wal", "FULL");
    insert_rows(held.db, 1);
    for (int round = 0; round < 3; round++) {
        count_writes = 0;
        count_bytes = 0;
        insert_rows(held.db, 20);
        assert_int_equal(count_writes, 1);
        assert_true(count_bytes >= 20 * 4120);
    }
    tdb_close(&plain);
    assert_sound(held.path, 61);
    tdb_close(&held);
}

/* With synchronous=OFF no sync follows a commit's frames; the commit frame
 * alone sends them to the file, so a connection that does not go through
 * the VFS reads each commit at once. */
static void test_another_connection_sees_each_commit(void **state)
{
    (void)state;
    tdb t;
    tdb_open(&t, "count-wal", "OFF");
    sqlite3 *reader = open_with(t.path, NULL, "FULL");
    for (int i = 1; i <= 30; i++) {
        insert_rows(t.db, i % 7 + 1);
        int64_t want = one_int(t.db, "SELECT count(*) FROM t");
        assert_int_equal(one_int(reader, "SELECT count(*) FROM t"), want);
        assert_int_equal(one_int(reader, "SELECT max(i) FROM t"), want);
    }
    sqlite3_close(reader);
    tdb_close(&t);
}

/* More than the largest write (128 KiB) in one commit: SQLite's unix VFS
 * cuts a longer write short, so the VFS writes such a commit in pieces. */
static void test_a_commit_past_the_largest_write(void **state)
{
    (void)state;
    tdb t;
    tdb_open(&t, "count-wal", "FULL");
    count_writes = 0;
    count_bytes = 0;
    count_largest = 0;
    insert_rows(t.db, 2000); /* about 8 MB of frames: 4,000 writes without the VFS */
    assert_true(count_bytes > 2000 * 4120);
    assert_true(count_largest <= STORE_WALVFS_MAX);
    assert_true(count_writes < 200);
    assert_sound(t.path, 2000);
    tdb_close(&t);
}

/* A page cache of 10 pages: a big transaction writes frames before its
 * commit (a spill) and reads them back; one rolled back leaves frames the
 * next transaction writes over. */
static void test_spills_and_rollbacks(void **state)
{
    (void)state;
    tdb t;
    tdb_open(&t, "count-wal", "FULL");
    exec_ok(t.db, "PRAGMA cache_size = 10");
    insert_rows(t.db, 200);
    assert_int_equal(one_int(t.db, "SELECT count(*) FROM t WHERE length(b) = 3000"), 200);
    exec_ok(t.db, "BEGIN; UPDATE t SET b = randomblob(3000); DELETE FROM t WHERE i % 2 = 0");
    assert_int_equal(one_int(t.db, "SELECT count(*) FROM t"), 100);
    exec_ok(t.db, "ROLLBACK");
    assert_int_equal(one_int(t.db, "SELECT count(*) FROM t"), 200);
    exec_ok(t.db, "BEGIN; UPDATE t SET b = zeroblob(3000) WHERE i <= 150; DELETE FROM t WHERE i > 190; COMMIT");
    assert_int_equal(one_int(t.db, "SELECT count(*) FROM t WHERE b = zeroblob(3000)"), 150);
    assert_sound(t.path, 190);
    tdb_close(&t);
}

/* A process killed right after its commits returned keeps them all: the
 * VFS holds nothing past a commit. */
static void fifty_commits(sqlite3 *db)
{
    for (int i = 0; i < 50; i++) insert_rows(db, 3);
}

static void test_a_killed_writer_keeps_its_commits(void **state)
{
    (void)state;
    tdb t;
    tdb_open(&t, "count-wal", "FULL");
    sqlite3_close(t.db); /* no connection crosses the fork */
    t.db = NULL;
    killed_after(t.path, "FULL", fifty_commits);
    assert_sound(t.path, 150);
    testdb_sqlite_remove(t.path);
}

/* A transaction whose pages spilled into the WAL (a 5-page cache), rolled
 * back: its last frames must not stay held, or they land later on the
 * frames another connection committed at the same place (session 21's
 * review: "file is not a database"). */
static void test_a_rollback_leaves_nothing_for_later(void **state)
{
    (void)state;
    tdb t;
    tdb_open(&t, "count-wal", "FULL");
    insert_rows(t.db, 1);
    sqlite3 *other = open_with(t.path, "count-wal", "FULL");
    exec_ok(other, "PRAGMA wal_checkpoint(TRUNCATE)");
    exec_ok(t.db, "PRAGMA cache_size = 5");
    begin_and_spill(t.db);
    exec_ok(t.db, "ROLLBACK");
    insert_zero_pages(other);
    assert_int_equal(one_int(t.db, "SELECT count(*) FROM t"), 21);
    exec_ok(t.db, "INSERT INTO t (b) VALUES (zeroblob(10))");
    assert_int_equal(one_int(other, "SELECT count(*) FROM t WHERE b = zeroblob(3000)"), 20);
    sqlite3_close(other);
    assert_sound(t.path, 22);
    tdb_close(&t);
}

/* synchronous=NORMAL (no sync after a commit) and pages spilled then
 * written again in the same transaction: SQLite rewrites the frames'
 * checksums (walRewriteChecksums) after the commit frame. A header of
 * those still held when the commit was published was lost to a SIGKILL
 * (the review: 1 row of 21 after recovery). */
static void spill_rewrite_commit(sqlite3 *db)
{
    exec_ok(db, "PRAGMA cache_size = 5");
    begin_and_spill(db);
    exec_ok(db, "UPDATE t SET b = zeroblob(3000) WHERE i <= 10; COMMIT");
}

static void test_rewritten_checksums_survive_a_kill(void **state)
{
    (void)state;
    tdb t;
    tdb_open(&t, "count-wal", "FULL");
    insert_rows(t.db, 1);
    sqlite3_close(t.db); /* no connection crosses the fork */
    t.db = NULL;
    killed_after(t.path, "NORMAL", spill_rewrite_commit);
    assert_sound(t.path, 21);
    testdb_sqlite_remove(t.path);
}

/* A WAL write that fails (a full disk) in the middle of a transaction
 * whose frames were held: the whole transaction is rolled back, never only
 * the statement (the review: a COMMIT went through over frames never
 * written, "database disk image is malformed"), and the connection writes
 * again once the disk has room. */
static void test_a_failed_write_rolls_the_transaction_back(void **state)
{
    (void)state;
    tdb t;
    tdb_open(&t, "count-wal", "FULL");
    insert_rows(t.db, 1);
    exec_ok(t.db, "PRAGMA cache_size = 5");
    begin_and_spill(t.db);
    count_failing = 1;
    int rc = sqlite3_exec(t.db, "UPDATE t SET b = zeroblob(3000) WHERE i = 1", NULL, NULL, NULL);
    count_failing = 0;
    assert_int_not_equal(rc, SQLITE_OK);
    assert_int_not_equal(rc, SQLITE_FULL);
    assert_int_equal(sqlite3_get_autocommit(t.db), 1); /* rolled back whole */
    insert_rows(t.db, 2);
    assert_sound(t.path, 3);
    tdb_close(&t);
}

/* Exclusive locking mode: SQLite takes no lock on the WAL's write slot,
 * so nothing may be held (the second review: a rolled-back transaction's
 * frames survived the switch back to normal mode and later overwrote
 * another connection's commit). */
static void test_exclusive_mode_holds_nothing(void **state)
{
    (void)state;
    tdb t;
    tdb_open(&t, "count-wal", "FULL");
    insert_rows(t.db, 1);
    exec_ok(t.db, "PRAGMA wal_checkpoint(TRUNCATE)");
    exec_ok(t.db, "PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = 5");
    begin_and_spill(t.db);
    exec_ok(t.db, "PRAGMA locking_mode = NORMAL");
    exec_ok(t.db, "ROLLBACK");
    sqlite3 *other = open_with(t.path, "count-wal", "FULL");
    insert_zero_pages(other);
    assert_int_equal(one_int(t.db, "SELECT count(*) FROM t"), 21);
    sqlite3_close(other);
    assert_sound(t.path, 21);

    /* A failed write there is SQLite's own error: the next one works. */
    exec_ok(t.db, "PRAGMA locking_mode = EXCLUSIVE");
    count_failing = 1;
    int rc = sqlite3_exec(t.db, "INSERT INTO t (b) VALUES (zeroblob(10))", NULL, NULL, NULL);
    count_failing = 0;
    assert_int_not_equal(rc, SQLITE_OK);
    insert_rows(t.db, 1);
    assert_int_equal(one_int(t.db, "SELECT count(*) FROM t"), 22);
    exec_ok(t.db, "PRAGMA locking_mode = NORMAL; SELECT 1");
    tdb_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_commit_is_one_write),
        cmocka_unit_test(test_another_connection_sees_each_commit),
        cmocka_unit_test(test_a_commit_past_the_largest_write),
        cmocka_unit_test(test_spills_and_rollbacks),
        cmocka_unit_test(test_a_killed_writer_keeps_its_commits),
        cmocka_unit_test(test_a_rollback_leaves_nothing_for_later),
        cmocka_unit_test(test_rewritten_checksums_survive_a_kill),
        cmocka_unit_test(test_a_failed_write_rolls_the_transaction_back),
        cmocka_unit_test(test_exclusive_mode_holds_nothing),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
