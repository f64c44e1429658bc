/* test-cal-edit.c -- editing part of a series (cal_edit.c): deleting one
 * instance (EXDATE), ending a series before an instance, splitting it
 * there; checked by expanding what the edit leaves. No database. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calendar/calendar.h"
#include "time/civil.h"

static tz_db *tz;

static int64_t local_s(int y, int mo, int d, int h)
{
    civil_time t = {.year = y, .month = (int8_t)mo, .day = (int8_t)d, .hour = (int8_t)h};
    return civil_to_seconds(&t);
}

/* A series at a wall time in a zone ("" floating; all_day: dates). */
static void series(cal_event *e, const char *zone, bool all_day, int y, int mo, int d, int h, const char *rule)
{
    memset(e, 0, sizeof *e);
    e->id = 42;
    e->ical_uid = strdup("abc@example.com");
    e->summary = strdup("Standup");
    snprintf(e->status, sizeof e->status, "confirmed");
    snprintf(e->time_zone, sizeof e->time_zone, "%s", zone);
    snprintf(e->calendar_zone, sizeof e->calendar_zone, "UTC");
    e->all_day = all_day;
    e->start_local = (civil_time){.year = y, .month = (int8_t)mo, .day = (int8_t)d, .hour = (int8_t)h};
    civil_from_seconds(civil_to_seconds(&e->start_local) + (all_day ? 86400 : 1800), &e->end_local);
    e->rrule = strdup(rule);
    char err[160], field[32];
    assert_int_equal(cal_event_resolve(e, tz, err, sizeof err, field, sizeof field), 0);
}

/* The series' instances (local seconds) from its start, at most max. */
static size_t instances(const cal_event *e, int64_t *out, size_t max)
{
    cal_series s;
    char err[160];
    assert_int_equal(cal_series_init(&s, e, tz, err, sizeof err), 0);
    int64_t from = civil_to_seconds(&e->start_local), n = 0, orig, start;
    while ((size_t)n < max && cal_next_instance(&s, NULL, 0, cal_series_utc_ms(&s, from), &orig, &start)) {
        int64_t local = tz_utc_to_local(s.zone, orig / 1000);
        if (!s.zone) local = orig / 1000;
        out[n++] = local;
        from = local + 1;
    }
    return (size_t)n;
}

static void test_exdate_sorted_and_bounded(void **state)
{
    (void)state;
    cal_event e;
    series(&e, "UTC", false, 2026, 11, 2, 9, "FREQ=DAILY;COUNT=10");
    assert_int_equal(cal_event_add_exdate(&e, local_s(2026, 11, 5, 9)), CAL_OK);
    assert_int_equal(cal_event_add_exdate(&e, local_s(2026, 11, 3, 9)), CAL_OK);
    assert_int_equal(cal_event_add_exdate(&e, local_s(2026, 11, 5, 9)), CAL_OK); /* again: once */
    assert_int_equal(e.nexdates, 2);
    assert_true(e.exdates[0] < e.exdates[1]);
    int64_t got[16];
    assert_int_equal(instances(&e, got, 16), 8);
    for (size_t i = 0; i < 8; i++) assert_true(got[i] != local_s(2026, 11, 3, 9) && got[i] != local_s(2026, 11, 5, 9));
    /* Full: refused, nothing changed. */
    while (e.nexdates < CAL_MAX_DATES) assert_int_equal(cal_event_add_exdate(&e, local_s(2030, 1, 1, 0) + (int64_t)e.nexdates * 86400), CAL_OK);
    assert_int_equal(cal_event_add_exdate(&e, local_s(2040, 1, 1, 9)), CAL_CONFLICT);
    assert_int_equal(e.nexdates, CAL_MAX_DATES);
    cal_event_free(&e);
}

/* An UNTIL just before the cut, in UTC for a zoned series: the instance
 * and everything after it are gone, across a DST change. */
static void test_truncate_until_zoned(void **state)
{
    (void)state;
    cal_event e;
    series(&e, "America/New_York", false, 2026, 10, 26, 9, "FREQ=WEEKLY;BYDAY=MO");
    e.rdates = malloc(2 * sizeof *e.rdates);
    e.rdates[0] = local_s(2026, 10, 28, 9);
    e.rdates[1] = local_s(2026, 11, 11, 9);
    e.nrdates = 2;
    cal_series s;
    char err[160];
    assert_int_equal(cal_series_init(&s, &e, tz, err, sizeof err), 0);
    int64_t cut = local_s(2026, 11, 9, 9); /* the third Monday, after DST ended */
    assert_int_equal(cal_series_truncate(&e, &s, cut, cal_series_utc_ms(&s, cut)), 0);
    assert_non_null(strstr(e.rrule, "UNTIL=20261109T135959Z"));
    assert_int_equal(e.nrdates, 1); /* the RDATE after the cut went with it */
    int64_t got[16];
    assert_int_equal(instances(&e, got, 16), 3);
    assert_int_equal(got[0], local_s(2026, 10, 26, 9));
    assert_int_equal(got[1], local_s(2026, 10, 28, 9));
    assert_int_equal(got[2], local_s(2026, 11, 2, 9));
    cal_event_free(&e);
}

