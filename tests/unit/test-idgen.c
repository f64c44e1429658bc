/* test-idgen.c -- the node's id generator on SQLite and PostgreSQL: ids
 * that grow and carry their millisecond, and a next id that never waits
 * for the number's renewal (the chat writer asks for one inside its write
 * transaction, which a renewal may be queued behind). */
#include "testutil.h"
#include "testdb.h"

#include <pthread.h>
#include <time.h>

#include "base/base.h"
#include "cluster/idgen.h"

static void test_ids_grow_and_carry_their_millisecond(void **state)
{
    testdb *db = *state;
    idgen *g = idgen_start(db->url, "n1", 10000, 1000);
    assert_non_null(g);
    int64_t last = 0;
    for (int i = 0; i < 10000; i++) {
        int64_t before = base_now_ms(), id = idgen_next(g), after = base_now_ms();
        assert_true(id > last);
        assert_true(idgen_ms(id) >= before && idgen_ms(id) <= after);
        last = id;
    }
    idgen_stop(g);
}

typedef struct next_call {
    idgen *g;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int64_t id;
} next_call;

static void *call_next(void *p)
{
    next_call *c = p;
    int64_t id = idgen_next(c->g);
    pthread_mutex_lock(&c->mu);
    c->id = id;
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Whether the call ended within ms. */
static bool wait_done(next_call *c, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&c->mu);
    while (!c->done && pthread_cond_timedwait(&c->cv, &c->mu, &ts) == 0) continue;
    bool done = c->done;
    pthread_mutex_unlock(&c->mu);
    return done;
}

/* A writer holds the number's row (SQLite: the file) while the generator's
 * thread renews every 20 ms: the renewal waits for that transaction, and
 * the writer's idgen_next inside it must not wait for the renewal. It
 * did (the hold's mutex is taken across the renewal's round trip): a send
 * of the chat writer then stalled every writer until SQLite's busy
 * timeout, 8-13 s in bench/chat at 200 messages a second. */
static void test_next_does_not_wait_for_a_renewal(void **state)
{
    testdb *db = *state;
    idgen *g = idgen_start(db->url, "n1", 5000, 20);
    assert_non_null(g);
    assert_true(idgen_next(g) > 0);
    store *w = store_open(db->url, NULL, 0);
    assert_non_null(w);
    assert_int_equal(store_begin(w), STORE_OK);
    EXEC_OK(w, "UPDATE leases SET expires_ms = expires_ms WHERE name LIKE 'idgen/%'");
    usleep(200 * 1000); /* renewals are now queued behind w */
    next_call c = {.g = g};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, call_next, &c), 0);
    bool quick = wait_done(&c, 1000); /* a renewal waits seconds (SQLite) or for good (PostgreSQL) */
    store_rollback(w); /* frees a renewal (and the call, had it waited) */
    pthread_join(t, NULL);
    assert_true(quick);
    assert_true(c.id > 0);
    store_close(w);
    idgen_stop(g);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST(test_ids_grow_and_carry_their_millisecond),
        TESTDB_TEST(test_next_does_not_wait_for_a_renewal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
