/* test-caldav-xml-report.c -- REPORT bodies: calendar-multiget's hrefs,
 * calendar-query's filter as clients write it (Thunderbird, DAVx5,
 * python-caldav with filters right under VCALENDAR), expand, free-busy,
 * sync-collection's token, level and limit, and the filters refused as
 * invalid or unsupported (with the precondition to name). */
#include "testutil.h"

#include <stdint.h>
#include <string.h>

#include "caldav/caldav_xml.h"

#define CQ "<C:calendar-query xmlns:D=\"DAV:\" xmlns:C=\"urn:ietf:params:xml:ns:caldav\">"

static int setup(void **state)
{
    (void)state;
    caldav_xml_init();
    return 0;
}

static caldav_request report_ok(const char *body)
{
    caldav_request rq;
    caldav_xml_err err;
    if (caldav_xml_parse(CALDAV_BODY_REPORT, body, strlen(body), &rq, &err) != 0)
        fail_msg("refused (%d %s): %s", err.status, err.cond ? err.cond : "-", err.message);
    return rq;
}

static caldav_xml_err report_refused(const char *body)
{
    caldav_request rq;
    caldav_xml_err err;
    if (caldav_xml_parse(CALDAV_BODY_REPORT, body, strlen(body), &rq, &err) == 0) {
        caldav_request_free(&rq);
        fail_msg("accepted: %s", body);
    }
    return err;
}

static int64_t utc(const char *s)
{
    int64_t ms;
    assert_int_equal(caldav_parse_utc(s, &ms), 0);
    return ms;
}

static void test_multiget(void **state)
{
    (void)state;
    caldav_request rq = report_ok("<C:calendar-multiget xmlns:D=\"DAV:\" xmlns:C=\"urn:ietf:params:xml:ns:caldav\">"
                                  "<D:prop><D:getetag/><C:calendar-data/></D:prop>"
                                  "<D:href>/dav/calendars/u/c/a.ics</D:href>\n  <D:href>\n /b%40x.ics \n</D:href>"
                                  "</C:calendar-multiget>");
    assert_int_equal(rq.report, CALDAV_REPORT_MULTIGET);
    assert_int_equal(rq.nprops, 2);
    assert_int_equal(rq.nhrefs, 2);
    assert_string_equal(rq.hrefs[0], "/dav/calendars/u/c/a.ics");
    assert_string_equal(rq.hrefs[1], "/b%40x.ics");
    assert_false(rq.expand);
    caldav_request_free(&rq);
}

static void test_query_time_range_and_expand(void **state)
{
    (void)state;
    caldav_request rq = report_ok(CQ "<D:prop><D:getetag/><C:calendar-data><C:expand start=\"20261101T000000Z\" "
                                  "end=\"20261201T000000Z\"/></C:calendar-data></D:prop>"
                                  "<C:filter><C:comp-filter name=\"VCALENDAR\"><C:comp-filter name=\"VEVENT\">"
                                  "<C:time-range start=\"20261101T000000Z\"/></C:comp-filter></C:comp-filter>"
                                  "</C:filter></C:calendar-query>");
    assert_int_equal(rq.report, CALDAV_REPORT_QUERY);
    assert_true(rq.expand);
    assert_true(rq.expand_from_ms == utc("20261101T000000Z"));
    assert_true(rq.expand_to_ms == utc("20261201T000000Z"));
    assert_int_equal(rq.filter.comp, CALDAV_COMP_VEVENT);
    assert_true(rq.filter.has_range);
    assert_true(rq.filter.from_ms == utc("20261101T000000Z"));
    assert_true(rq.filter.to_ms == 253402300800000LL); /* open end: 10000-01-01T00:00:00Z */
    caldav_request_free(&rq);
}

static void test_query_prop_filters(void **state)
{
    (void)state;
    caldav_request rq = report_ok(CQ "<D:prop><D:getetag/></D:prop><C:filter><C:comp-filter name=\"VCALENDAR\">"
                                  "<C:comp-filter name=\"VEVENT\"><C:prop-filter name=\"UID\">"
                                  "<C:text-match collation=\"i;octet\">abc@x</C:text-match></C:prop-filter>"
                                  "<C:prop-filter name=\"SUMMARY\"><C:text-match negate-condition=\"yes\">lunch"
                                  "</C:text-match></C:prop-filter><C:prop-filter name=\"LOCATION\">"
                                  "<C:is-not-defined/></C:prop-filter><C:comp-filter name=\"VALARM\"/>"
                                  "</C:comp-filter></C:comp-filter></C:filter></C:calendar-query>");
    const caldav_filter *f = &rq.filter;
    assert_int_equal(f->nprops, 3);
    assert_string_equal(f->props[0].name, "UID");
    assert_string_equal(f->props[0].text, "abc@x");
    assert_true(f->props[0].octet);
    assert_true(f->props[1].negate);
    assert_false(f->props[1].octet);
    assert_true(f->props[2].is_not_defined);
    assert_null(f->props[2].text);
    assert_int_equal(f->alarm, 1);
    caldav_request_free(&rq);
}

