/* test-notify.c -- reminder scheduling: next fire times across DST (wall
 * time kept), overrides that move or cancel an instance, stable delivery
 * ids and shards; and, on SQLite and PostgreSQL, rows kept in step with
 * events through the trigger-written dirty marks (create, decline, own
 * reminders, delete); an in-app row delivered by two transactions at
 * once reaching the inbox once; and (PostgreSQL) an in-app batch looking
 * its rows up by id. */
#include "testutil.h"
#include "testdb.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "calendar/calendar.h"
#include "notify/notify.h"

static tz_db *tz;

static int64_t utc_ms(int y, int mo, int d, int h, int mi)
{
    civil_time t = {.year = y, .month = (int8_t)mo, .day = (int8_t)d, .hour = (int8_t)h, .minute = (int8_t)mi};
    return civil_to_seconds(&t) * 1000;
}

/* A weekly series at a wall time in a zone (no database needed). */
static void weekly(cal_event *e, const char *zone, int y, int mo, int d, int h, const char *rule)
{
    memset(e, 0, sizeof *e);
    snprintf(e->status, sizeof e->status, "confirmed");
    snprintf(e->time_zone, sizeof e->time_zone, "%s", zone);
    e->start_local = (civil_time){.year = y, .month = (int8_t)mo, .day = (int8_t)d, .hour = (int8_t)h};
    e->end_local = e->start_local;
    e->end_local.hour++;
    e->rrule = strdup(rule);
}

static void test_weekly_across_dst_keeps_wall_time(void **state)
{
    (void)state;
    cal_event e;
    /* Mondays 09:00 in New York; DST ends Sunday 2026-11-01. */
    weekly(&e, "America/New_York", 2026, 10, 26, 9, "FREQ=WEEKLY;BYDAY=MO");
    cal_series s;
    char err[160];
    assert_int_equal(cal_series_init(&s, &e, tz, err, sizeof err), 0);
    int64_t fire, orig, start;
    /* 10 minutes before: 08:50 EDT = 12:50Z on Oct 26. */
    assert_true(notify_next_fire(&s, NULL, 0, 10, utc_ms(2026, 10, 1, 0, 0), &fire, &orig, &start));
    assert_int_equal(fire, utc_ms(2026, 10, 26, 12, 50));
    assert_int_equal(start, utc_ms(2026, 10, 26, 13, 0));
    /* After firing it: the next is 08:50 EST = 13:50Z, not 12:50Z. */
    assert_true(notify_next_fire(&s, NULL, 0, 10, fire, &fire, &orig, &start));
    assert_int_equal(fire, utc_ms(2026, 11, 2, 13, 50));
    assert_int_equal(orig, utc_ms(2026, 11, 2, 14, 0));
    /* And spring forward (2027-03-14): Mar 15 09:00 EDT = 13:00Z. */
    assert_true(notify_next_fire(&s, NULL, 0, 0, utc_ms(2027, 3, 9, 0, 0), &fire, &orig, &start));
    assert_int_equal(fire, utc_ms(2027, 3, 15, 13, 0));
    cal_event_free(&e);

    /* London, a day-long lead across its own change (2026-10-25). */
    weekly(&e, "Europe/London", 2026, 10, 19, 9, "FREQ=WEEKLY;COUNT=2");
    assert_int_equal(cal_series_init(&s, &e, tz, err, sizeof err), 0);
    assert_true(notify_next_fire(&s, NULL, 0, 1440, utc_ms(2026, 10, 18, 8, 0), &fire, &orig, &start));
    assert_int_equal(orig, utc_ms(2026, 10, 26, 9, 0)); /* 09:00 GMT */
    assert_int_equal(fire, utc_ms(2026, 10, 25, 9, 0));
    /* COUNT=2: finished after that. */
    assert_false(notify_next_fire(&s, NULL, 0, 1440, fire, &fire, &orig, &start));
    cal_event_free(&e);
}

