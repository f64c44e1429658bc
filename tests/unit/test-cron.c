/* test-cron.c -- cron parsing (errors, names, macros), canonical format,
 * and next fire times in UTC and across DST changes in several zones. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time/civil.h"
#include "time/cron.h"
#include "time/tz.h"

static int64_t at(int y, int mo, int d, int h, int mi, int s)
{
    civil_time t = {.year = y, .month = (int8_t)mo, .day = (int8_t)d,
                    .hour = (int8_t)h, .minute = (int8_t)mi, .second = (int8_t)s};
    return civil_to_seconds(&t);
}

static cron_expr parse(const char *text)
{
    cron_expr e;
    char err[128] = "";
    if (cron_parse(text, &e, err, sizeof err) != 0) fail_msg("'%s': %s", text, err);
    return e;
}

static int setup(void **state)
{
    *state = tz_db_new(NULL);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    tz_db_free(*state);
    return 0;
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const struct { const char *text, *err; } cases[] = {
        {"61 * * * *", "minute: 61 is out of range 0-59"},
        {"* * * * MOX", "day-of-week: unknown name 'MOX'"},
        {"* * *", "expected 5 or 6 fields, got 3"},
        {"", "expected 5 or 6 fields, got 0"},
        {"   ", "expected 5 or 6 fields, got 0"},
        {"* * * * * * *", "expected 5 or 6 fields, got more than 6"},
        {"*/0 * * * *", "minute: step 0 is out of range 1-60"},
        {"*/61 * * * *", "minute: step 61 is out of range 1-60"},
        {"* 25 * * *", "hour: 25 is out of range 0-23"},
        {"* * 0 * *", "day-of-month: 0 is out of range 1-31"},
        {"* * 32 * *", "day-of-month: 32 is out of range 1-31"},
        {"* * * 13 *", "month: 13 is out of range 1-12"},
        {"* * * 0 *", "month: 0 is out of range 1-12"},
        {"* * * * 8", "day-of-week: 8 is out of range 0-7"},
        {"* * * FOO *", "month: unknown name 'FOO'"},
        {"* * * JANUARY *", "month: unknown name 'JANUARY'"},
        {"abc * * * *", "minute: 'abc' is not a number"},
        {"0 0 L * *", "day-of-month: 'L' is not a number"},
        {"5-1 * * * *", "minute: range 5-1 is backwards"},
        {"0 0 * DEC-JAN *", "month: range 12-1 is backwards"},
        {"1,,2 * * * *", "minute: missing value"},
        {"1, * * * *", "minute: missing value"},
        {"1- * * * *", "minute: missing value"},
        {"*/ * * * *", "minute: missing step"},
        {"*/x * * * *", "minute: unexpected character 'x'"},
        {"1x * * * *", "minute: unexpected character 'x'"},
        {"? * * * *", "minute: unexpected character '?'"},
        {"** * * * *", "minute: unexpected character '*'"},
        {"* * * * 1#2", "day-of-week: unexpected character '#'"},
        {"* * * * *\x01", "day-of-week: unexpected byte 0x01"},
        {"99999999999 * * * *", "minute: 99999999999 is out of range 0-59"},
        {"0 0 0 0 0 0", "day-of-month: 0 is out of range 1-31"},
        {"60 0 0 1 1 *", "second: 60 is out of range 0-59"},
        {"@reboot", "@reboot is not supported"},
        {"@often", "unknown macro '@often'"},
        {"@daily 5", "nothing may follow a macro"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cron_expr e;
        char err[128] = "";
        if (cron_parse(cases[i].text, &e, err, sizeof err) != -1)
            fail_msg("'%s' was accepted", cases[i].text);
        if (strcmp(err, cases[i].err) != 0)
            fail_msg("'%s': got \"%s\", want \"%s\"", cases[i].text, err, cases[i].err);
    }
    char big[CRON_TEXT_MAX + 10];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "* * * * *", 9);
    cron_expr e;
    char err[128];
    assert_int_equal(cron_parse(big, &e, err, sizeof err), -1);
    assert_string_equal(err, "expression is longer than 1024 bytes");
    assert_int_equal(cron_parse(NULL, &e, NULL, 0), -1);
    /* A tiny error buffer truncates, never overflows. */
    assert_int_equal(cron_parse("61 * * * *", &e, err, 8), -1);
    assert_string_equal(err, "minute:");
}

