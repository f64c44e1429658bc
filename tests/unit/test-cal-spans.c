/* test-cal-spans.c -- the invitations a listing starts from (schema step
 * 12, attendee_spans): migration 12 fills in a copy of each invited
 * event's end and kind for a database of before, and a listing then finds
 * exactly the invited events that reach into its range -- a past meeting
 * not, a series that never ends and one with an instance moved into the
 * range yes -- and none the viewer is not invited to. On SQLite and on
 * PostgreSQL. (That the copy follows each later change of an event is
 * tests/api/test_calendar.py's
 * test_listing_follows_the_invited_event_through_time.) */
#include "testutil.h"
#include "testdb.h"

#include <string.h>

#include "base/base.h"
#include "calendar/calendar.h"

/* UTC instants, ms. */
#define T_2019_05_01 1556712000000LL
#define T_2020_01_06 1578319200000LL
#define T_2020_02_03 1580740200000LL
#define T_2020_03_03 1583247600000LL
#define T_2020_03 1583020800000LL     /* 2020-03-01 */
#define T_2020_04 1585699200000LL     /* 2020-04-01 */
#define T_2026_11 1793491200000LL     /* 2026-11-01 */
#define T_2026_12 1796083200000LL     /* 2026-12-01 */
#define T_2026_11_10 1794322800000LL

static int setup_base(void **state)
{
    (void)state;
    return base_init();
}

/* An event row as the code of before wrote it: id, start, a rule or not,
 * its series end (0: NULL, never). */
static void event_row(store *s, int64_t id, int64_t start, bool series, int64_t end)
{
    store_stmt *st = store_prepare(
        s, "INSERT INTO events (id, calendar_id, created_by, ical_uid, start_local, end_local, start_ms, duration_s, "
           "rrule, series_end_ms, etag, created_ms, updated_ms) VALUES ($1, 100, 1, $2, '20200101T000000', "
           "'20200101T010000', $3, 3600, $4, $5, 'e', 0, 0)");
    char uid[32];
    snprintf(uid, sizeof uid, "u%lld", (long long)id);
    store_bind_int64(st, 1, id);
    store_bind_str(st, 2, uid);
    store_bind_int64(st, 3, start);
    if (series) store_bind_str(st, 4, "FREQ=WEEKLY");
    else store_bind_null(st, 4);
    if (end) store_bind_int64(st, 5, end);
    else store_bind_null(st, 5);
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);
}

/* The ids of the events cal_list_load_events starts viewer's listing of
 * [from, to) from, in id order, as "201,204". */
static void listed(store *s, int64_t viewer, int64_t from, int64_t to, char *out, size_t size)
{
    cal_query q = {.viewer = viewer, .from_ms = from, .to_ms = to, .limit = 100};
    cal_listing l;
    memset(&l, 0, sizeof l);
    assert_int_equal(cal_list_load_events(s, &q, &l), CAL_OK);
    out[0] = '\0';
    for (size_t i = 0; i < l.nevents; i++) {
        size_t n = strlen(out);
        snprintf(out + n, size - n, "%s%lld", i ? "," : "", (long long)l.events[i].id);
    }
    cal_listing_free(&l);
}

static void test_migration_and_listing(void **state)
{
    testdb *db = *state;
    store_schema all, before = {0};
    assert_int_equal(chime_schema(&all), 0);
    for (int i = 0; i < all.n && all.steps[i]->version < 12; i++)
        assert_int_equal(store_schema_add(&before, all.steps[i], 1), 0);
    assert_int_equal(store_migrate(db->s, &before), STORE_OK);
    for (int64_t u = 1; u <= 3; u++) testdb_user(db->s, u);
    EXEC_OK(db->s, "INSERT INTO calendars (id, owner_id, summary, time_zone, created_ms) VALUES (100, 1, 'c', 'UTC', 0)");
    event_row(db->s, 201, T_2020_03_03, false, T_2020_03_03 + 3600000); /* a past meeting */
    event_row(db->s, 202, T_2019_05_01, true, 0);                       /* a series that never ends */
    event_row(db->s, 203, T_2020_01_06, true, T_2020_02_03);            /* ended, one instance moved ahead */
    event_row(db->s, 204, T_2026_11_10, false, T_2026_11_10 + 3600000); /* in November 2026 */
    /* 203's second instance (2020-01-13) moved to 2026-11-12. */
    EXEC_OK(db->s, "INSERT INTO event_overrides (event_id, original_ms, start_ms, end_ms, updated_ms) VALUES "
                   "(203, 1578924000000, 1794492000000, 1794493800000, 0)");
    EXEC_OK(db->s, "INSERT INTO attendees (event_id, user_id) VALUES (201, 2), (202, 2), (203, 2), (204, 2), (204, 3)");
    assert_int_equal(store_migrate(db->s, &all), STORE_OK);

    assert_int_equal(testdb_int64(db->s, "SELECT count(*) FROM attendee_spans WHERE user_id = $1", 2), 4);
    assert_int_equal(testdb_int64(db->s, "SELECT count(*) FROM attendee_spans WHERE event_id = $1", 204), 2);
    assert_int_equal(testdb_int64(db->s, "SELECT series_end_ms FROM attendee_spans WHERE event_id = $1",
                                  201), T_2020_03_03 + 3600000);
    assert_int_equal(testdb_int64(db->s, "SELECT count(*) FROM attendee_spans WHERE event_id = $1 AND "
                                         "series_end_ms IS NULL AND recurring = 1", 202), 1);
    assert_int_equal(testdb_int64(db->s, "SELECT recurring FROM attendee_spans WHERE event_id = $1", 203), 1);
    assert_int_equal(testdb_int64(db->s, "SELECT recurring FROM attendee_spans WHERE event_id = $1", 201), 0);

    char got[128];
    listed(db->s, 2, T_2026_11, T_2026_12, got, sizeof got);
    assert_string_equal(got, "202,203,204");
    listed(db->s, 2, T_2020_03, T_2020_04, got, sizeof got);
    assert_string_equal(got, "201,202");
    listed(db->s, 3, T_2026_11, T_2026_12, got, sizeof got);
    assert_string_equal(got, "204");
    listed(db->s, 3, T_2020_03, T_2020_04, got, sizeof got);
    assert_string_equal(got, "");
    /* The organizer's own listing is the same rows by the other branches. */
    listed(db->s, 1, T_2026_11, T_2026_12, got, sizeof got);
    assert_string_equal(got, "202,203,204");

    /* The copies go with their event and with their user. */
    EXEC_OK(db->s, "DELETE FROM events WHERE id = 203");
    EXEC_OK(db->s, "DELETE FROM users WHERE id = 3");
    assert_int_equal(testdb_int64(db->s, "SELECT count(*) FROM attendee_spans WHERE event_id > $1", 0), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST_RAW(test_migration_and_listing),
    };
    return cmocka_run_group_tests(tests, setup_base, NULL);
}