static void test_query_filters_under_vcalendar(void **state)
{
    (void)state;
    /* python-caldav's search() without a component class. */
    caldav_request rq = report_ok(CQ "<D:prop><C:calendar-data/></D:prop><C:filter><C:comp-filter name=\"VCALENDAR\">"
                                  "<C:time-range start=\"20261101T000000Z\" end=\"20261102T000000Z\"/>"
                                  "<C:prop-filter name=\"SUMMARY\"><C:text-match>x</C:text-match></C:prop-filter>"
                                  "</C:comp-filter></C:filter></C:calendar-query>");
    assert_int_equal(rq.filter.comp, 0);
    assert_true(rq.filter.has_range);
    assert_int_equal(rq.filter.nprops, 1);
    caldav_request_free(&rq);
    rq = report_ok(CQ "<D:prop><D:getetag/></D:prop><C:filter><C:comp-filter name=\"VCALENDAR\">"
                   "<C:comp-filter name=\"VTODO\"/></C:comp-filter></C:filter></C:calendar-query>");
    assert_int_equal(rq.filter.comp, CALDAV_COMP_VTODO);
    caldav_request_free(&rq);
}

static void test_query_refused(void **state)
{
    (void)state;
    caldav_xml_err e = report_refused(CQ "<C:filter><C:comp-filter name=\"VEVENT\"/></C:filter></C:calendar-query>");
    assert_int_equal(e.status, 403);
    assert_string_equal(e.cond, "valid-filter");
    e = report_refused(CQ "<C:filter><C:comp-filter name=\"VCALENDAR\"><C:comp-filter name=\"VEVENT\">"
                       "<C:time-range start=\"2026-11-01\"/></C:comp-filter></C:comp-filter></C:filter>"
                       "</C:calendar-query>");
    assert_string_equal(e.cond, "valid-filter");
    e = report_refused(CQ "<C:filter><C:comp-filter name=\"VCALENDAR\"><C:comp-filter name=\"VEVENT\">"
                       "<C:time-range start=\"20261102T000000Z\" end=\"20261101T000000Z\"/></C:comp-filter>"
                       "</C:comp-filter></C:filter></C:calendar-query>");
    assert_string_equal(e.cond, "valid-filter");
    e = report_refused(CQ "<C:filter><C:comp-filter name=\"VCALENDAR\"><C:comp-filter name=\"VEVENT\">"
                       "<C:prop-filter name=\"ATTENDEE\"><C:param-filter name=\"PARTSTAT\"/></C:prop-filter>"
                       "</C:comp-filter></C:comp-filter></C:filter></C:calendar-query>");
    assert_string_equal(e.cond, "supported-filter");
    e = report_refused(CQ "<C:filter><C:comp-filter name=\"VCALENDAR\"><C:comp-filter name=\"VEVENT\">"
                       "<C:prop-filter name=\"SUMMARY\"><C:text-match collation=\"i;unicode-casemap\">x"
                       "</C:text-match></C:prop-filter></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>");
    assert_string_equal(e.cond, "supported-collation");
    e = report_refused(CQ "<D:prop><D:getetag/></D:prop></C:calendar-query>");
    assert_string_equal(e.cond, "valid-filter");
    e = report_refused(CQ "<D:prop><C:calendar-data content-type=\"application/calendar+json\"/></D:prop>"
                       "<C:filter><C:comp-filter name=\"VCALENDAR\"/></C:filter></C:calendar-query>");
    assert_int_equal(e.status, 415);
}

static void test_free_busy(void **state)
{
    (void)state;
    caldav_request rq = report_ok("<C:free-busy-query xmlns:C=\"urn:ietf:params:xml:ns:caldav\">"
                                  "<C:time-range start=\"20261101T000000Z\" end=\"20261108T000000Z\"/>"
                                  "</C:free-busy-query>");
    assert_int_equal(rq.report, CALDAV_REPORT_FREEBUSY);
    assert_true(rq.range_to_ms - rq.range_from_ms == 7 * 86400000LL);
    caldav_request_free(&rq);
    caldav_xml_err e = report_refused("<C:free-busy-query xmlns:C=\"urn:ietf:params:xml:ns:caldav\">"
                                      "<C:time-range start=\"20261101T000000Z\"/></C:free-busy-query>");
    assert_int_equal(e.status, 403);
}

static void test_sync_collection(void **state)
{
    (void)state;
    caldav_request rq = report_ok("<D:sync-collection xmlns:D=\"DAV:\"><D:sync-token/><D:sync-level>1"
                                  "</D:sync-level><D:prop><D:getetag/></D:prop></D:sync-collection>");
    assert_int_equal(rq.report, CALDAV_REPORT_SYNC);
    assert_string_equal(rq.sync_token, "");
    assert_int_equal(rq.limit, 0);
    caldav_request_free(&rq);
    rq = report_ok("<D:sync-collection xmlns:D=\"DAV:\"><D:sync-token> urn:x-chime:sync:c1:5 </D:sync-token>"
                   "<D:sync-level>infinite</D:sync-level><D:limit><D:nresults>10</D:nresults></D:limit>"
                   "<D:prop><D:getetag/></D:prop></D:sync-collection>");
    assert_string_equal(rq.sync_token, "urn:x-chime:sync:c1:5");
    assert_true(rq.sync_infinite);
    assert_int_equal(rq.limit, 10);
    caldav_request_free(&rq);
    assert_int_equal(report_refused("<D:sync-collection xmlns:D=\"DAV:\"><D:sync-token/></D:sync-collection>").status,
                     400);
    assert_int_equal(report_refused("<D:sync-collection xmlns:D=\"DAV:\"><D:sync-level>2</D:sync-level>"
                                    "</D:sync-collection>").status,
                     400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multiget),
        cmocka_unit_test(test_query_time_range_and_expand),
        cmocka_unit_test(test_query_prop_filters),
        cmocka_unit_test(test_query_filters_under_vcalendar),
        cmocka_unit_test(test_query_refused),
        cmocka_unit_test(test_free_busy),
        cmocka_unit_test(test_sync_collection),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
