/* test-caldav-xml-hostile.c -- bodies meant to hurt: an external entity
 * reading a local file (XXE), an external DTD, billion laughs, an internal
 * DTD of any kind, an undeclared prefix, broken XML, a body over the
 * limit, nesting deeper than libxml2 allows. Each is refused with a 4xx
 * and nothing of it leaks into the request. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "caldav/caldav_xml.h"

static int setup(void **state)
{
    (void)state;
    caldav_xml_init();
    return 0;
}

static caldav_xml_err refused(caldav_body kind, const char *body, size_t len)
{
    caldav_request rq;
    caldav_xml_err err;
    if (caldav_xml_parse(kind, body, len, &rq, &err) == 0) {
        caldav_request_free(&rq);
        fail_msg("accepted: %.80s", body);
    }
    assert_true(err.status >= 400 && err.status < 500);
    assert_true(err.message[0] != '\0');
    return err;
}

static void test_xxe(void **state)
{
    (void)state;
    const char *body = "<?xml version=\"1.0\"?>\n"
                       "<!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>\n"
                       "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><D:displayname>&x;</D:displayname>"
                       "</D:prop></D:set></D:propertyupdate>";
    caldav_xml_err err = refused(CALDAV_BODY_PROPPATCH, body, strlen(body));
    assert_int_equal(err.status, 400);
    assert_non_null(strstr(err.message, "DTD"));
    assert_null(strstr(err.message, "root:"));
}

static void test_external_dtd(void **state)
{
    (void)state;
    const char *body = "<!DOCTYPE D:propfind SYSTEM \"http://127.0.0.1:9/evil.dtd\">"
                       "<D:propfind xmlns:D=\"DAV:\"><D:allprop/></D:propfind>";
    assert_int_equal(refused(CALDAV_BODY_PROPFIND, body, strlen(body)).status, 400);
}

static void test_billion_laughs(void **state)
{
    (void)state;
    const char *body = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
                       "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
                       "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">"
                       "<!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">]>"
                       "<D:propfind xmlns:D=\"DAV:\"><D:prop><D:displayname>&lol4;</D:displayname></D:prop>"
                       "</D:propfind>";
    assert_int_equal(refused(CALDAV_BODY_PROPFIND, body, strlen(body)).status, 400);
}

static void test_undefined_entity_and_prefix(void **state)
{
    (void)state;
    const char *a = "<D:propfind xmlns:D=\"DAV:\"><D:prop><D:x>&nope;</D:x></D:prop></D:propfind>";
    assert_int_equal(refused(CALDAV_BODY_PROPFIND, a, strlen(a)).status, 400);
    const char *b = "<D:propfind xmlns:D=\"DAV:\"><D:prop><Q:getetag/></D:prop></D:propfind>";
    assert_int_equal(refused(CALDAV_BODY_PROPFIND, b, strlen(b)).status, 400);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "<D:propfind xmlns:D=\"DAV:\"><D:prop></D:propfind>",
        "<D:propfind xmlns:D=\"DAV:\">",
        "not xml at all",
        "<D:propfind xmlns:D=\"DAV:\"/><second/>",
        "<D:propfind xmlns:D=\"DAV:\" a=\"1\" a=\"2\"/>",
        "\xff\xfe<\x00",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        caldav_xml_err err = refused(CALDAV_BODY_PROPFIND, bodies[i], strlen(bodies[i]));
        assert_int_equal(err.status, 400);
        for (const char *m = err.message; *m; m++) assert_true(*m >= 0x20 && *m < 0x7f); /* safe to show */
    }
}

static void test_too_big(void **state)
{
    (void)state;
    size_t len = CALDAV_XML_MAX + 1;
    char *body = malloc(len);
    memset(body, ' ', len);
    assert_int_equal(refused(CALDAV_BODY_PROPFIND, body, len).status, 413);
    free(body);
}

static void test_too_deep(void **state)
{
    (void)state;
    size_t depth = 300, n = 0;
    char *body = malloc(depth * 16 + 64);
    n += (size_t)sprintf(body, "<D:propfind xmlns:D=\"DAV:\"><D:prop>");
    for (size_t i = 0; i < depth; i++) n += (size_t)sprintf(body + n, "<D:a>");
    for (size_t i = 0; i < depth; i++) n += (size_t)sprintf(body + n, "</D:a>");
    n += (size_t)sprintf(body + n, "</D:prop></D:propfind>");
    assert_int_equal(refused(CALDAV_BODY_PROPFIND, body, n).status, 400);
    free(body);
}

static void test_wrong_root(void **state)
{
    (void)state;
    const char *body = "<D:propfind xmlns:D=\"DAV:\"><D:allprop/></D:propfind>";
    assert_int_equal(refused(CALDAV_BODY_PROPPATCH, body, strlen(body)).status, 400);
    const char *rep = "<D:expand-property xmlns:D=\"DAV:\"/>";
    caldav_xml_err err = refused(CALDAV_BODY_REPORT, rep, strlen(rep));
    assert_int_equal(err.status, 403);
    assert_string_equal(err.cond, "supported-report");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xxe),
        cmocka_unit_test(test_external_dtd),
        cmocka_unit_test(test_billion_laughs),
        cmocka_unit_test(test_undefined_entity_and_prefix),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_too_deep),
        cmocka_unit_test(test_wrong_root),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
