/* test-users-sessions.c -- the node's memory of checked bearer tokens:
 * a hit only within its time and the session's own expiry, forgetting on
 * sign-out and on a bus hint, collisions replacing (never confusing)
 * tokens, and 0 keeping nothing. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "users/users_sessions.h"

static void hash_of(const char *token, char hash[65])
{
    base_sha256_hex(token, strlen(token), hash);
}

#define GET(c, tok, now, uid) users_sessions_get(c, tok, strlen(tok), now, uid)
#define PUT(c, tok, uid, exp, now)                                                                         \
    do {                                                                                                   \
        char h_[65];                                                                                       \
        hash_of(tok, h_);                                                                                  \
        users_sessions_put(c, tok, strlen(tok), h_, uid, exp, now);                                        \
    } while (0)

static void test_hit_within_time(void **state)
{
    users_sessions *c = users_sessions_new(16, 1000);
    int64_t uid = 0;
    assert_false(GET(c, "chm_a", 100, &uid));
    PUT(c, "chm_a", 42, 1000000, 100);
    assert_true(GET(c, "chm_a", 100, &uid));
    assert_int_equal(uid, 42);
    assert_true(GET(c, "chm_a", 1099, &uid));
    assert_false(GET(c, "chm_a", 1100, &uid)); /* read again after ttl */
    assert_false(GET(c, "chm_a2", 100, &uid));  /* another token */
    users_sessions_free(c);
}

static void test_session_expiry_wins(void **state)
{
    users_sessions *c = users_sessions_new(16, 60000);
    int64_t uid = 0;
    PUT(c, "chm_b", 7, 500, 100);
    assert_true(GET(c, "chm_b", 499, &uid));
    assert_false(GET(c, "chm_b", 500, &uid));
    users_sessions_free(c);
}

static void test_forget_and_hint(void **state)
{
    users_sessions *c = users_sessions_new(16, 60000);
    char h[65], other[65], hint[66];
    int64_t uid = 0;
    hash_of("chm_c", h);
    hash_of("chm_d", other);
    PUT(c, "chm_c", 1, 1000000, 0);
    users_sessions_forget(c, h);
    assert_false(GET(c, "chm_c", 1, &uid));

    PUT(c, "chm_c", 1, 1000000, 0);
    size_t n = users_sessions_hint(h, hint);
    assert_int_equal(n, 65);
    assert_false(users_sessions_on_hint(c, "u0000000000000001", 17)); /* a push, not ours */
    assert_true(users_sessions_on_hint(c, hint, n));
    assert_false(GET(c, "chm_c", 1, &uid));
    /* Forgetting a token that is not there leaves the others alone. */
    PUT(c, "chm_c", 1, 1000000, 0);
    users_sessions_forget(c, other);
    assert_true(GET(c, "chm_c", 1, &uid));
    users_sessions_free(c);
}

/* One slot: every token collides; the last one put is the one kept and
 * no token ever answers with another's user. */
static void test_collisions(void **state)
{
    users_sessions *c = users_sessions_new(1, 60000);
    char a[65];
    int64_t uid = 0;
    hash_of("chm_e", a);
    PUT(c, "chm_e", 1, 1000000, 0);
    PUT(c, "chm_f", 2, 1000000, 0);
    assert_false(GET(c, "chm_e", 1, &uid));
    assert_true(GET(c, "chm_f", 1, &uid));
    assert_int_equal(uid, 2);
    users_sessions_forget(c, a);
    assert_true(GET(c, "chm_f", 1, &uid));
    users_sessions_free(c);
}

/* Many tokens in a big table: each finds its own user. */
static void test_many(void **state)
{
    users_sessions *c = users_sessions_new(65536, 60000);
    char tok[32];
    int64_t uid = 0, hits = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(tok, sizeof tok, "chm_many_%d", i);
        PUT(c, tok, i + 1, 1000000, 0);
    }
    for (int i = 0; i < 1000; i++) {
        snprintf(tok, sizeof tok, "chm_many_%d", i);
        if (GET(c, tok, 1, &uid)) {
            assert_int_equal(uid, i + 1);
            hits++;
        }
    }
    /* A few share a slot (the table is direct-mapped, keyed at random):
     * 1000 tokens in 65,536 slots lose about 1000^2 / (2 * 65536) = 7.6 of
     * them on average, Poisson; more than 10 happened in 15% of runs (a
     * failure in make test). 50 or more: odds below 1e-15. */
    assert_true(hits > 950);
    users_sessions_free(c);
}

static void test_off_and_bad_input(void **state)
{
    users_sessions *c = users_sessions_new(16, 0);
    int64_t uid = 0;
    PUT(c, "chm_g", 1, 1000000, 0);
    assert_false(GET(c, "chm_g", 1, &uid));
    users_sessions_free(c);
    assert_false(GET(NULL, "chm_g", 1, &uid));
    c = users_sessions_new(16, 1000);
    char bad[65];
    memset(bad, 'z', 64);
    bad[64] = '\0';
    users_sessions_put(c, "chm_h", 5, bad, 1, 1000000, 0); /* not a SHA-256: not kept */
    assert_false(GET(c, "chm_h", 1, &uid));
    assert_false(users_sessions_on_hint(c, "s", 1));
    users_sessions_free(c);
}

int main(void)
{
    base_init();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_hit_within_time), cmocka_unit_test(test_session_expiry_wins),
                                       cmocka_unit_test(test_forget_and_hint), cmocka_unit_test(test_collisions),
                                       cmocka_unit_test(test_many),
                                       cmocka_unit_test(test_off_and_bad_input)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
