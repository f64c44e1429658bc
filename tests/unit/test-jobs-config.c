/* test-jobs-config.c -- the scheduler's options: lease times in seconds with
 * fractions or in milliseconds, their bounds, and a lease that must outlast
 * its heartbeat. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "config.h"

static int load(chime_config *c, int argc, char **argv)
{
    config_defaults(c);
    unsetenv("CHIME_LEASE_TTL");
    unsetenv("CHIME_LEASE_HEARTBEAT");
    return config_load(c, "serve", argc, argv);
}

static void test_defaults(void **state)
{
    chime_config c;
    assert_int_equal(load(&c, 0, NULL), 0);
    assert_int_equal(c.lease_heartbeat, 5000);
    assert_int_equal(c.lease_ttl, 15000);
    assert_int_equal(c.job_runners, 2);
    assert_int_equal(c.test_tick_job, -1);
    assert_string_equal(c.node_id, "");
}

static void test_seconds_and_ms(void **state)
{
    chime_config c;
    char *a[] = {"--lease-heartbeat", "0.5", "--lease-ttl=2", "--node-id", "n-1", "--test-tick-job", "0"};
    assert_int_equal(load(&c, 7, a), 0);
    assert_int_equal(c.lease_heartbeat, 500);
    assert_int_equal(c.lease_ttl, 2000);
    assert_string_equal(c.node_id, "n-1");
    assert_int_equal(c.test_tick_job, 0);
    char *b[] = {"--lease-heartbeat", "250ms", "--lease-ttl", "1.25"};
    assert_int_equal(load(&c, 4, b), 0);
    assert_int_equal(c.lease_heartbeat, 250);
    assert_int_equal(c.lease_ttl, 1250);
    setenv("CHIME_LEASE_TTL", "30", 1);
    config_defaults(&c);
    assert_int_equal(config_load(&c, "serve", 0, NULL), 0);
    assert_int_equal(c.lease_ttl, 30000);
    unsetenv("CHIME_LEASE_TTL");
}

static void test_rejects(void **state)
{
    chime_config c;
    const char *bad[] = {"abc", "-1", "1.5s", "ms", "5 ", "0.001", "1e9", ".5", "99999999999999999999ms", NULL};
    for (int i = 0; bad[i]; i++) {
        char *a[] = {"--lease-heartbeat", (char *)bad[i]};
        assert_int_equal(load(&c, 2, a), -1);
    }
    /* a lease no longer than its heartbeat would change hands constantly */
    char *eq[] = {"--lease-heartbeat", "2", "--lease-ttl", "2"};
    assert_int_equal(load(&c, 4, eq), -1);
    char *lt[] = {"--lease-ttl", "1"}; /* below the default heartbeat of 5 s */
    assert_int_equal(load(&c, 2, lt), -1);
    char *runners[] = {"--job-runners", "0"};
    assert_int_equal(load(&c, 2, runners), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_seconds_and_ms),
        cmocka_unit_test(test_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
