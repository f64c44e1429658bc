/* test-chat-writer.c -- the chat writer's order of work (chat_writer.c):
 * every request it takes is answered exactly once; its changes are told
 * (on_commit) before it is answered; by its answer another connection
 * sees the write; and freeing the writer answers everything queued
 * first. On SQLite the answers come from the syncer thread after the
 * WAL's sync, on PostgreSQL from the writer after its durable commit: the
 * same promises on both. */
#include "testutil.h"
#include "testdb.h"
#include "chattest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "chat/chat.h"
#include "chat/chat_writer.h"

#define SENDS 300
#define USERS 4 /* two direct conversations: 1 with 2, 3 with 4 */

/* What the callbacks saw; the writer's and the syncer's threads write it. */
typedef struct seen {
    pthread_mutex_t mu;
    int64_t told[USERS + 1]; /* the highest number on_commit gave each user */
    int answered;            /* finish calls */
    int late;                /* answers whose changes had not been told yet */
    int unseen;              /* 201s whose message another connection did not find */
    int not_created;         /* answers other than 201 */
    store *other;            /* a connection of the test's own */
} seen;

static int setup_base(void **state)
{
    (void)state;
    return base_init();
}

static void on_commit(void *arg, const chat_news *news, size_t n)
{
    seen *s = arg;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++)
        if (news[i].user >= 1 && news[i].user <= USERS && news[i].seq > s->told[news[i].user])
            s->told[news[i].user] = news[i].seq;
    pthread_mutex_unlock(&s->mu);
}

/* The message a 201 names, looked for through the test's connection (on
 * the thread that answers: no cmocka asserts here). */
static bool message_found(store *db, const chat_result *r)
{
    json_t *body = r->body ? json_incref(r->body) : json_loadb(r->rendered, r->rendered_len, 0, NULL);
    const char *hex = json_string_value(json_object_get(body, "id"));
    int64_t id = 0;
    bool ok = false;
    if (hex && base_id_parse(hex, strlen(hex), &id) == 0) {
        store_stmt *st = store_prepare(db, "SELECT 1 FROM messages WHERE id = $1");
        store_bind_int64(st, 1, id);
        ok = store_step(st) == STORE_ROW;
        store_reset(st);
    }
    json_decref(body);
    return ok;
}

static void finished(chat_op *op)
{
    seen *s = op->ctx;
    pthread_mutex_lock(&s->mu);
    s->answered++;
    if (op->res.status != 201) s->not_created++;
    for (size_t i = 0; i < op->res.nsignal; i++)
        if (s->told[op->res.signal[i].user] < op->res.signal[i].seq) s->late++;
    if (op->res.status == 201 && !message_found(s->other, &op->res)) s->unseen++;
    pthread_mutex_unlock(&s->mu);
    chat_op_free(op);
}

static int64_t direct(store *db, int64_t a, int64_t b)
{
    chat_result r = {0};
    assert_int_equal(store_begin(db), STORE_OK);
    assert_int_equal(chat_create_direct(db, a, b, 0, &r), STORE_OK);
    assert_int_equal(store_commit(db), STORE_OK);
    int64_t conv = chattest_conv_id(&r);
    chat_result_free(&r);
    return conv;
}

static chat_op *send_op(seen *s, int64_t me, int64_t conv, int i)
{
    char cid[32];
    snprintf(cid, sizeof cid, "c%d", i);
    return chattest_send_op(me, conv, cid, finished, s);
}

/* SENDS messages queued as fast as the test can, alternating between the
 * two conversations and their two senders; the writer is freed at once,
 * with most of them still queued. */
static void test_writer_answers_after_telling(void **state)
{
    testdb *db = *state;
    for (int64_t u = 1; u <= USERS; u++) testdb_user(db->s, u);
    int64_t convs[2] = {direct(db->s, 1, 2), direct(db->s, 3, 4)};
    char err[256];
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .other = store_open(db->url, err, sizeof err)};
    assert_non_null(s.other);
    chat_writer_opts o = {.db_url = db->url, .group_max_members = 500, .on_commit = on_commit, .arg = &s};
    chat_writer *w = chat_writer_new(&o);
    assert_non_null(w);
    assert_int_equal(chat_writer_start(w), 0);
    for (int i = 0; i < SENDS; i++) {
        int pair = i % 2;
        assert_int_equal(chat_writer_submit(w, send_op(&s, 2 * pair + 1 + (i / 2) % 2, convs[pair], i)), 0);
    }
    chat_writer_free(w);
    assert_int_equal(s.answered, SENDS);
    assert_int_equal(s.not_created, 0);
    assert_int_equal(s.late, 0);
    assert_int_equal(s.unseen, 0);
    /* each message took the next number of both members of its pair */
    for (int64_t u = 1; u <= USERS; u++) {
        assert_int_equal(s.told[u], 1 + SENDS / 2);
        assert_int_equal(testdb_int64(db->s, "SELECT seq FROM chat_seqs WHERE user_id = $1", u), 1 + SENDS / 2);
    }
    store_close(s.other);
}

/* A writer freed with nothing sent stops cleanly, and one that is
 * stopping refuses new work (the caller keeps the op). */
static void test_writer_stops_idle(void **state)
{
    testdb *db = *state;
    seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    chat_writer_opts o = {.db_url = db->url, .group_max_members = 500, .on_commit = on_commit, .arg = &s};
    chat_writer *w = chat_writer_new(&o);
    assert_non_null(w);
    chat_op *op = send_op(&s, 1, 1, 0);
    assert_int_equal(chat_writer_submit(w, op), -1); /* not started */
    chat_op_free(op);
    assert_int_equal(chat_writer_start(w), 0);
    chat_writer_free(w);
    assert_int_equal(s.answered, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST(test_writer_answers_after_telling),
        TESTDB_TEST(test_writer_stops_idle),
    };
    return cmocka_run_group_tests(tests, setup_base, NULL);
}
