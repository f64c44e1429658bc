/* test-base-rate.c -- per-user token buckets (base/rate.h): a full burst
 * at first, the refill at the rate and never past the burst, users apart,
 * and a clock that steps back takes nothing away. */
#include "testutil.h"

#include "base/rate.h"

static int takes(rate_limiter *rl, int64_t user, int64_t now, int tries)
{
    int n = 0;
    for (int i = 0; i < tries; i++) n += rate_take(rl, user, now);
    return n;
}

static void test_burst_then_rate(void **state)
{
    (void)state;
    rate_limiter *rl = rate_new(1.0, 5.0); /* 1 a second, 5 at once */
    assert_non_null(rl);
    assert_int_equal(takes(rl, 7, 1000, 10), 5);
    assert_int_equal(takes(rl, 7, 1999, 1), 0);  /* 0.999 of a token */
    assert_int_equal(takes(rl, 7, 2000, 2), 1);  /* one a second */
    assert_int_equal(takes(rl, 7, 4500, 5), 2);  /* 2.5 in 2.5 s */
    assert_int_equal(takes(rl, 7, 60000, 20), 5); /* a long pause gives the burst, no more */
    rate_free(rl);
}

static void test_users_are_apart(void **state)
{
    (void)state;
    rate_limiter *rl = rate_new(0.5, 2.0);
    assert_int_equal(takes(rl, 1, 0, 3), 2);
    /* Many users, some in the same hash chain as user 1. */
    for (int64_t u = 2; u < 20000; u++) assert_int_equal(takes(rl, u, 0, 1), 1);
    assert_int_equal(takes(rl, 1, 0, 1), 0);
    assert_int_equal(takes(rl, 19999, 0, 2), 1);
    rate_free(rl);
}

static void test_clock_stepping_back(void **state)
{
    (void)state;
    rate_limiter *rl = rate_new(1.0, 2.0);
    assert_int_equal(takes(rl, 3, 10000, 2), 2);
    /* The wall clock steps back a minute: no debt, and a second after
     * the last take gives a token again. */
    assert_int_equal(takes(rl, 3, -50000, 1), 0);
    assert_int_equal(takes(rl, 3, 11000, 1), 1);
    rate_free(rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_rate),
        cmocka_unit_test(test_users_are_apart),
        cmocka_unit_test(test_clock_stepping_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