static void test_overrides_move_and_cancel(void **state)
{
    (void)state;
    cal_event e;
    weekly(&e, "UTC", 2026, 11, 2, 9, "FREQ=DAILY;COUNT=5");
    cal_series s;
    char err[160];
    assert_int_equal(cal_series_init(&s, &e, tz, err, sizeof err), 0);
    cal_override ovs[2];
    memset(ovs, 0, sizeof ovs);
    ovs[0].original_ms = utc_ms(2026, 11, 2, 9, 0); /* cancelled */
    ovs[0].cancelled = true;
    ovs[1].original_ms = utc_ms(2026, 11, 3, 9, 0); /* moved past Nov 4 */
    ovs[1].moved = true;
    ovs[1].start_ms = utc_ms(2026, 11, 4, 12, 0);
    ovs[1].end_ms = ovs[1].start_ms + 3600000;
    int64_t fire, orig, start;
    assert_true(notify_next_fire(&s, ovs, 2, 0, utc_ms(2026, 11, 1, 0, 0), &fire, &orig, &start));
    assert_int_equal(orig, utc_ms(2026, 11, 4, 9, 0)); /* Nov 2 cancelled, Nov 3 moved later */
    assert_true(notify_next_fire(&s, ovs, 2, 0, fire, &fire, &orig, &start));
    assert_int_equal(orig, utc_ms(2026, 11, 3, 9, 0)); /* the moved one, at its new time */
    assert_int_equal(start, utc_ms(2026, 11, 4, 12, 0));
    assert_true(notify_next_fire(&s, ovs, 2, 0, fire, &fire, &orig, &start));
    assert_int_equal(orig, utc_ms(2026, 11, 5, 9, 0));
    /* A cancelled event has none at all. */
    snprintf(e.status, sizeof e.status, "cancelled");
    assert_false(notify_next_fire(&s, NULL, 0, 0, 0, &fire, &orig, &start));
    cal_event_free(&e);
}

static void test_ids_and_shards(void **state)
{
    (void)state;
    char a[NOTIFY_ID_LEN + 1], b[NOTIFY_ID_LEN + 1], c[NOTIFY_ID_LEN + 1];
    notify_delivery_id(1, 2, "push", 0, 1000, "inapp", 0, a);
    notify_delivery_id(1, 2, "push", 0, 1000, "inapp", 0, b);
    notify_delivery_id(1, 2, "push", 0, 2000, "inapp", 0, c);
    assert_int_equal(strlen(a), NOTIFY_ID_LEN);
    assert_string_equal(a, b);      /* a redo writes the same id */
    assert_string_not_equal(a, c);  /* another occurrence does not */
    notify_delivery_id(1, 2, "webhook", 0, 1000, "webhook", 7, b);
    notify_delivery_id(1, 2, "webhook", 0, 1000, "webhook", 8, c);
    assert_string_not_equal(b, c);  /* one per endpoint */
    int hist[16] = {0};
    for (int64_t u = 1; u <= 16000; u++) hist[notify_shard_of(u, 16)]++;
    for (int i = 0; i < 16; i++) assert_true(hist[i] > 800 && hist[i] < 1200);
    assert_int_equal(notify_shard_of(12345, 1), 0);
}

/* ---- on the database ----------------------------------------------------- */

static int64_t q(store *s, const char *sql)
{
    int64_t v = -1;
    int rc = store_query_int64(s, sql, &v);
    if (rc == STORE_DONE) return -1;
    if (rc != STORE_ROW) fail_msg("%s: %s", sql, store_errmsg(s));
    return v;
}

static int64_t add_user(store *s, const char *email)
{
    int64_t id = base_id_new();
    testdb_user_email(s, id, email);
    return id;
}

static void sync_all(store *s)
{
    int done;
    assert_int_equal(notify_sync_dirty(s, tz, 1024, 100, &done), STORE_OK);
    assert_int_equal(q(s, "SELECT count(*) FROM reminder_dirty"), 0);
}

