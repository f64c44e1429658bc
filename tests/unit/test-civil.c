/* test-civil.c -- day numbers, weekdays, week numbering, basic-format I/O. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "time/civil.h"

static void test_known_days(void **state)
{
    (void)state;
    assert_int_equal(civil_days_from_ymd(1970, 1, 1), 0);
    assert_int_equal(civil_days_from_ymd(2000, 3, 1), 11017);
    assert_int_equal(civil_days_from_ymd(1969, 12, 31), -1);
    assert_int_equal(civil_weekday(civil_days_from_ymd(2026, 11, 22)), CIVIL_SU);
    assert_int_equal(civil_weekday(civil_days_from_ymd(1997, 9, 2)), CIVIL_TU);
    assert_int_equal(civil_yday(2024, 12, 31), 366);
    assert_int_equal(civil_days_in_month(1900, 2), 28);
    assert_int_equal(civil_days_in_month(2000, 2), 29);
}

/* Round trip and agreement with glibc's timegm over 1600..2400, day by day. */
static void test_round_trip_against_libc(void **state)
{
    (void)state;
    int64_t first = civil_days_from_ymd(1600, 1, 1), last = civil_days_from_ymd(2400, 12, 31);
    for (int64_t d = first; d <= last; d++) {
        int32_t y; int8_t m, dd;
        civil_ymd_from_days(d, &y, &m, &dd);
        assert_int_equal(civil_days_from_ymd(y, m, dd), d);
        struct tm tm;
        time_t t = (time_t)(d * 86400);
        gmtime_r(&t, &tm);
        assert_int_equal(tm.tm_year + 1900, y);
        assert_int_equal(tm.tm_mon + 1, m);
        assert_int_equal(tm.tm_mday, dd);
        assert_int_equal((tm.tm_wday + 6) % 7, civil_weekday(d));
    }
}

/* ISO weeks (WKST=MO) agree with strftime %V / %G. */
static void test_iso_weeks(void **state)
{
    (void)state;
    for (int y = 1990; y <= 2060; y++) {
        struct tm tm = {.tm_year = y - 1900, .tm_mon = 11, .tm_mday = 28};
        time_t t = timegm(&tm);
        gmtime_r(&t, &tm);
        char buf[8];
        strftime(buf, sizeof buf, "%V", &tm);
        assert_int_equal(civil_weeks_in_year(y, CIVIL_MO), atoi(buf));
        int64_t w1 = civil_week1_start(y, CIVIL_MO);
        assert_int_equal(civil_weekday(w1), CIVIL_MO);
        t = (time_t)(w1 * 86400);
        gmtime_r(&t, &tm);
        strftime(buf, sizeof buf, "%V", &tm);
        assert_string_equal(buf, "01");
    }
}

static void test_basic_format(void **state)
{
    (void)state;
    civil_time t;
    bool is_date;
    assert_int_equal(civil_parse_basic("19970902T090000", 15, &t, &is_date), 0);
    assert_false(is_date);
    assert_int_equal(t.year, 1997);
    assert_int_equal(t.hour, 9);
    char buf[16];
    civil_format_basic(&t, false, buf, sizeof buf);
    assert_string_equal(buf, "19970902T090000");
    assert_int_equal(civil_parse_basic("20260230", 8, &t, &is_date), -1);
    assert_int_equal(civil_parse_basic("2026023", 7, &t, &is_date), -1);
    assert_int_equal(civil_parse_basic("20260101T250000", 15, &t, &is_date), -1);
    assert_int_equal(civil_parse_basic("20260101X100000", 15, &t, &is_date), -1);
    assert_int_equal(civil_parse_basic("20240229", 8, &t, &is_date), 0);
    assert_true(is_date);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_days),
        cmocka_unit_test(test_round_trip_against_libc),
        cmocka_unit_test(test_iso_weeks),
        cmocka_unit_test(test_basic_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
