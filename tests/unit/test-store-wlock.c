/* test-store-wlock.c -- the writers of one process queue for an SQLite
 * file and get it in arrival order (store_sqlite_lock.h): a writer that
 * finds the file taken gets it the moment the holder commits, ahead of
 * the holder's next transaction. SQLite only. */
#include "testutil.h"
#include "testdb.h"

#include <pthread.h>

#include "base/base.h"
#include "store/store_sqlite_lock.h"

typedef struct writer_arg {
    const char *url;
    const char *sql;   /* run in a transaction, or on its own if !tx */
    bool tx;
    int rc;
} writer_arg;

static void *writer_thread(void *p)
{
    writer_arg *a = p;
    char err[256];
    store *s = store_open(a->url, err, sizeof err);
    if (!s) {
        a->rc = STORE_ERROR;
        return NULL;
    }
    if (a->tx) {
        a->rc = store_begin(s);
        if (a->rc == STORE_OK) a->rc = store_exec(s, a->sql);
        if (a->rc == STORE_OK) a->rc = store_commit(s);
    } else {
        store_stmt *st = store_prepare(s, a->sql);
        a->rc = st ? store_step(st) : STORE_ERROR;
        if (st) store_reset(st);
    }
    store_close(s);
    return NULL;
}

/* Until n writers queue behind the holder (at most 5 s). */
static bool wait_queued(sqlite_wlock *l, int n)
{
    for (int i = 0; i < 500; i++) {
        if (sqlite_wlock_waiting(l) == n) return true;
        nap_ms(10);
    }
    return false;
}

static void ordered(store *s, const char *first, const char *second)
{
    int64_t a = 0, b = 0;
    char q[200];
    snprintf(q, sizeof q, "SELECT rowid FROM t WHERE w = '%s'", first);
    assert_int_equal(store_query_int64(s, q, &a), STORE_ROW);
    snprintf(q, sizeof q, "SELECT rowid FROM t WHERE w = '%s'", second);
    assert_int_equal(store_query_int64(s, q, &b), STORE_ROW);
    if (a > b) fail_msg("%s was written after %s", first, second);
}

/* Starts a writer (a) on a thread and waits until it queues behind the
 * caller's hold; the file's lock is the caller's to release. */
static sqlite_wlock *queue_writer(testdb *db, writer_arg *a, pthread_t *th)
{
    sqlite_wlock *l = sqlite_wlock_for(db->path);
    assert_non_null(l);
    assert_int_equal(pthread_create(th, NULL, writer_thread, a), 0);
    assert_true(wait_queued(l, 1));
    return l;
}

/* The caller holds the file in a transaction: a writer (a) queues behind
 * it, the transaction ends (commit, or rollback) and at once another
 * begins and writes next_row, as the chat writer does under load. */
static void hand_over(testdb *db, writer_arg *a, bool commit, const char *next_row)
{
    pthread_t th;
    sqlite_wlock *l = queue_writer(db, a, &th);
    assert_int_equal(commit ? store_commit(db->s) : store_rollback(db->s), STORE_OK);
    assert_int_equal(store_begin(db->s), STORE_OK);
    char q[100];
    snprintf(q, sizeof q, "INSERT INTO t VALUES ('%s')", next_row);
    EXEC_OK(db->s, q);
    assert_int_equal(store_commit(db->s), STORE_OK);
    pthread_join(th, NULL);
    assert_int_equal(sqlite_wlock_waiting(l), 0);
    sqlite_wlock_release(l);
}

/* In SQLite's busy handler the waiter naps (1 ms, then more) and the
 * holder's next transaction takes the file first, again and again;
 * queued here, the waiter goes first. */
static void test_waiter_goes_before_the_holders_next_transaction(void **state)
{
    testdb *db = *state;
    EXEC_OK(db->s, "CREATE TABLE t (w TEXT)");
    assert_int_equal(store_begin(db->s), STORE_OK);
    EXEC_OK(db->s, "INSERT INTO t VALUES ('holder 1')");
    writer_arg a = {.url = db->url, .sql = "INSERT INTO t VALUES ('waiter')", .tx = true};
    hand_over(db, &a, true, "holder 2");
    assert_int_equal(a.rc, STORE_OK);
    ordered(db->s, "holder 1", "waiter");
    ordered(db->s, "waiter", "holder 2");
}

/* A change outside a transaction queues the same way, and a rollback
 * hands the file on as a commit does. */
static void test_a_statement_on_its_own_queues_too(void **state)
{
    testdb *db = *state;
    EXEC_OK(db->s, "CREATE TABLE t (w TEXT)");
    assert_int_equal(store_begin(db->s), STORE_OK);
    writer_arg a = {.url = db->url, .sql = "INSERT INTO t VALUES ('alone')", .tx = false};
    hand_over(db, &a, false, "after");
    assert_int_equal(a.rc, STORE_DONE);
    ordered(db->s, "alone", "after");
}

/* Another thread's reads and checkpoint beside a write transaction. */
typedef struct reader_arg {
    const char *url;
    int64_t count, took_ms;
    int rc;
} reader_arg;

