/* test-jobs-plan.c -- the registry's validation and the scheduler's pure
 * rules: next fire time from cron in a zone (across DST), catch-up of a
 * job a little late, and both misfire policies. */
#include "testutil.h"

#include <string.h>

#include "jobs/jobs.h"
#include "time/civil.h"

static int noop(jobs_run *r, void *arg)
{
    return 0;
}

typedef struct fixture {
    tz_db *tz;
    jobs_registry *reg;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->tz = tz_db_new(NULL);
    f->reg = jobs_registry_new(f->tz);
    *state = f;
    return f->tz && f->reg ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *f = *state;
    jobs_registry_free(f->reg);
    tz_db_free(f->tz);
    free(f);
    return 0;
}

static const jobs_job *add(fixture *f, const char *name, const char *sched, const char *zone, jobs_misfire m,
                           int64_t after_ms)
{
    char err[256];
    jobs_def d = {.name = name, .schedule = sched, .time_zone = zone, .handler = noop, .enabled = true,
                  .misfire = m, .misfire_after_ms = after_ms};
    if (jobs_register(f->reg, &d, err, sizeof err) != 0) fail_msg("%s: %s", name, err);
    return jobs_registry_find(f->reg, name);
}

/* UTC ms of a civil UTC time. */
static int64_t utc_ms(int y, int mo, int d, int h, int mi, int s)
{
    return (civil_days_from_ymd(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) * 1000;
}

static void test_register_errors(void **state)
{
    fixture *f = *state;
    char err[256];
    jobs_def d = {.name = "ok", .schedule = "* * * * *", .handler = noop, .enabled = true};
    assert_int_equal(jobs_register(f->reg, &d, err, sizeof err), 0);
    assert_int_equal(jobs_register(f->reg, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "already registered"));
    d.name = "Bad Name";
    assert_int_equal(jobs_register(f->reg, &d, err, sizeof err), -1);
    assert_int_equal(strncmp(err, "name:", 5), 0);
    d.name = "x";
    d.schedule = "61 * * * *";
    assert_int_equal(jobs_register(f->reg, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "schedule: minute"));
    d.schedule = "@hourly";
    d.time_zone = "Mars/Olympus";
    assert_int_equal(jobs_register(f->reg, &d, err, sizeof err), -1);
    assert_int_equal(strncmp(err, "time_zone:", 10), 0);
    d.time_zone = "Europe/Berlin";
    d.handler = NULL;
    assert_int_equal(jobs_register(f->reg, &d, err, sizeof err), -1);
    d.handler = noop;
    assert_int_equal(jobs_register(f->reg, &d, err, sizeof err), 0);
    assert_int_equal(jobs_registry_count(f->reg), 2);
    assert_int_equal(jobs_registry_find(f->reg, "x")->misfire_after_ms, 60000); /* the default */
}

static void test_fire_after(void **state)
{
    fixture *f = *state;
    const jobs_job *every5 = add(f, "e5", "*/5 * * * * *", NULL, JOBS_MISFIRE_RUN_ONCE, 0);
    int64_t t = utc_ms(2026, 3, 1, 12, 0, 0);
    assert_int_equal(jobs_fire_after(every5, t), t + 5000);
    assert_int_equal(jobs_fire_after(every5, t + 1), t + 5000);   /* within a second */
    assert_int_equal(jobs_fire_after(every5, t - 1), t);          /* 11:59:59.999 -> 12:00:00 */
    const jobs_job *never = add(f, "never", "0 0 30 2 *", NULL, JOBS_MISFIRE_RUN_ONCE, 0);
    assert_int_equal(jobs_fire_after(never, t), -1);
}

/* 02:30 daily in New York: on the spring-forward day it fires once at
 * 03:30 EDT (07:30Z); on the fall-back day once, at the first 02:30...
 * which does not exist twice for 02:30 (01:00-02:00 repeats), so check
 * 01:30 too: it fires at its first occurrence only. */
/* Interval jobs (--hot-every): multiples of the period since the epoch,
 * sub-second periods included, and a run late by more than one period
 * misfires (run once now) instead of running every missed period. */
static void test_every_ms(void **state)
{
    fixture *f = *state;
    char err[256];
    jobs_def d = {.name = "every", .every_ms = 500, .handler = noop, .enabled = true,
                  .misfire = JOBS_MISFIRE_RUN_ONCE, .misfire_after_ms = 500};
    assert_int_equal(jobs_register(f->reg, &d, err, sizeof err), 0);
    const jobs_job *j = jobs_registry_find(f->reg, "every");
    assert_string_equal(j->schedule, "@every 500ms");
    assert_int_equal(jobs_fire_after(j, 1000), 1500);
    assert_int_equal(jobs_fire_after(j, 1499), 1500);
    assert_int_equal(jobs_fire_after(j, 1500), 2000);
    jobs_plan p;
    jobs_plan_next(j, 1500, 1600, &p);
    assert_int_equal(p.action, JOBS_RUN);
    assert_int_equal(p.next_ms, 2000);
    jobs_plan_next(j, 1500, 10100, &p);
    assert_int_equal(p.action, JOBS_RUN);
    assert_true(p.misfired);
    assert_int_equal(p.next_ms, 10500);
}

static void test_next_across_dst(void **state)
{
    fixture *f = *state;
    const jobs_job *j = add(f, "ny", "30 2 * * *", "America/New_York", JOBS_MISFIRE_RUN_ONCE, 0);
    int64_t t = jobs_fire_after(j, utc_ms(2026, 3, 7, 12, 0, 0));
    assert_int_equal(t, utc_ms(2026, 3, 8, 7, 30, 0)); /* skipped 02:30 EST -> 03:30 EDT */
    t = jobs_fire_after(j, t);
    assert_int_equal(t, utc_ms(2026, 3, 9, 6, 30, 0)); /* then 02:30 EDT */
    const jobs_job *k = add(f, "ny2", "30 1 * * *", "America/New_York", JOBS_MISFIRE_RUN_ONCE, 0);
    t = jobs_fire_after(k, utc_ms(2026, 10, 31, 12, 0, 0));
    assert_int_equal(t, utc_ms(2026, 11, 1, 5, 30, 0)); /* 01:30 EDT, the first */
    t = jobs_fire_after(k, t);
    assert_int_equal(t, utc_ms(2026, 11, 2, 6, 30, 0)); /* not 01:30 EST the same night */
    const jobs_job *b = add(f, "berlin", "0 0 * * * *", "Europe/Berlin", JOBS_MISFIRE_RUN_ONCE, 0);
    t = jobs_fire_after(b, utc_ms(2026, 3, 29, 0, 30, 0)); /* 01:30 CET */
    assert_int_equal(t, utc_ms(2026, 3, 29, 1, 0, 0));     /* 03:00 CEST = 02:00 CET, once */
    assert_int_equal(jobs_fire_after(b, t), utc_ms(2026, 3, 29, 2, 0, 0));
}

static void test_plan_on_time_and_catch_up(void **state)
{
    fixture *f = *state;
    const jobs_job *j = add(f, "sec", "* * * * * *", NULL, JOBS_MISFIRE_SKIP, 10000);
    int64_t t = utc_ms(2026, 5, 5, 10, 0, 0);
    jobs_plan p;
    jobs_plan_next(j, t, t - 1, &p);
    assert_int_equal(p.action, JOBS_WAIT);
    jobs_plan_next(j, t, t + 3, &p);
    assert_int_equal(p.action, JOBS_RUN);
    assert_int_equal(p.scheduled_ms, t);
    assert_int_equal(p.next_ms, t + 1000);
    assert_false(p.misfired);
    /* 4 s late, under the 10 s threshold: each missed second runs in turn */
    int64_t next = t, now = t + 4000;
    int runs = 0;
    for (;;) {
        jobs_plan_next(j, next, now, &p);
        if (p.action == JOBS_WAIT) break;
        assert_int_equal(p.action, JOBS_RUN);
        assert_int_equal(p.scheduled_ms, t + runs * 1000);
        next = p.next_ms;
        runs++;
    }
    assert_int_equal(runs, 5); /* 10:00:00 .. 10:00:04 */
    assert_int_equal(next, t + 5000);
    jobs_plan_next(j, -1, now, &p); /* never again */
    assert_int_equal(p.action, JOBS_WAIT);
}

static void test_misfire_policies(void **state)
{
    fixture *f = *state;
    const jobs_job *skip = add(f, "skip", "*/10 * * * * *", NULL, JOBS_MISFIRE_SKIP, 5000);
    const jobs_job *once = add(f, "once", "*/10 * * * * *", NULL, JOBS_MISFIRE_RUN_ONCE, 5000);
    int64_t t = utc_ms(2026, 5, 5, 10, 0, 0), now = t + 35500; /* down 35.5 s */
    jobs_plan p;
    jobs_plan_next(skip, t, now, &p);
    assert_int_equal(p.action, JOBS_SKIP);
    assert_true(p.misfired);
    assert_int_equal(p.missed, 4); /* :00 :10 :20 :30 */
    assert_int_equal(p.scheduled_ms, t);
    assert_int_equal(p.next_ms, t + 40000);
    jobs_plan_next(once, t, now, &p);
    assert_int_equal(p.action, JOBS_RUN);
    assert_true(p.misfired);
    assert_int_equal(p.missed, 4);
    assert_int_equal(p.next_ms, t + 40000); /* one run now, then the next time */
    /* exactly at the threshold is still on time */
    jobs_plan_next(skip, t, t + 5000, &p);
    assert_int_equal(p.action, JOBS_RUN);
    assert_false(p.misfired);
}

static void test_misfire_count_is_bounded(void **state)
{
    fixture *f = *state;
    const jobs_job *j = add(f, "sec", "* * * * * *", NULL, JOBS_MISFIRE_SKIP, 1000);
    int64_t t = utc_ms(2025, 1, 1, 0, 0, 0), now = utc_ms(2026, 1, 1, 0, 0, 0); /* a year down */
    jobs_plan p;
    jobs_plan_next(j, t, now, &p);
    assert_int_equal(p.action, JOBS_SKIP);
    assert_int_equal(p.missed, JOBS_MISSED_MAX);
    assert_true(p.missed_more);
    assert_int_equal(p.next_ms, now + 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fire_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_ms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_across_dst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_on_time_and_catch_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misfire_policies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misfire_count_is_bounded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
