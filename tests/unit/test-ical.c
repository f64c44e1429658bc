/* test-ical.c -- the iCalendar reader and writer without a database: content
 * lines (folding, BOM, bare LF, quoted parameters, line numbers of errors),
 * TZIDs as producers write them, and the writer's folding and escaping. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libical/ical.h>

#include "calendar/cal_ical.h"

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

static void test_content_lines(void **state)
{
    (void)state;
    /* A BOM, bare LFs, a fold inside a UTF-8 character, a quoted parameter
     * holding ':' and ';', and a blank trailing line. */
    const char *text = "\xEF\xBB\xBF" "BEGIN:VCALENDAR\n"
                       "BEGIN:VEVENT\n"
                       "SUMMARY:Caf\xC3\n"
                       " \xA9 \\, ok\n"
                       "ATTENDEE;CN=\"Doe; John: Jr\";ROLE=CHAIR:mailto:j@x\n"
                       "x-custom;x-p=a,\"b,c\":v\n"
                       "END:VEVENT\n"
                       "END:VCALENDAR\n\n";
    ical_doc d;
    ical_err err;
    assert_int_equal(ical_parse(text, strlen(text), &d, &err), 0);
    const ical_comp *ev = d.roots->subs;
    assert_string_equal(ev->name, "VEVENT");
    const ical_prop *p = ical_prop_get(ev, "SUMMARY");
    assert_string_equal(p->value, "Caf\xC3\xA9 \\, ok");
    assert_int_equal(p->line, 3);
    char *un = ical_text_unescape(p->value);
    assert_string_equal(un, "Caf\xC3\xA9 , ok");
    free(un);
    p = ical_prop_get(ev, "ATTENDEE");
    assert_int_equal(p->line, 5);
    assert_string_equal(ical_param_get(p, "CN"), "Doe; John: Jr");
    assert_string_equal(ical_param_get(p, "ROLE"), "CHAIR");
    assert_string_equal(p->value, "mailto:j@x");
    p = ical_prop_get(ev, "X-CUSTOM");
    assert_non_null(p);
    assert_string_equal(ical_param_get(p, "X-P"), "a,b,c");
    ical_doc_free(&d);
}

static void expect_error(const char *text, int line, const char *words)
{
    ical_doc d;
    ical_err err;
    if (ical_parse(text, strlen(text), &d, &err) == 0) {
        ical_doc_free(&d);
        fail_msg("accepted: %s", text);
    }
    if (err.line != line || !strstr(err.msg, words)) fail_msg("line %d '%s' for: %s", err.line, err.msg, text);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nEND:VCALENDAR\r\n", 3, "does not close BEGIN:VEVENT");
    expect_error("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nEND:VEVENT\r\n", 1, "never closed");
    expect_error("BEGIN:VCALENDAR\r\nSUMMARY\r\nEND:VCALENDAR\r\n", 2, "expected ';' or ':'");
    expect_error("BEGIN:VCALENDAR\r\nSUMMARY;X=1\r\nEND:VCALENDAR\r\n", 2, "expected ';' or ':'");
    expect_error("BEGIN:VCALENDAR\r\nX;Y:1\r\nEND:VCALENDAR\r\n", 2, "NAME=value");
    expect_error("BEGIN:VCALENDAR\r\nX;Y=\"a:1\r\nEND:VCALENDAR\r\n", 2, "unterminated");
    expect_error("BEGIN:VCALENDAR\r\nX;Y=a\"b\":1\r\nEND:VCALENDAR\r\n", 2, "quote");
    expect_error("BEGIN:VCALENDAR\r\nX:a\x01z\r\nEND:VCALENDAR\r\n", 2, "control");
    expect_error("BEGIN:VCALENDAR\r\nX:\xC3\x28\r\nEND:VCALENDAR\r\n", 2, "UTF-8");
    expect_error("BEGIN:VCALENDAR\r\nX:\xED\xA0\x80\r\nEND:VCALENDAR\r\n", 2, "UTF-8"); /* a surrogate */
    expect_error("SUMMARY:x\r\n", 1, "outside");
    expect_error("BEGIN:VEVENT\r\nEND:VEVENT\r\n", 1, "outside a VCALENDAR");
    expect_error("END:VCALENDAR\r\n", 1, "without a BEGIN");
    expect_error(" x\r\n", 1, "continuation");
    expect_error("", 0, "no BEGIN:VCALENDAR");
    char deep[512] = "BEGIN:VCALENDAR\r\n";
    for (int i = 0; i < ICAL_MAX_DEPTH; i++) strcat(deep, "BEGIN:X\r\n");
    expect_error(deep, ICAL_MAX_DEPTH + 1, "deeper");
}