static void test_fields_and_names(void **state)
{
    (void)state;
    cron_expr e = parse("0 0 * JAN-MAR mon-FRI");
    assert_int_equal(e.month, 0xe);   /* 1..3 */
    assert_int_equal(e.wday, 0x3e);   /* 1..5 */
    assert_int_equal(e.second, 1);
    assert_int_equal(e.flags, CRON_DOM_STAR);
    assert_int_equal(parse("0 0 * * 7").wday, 1);
    assert_int_equal(parse("0 0 * * 0").wday, 1);
    assert_int_equal(parse("0 0 * * sun").wday, 1);
    assert_int_equal(parse("0 0 * * FRI-SUN").wday, 0x61); /* 5, 6, 0 */
    assert_int_equal(parse("0 0 * * 5-7").wday, 0x61);
    assert_int_equal(parse("0 0 * * *").wday, 0x7f);
    assert_int_equal(parse("0 0 * * */2").wday, 0x55); /* 0, 2, 4, 6 */
    assert_int_equal(parse("0 0 * * 1-7/2").wday, 0x2b); /* 1, 3, 5, 7=0 */
    assert_int_equal(parse("1-5/2 * * * *").minute, 0x2a); /* 1, 3, 5 */
    assert_int_equal(parse("*/15 * * * *").minute,
                     (1ull << 0) | (1ull << 15) | (1ull << 30) | (1ull << 45));
    assert_int_equal(parse("5/20 * * * *").minute, (1ull << 5) | (1ull << 25) | (1ull << 45));
    assert_int_equal(parse("0 9-17 * * *").hour, 0x3fe00);
    assert_int_equal(parse("0 0 1,15,31 * *").mday, (1u << 1) | (1u << 15) | (1u << 31));
    e = parse("*/10 * * * * *");
    assert_int_equal(e.flags, CRON_HAS_SECONDS | CRON_DOM_STAR | CRON_DOW_STAR);
    assert_int_equal(e.second, 0x4010040100401ull); /* 0, 10, ..., 50 */
    assert_int_equal(e.minute, (1ull << 60) - 1);
    e = parse("0 0 ? * MON");
    assert_int_equal(e.flags, CRON_DOM_STAR);
    assert_int_equal(e.mday, 0xfffffffe);
    e = parse("  0\t0   13 * 5  \r\n");
    assert_int_equal(e.flags, 0);
    assert_int_equal(e.mday, 1u << 13);
    cron_expr a = parse("0 0 * * *"), b = parse("@daily");
    assert_memory_equal(&a, &b, sizeof a);
    b = parse("@MIDNIGHT");
    assert_memory_equal(&a, &b, sizeof a);
    a = parse("0 * * * *"), b = parse("@hourly");
    assert_memory_equal(&a, &b, sizeof a);
    a = parse("0 0 * * 0"), b = parse(" @weekly ");
    assert_memory_equal(&a, &b, sizeof a);
    a = parse("0 0 1 * *"), b = parse("@monthly");
    assert_memory_equal(&a, &b, sizeof a);
    a = parse("0 0 1 1 *"), b = parse("@yearly");
    assert_memory_equal(&a, &b, sizeof a);
    b = parse("@annually");
    assert_memory_equal(&a, &b, sizeof a);
}