static void test_rows_follow_the_event(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t org = add_user(s, "org@example.com"), bob = add_user(s, "bob@example.com");
    int64_t carol = add_user(s, "carol@example.com");
    cal_calendar cal;
    assert_int_equal(cal_primary(s, org, &cal), CAL_OK);
    cal_event e;
    weekly(&e, "UTC", 2099, 1, 5, 9, "FREQ=WEEKLY");
    e.calendar_id = cal.id;
    e.created_by = org;
    e.ical_uid = strdup("u1");
    e.nreminders = 2;
    e.reminders[0] = (cal_reminder){.method = "push", .minutes_before = 0};
    e.reminders[1] = (cal_reminder){.method = "email", .minutes_before = 30};
    e.nattendees = 2;
    e.attendees = calloc(2, sizeof *e.attendees);
    e.attendees[0].user_id = bob;
    e.attendees[1].user_id = carol;
    char err[160], field[64];
    assert_int_equal(cal_event_resolve(&e, tz, err, sizeof err, field, sizeof field), 0);
    assert_int_equal(cal_event_save(s, &e, true), CAL_OK);
    /* The write marked it, in its own transaction. */
    assert_int_equal(testdb_int64(s, "SELECT count(*) FROM reminder_dirty WHERE event_id = $1", e.id), 1);
    sync_all(s);
    /* Three recipients, two reminders each. */
    assert_int_equal(testdb_int64(s, "SELECT count(*) FROM reminders WHERE event_id = $1", e.id), 6);
    assert_int_equal(testdb_int64(s, "SELECT min(next_fire_ms) FROM reminders WHERE event_id = $1", e.id),
                     utc_ms(2099, 1, 5, 8, 30));
    assert_int_equal(testdb_int64(s, "SELECT count(DISTINCT shard) FROM reminders WHERE event_id = $1", e.id), 1);

    /* Bob declines; Carol keeps only her own 5-minute push. */
    cal_reminder mine = {.method = "push", .minutes_before = 5};
    assert_int_equal(cal_rsvp(s, e.id, bob, CAL_DECLINED, NULL, 0, false), CAL_OK);
    assert_int_equal(cal_rsvp(s, e.id, carol, CAL_ACCEPTED, &mine, 1, true), CAL_OK);
    sync_all(s);
    assert_int_equal(testdb_int64(s, "SELECT count(*) FROM reminders WHERE event_id = $1", e.id), 3);
    assert_int_equal(testdb_int64(s, "SELECT count(*) FROM reminders WHERE event_id = $1 AND user_id = $1", bob), 0);
    store_stmt *st = store_prepare(s, "SELECT minutes_before, next_fire_ms FROM reminders WHERE user_id = $1");
    store_bind_int64(st, 1, carol);
    assert_int_equal(store_step(st), STORE_ROW);
    assert_int_equal(store_col_int64(st, 0), 5);
    assert_int_equal(store_col_int64(st, 1), utc_ms(2099, 1, 5, 8, 55));
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);

    /* Deleting the event takes every row with it, and the mark is drained. */
    assert_int_equal(cal_event_delete(s, e.id), CAL_OK);
    sync_all(s);
    assert_int_equal(testdb_int64(s, "SELECT count(*) FROM reminders WHERE event_id = $1", e.id), 0);
    cal_event_free(&e);
}

/* A one-off event of org's, starting at start_s (UTC seconds) for a
 * minute, with a push reminder at its start; saved (and so marked). */
static void one_off_push(store *s, int64_t org, const char *uid, int64_t start_s, cal_event *e)
{
    cal_calendar cal;
    assert_int_equal(cal_primary(s, org, &cal), CAL_OK);
    memset(e, 0, sizeof *e);
    snprintf(e->status, sizeof e->status, "confirmed");
    snprintf(e->time_zone, sizeof e->time_zone, "UTC");
    civil_from_seconds(start_s, &e->start_local);
    civil_from_seconds(start_s + 60, &e->end_local);
    e->calendar_id = cal.id;
    e->created_by = org;
    e->ical_uid = strdup(uid);
    e->nreminders = 1;
    e->reminders[0] = (cal_reminder){.method = "push", .minutes_before = 0};
    char err[160], field[64];
    assert_int_equal(cal_event_resolve(e, tz, err, sizeof err, field, sizeof field), 0);
    assert_int_equal(cal_event_save(s, e, true), CAL_OK);
}