static void test_zone_names(void **state)
{
    tz_db *tz = *state;
    assert_string_equal(ical_zone_map(tz, "America/New_York", NULL), "America/New_York");
    assert_string_equal(ical_zone_map(tz, "Eastern Standard Time", NULL), "America/New_York");
    assert_string_equal(ical_zone_map(tz, "W. Europe Standard Time", NULL), "Europe/Berlin");
    assert_string_equal(ical_zone_map(tz, "/mozilla.org/20050126_1/America/New_York", NULL), "America/New_York");
    assert_string_equal(ical_zone_map(tz, "/softwarestudio.org/Olson_20011030_5/Europe/Paris", NULL),
                        "Europe/Paris");
    assert_string_equal(ical_zone_map(tz, "(UTC-05:00) Eastern Time (US & Canada)", NULL), "America/New_York");
    assert_string_equal(ical_zone_map(tz, "(GMT+01:00) Amsterdam, Berlin, Bern, Rome, Stockholm, Vienna", NULL),
                        "Europe/Berlin");
    assert_string_equal(ical_zone_map(tz, "(UTC) Coordinated Universal Time", NULL), "UTC");
    assert_string_equal(ical_zone_map(tz, "Custom zone 1", "Asia/Tokyo"), "Asia/Tokyo");
    assert_null(ical_zone_map(tz, "(UTC+04:00) Nowhere", NULL));
    assert_null(ical_zone_map(tz, "Mars/Olympus_Mons", "Also/Nothing"));
    assert_null(ical_zone_map(tz, "../../etc/passwd", NULL));
    assert_null(ical_zone_map(tz, "", NULL));
}

static const char *ONE =
    "BEGIN:VCALENDAR\r\n"
    "BEGIN:VEVENT\r\n"
    "UID:one@test\r\n"
    "DTSTART;TZID=Europe/London:20260329T003000\r\n"
    "DTEND;TZID=Europe/London:20260329T013000\r\n"
    "RRULE:FREQ=DAILY;COUNT=3\r\n"
    "SUMMARY:A long summary with commas\\, semicolons\\; and a newline\\nthat must fold at \xC3\xA9\xC3\xA9\xC3\xA9 "
    "seventy-five octets without breaking characters \xE2\x80\x94 twice over\r\n"
    "BEGIN:VALARM\r\nACTION:EMAIL\r\nTRIGGER:-PT1H30M\r\nEND:VALARM\r\n"
    "END:VEVENT\r\n"
    "END:VCALENDAR\r\n";