static void test_format(void **state)
{
    (void)state;
    static const struct { const char *in, *out; } cases[] = {
        {"*/15 * * * *", "*/15 * * * *"},
        {"0,15,30,45 * * * *", "*/15 * * * *"},
        {"0-59 0-23 * 1-12 *", "* * * * *"},
        {"1-5/2 0 * * *", "1-5/2 0 * * *"},
        {"0 0 1-31 * *", "0 0 1-31 * *"},
        {"0 0 * * mon-fri", "0 0 * * 1-5"},
        {"0 0 * JAN,FEB,MAR *", "0 0 * 1-3 *"},
        {"0 0 */2 * 5", "0 0 */2 * 5"},
        {"0 0 */10,5 * *", "0 0 */10,5 * *"},
        {"0 0 */31 * *", "0 0 */31 * *"},
        {"0 0 ? * 1", "0 0 * * 1"},
        {"@weekly", "0 0 * * 0"},
        {"*/20 * * * * *", "*/20 * * * * *"},
        {"0 12 * * 7", "0 12 * * 0"},
        {"0 0 * * */2", "0 0 * * */2"},
        {"0 0 * * 0-6", "0 0 * * 0-6"},
        {"0 0 * * FRI-SUN", "0 0 * * 0,5,6"},
        {"5,6 * * * *", "5,6 * * * *"},
        {"0,30 * * * *", "0,30 * * * *"},
        {"1,2,3,7,9,11,13 * * * *", "1-3,7,9,11,13 * * * *"},
        {"0 0 13 * 5", "0 0 13 * 5"},
    };
    char buf[CRON_FORMAT_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cron_expr e = parse(cases[i].in);
        int n = cron_format(&e, buf, sizeof buf);
        assert_int_equal(n, (int)strlen(buf));
        if (strcmp(buf, cases[i].out) != 0)
            fail_msg("'%s': got '%s', want '%s'", cases[i].in, buf, cases[i].out);
        cron_expr back = parse(buf);
        assert_memory_equal(&back, &e, sizeof e);
    }
    /* The longest canonical text still fits. */
    cron_expr e = parse("0,2,3,5,6,8,9,11,12,14,15,17,18,20,21,23,24,26,27,29,30,32,33,35,36,38,39,"
                        "41,42,44,45,47,48,50,51,53,54,56,57,59 0,2,3,5,6,8,9,11,12,14,15,17,18,20,"
                        "21,23,24,26,27,29,30,32,33,35,36,38,39,41,42,44,45,47,48,50,51,53,54,56,57,"
                        "59 0,2,3,5,6,8,9,11,12,14,15,17,18,20,21,23 1,3,4,6,7,9,10,12,13,15,16,18,"
                        "19,21,22,24,25,27,28,30,31 1,3,4,6,7,9,10,12 1,2,4,5");
    int n = cron_format(&e, buf, sizeof buf);
    assert_true(n > 0 && n < CRON_FORMAT_MAX);
    assert_int_equal(cron_format(&e, buf, 10), -1);
    assert_string_equal(buf, "");
    cron_expr empty = {0};
    assert_int_equal(cron_format(&empty, buf, sizeof buf), -1);
}

static void assert_next(const cron_expr *e, const tz_zone *z, int64_t after, int64_t want)
{
    int64_t got = cron_next(e, z, after);
    if (got != want) {
        civil_time g, w;
        civil_from_seconds(got, &g);
        civil_from_seconds(want, &w);
        fail_msg("after %lld: got %lld (%04d-%02d-%02dT%02d:%02d:%02dZ), want %lld "
                 "(%04d-%02d-%02dT%02d:%02d:%02dZ)", (long long)after, (long long)got,
                 (int)g.year, g.month, g.day, g.hour, g.minute, g.second, (long long)want,
                 (int)w.year, w.month, w.day, w.hour, w.minute, w.second);
    }
}

/* Successive fire times from `after`, n of them. */
static void assert_sequence(const char *text, const tz_zone *z, int64_t after, const int64_t *want,
                            size_t n)
{
    cron_expr e = parse(text);
    for (size_t i = 0; i < n; i++) {
        assert_next(&e, z, after, want[i]);
        after = want[i];
    }
}

