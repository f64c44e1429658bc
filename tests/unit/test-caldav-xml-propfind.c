/* test-caldav-xml-propfind.c -- PROPFIND bodies: named properties, allprop,
 * propname, an empty body; elements matched by namespace URI whatever the
 * prefix (or a default namespace), never by prefix alone; properties chime
 * does not know kept with their namespace so the answer can list them. */
#include "testutil.h"

#include <string.h>

#include "caldav/caldav_xml.h"

static int setup(void **state)
{
    (void)state;
    caldav_xml_init();
    return 0;
}

static caldav_request parse_ok(const char *body)
{
    caldav_request rq;
    caldav_xml_err err;
    int rc = caldav_xml_parse(CALDAV_BODY_PROPFIND, body, strlen(body), &rq, &err);
    if (rc != 0) fail_msg("refused (%d): %s", err.status, err.message);
    return rq;
}

static void test_named_props(void **state)
{
    (void)state;
    caldav_request rq = parse_ok("<?xml version=\"1.0\"?>\n"
                                 "<d:propfind xmlns:d=\"DAV:\" xmlns:cal=\"urn:ietf:params:xml:ns:caldav\" "
                                 "xmlns:cs=\"http://calendarserver.org/ns/\" xmlns:x=\"http://example.com/x\">"
                                 "<d:prop><d:getetag/><cal:calendar-home-set/><cs:getctag/><x:color/></d:prop>"
                                 "</d:propfind>");
    assert_int_equal(rq.want, CALDAV_WANT_PROP);
    assert_int_equal(rq.nprops, 4);
    assert_int_equal(rq.props[0].id, CALDAV_P_GETETAG);
    assert_int_equal(rq.props[1].id, CALDAV_P_CALENDAR_HOME_SET);
    assert_int_equal(rq.props[2].id, CALDAV_P_GETCTAG);
    assert_int_equal(rq.props[3].id, CALDAV_P_UNKNOWN);
    assert_string_equal(rq.props[3].ns, "http://example.com/x");
    assert_string_equal(rq.props[3].name, "color");
    caldav_request_free(&rq);
}

static void test_default_namespace_and_odd_prefixes(void **state)
{
    (void)state;
    /* The DAV: namespace under a prefix that looks like CalDAV's, and
     * CalDAV's under "D": only the URIs count. */
    caldav_request rq = parse_ok("<propfind xmlns=\"DAV:\"><prop xmlns:D=\"urn:ietf:params:xml:ns:caldav\">"
                                 "<resourcetype/><D:calendar-data/><C:displayname xmlns:C=\"DAV:\"/></prop>"
                                 "</propfind>");
    assert_int_equal(rq.nprops, 3);
    assert_int_equal(rq.props[0].id, CALDAV_P_RESOURCETYPE);
    assert_int_equal(rq.props[1].id, CALDAV_P_CALENDAR_DATA);
    assert_int_equal(rq.props[2].id, CALDAV_P_DISPLAYNAME);
    caldav_request_free(&rq);
}

static void test_no_namespace_is_not_dav(void **state)
{
    (void)state;
    caldav_request rq;
    caldav_xml_err err;
    const char *body = "<propfind><prop><getetag/></prop></propfind>";
    assert_int_equal(caldav_xml_parse(CALDAV_BODY_PROPFIND, body, strlen(body), &rq, &err), -1);
    assert_int_equal(err.status, 400);
    /* A property without a namespace is kept, unknown, with "" as its. */
    rq = parse_ok("<D:propfind xmlns:D=\"DAV:\"><D:prop><getetag/></D:prop></D:propfind>");
    assert_int_equal(rq.nprops, 1);
    assert_int_equal(rq.props[0].id, CALDAV_P_UNKNOWN);
    assert_string_equal(rq.props[0].ns, "");
    caldav_request_free(&rq);
}

static void test_allprop_propname_empty(void **state)
{
    (void)state;
    caldav_request rq = parse_ok("<D:propfind xmlns:D=\"DAV:\"><D:allprop/></D:propfind>");
    assert_int_equal(rq.want, CALDAV_WANT_ALLPROP);
    caldav_request_free(&rq);
    rq = parse_ok("<D:propfind xmlns:D=\"DAV:\"><D:propname/></D:propfind>");
    assert_int_equal(rq.want, CALDAV_WANT_PROPNAME);
    caldav_request_free(&rq);
    rq = parse_ok(" \r\n ");
    assert_int_equal(rq.want, CALDAV_WANT_ALLPROP);
    assert_int_equal(rq.nprops, 0);
    caldav_request_free(&rq);
}

static void test_too_many_props(void **state)
{
    (void)state;
    char body[8192] = "<D:propfind xmlns:D=\"DAV:\"><D:prop>";
    for (int i = 0; i <= CALDAV_MAX_PROPS; i++) strcat(body, "<D:getetag/>");
    strcat(body, "</D:prop></D:propfind>");
    caldav_request rq;
    caldav_xml_err err;
    assert_int_equal(caldav_xml_parse(CALDAV_BODY_PROPFIND, body, strlen(body), &rq, &err), -1);
    assert_int_equal(err.status, 403);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_named_props),
        cmocka_unit_test(test_default_namespace_and_odd_prefixes),
        cmocka_unit_test(test_no_namespace_is_not_dav),
        cmocka_unit_test(test_allprop_propname_empty),
        cmocka_unit_test(test_too_many_props),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