static void test_read_and_write(void **state)
{
    tz_db *tz = *state;
    ical_import im;
    ical_err err;
    assert_int_equal(ical_read(ONE, strlen(ONE), tz, "UTC", &im, &err), 0);
    assert_int_equal(im.nseries, 1);
    cal_event *e = &im.series[0].ev;
    assert_string_equal(e->time_zone, "Europe/London");
    assert_string_equal(e->rrule, "FREQ=DAILY;COUNT=3");
    assert_int_equal(e->duration_s, 3600); /* 00:30 GMT to 01:30 wall is 02:30 BST: one hour */
    assert_int_equal(e->nreminders, 1);
    assert_string_equal(e->reminders[0].method, "email");
    assert_int_equal(e->reminders[0].minutes_before, 90);
    e->id = 1;
    cal_calendar cal = {.id = 1};
    strcpy(cal.summary, "Mine");
    strcpy(cal.time_zone, "UTC");
    size_t len;
    char *text = ical_write(&cal, e, 1, NULL, 0, tz, INT64_C(1795000000000), &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    /* Every physical line is at most 75 octets and starts on a character. */
    for (char *line = text; *line;) {
        char *end = strstr(line, "\r\n");
        assert_non_null(end);
        assert_true(end - line <= 75);
        assert_true(((unsigned char)line[0] & 0xC0) != 0x80);
        line = end + 2;
    }
    assert_non_null(strstr(text, "\r\nBEGIN:VTIMEZONE\r\nTZID:Europe/London\r\n"));
    assert_non_null(strstr(text, "TZOFFSETFROM:+0000\r\nTZOFFSETTO:+0100\r\nTZNAME:BST\r\n"));
    assert_non_null(strstr(text, "DTSTART;TZID=Europe/London:20260329T003000\r\n"));
    assert_non_null(strstr(text, "TRIGGER:-PT90M\r\n"));
    ical_import again;
    assert_int_equal(ical_read(text, len, tz, "UTC", &again, &err), 0);
    assert_string_equal(again.series[0].ev.summary, e->summary);
    assert_int_equal(again.series[0].ev.start_ms, e->start_ms);
    ical_import_free(&again);
    free(text);
    ical_import_free(&im);
}

static void test_read_errors_name_lines(void **state)
{
    tz_db *tz = *state;
    ical_import im;
    ical_err err;
    const char *bad = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20260101T090000\r\n"
                      "DURATION:PT-1H\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    assert_int_equal(ical_read(bad, strlen(bad), tz, "UTC", &im, &err), -1);
    assert_int_equal(err.line, 5);
    assert_non_null(strstr(err.msg, "DURATION"));
    bad = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    assert_int_equal(ical_read(bad, strlen(bad), tz, "UTC", &im, &err), -1);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.msg, "no DTSTART"));
    bad = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART;VALUE=DATE:20260101\r\n"
          "EXDATE;VALUE=DATE:20260102,2026010\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    assert_int_equal(ical_read(bad, strlen(bad), tz, "UTC", &im, &err), -1);
    assert_int_equal(err.line, 5);
    assert_non_null(strstr(err.msg, "'2026010'"));
}

/* libical, reading our export with only our VTIMEZONE blocks to go on, must
 * put every DTSTART at the instant we meant: the blocks are right. */