static void test_next_utc(void **state)
{
    const tz_zone *utc = tz_db_get(*state, "UTC");
    assert_non_null(utc);
    cron_expr e = parse("*/15 * * * *");
    assert_next(&e, utc, at(2026, 1, 1, 12, 7, 0), at(2026, 1, 1, 12, 15, 0));
    assert_next(&e, utc, at(2026, 1, 1, 12, 15, 0), at(2026, 1, 1, 12, 30, 0)); /* strictly */
    assert_next(&e, utc, at(2026, 12, 31, 23, 59, 59), at(2027, 1, 1, 0, 0, 0));
    assert_next(&e, NULL, at(2026, 1, 1, 12, 7, 0), at(2026, 1, 1, 12, 15, 0)); /* floating */
    e = parse("0 0 1 1 *");
    assert_next(&e, utc, at(2026, 6, 1, 0, 0, 0), at(2027, 1, 1, 0, 0, 0));
    e = parse("30 */10 * * * *");
    assert_next(&e, utc, at(2026, 1, 1, 12, 0, 30), at(2026, 1, 1, 12, 10, 30));
    assert_next(&e, utc, at(2026, 1, 1, 12, 0, 29), at(2026, 1, 1, 12, 0, 30));
    e = parse("0 9 * * MON-FRI");
    assert_next(&e, utc, at(2026, 11, 20, 10, 0, 0), at(2026, 11, 23, 9, 0, 0));
    e = parse("0 0 * * 7");
    assert_next(&e, utc, at(2026, 11, 21, 0, 0, 0), at(2026, 11, 22, 0, 0, 0));
    /* Vixie: both day fields restricted means either matches. */
    e = parse("0 0 13 * 5");
    assert_next(&e, utc, at(2026, 1, 1, 0, 0, 0), at(2026, 1, 2, 0, 0, 0));  /* a Friday */
    assert_next(&e, utc, at(2026, 1, 9, 0, 0, 0), at(2026, 1, 13, 0, 0, 0)); /* the 13th */
    /* ... but a field starting with '*' makes it "both". */
    e = parse("0 0 */2 * 5");
    assert_next(&e, utc, at(2026, 1, 1, 0, 0, 0), at(2026, 1, 9, 0, 0, 0));
    e = parse("0 0 31 * *");
    assert_next(&e, utc, at(2026, 4, 1, 0, 0, 0), at(2026, 5, 31, 0, 0, 0));
    e = parse("59 59 23 31 12 *");
    assert_next(&e, utc, at(2026, 12, 31, 23, 59, 59), at(2027, 12, 31, 23, 59, 59));
}

static void test_leap_and_never(void **state)
{
    const tz_zone *ny = tz_db_get(*state, "America/New_York");
    cron_expr e = parse("0 0 29 2 *");
    assert_next(&e, NULL, at(2026, 1, 1, 0, 0, 0), at(2028, 2, 29, 0, 0, 0));
    assert_next(&e, NULL, at(2096, 3, 1, 0, 0, 0), at(2104, 2, 29, 0, 0, 0)); /* 2100 is not leap */
    assert_next(&e, ny, at(2026, 1, 1, 0, 0, 0), at(2028, 2, 29, 5, 0, 0));
    static const char *never[] = {"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 2 *",
                                  "0 0 30,31 2 *", "0 0 30 2 */7"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        e = parse(never[i]);
        assert_int_equal(cron_next(&e, NULL, at(2026, 1, 1, 0, 0, 0)), -1);
        assert_int_equal(cron_next(&e, ny, at(2026, 1, 1, 0, 0, 0)), -1);
    }
    /* "*" + "/30" in February is the 1st only: it starts with '*'. */
    e = parse("0 0 */30 2 *");
    assert_int_equal(e.mday, (1u << 1) | (1u << 31));
    assert_next(&e, NULL, at(2026, 1, 1, 0, 0, 0), at(2026, 2, 1, 0, 0, 0));
    /* The search stays within years 1970..9999. */
    e = parse("0 0 1 1 *");
    assert_int_equal(cron_next(&e, NULL, at(9999, 6, 1, 0, 0, 0)), -1);
    assert_int_equal(cron_next(&e, NULL, INT64_MAX), -1);
    assert_int_equal(cron_next(&e, NULL, INT64_MIN), -1);
    assert_int_equal(cron_next(&e, NULL, -1), -1);
    assert_next(&e, NULL, 0, at(1971, 1, 1, 0, 0, 0));
    e = parse("0 0 1 1 6");
    assert_next(&e, NULL, 0, at(1970, 1, 3, 0, 0, 0)); /* first Saturday */
}