/* COUNT keeps its meaning: the instances before the cut. */
static void test_truncate_count(void **state)
{
    (void)state;
    cal_event e;
    series(&e, "UTC", false, 2026, 11, 2, 9, "FREQ=DAILY;COUNT=10");
    cal_series s;
    char err[160];
    assert_int_equal(cal_series_init(&s, &e, tz, err, sizeof err), 0);
    int64_t cut = local_s(2026, 11, 6, 9);
    assert_int_equal(cal_series_truncate(&e, &s, cut, cal_series_utc_ms(&s, cut)), 0);
    assert_non_null(strstr(e.rrule, "COUNT=4"));
    int64_t got[16];
    assert_int_equal(instances(&e, got, 16), 4);
    cal_event_free(&e);
}

/* All-day: an UNTIL date, the day before. */
static void test_truncate_all_day(void **state)
{
    (void)state;
    cal_event e;
    series(&e, "", true, 2026, 12, 1, 0, "FREQ=WEEKLY");
    cal_series s;
    char err[160];
    assert_int_equal(cal_series_init(&s, &e, tz, err, sizeof err), 0);
    int64_t cut = local_s(2026, 12, 15, 0);
    assert_int_equal(cal_series_truncate(&e, &s, cut, cal_series_utc_ms(&s, cut)), 0);
    assert_non_null(strstr(e.rrule, "UNTIL=20261214"));
    int64_t got[16];
    assert_int_equal(instances(&e, got, 16), 2);
    cal_event_free(&e);
}

/* A split: the old series ends before the instance, the new one starts
 * there with the rest of the COUNT, the dates after the cut, and a UID of
 * its own; together they are the original instances. */
static void test_split_count_and_dates(void **state)
{
    (void)state;
    cal_event e, next;
    series(&e, "Europe/Berlin", false, 2026, 11, 2, 9, "FREQ=DAILY;COUNT=10");
    int64_t before[16];
    size_t nbefore = instances(&e, before, 16);
    assert_int_equal(nbefore, 10);
    e.exdates = malloc(2 * sizeof *e.exdates);
    e.exdates[0] = local_s(2026, 11, 3, 9);
    e.exdates[1] = local_s(2026, 11, 8, 9);
    e.nexdates = 2;
    cal_series s;
    char err[160], field[32];
    assert_int_equal(cal_series_init(&s, &e, tz, err, sizeof err), 0);
    int64_t cut = local_s(2026, 11, 6, 9);
    assert_int_equal(cal_series_split(&e, &s, cut, cal_series_utc_ms(&s, cut), 77, &next), 0);
    assert_int_equal(next.id, 77);
    assert_string_equal(next.ical_uid, "abc@example.com_R000000000000004d");
    assert_string_equal(next.summary, "Standup");
    assert_int_equal(civil_to_seconds(&next.start_local), cut);
    assert_int_equal(civil_to_seconds(&next.end_local) - cut, 1800);
    assert_non_null(strstr(e.rrule, "COUNT=4"));
    assert_non_null(strstr(next.rrule, "COUNT=6"));
    assert_int_equal(e.nexdates, 1);
    assert_int_equal(next.nexdates, 1);
    assert_int_equal(next.exdates[0], local_s(2026, 11, 8, 9));
    assert_int_equal(cal_event_resolve(&e, tz, err, sizeof err, field, sizeof field), 0);
    assert_int_equal(cal_event_resolve(&next, tz, err, sizeof err, field, sizeof field), 0);
    int64_t a[16], b[16];
    size_t na = instances(&e, a, 16), nb = instances(&next, b, 16);
    assert_int_equal(na, 3); /* 2, 4, 5: the 3rd was excluded */
    assert_int_equal(nb, 5); /* 6, 7, 9, 10, 11: the 8th was excluded */
    assert_int_equal(a[2], local_s(2026, 11, 5, 9));
    assert_int_equal(b[0], cut);
    assert_int_equal(b[4], local_s(2026, 11, 11, 9));
    cal_event_free(&e);
    cal_event_free(&next);
}

/* A split of an open-ended series: the new one has no end either. */
static void test_split_open_ended(void **state)
{
    (void)state;
    cal_event e, next;
    series(&e, "UTC", false, 2026, 11, 2, 9, "FREQ=WEEKLY;BYDAY=MO,WE");
    cal_series s;
    char err[160], field[32];
    assert_int_equal(cal_series_init(&s, &e, tz, err, sizeof err), 0);
    int64_t cut = local_s(2026, 11, 11, 9);
    assert_int_equal(cal_series_split(&e, &s, cut, cal_series_utc_ms(&s, cut), 5, &next), 0);
    assert_string_equal(next.rrule, "FREQ=WEEKLY;BYDAY=MO,WE");
    assert_int_equal(cal_event_resolve(&e, tz, err, sizeof err, field, sizeof field), 0);
    assert_int_equal(cal_event_resolve(&next, tz, err, sizeof err, field, sizeof field), 0);
    int64_t a[16];
    assert_int_equal(instances(&e, a, 16), 3); /* Nov 2, 4, 9 */
    assert_true(e.has_series_end); /* an upper bound for queries */
    assert_int_equal(a[2], local_s(2026, 11, 9, 9));
    assert_int_equal(instances(&next, a, 3), 3); /* Nov 11, 16, 18: no end */
    assert_int_equal(a[0], cut);
    assert_int_equal(a[2], local_s(2026, 11, 18, 9));
    cal_event_free(&e);
    cal_event_free(&next);
}

int main(void)
{
    tz = tz_db_new(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exdate_sorted_and_bounded),
        cmocka_unit_test(test_truncate_until_zoned),
        cmocka_unit_test(test_truncate_count),
        cmocka_unit_test(test_truncate_all_day),
        cmocka_unit_test(test_split_count_and_dates),
        cmocka_unit_test(test_split_open_ended),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tz_db_free(tz);
    return rc;
}
