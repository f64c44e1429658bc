/* test-rfc3339.c -- parsing and formatting Internet date-times. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "time/rfc3339.h"

static void test_parse(void **state)
{
    (void)state;
    rfc3339 t;
    assert_int_equal(rfc3339_parse("2026-10-26T09:00:00-04:00", 25, &t), 0);
    assert_true(t.has_offset);
    assert_int_equal(t.offset, -4 * 3600);
    assert_int_equal(t.local.hour, 9);
    assert_int_equal(rfc3339_parse("2026-10-26T09:00:00.5Z", 22, &t), 0);
    assert_int_equal(t.millis, 500);
    assert_int_equal(t.offset, 0);
    assert_int_equal(rfc3339_parse("2026-10-26t09:00:00", 19, &t), 0);
    assert_false(t.has_offset);
    const char *bad[] = {"2026-10-26", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-10-26T24:00:00Z",
                         "2026-10-26T09:00:00+5:00", "2026-10-26T09:00:00.Z", "2026-10-26T09:00:00Zjunk",
                         "2026/10/26T09:00:00Z", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_int_equal(rfc3339_parse(bad[i], strlen(bad[i]), &t), -1);
    civil_time d;
    assert_int_equal(rfc3339_parse_date("2024-02-29", 10, &d), 0);
    assert_int_equal(rfc3339_parse_date("2023-02-29", 10, &d), -1);
}

static void test_format(void **state)
{
    (void)state;
    char buf[40];
    rfc3339_format(1793019600, -4 * 3600, buf, sizeof buf); /* 2026-10-26T13:00:00Z */
    assert_string_equal(buf, "2026-10-26T09:00:00-04:00");
    rfc3339_format(1793019600, 0, buf, sizeof buf);
    assert_string_equal(buf, "2026-10-26T13:00:00Z");
    rfc3339_format(1793019600, 5 * 3600 + 1800, buf, sizeof buf);
    assert_string_equal(buf, "2026-10-26T18:30:00+05:30");
    rfc3339_format_ms(1793019600123, buf, sizeof buf);
    assert_string_equal(buf, "2026-10-26T13:00:00.123Z");
    char id[17];
    base_id_format(0x0123456789abcdefLL, id);
    assert_string_equal(id, "0123456789abcdef");
    int64_t back;
    assert_int_equal(base_id_parse(id, 16, &back), 0);
    assert_int_equal(back, 0x0123456789abcdefLL);
    /* Round trip over a range of instants and offsets. */
    for (int64_t s = -2208988800LL; s < 4102444800LL; s += 7777777) {
        rfc3339 t;
        rfc3339_format(s, -18000, buf, sizeof buf);
        assert_int_equal(rfc3339_parse(buf, strlen(buf), &t), 0);
        assert_int_equal(civil_to_seconds(&t.local) - t.offset, s);
    }
}

/* The millisecond formatter (it does its own calendar arithmetic) agrees
 * with gmtime over centuries, both sides of 1970 and of leap days. */
static void test_format_ms_matches_gmtime(void **state)
{
    (void)state;
    char got[40], want[40];
    for (int64_t ms = -62135596800000LL; ms < 253402300799000LL; ms += 86399999 * 37LL + 1234) {
        int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
        time_t t = (time_t)secs;
        struct tm tm;
        gmtime_r(&t, &tm);
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms - secs * 1000));
        rfc3339_format_ms(ms, got, sizeof got);
        if (strcmp(got, want) != 0) fail_msg("%lld: %s, gmtime says %s", (long long)ms, got, want);
    }
    rfc3339_format_ms(-1, got, sizeof got);
    assert_string_equal(got, "1969-12-31T23:59:59.999Z");
    rfc3339_format_ms(951782400000LL, got, sizeof got); /* 2000-02-29 */
    assert_string_equal(got, "2000-02-29T00:00:00.000Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_ms_matches_gmtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
