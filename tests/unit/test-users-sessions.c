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

static void test_hit_within_time(void **state)
{
    users_sessions *c = users_sessions_new(16, 1000);
    char h[65];
    int64_t uid = 0;
    hash_of("chm_a", h);
    assert_false(users_sessions_get(c, h, 100, &uid));
    users_sessions_put(c, h, 42, 1000000, 100);
    assert_true(users_sessions_get(c, h, 100, &uid));
    assert_int_equal(uid, 42);
    assert_true(users_sessions_get(c, h, 1099, &uid));
    assert_false(users_sessions_get(c, h, 1100, &uid)); /* read again after ttl */
    users_sessions_free(c);
}

static void test_session_expiry_wins(void **state)
{
    users_sessions *c = users_sessions_new(16, 60000);
    char h[65];
    int64_t uid = 0;
    hash_of("chm_b", h);
    users_sessions_put(c, h, 7, 500, 100);
    assert_true(users_sessions_get(c, h, 499, &uid));
    assert_false(users_sessions_get(c, h, 500, &uid));
    users_sessions_free(c);
}

static void test_forget_and_hint(void **state)
{
    users_sessions *c = users_sessions_new(16, 60000);
    char h[65], other[65], hint[66];
    int64_t uid = 0;
    hash_of("chm_c", h);
    hash_of("chm_d", other);
    users_sessions_put(c, h, 1, 1000000, 0);
    users_sessions_forget(c, h);
    assert_false(users_sessions_get(c, h, 1, &uid));

    users_sessions_put(c, h, 1, 1000000, 0);
    size_t n = users_sessions_hint(h, hint);
    assert_int_equal(n, 65);
    assert_false(users_sessions_on_hint(c, "u0000000000000001", 17)); /* a push, not ours */
    assert_true(users_sessions_on_hint(c, hint, n));
    assert_false(users_sessions_get(c, h, 1, &uid));
    /* Forgetting a token that is not there leaves the slot's own alone. */
    users_sessions_put(c, h, 1, 1000000, 0);
    users_sessions_forget(c, other);
    users_sessions_free(c);
}

/* One slot: every token collides; the last one put is the one kept and
 * no token ever answers with another's user. */
static void test_collisions(void **state)
{
    users_sessions *c = users_sessions_new(1, 60000);
    char a[65], b[65];
    int64_t uid = 0;
    hash_of("chm_e", a);
    hash_of("chm_f", b);
    users_sessions_put(c, a, 1, 1000000, 0);
    users_sessions_put(c, b, 2, 1000000, 0);
    assert_false(users_sessions_get(c, a, 1, &uid));
    assert_true(users_sessions_get(c, b, 1, &uid));
    assert_int_equal(uid, 2);
    users_sessions_forget(c, a);
    assert_true(users_sessions_get(c, b, 1, &uid));
    users_sessions_free(c);
}

static void test_off_and_bad_input(void **state)
{
    users_sessions *c = users_sessions_new(16, 0);
    char h[65];
    int64_t uid = 0;
    hash_of("chm_g", h);
    users_sessions_put(c, h, 1, 1000000, 0);
    assert_false(users_sessions_get(c, h, 1, &uid));
    users_sessions_free(c);
    assert_false(users_sessions_get(NULL, h, 1, &uid));
    c = users_sessions_new(16, 1000);
    char bad[65];
    memset(bad, 'z', 64);
    bad[64] = '\0';
    users_sessions_put(c, bad, 1, 1000000, 0);
    assert_false(users_sessions_get(c, bad, 1, &uid));
    assert_false(users_sessions_on_hint(c, "s", 1));
    users_sessions_free(c);
}

int main(void)
{
    base_init();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_hit_within_time), cmocka_unit_test(test_session_expiry_wins),
                                       cmocka_unit_test(test_forget_and_hint), cmocka_unit_test(test_collisions),
                                       cmocka_unit_test(test_off_and_bad_input)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