static void test_unsynced_change_keeps_its_time(void **state)
{
    /* A crash after the write and before the recompute: the drain must
     * treat the change as made when it was marked, so a reminder that fell
     * due meanwhile still fires (late) instead of vanishing. */
    store *s = ((testdb *)*state)->s;
    int64_t org = add_user(s, "o@example.com");
    int64_t now = base_now_ms();
    cal_event e;
    one_off_push(s, org, "u2", now / 1000 + 5, &e);
    /* Recompute "a minute later", long after the start. */
    assert_int_equal(notify_sync_event(s, tz, 1024, e.id, now + 60000), STORE_OK);
    assert_int_equal(testdb_int64(s, "SELECT next_fire_ms FROM reminders WHERE event_id = $1", e.id),
                     (now / 1000 + 5) * 1000);
    cal_event_free(&e);
}

/* A pending in-app outbox row of the reminder's, due at due_ms. */
static void add_pending_inapp(store *s, const char *id, int64_t reminder, int64_t event, int64_t user, int64_t due_ms)
{
    store_stmt *st = store_prepare(s, "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, summary, "
                                      "occurrence_ms, due_ms, state, next_attempt_ms, created_ms, updated_ms) "
                                      "VALUES ($1, $2, $3, $4, 'inapp', 'standup', $5, $5, 'pending', $5, $5, $5)");
    store_bind_str(st, 1, id);
    store_bind_int64(st, 2, reminder);
    store_bind_int64(st, 3, event);
    store_bind_int64(st, 4, user);
    store_bind_int64(st, 5, due_ms);
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);
}

#define RACE_IDS "[\"d-live\", \"d-gone\"]"

typedef struct racer {
    const char *url;
    int64_t now;
    int rc;
    char err[256];
} racer;

/* The second delivery of the same rows, on a connection of its own. */
static void *race_deliver(void *arg)
{
    racer *r = arg;
    store *s = store_open(r->url, r->err, sizeof r->err);
    if (!s) {
        r->rc = -100;
        return NULL;
    }
    r->rc = store_begin(s);
    if (r->rc == STORE_OK) r->rc = notify_deliver_inapp(s, RACE_IDS, r->now, NOTIFY_LATE_DELIVER, 60000);
    if (r->rc == STORE_OK) r->rc = store_commit(s);
    if (r->rc != STORE_OK) {
        snprintf(r->err, sizeof r->err, "%s", store_errmsg(s));
        store_rollback(s);
    }
    store_close(s);
    return NULL;
}

/* Two transactions deliver the same in-app rows at once (a takeover
 * racing a slow node): the user gets one inbox row, the row is done once
 * (one attempt), and a row whose reminder is gone is cancelled with no
 * inbox row. The first holds its transaction open while the second
 * starts, so the second must wait for it and then find nothing pending. */
static void test_inapp_delivered_once(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    int64_t org = add_user(s, "race@example.com");
    int64_t now = base_now_ms();
    cal_event e;
    one_off_push(s, org, "u3", now / 1000 + 3600, &e);
    sync_all(s);
    int64_t reminder = testdb_int64(s, "SELECT id FROM reminders WHERE event_id = $1", e.id);
    add_pending_inapp(s, "d-live", reminder, e.id, org, now - 10);
    add_pending_inapp(s, "d-gone", reminder + 1, e.id, org, now - 10);

    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(notify_deliver_inapp(s, RACE_IDS, now, NOTIFY_LATE_DELIVER, 60000), STORE_OK);
    racer r = {.url = db->url, .now = now + 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, race_deliver, &r), 0);
    struct timespec wait = {.tv_nsec = 300 * 1000000L};
    nanosleep(&wait, NULL); /* the racer is blocked on our row locks (or SQLite's write lock) */
    assert_int_equal(store_commit(s), STORE_OK);
    pthread_join(t, NULL);
    if (r.rc != STORE_OK) fail_msg("second delivery: %d %s", r.rc, r.err);

    assert_int_equal(q(s, "SELECT count(*) FROM notifications WHERE delivery_id = 'd-live'"), 1);
    assert_int_equal(q(s, "SELECT count(*) FROM notifications WHERE delivery_id = 'd-gone'"), 0);
    assert_int_equal(q(s, "SELECT count(*) FROM deliveries WHERE id = 'd-live' AND state = 'done' "
                          "AND attempts = 1"), 1);
    assert_int_equal(q(s, "SELECT fired_ms FROM deliveries WHERE id = 'd-live'"), now);
    assert_int_equal(q(s, "SELECT count(*) FROM deliveries WHERE id = 'd-gone' AND state = 'cancelled'"), 1);
    cal_event_free(&e);
}

