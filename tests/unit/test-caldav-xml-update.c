/* test-caldav-xml-update.c -- bodies that change things: PROPPATCH's set
 * and remove with their values (CDATA included), MKCALENDAR as Apple and
 * python-caldav send it, extended MKCOL (RFC 5689) with its resourcetype,
 * and an empty MKCALENDAR. */
#include "testutil.h"

#include <string.h>

#include "caldav/caldav_xml.h"

static int setup(void **state)
{
    (void)state;
    caldav_xml_init();
    return 0;
}

static caldav_request ok(caldav_body kind, const char *body)
{
    caldav_request rq;
    caldav_xml_err err;
    if (caldav_xml_parse(kind, body, strlen(body), &rq, &err) != 0) fail_msg("refused: %s", err.message);
    return rq;
}

static void test_proppatch(void **state)
{
    (void)state;
    caldav_request rq = ok(CALDAV_BODY_PROPPATCH,
                           "<D:propertyupdate xmlns:D=\"DAV:\" xmlns:A=\"http://apple.com/ns/ical/\" "
                           "xmlns:C=\"urn:ietf:params:xml:ns:caldav\"><D:set><D:prop>"
                           "<D:displayname>  Work &amp; play </D:displayname><A:calendar-color>#FF0000FF"
                           "</A:calendar-color><C:calendar-description><![CDATA[<b>not markup</b>]]>"
                           "</C:calendar-description></D:prop></D:set><D:remove><D:prop><A:calendar-order/>"
                           "</D:prop></D:remove></D:propertyupdate>");
    assert_int_equal(rq.nprops, 4);
    assert_int_equal(rq.props[0].id, CALDAV_P_DISPLAYNAME);
    assert_string_equal(rq.props[0].value, "Work & play");
    assert_string_equal(rq.props[1].value, "#FF0000FF");
    assert_string_equal(rq.props[2].value, "<b>not markup</b>");
    assert_int_equal(rq.props[3].id, CALDAV_P_CALENDAR_ORDER);
    assert_true(rq.props[3].remove);
    assert_false(rq.props[0].remove);
    caldav_request_free(&rq);
}

static void test_proppatch_empty_refused(void **state)
{
    (void)state;
    caldav_request rq;
    caldav_xml_err err;
    const char *body = "<D:propertyupdate xmlns:D=\"DAV:\"/>";
    assert_int_equal(caldav_xml_parse(CALDAV_BODY_PROPPATCH, body, strlen(body), &rq, &err), -1);
    assert_int_equal(err.status, 400);
    assert_int_equal(caldav_xml_parse(CALDAV_BODY_PROPPATCH, "", 0, &rq, &err), -1);
}

static void test_mkcalendar(void **state)
{
    (void)state;
    caldav_request rq = ok(CALDAV_BODY_MKCOL,
                           "<C:mkcalendar xmlns:D=\"DAV:\" xmlns:C=\"urn:ietf:params:xml:ns:caldav\"><D:set><D:prop>"
                           "<D:displayname>Work</D:displayname><C:supported-calendar-component-set>"
                           "<C:comp name=\"VEVENT\"/><C:comp name=\"VTODO\"/></C:supported-calendar-component-set>"
                           "<C:calendar-timezone>BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n</C:calendar-timezone>"
                           "</D:prop></D:set></C:mkcalendar>");
    assert_true(rq.is_mkcalendar);
    assert_int_equal(rq.components, CALDAV_COMP_VEVENT | CALDAV_COMP_VTODO);
    assert_int_equal(rq.nprops, 3);
    assert_string_equal(rq.props[0].value, "Work");
    assert_int_equal(rq.props[2].id, CALDAV_P_CALENDAR_TIMEZONE);
    assert_non_null(strstr(rq.props[2].value, "BEGIN:VCALENDAR"));
    caldav_request_free(&rq);
    rq = ok(CALDAV_BODY_MKCOL, "");
    assert_false(rq.is_mkcalendar);
    assert_int_equal(rq.nprops, 0);
    caldav_request_free(&rq);
}

static void test_extended_mkcol(void **state)
{
    (void)state;
    caldav_request rq = ok(CALDAV_BODY_MKCOL,
                           "<D:mkcol xmlns:D=\"DAV:\" xmlns:C=\"urn:ietf:params:xml:ns:caldav\"><D:set><D:prop>"
                           "<D:resourcetype><D:collection/><C:calendar/></D:resourcetype></D:prop></D:set>"
                           "</D:mkcol>");
    assert_false(rq.is_mkcalendar);
    assert_true(rq.calendar_type);
    caldav_request_free(&rq);
    rq = ok(CALDAV_BODY_MKCOL, "<D:mkcol xmlns:D=\"DAV:\"><D:set><D:prop><D:resourcetype><D:collection/>"
                               "</D:resourcetype></D:prop></D:set></D:mkcol>");
    assert_false(rq.calendar_type); /* vdirsyncer's plain collection: the handler refuses it */
    caldav_request_free(&rq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proppatch),
        cmocka_unit_test(test_proppatch_empty_refused),
        cmocka_unit_test(test_mkcalendar),
        cmocka_unit_test(test_extended_mkcol),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