static void *reader_thread(void *p)
{
    reader_arg *a = p;
    char err[256];
    int64_t t0 = base_now_ms();
    store *s = store_open(a->url, err, sizeof err);
    a->rc = s ? STORE_OK : STORE_ERROR;
    if (!s) return NULL;
    if (store_query_int64(s, "SELECT count(*) FROM t", &a->count) != STORE_ROW) a->rc = STORE_ERROR;
    store_stmt *ck = store_prepare(s, "PRAGMA wal_checkpoint(PASSIVE)");
    if (!ck || store_step(ck) != STORE_ROW) a->rc = STORE_ERROR;
    if (ck) store_reset(ck);
    a->took_ms = base_now_ms() - t0;
    store_close(s);
    return NULL;
}

/* Reads and PRAGMAs never queue: the WAL checkpointer runs beside the
 * writers, and a reader is not held up by a write transaction. */
static void test_reads_and_pragmas_do_not_queue(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    EXEC_OK(s, "CREATE TABLE t (w TEXT)");
    assert_int_equal(store_begin(s), STORE_OK);
    EXEC_OK(s, "INSERT INTO t VALUES ('held')");
    reader_arg a = {.url = db->url, .count = -1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, reader_thread, &a), 0);
    pthread_join(th, NULL); /* a queued reader would wait out the 5 s bound */
    assert_int_equal(a.rc, STORE_OK);
    assert_int_equal(a.count, 0);
    if (a.took_ms >= 2500) fail_msg("the reader waited %lld ms for the writer", (long long)a.took_ms);
    assert_int_equal(store_commit(s), STORE_OK);
}

/* The lock itself: a bounded wait gives up and leaves the queue, a thread
 * never queues behind itself, files have locks of their own, and a
 * database in memory has none. */
static void test_lock_bounds(void **state)
{
    testdb *db = *state;
    sqlite_wlock *l = sqlite_wlock_for(db->path), *same = sqlite_wlock_for(db->path);
    assert_non_null(l);
    assert_ptr_equal(l, same);
    assert_true(sqlite_wlock_lock(l, 1000));
    assert_false(sqlite_wlock_lock(same, 1000)); /* this thread holds it: no wait */
    sqlite_wlock_unlock(l);
    assert_true(sqlite_wlock_lock(l, 0));
    sqlite_wlock_unlock(l);

    char other[700], url[800];
    testdb_sqlite_path(other, sizeof other, url, sizeof url);
    char err[256];
    store *s2 = store_open(url, err, sizeof err);
    assert_non_null(s2);
    sqlite_wlock *l2 = sqlite_wlock_for(other);
    assert_non_null(l2);
    assert_ptr_not_equal(l, l2);
    sqlite_wlock_release(l2);
    store_close(s2);
    testdb_sqlite_remove(other);
    assert_null(sqlite_wlock_for(""));
    assert_null(sqlite_wlock_for(":memory:"));
    sqlite_wlock_release(same);
    sqlite_wlock_release(l);
}

typedef struct timed_arg {
    sqlite_wlock *l;
    bool got;
    int64_t waited_ms;
} timed_arg;

static void *timed_locker(void *p)
{
    timed_arg *a = p;
    int64_t t0 = base_now_ms();
    a->got = sqlite_wlock_lock(a->l, 100);
    a->waited_ms = base_now_ms() - t0;
    if (a->got) sqlite_wlock_unlock(a->l);
    return NULL;
}

static void test_a_wait_gives_up_at_its_bound(void **state)
{
    testdb *db = *state;
    sqlite_wlock *l = sqlite_wlock_for(db->path);
    assert_true(sqlite_wlock_lock(l, 0));
    timed_arg a = {.l = l};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, timed_locker, &a), 0);
    pthread_join(th, NULL);
    assert_false(a.got);
    assert_true(a.waited_ms >= 90);
    assert_int_equal(sqlite_wlock_waiting(l), 0); /* it left the queue */
    sqlite_wlock_unlock(l);
    assert_true(sqlite_wlock_lock(l, 0)); /* free: not handed to the one that left */
    sqlite_wlock_unlock(l);
    sqlite_wlock_release(l);
}

/* store_writers_hold: a turn in the queue without a transaction (the
 * checkpointer's closing pass). Another connection's writer waits until
 * the release, and reads go on meanwhile; a second hold on the same
 * connection is refused, not a deadlock. */
static void test_a_hold_without_a_transaction(void **state)
{
    testdb *db = *state;
    EXEC_OK(db->s, "CREATE TABLE t (w TEXT)");
    assert_true(store_writers_hold(db->s));
    assert_false(store_writers_hold(db->s));
    writer_arg a = {.url = db->url, .sql = "INSERT INTO t VALUES ('waiter')", .tx = true};
    pthread_t th;
    sqlite_wlock *l = queue_writer(db, &a, &th);
    int64_t n = -1;
    assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM t", &n), STORE_ROW);
    assert_int_equal(n, 0);
    store_writers_release(db->s);
    pthread_join(th, NULL);
    assert_int_equal(a.rc, STORE_OK);
    assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM t", &n), STORE_ROW);
    assert_int_equal(n, 1);
    sqlite_wlock_release(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST_SQLITE_RAW(test_waiter_goes_before_the_holders_next_transaction),
        TESTDB_TEST_SQLITE_RAW(test_a_statement_on_its_own_queues_too),
        TESTDB_TEST_SQLITE_RAW(test_reads_and_pragmas_do_not_queue),
        TESTDB_TEST_SQLITE_RAW(test_lock_bounds),
        TESTDB_TEST_SQLITE_RAW(test_a_wait_gives_up_at_its_bound),
        TESTDB_TEST_SQLITE_RAW(test_a_hold_without_a_transaction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