/* Rows the index has handed out so far (its counter, flushed first). */
static int64_t index_reads(store *s, const char *index)
{
    assert_int_equal(store_exec(s, "SELECT pg_stat_force_next_flush()"), STORE_OK);
    assert_int_equal(store_exec(s, "SELECT pg_stat_clear_snapshot()"), STORE_OK);
    store_stmt *st = store_prepare(s, "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = $1");
    store_bind_str(st, 1, index);
    assert_int_equal(store_step(st), STORE_ROW);
    int64_t n = store_col_int64(st, 0);
    store_reset(st);
    return n;
}

/* PostgreSQL: an in-app batch finds its rows by id, whatever the
 * statistics say. Planned from the index of pending rows
 * (deliveries_queue), a batch of five ids once read all 22,000 pending
 * rows, 30-50 ms a statement at 1M reminders a minute; BATCH_PG's
 * "state || ''" keeps the planner off that index. Checked on the generic
 * plan (the one a prepared statement ends up with), before and after
 * ANALYZE, by the index's read counter. */
static void test_inapp_batch_reads_by_id(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t now = base_now_ms();
    store_stmt *st = store_prepare(s, "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, summary, "
                                      "occurrence_ms, due_ms, state, next_attempt_ms, created_ms, updated_ms) "
                                      "SELECT 'p' || g, 1, 1, 1, 'inapp', 's', $1, $1, 'pending', $1 + g, $1, $1 "
                                      "FROM generate_series(1, 20000) g");
    store_bind_int64(st, 1, now);
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);
    assert_int_equal(store_exec(s, "SET plan_cache_mode = force_generic_plan"), STORE_OK);
    for (int analyzed = 0; analyzed < 2; analyzed++) {
        if (analyzed) assert_int_equal(store_exec(s, "ANALYZE deliveries"), STORE_OK);
        int64_t before = index_reads(s, "deliveries_queue");
        const char *ids = analyzed ? "[\"p11\", \"p12\", \"p13\", \"p14\", \"p15\"]"
                                   : "[\"p1\", \"p2\", \"p3\", \"p4\", \"p5\"]";
        assert_int_equal(store_begin(s), STORE_OK);
        assert_int_equal(notify_deliver_inapp(s, ids, now, NOTIFY_LATE_DELIVER, 60000), STORE_OK);
        assert_int_equal(store_commit(s), STORE_OK);
        int64_t read = index_reads(s, "deliveries_queue") - before;
        if (read > 100) fail_msg("the batch read %lld rows of deliveries_queue (analyzed: %d)", (long long)read,
                                 analyzed);
    }
    /* Their reminder is gone: cancelled, and the other rows untouched. */
    assert_int_equal(q(s, "SELECT count(*) FROM deliveries WHERE state = 'cancelled'"), 10);
    assert_int_equal(q(s, "SELECT count(*) FROM deliveries WHERE state = 'pending'"), 19990);
}

int main(void)
{
    if (base_init() != 0) return 1;
    tz = tz_db_new(NULL);
    if (!tz) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weekly_across_dst_keeps_wall_time),
        cmocka_unit_test(test_overrides_move_and_cancel),
        cmocka_unit_test(test_ids_and_shards),
        TESTDB_TEST(test_rows_follow_the_event),
        TESTDB_TEST(test_unsynced_change_keeps_its_time),
        TESTDB_TEST(test_inapp_delivered_once),
        TESTDB_TEST_PG(test_inapp_batch_reads_by_id),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tz_db_free(tz);
    return rc;
}