static void test_vtimezone_agrees_with_libical(void **state)
{
    tz_db *tz = *state;
    static const char *const zones[] = {"Europe/London", "America/New_York", "Australia/Lord_Howe",
                                        "America/Sao_Paulo", "Asia/Kolkata", "Africa/Casablanca"};
    enum { NZ = sizeof zones / sizeof zones[0], PER = 60 };
    cal_event *evs = calloc(NZ * PER, sizeof *evs);
    assert_non_null(evs);
    char msg[200], field[64];
    for (int z = 0; z < NZ; z++)
        for (int k = 0; k < PER; k++) {
            cal_event *e = &evs[z * PER + k];
            e->id = z * PER + k + 1;
            char uid[32];
            snprintf(uid, sizeof uid, "%d-%d@t", z, k);
            e->ical_uid = strdup(uid);
            snprintf(e->status, sizeof e->status, "confirmed");
            snprintf(e->time_zone, sizeof e->time_zone, "%s", zones[z]);
            /* Every month from 2019 to 2023, at 02:45 (inside many DST gaps) or 12:00. */
            e->start_local = (civil_time){.year = 2019 + k / 12, .month = (int8_t)(k % 12 + 1),
                                          .day = (int8_t)(k % 2 ? 1 : 28), .hour = k % 3 ? 12 : 2, .minute = 45};
            civil_from_seconds(civil_to_seconds(&e->start_local) + 3600, &e->end_local);
            assert_int_equal(cal_event_resolve(e, tz, msg, sizeof msg, field, sizeof field), 0);
        }
    cal_calendar cal = {.id = 1};
    strcpy(cal.summary, "Zones");
    strcpy(cal.time_zone, "UTC");
    size_t len;
    char *text = ical_write(&cal, evs, NZ * PER, NULL, 0, tz, INT64_C(1546300800000) /* 2019-01-01 */, &len);
    assert_non_null(text);
    icalcomponent *root = icalparser_parse_string(text);
    assert_non_null(root);
    int seen = 0;
    for (icalcomponent *c = icalcomponent_get_first_component(root, ICAL_VEVENT_COMPONENT); c;
         c = icalcomponent_get_next_component(root, ICAL_VEVENT_COMPONENT)) {
        struct icaltimetype t = icalcomponent_get_dtstart(c);
        assert_non_null(t.zone);
        const char *uid = icalcomponent_get_uid(c);
        int z, k;
        assert_int_equal(sscanf(uid, "%d-%d@t", &z, &k), 2);
        int64_t got = (int64_t)icaltime_as_timet_with_zone(t, t.zone);
        if (got != evs[z * PER + k].start_ms / 1000)
            fail_msg("%s at %04d-%02d-%02d %02d:%02d: libical %lld, we %lld", zones[z], t.year, t.month, t.day,
                     t.hour, t.minute, (long long)got, (long long)(evs[z * PER + k].start_ms / 1000));
        seen++;
    }
    assert_int_equal(seen, NZ * PER);
    icalcomponent_free(root);
    free(text);
    for (int i = 0; i < NZ * PER; i++) cal_event_free(&evs[i]);
    free(evs);
}

/* Replaces every "TZID=<zone>"/"TZID:<zone>" with a name no one knows and
 * drops X-LIC-LOCATION: only the VTIMEZONE's rules are left to go on. */