static void test_next_new_york(void **state)
{
    const tz_zone *z = tz_db_get(*state, "America/New_York");
    assert_non_null(z);
    /* Spring forward, 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z). */
    const int64_t daily[] = {at(2026, 3, 8, 7, 30, 0), at(2026, 3, 9, 6, 30, 0)};
    assert_sequence("30 2 * * *", z, at(2026, 3, 7, 12, 0, 0), daily, 2);
    /* Asked from inside the shifted hour, 02:30 (= 03:30 EDT) is still ahead. */
    cron_expr e = parse("30 2 * * *");
    assert_next(&e, z, at(2026, 3, 8, 7, 10, 0), at(2026, 3, 8, 7, 30, 0));
    assert_next(&e, z, at(2026, 3, 8, 7, 30, 0), at(2026, 3, 9, 6, 30, 0));
    const int64_t hourly[] = {at(2026, 3, 8, 6, 0, 0), at(2026, 3, 8, 7, 0, 0),
                              at(2026, 3, 8, 8, 0, 0), at(2026, 3, 8, 9, 0, 0)};
    assert_sequence("0 * * * *", z, at(2026, 3, 8, 5, 30, 0), hourly, 4);
    const int64_t half[] = {at(2026, 3, 8, 7, 0, 0), at(2026, 3, 8, 7, 30, 0),
                            at(2026, 3, 8, 8, 0, 0)};
    assert_sequence("*/30 * * * *", z, at(2026, 3, 8, 6, 45, 0), half, 3);
    /* Per second across the gap: strictly increasing, nothing lost. */
    e = parse("* * * * * *");
    assert_next(&e, z, at(2026, 3, 8, 6, 59, 59), at(2026, 3, 8, 7, 0, 0));
    assert_next(&e, z, at(2026, 3, 8, 7, 0, 0), at(2026, 3, 8, 7, 0, 1));
    /* Fall back, 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z). */
    const int64_t once[] = {at(2026, 11, 1, 5, 30, 0), at(2026, 11, 2, 6, 30, 0)};
    assert_sequence("30 1 * * *", z, at(2026, 10, 31, 12, 0, 0), once, 2);
    const int64_t fall[] = {at(2026, 11, 1, 4, 0, 0), at(2026, 11, 1, 5, 0, 0),
                            at(2026, 11, 1, 7, 0, 0), at(2026, 11, 1, 8, 0, 0)};
    assert_sequence("0 * * * *", z, at(2026, 11, 1, 3, 30, 0), fall, 4);
    /* From inside the repeated hour, its wall times have already fired. */
    e = parse("*/15 * * * *");
    assert_next(&e, z, at(2026, 11, 1, 6, 10, 0), at(2026, 11, 1, 7, 0, 0));
    e = parse("* * * * * *");
    assert_next(&e, z, at(2026, 11, 1, 5, 59, 59), at(2026, 11, 1, 7, 0, 0));
    const int64_t nine[] = {at(2026, 3, 7, 14, 0, 0), at(2026, 3, 8, 13, 0, 0),
                            at(2026, 3, 9, 13, 0, 0)};
    assert_sequence("0 9 * * *", z, at(2026, 3, 7, 0, 0, 0), nine, 3);
    /* Past the TZif table (footer rule): 2050-03-13. */
    const int64_t far[] = {at(2050, 3, 13, 7, 30, 0), at(2050, 3, 14, 6, 30, 0)};
    assert_sequence("30 2 * * *", z, at(2050, 3, 12, 12, 0, 0), far, 2);
}

static void test_next_london(void **state)
{
    const tz_zone *z = tz_db_get(*state, "Europe/London");
    assert_non_null(z);
    const int64_t spring[] = {at(2026, 3, 29, 1, 30, 0), at(2026, 3, 30, 0, 30, 0)};
    assert_sequence("30 1 * * *", z, at(2026, 3, 28, 12, 0, 0), spring, 2);
    const int64_t autumn[] = {at(2026, 10, 25, 0, 30, 0), at(2026, 10, 26, 1, 30, 0)};
    assert_sequence("30 1 * * *", z, at(2026, 10, 24, 12, 0, 0), autumn, 2);
    const int64_t hourly[] = {at(2026, 10, 25, 0, 0, 0), at(2026, 10, 25, 2, 0, 0)};
    assert_sequence("0 * * * *", z, at(2026, 10, 24, 23, 30, 0), hourly, 2);
    const int64_t sunday[] = {at(2026, 3, 29, 8, 0, 0), at(2026, 4, 5, 8, 0, 0)};
    assert_sequence("0 9 * * SUN", z, at(2026, 3, 28, 0, 0, 0), sunday, 2);
}

