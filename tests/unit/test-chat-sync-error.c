/* test-chat-sync-error.c -- a failed sync of the WAL (SQLite) is the chat
 * writer's last write (chat_writer.c, the syncer): the batch it covered is
 * answered 503, and so is every write after it, though the disk answers
 * again, a new writer's too while the process has the file open (a
 * restart of chime writes again: tests/api/test_disk_failure.py).
 *
 * The disk's failure is tests/faults/failsync.c, compiled in here: its
 * fdatasync, which the process's calls reach before the C library's (the
 * store's and SQLite's alike), answers EIO for the WAL file while the
 * file CHIME_FAILSYNC names exists. */
#define _GNU_SOURCE
#include "testutil.h"
#include "testdb.h"
#include "chattest.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../faults/failsync.c"

#include "base/base.h"
#include "chat/chat.h"
#include "chat/chat_writer.h"

/* One request's answer, waited for. */
typedef struct answer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int status;
    char message[256];
} answer;

static void finished(chat_op *op)
{
    answer *a = op->ctx;
    pthread_mutex_lock(&a->mu);
    a->status = op->res.status;
    snprintf(a->message, sizeof a->message, "%s", op->res.message);
    a->done = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    chat_op_free(op);
}

/* Sends text as client_msg_id cid and waits for the answer: its status
 * (message: its error's text). */
static int send_wait(chat_writer *w, int64_t me, int64_t conv, const char *cid, char message[256])
{
    answer a = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    assert_int_equal(chat_writer_submit(w, chattest_send_op(me, conv, cid, finished, &a)), 0);
    pthread_mutex_lock(&a.mu);
    while (!a.done) pthread_cond_wait(&a.cv, &a.mu);
    pthread_mutex_unlock(&a.mu);
    if (message) snprintf(message, 256, "%s", a.message);
    return a.status;
}

static chat_writer *writer_up(const testdb *db)
{
    chat_writer_opts o = {.db_url = db->url, .group_max_members = 500};
    chat_writer *w = chat_writer_new(&o);
    assert_non_null(w);
    assert_int_equal(chat_writer_start(w), 0);
    return w;
}

static int64_t stored(store *s, const char *cid)
{
    store_stmt *st = store_prepare(s, "SELECT count(*) FROM messages WHERE client_msg_id = $1");
    store_bind_str(st, 1, cid);
    assert_int_equal(store_step(st), STORE_ROW);
    int64_t n = store_col_int64(st, 0);
    store_reset(st);
    return n;
}

static void test_failed_sync_is_the_last_write(void **state)
{
    testdb *db = *state;
    testdb_user(db->s, 1);
    testdb_user(db->s, 2);
    chat_result r = {0};
    assert_int_equal(store_begin(db->s), STORE_OK);
    assert_int_equal(chat_create_direct(db->s, 1, 2, 0, &r), STORE_OK);
    assert_int_equal(store_commit(db->s), STORE_OK);
    int64_t conv = chattest_conv_id(&r);
    chat_result_free(&r);

    char flag[256], why[256];
    testdb_unique(flag, sizeof flag, "/tmp/chime_failsync_");
    assert_int_equal(setenv("CHIME_FAILSYNC", flag, 1), 0);
    chat_writer *w = writer_up(db);
    assert_int_equal(send_wait(w, 1, conv, "a", NULL), 201);
    FILE *f = fopen(flag, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(send_wait(w, 2, conv, "b", why), 503);
    assert_non_null(strstr(why, "restarts"));
    /* The disk answers again; the writer still takes nothing. */
    assert_int_equal(unlink(flag), 0);
    assert_int_equal(send_wait(w, 1, conv, "c", why), 503);
    assert_non_null(strstr(why, "restarts"));
    assert_int_equal(stored(db->s, "c"), 0);
    chat_writer_free(w);

    /* A new writer, while the process still has the file open (db->s),
     * takes nothing either: the file is failed for the whole process
     * (store_disk_failed). "b" was committed (the disk here lost
     * nothing); "c" never was. A restart of the process writes again
     * (tests/api/test_disk_failure.py). */
    assert_true(store_disk_failed(db->s));
    w = writer_up(db);
    assert_int_equal(send_wait(w, 1, conv, "c", why), 503);
    chat_writer_free(w);
    assert_int_equal(stored(db->s, "b"), 1);
    assert_int_equal(stored(db->s, "c"), 0);
}

static int setup_base(void **state)
{
    (void)state;
    return base_init();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST_SQLITE(test_failed_sync_is_the_last_write),
    };
    return cmocka_run_group_tests(tests, setup_base, NULL);
}