static char *anonymize_zone(const char *text, const char *zone)
{
    size_t cap = strlen(text) * 2 + 64, n = 0;
    char *out = malloc(cap), key1[80], key2[80];
    snprintf(key1, sizeof key1, "TZID=%s", zone);
    snprintf(key2, sizeof key2, "TZID:%s", zone);
    for (const char *p = text; *p;) {
        if (strncmp(p, "X-LIC-LOCATION:", 15) == 0) {
            p = strstr(p, "\r\n") + 2;
        } else if (strncmp(p, key1, strlen(key1)) == 0 || strncmp(p, key2, strlen(key2)) == 0) {
            /* a parameter value with spaces is quoted; the property's is not */
            n += (size_t)sprintf(out + n, p[4] == '=' ? "TZID=\"Customized Time Zone\"" : "TZID:Customized Time Zone");
            p += strlen(key1);
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return out;
}

/* A TZID nobody knows is read from its VTIMEZONE (issue 24.3): our own
 * export's blocks, renamed, give back each zone -- matched to an IANA zone
 * with the same offsets -- and every instant. */
static void test_customized_time_zone(void **state)
{
    tz_db *tz = *state;
    static const char *const zones[] = {"America/New_York", "Europe/London", "Australia/Lord_Howe",
                                        "Asia/Kolkata", "Europe/Berlin"};
    for (size_t z = 0; z < sizeof zones / sizeof zones[0]; z++) {
        cal_event e = {.id = 1, .ical_uid = strdup("c@t")};
        snprintf(e.status, sizeof e.status, "confirmed");
        snprintf(e.time_zone, sizeof e.time_zone, "%s", zones[z]);
        e.start_local = (civil_time){.year = 2026, .month = 3, .day = 2, .hour = 9};
        e.end_local = (civil_time){.year = 2026, .month = 3, .day = 2, .hour = 10};
        e.rrule = strdup("FREQ=WEEKLY;COUNT=20");
        char msg[200], field[64];
        assert_int_equal(cal_event_resolve(&e, tz, msg, sizeof msg, field, sizeof field), 0);
        cal_calendar cal = {.id = 1};
        strcpy(cal.time_zone, "UTC");
        size_t len;
        char *text = ical_write(&cal, &e, 1, NULL, 0, tz, INT64_C(1767225600000), &len);
        char *custom = anonymize_zone(text, zones[z]);
        assert_null(strstr(custom, zones[z]));
        ical_import im;
        ical_err err;
        if (ical_read(custom, strlen(custom), tz, "UTC", &im, &err) != 0) fail_msg("%s: %s", zones[z], err.msg);
        if (im.nseries != 1) fail_msg("%s: %s", zones[z], im.nskips ? im.skips[0].reason : "?");
        const char *got = im.series[0].ev.time_zone;
        assert_true(got[0] && strcmp(got, "UTC") != 0);
        assert_int_equal(tz_offset_at(tz_db_get(tz, got), e.start_ms / 1000),
                         tz_offset_at(tz_db_get(tz, zones[z]), e.start_ms / 1000));
        assert_int_equal(im.series[0].ev.start_ms, e.start_ms);
        assert_int_equal(im.series[0].ev.series_end_ms, e.series_end_ms);
        ical_import_free(&im);
        free(custom);
        free(text);
        cal_event_free(&e);
    }
}

/* A definition no IANA zone has: the event is kept in UTC at the instants
 * it gives; and a DTSTART that falls on no zone at all is skipped. */
static void test_undefined_and_unmatched_zones(void **state)
{
    tz_db *tz = *state;
    const char *text =
        "BEGIN:VCALENDAR\r\nBEGIN:VTIMEZONE\r\nTZID:Odd\r\nBEGIN:STANDARD\r\nDTSTART:16010101T030000\r\n"
        "TZOFFSETFROM:+0630\r\nTZOFFSETTO:+0530\r\nRRULE:FREQ=YEARLY;BYDAY=1SU;BYMONTH=10\r\nEND:STANDARD\r\n"
        "BEGIN:DAYLIGHT\r\nDTSTART:16010101T020000\r\nTZOFFSETFROM:+0530\r\nTZOFFSETTO:+0630\r\n"
        "RRULE:FREQ=YEARLY;BYDAY=1SU;BYMONTH=4\r\nEND:DAYLIGHT\r\nEND:VTIMEZONE\r\n"
        "BEGIN:VEVENT\r\nUID:a\r\nDTSTART;TZID=Odd:20260406T100000\r\nDTEND;TZID=Odd:20260406T100000\r\n"
        "END:VEVENT\r\nBEGIN:VEVENT\r\nUID:b\r\nDTSTART;TZID=Nowhere:20260406T100000\r\nEND:VEVENT\r\n"
        "END:VCALENDAR\r\n";
    ical_import im;
    ical_err err;
    assert_int_equal(ical_read(text, strlen(text), tz, "UTC", &im, &err), 0);
    assert_int_equal(im.nseries, 1);
    assert_string_equal(im.series[0].ev.time_zone, "UTC");
    assert_int_equal(im.series[0].ev.start_ms, INT64_C(1775446200000)); /* 2026-04-06T03:30:00Z, at +06:30 */
    assert_int_equal(im.series[0].ev.duration_s, 0);
    assert_int_equal(im.nskipped, 1);
    assert_string_equal(im.skips[0].uid, "b");
    assert_non_null(strstr(im.skips[0].reason, "Nowhere"));
    ical_import_free(&im);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_lines),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test_setup_teardown(test_zone_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_and_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_errors_name_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vtimezone_agrees_with_libical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_customized_time_zone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undefined_and_unmatched_zones, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