static void test_next_apia(void **state)
{
    const tz_zone *z = tz_db_get(*state, "Pacific/Apia");
    assert_non_null(z);
    /* 2011-12-30 did not happen in Samoa: its noon fires at the shifted
     * instant, which is also noon on the 31st, so once. */
    const int64_t noon[] = {at(2011, 12, 29, 22, 0, 0), at(2011, 12, 30, 22, 0, 0),
                            at(2011, 12, 31, 22, 0, 0)};
    assert_sequence("0 12 * * *", z, at(2011, 12, 29, 0, 0, 0), noon, 3);
    /* Only a day-of-month 30 schedule: fires once, shifted. */
    const int64_t thirtieth[] = {at(2011, 12, 30, 22, 0, 0), at(2012, 1, 29, 22, 0, 0)}; /* +14 */
    assert_sequence("0 12 30 * *", z, at(2011, 12, 1, 0, 0, 0), thirtieth, 2);
    cron_expr e = parse("* * * * * *");
    assert_next(&e, z, at(2011, 12, 30, 10, 0, 5), at(2011, 12, 30, 10, 0, 6));
    assert_next(&e, z, at(2011, 12, 30, 9, 59, 59), at(2011, 12, 30, 10, 0, 0));
}

static void test_next_lord_howe(void **state)
{
    const tz_zone *z = tz_db_get(*state, "Australia/Lord_Howe");
    assert_non_null(z);
    /* 2026-10-04 02:00 +10:30 -> 02:30 +11: 02:15 is taken at +10:30. */
    cron_expr e = parse("15 2 * * *");
    assert_next(&e, z, at(2026, 10, 3, 0, 0, 0), at(2026, 10, 3, 15, 45, 0));
    /* 2026-04-05 02:00 +11 -> 01:30 +10:30: 01:45 fires once, at +11. */
    const int64_t overlap[] = {at(2026, 4, 4, 14, 45, 0), at(2026, 4, 5, 15, 15, 0)};
    assert_sequence("45 1 * * *", z, at(2026, 4, 4, 0, 0, 0), overlap, 2);
    const int64_t half[] = {at(2026, 10, 3, 15, 30, 0), at(2026, 10, 3, 16, 0, 0)};
    assert_sequence("*/30 * * * *", z, at(2026, 10, 3, 15, 0, 0), half, 2);
    /* Wall order is not fire order around a 30-minute gap: 02:15 is
     * skipped and fires at 02:45, after 02:40 (which really happens). */
    const int64_t swap[] = {at(2026, 10, 3, 15, 40, 0), at(2026, 10, 3, 15, 45, 0),
                            at(2026, 10, 4, 15, 15, 0)};
    assert_sequence("15,40 2 * * *", z, at(2026, 10, 3, 0, 0, 0), swap, 3);
    assert_sequence("15,40 2 * * *", z, at(2026, 10, 3, 15, 30, 0), swap, 3);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Over a year in several zones, the fire times of "7 * * * *" are exactly
 * the distinct instants tz_local_to_utc gives the wall times HH:07. */
static void test_year_against_wall_times(void **state)
{
    static const char *zones[] = {"America/New_York", "Europe/London", "Australia/Lord_Howe",
                                  "Pacific/Apia", "Asia/Kolkata", "America/Sao_Paulo"};
    enum { MAX = 24 * 370 };
    static int64_t want[MAX];
    cron_expr e = parse("7 * * * *");
    int64_t t0 = at(2011, 1, 1, 0, 0, 0), end = at(2012, 1, 1, 0, 0, 0);
    for (size_t i = 0; i < sizeof zones / sizeof zones[0]; i++) {
        const tz_zone *z = tz_db_get(*state, zones[i]);
        assert_non_null(z);
        size_t n = 0;
        for (int64_t w = t0 - 2 * 86400 + 7 * 60; w < end + 2 * 86400; w += 3600) {
            int64_t u = tz_local_to_utc(z, w);
            if (u > t0 && u <= end) want[n++] = u;
        }
        qsort(want, n, sizeof want[0], cmp64);
        size_t k = 0;
        for (size_t j = 0; j < n; j++)
            if (k == 0 || want[j] != want[k - 1]) want[k++] = want[j];
        int64_t t = t0;
        for (size_t j = 0; j < k; j++) {
            assert_next(&e, z, t, want[j]);
            t = want[j];
        }
        assert_true(cron_next(&e, z, t) > end);
        assert_true(k > 8700);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_fields_and_names),
        cmocka_unit_test(test_format),
        cmocka_unit_test_setup_teardown(test_next_utc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leap_and_never, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_new_york, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_london, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_lord_howe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_apia, setup, teardown),
        cmocka_unit_test_setup_teardown(test_year_against_wall_times, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
