/* test-bus-address.c -- --redis read alike by the bus and the hot list
 * (bus_redis_address): a host name comes back as its address, looked up
 * once, so that no event loop looks it up at a reconnect. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/bus.h"

static void test_a_name_becomes_its_address(void **state)
{
    char *host = NULL;
    int port = 0;
    assert_int_equal(bus_redis_address("redis://localhost:6380", &host, &port), 0);
    assert_int_equal(port, 6380);
    if (strcmp(host, "127.0.0.1") != 0 && strcmp(host, "::1") != 0) fail_msg("localhost came back as %s", host);
    free(host);
}

static void test_an_address_stays(void **state)
{
    char *host = NULL;
    int port = 0;
    assert_int_equal(bus_redis_address("10.1.2.3", &host, &port), 0);
    assert_string_equal(host, "10.1.2.3");
    assert_int_equal(port, 6379);
    free(host);
    assert_int_equal(bus_redis_address("redis://127.0.0.1:7000/0", &host, &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 7000);
    free(host);
}

static void test_not_an_address(void **state)
{
    char *host = NULL;
    int port = 0;
    assert_int_equal(bus_redis_address("redis://", &host, &port), -1);
    assert_int_equal(bus_redis_address("redis://h:0", &host, &port), -1);
    assert_int_equal(bus_redis_address("redis://h:70000", &host, &port), -1);
    assert_null(host);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_name_becomes_its_address),
        cmocka_unit_test(test_an_address_stays),
        cmocka_unit_test(test_not_an_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
