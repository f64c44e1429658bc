/* test-router.c -- route patterns, parameters, 404 versus 405. */
#include "testutil.h"

#include <string.h>

#include "http/router.h"

static void h1(http_req *r, void *arg) { (void)r; (void)arg; }
static void h2(http_req *r, void *arg) { (void)r; (void)arg; }

static router *make(void)
{
    router *rt = calloc(1, sizeof *rt);
    assert_int_equal(router_add(rt, HTTP_GET | HTTP_POST, "/v1/events", h1, NULL, 0), 0);
    assert_int_equal(router_add(rt, HTTP_GET | HTTP_PATCH, "/v1/events/{id}", h2, NULL, HTTP_ROUTE_AUTH), 0);
    assert_int_equal(router_add(rt, HTTP_PATCH, "/v1/events/{id}/instances/{start}", h2, NULL, 0), 0);
    assert_int_equal(router_add(rt, HTTP_GET, "/", h1, NULL, 0), 0);
    return rt;
}

static int match(router *rt, http_method m, const char *path, http_req *r, unsigned *allowed)
{
    memset(r, 0, sizeof *r);
    return router_match(rt, m, path, strlen(path), r, allowed);
}

static void test_params(void **state)
{
    (void)state;
    router *rt = make();
    http_req r;
    unsigned allowed;
    assert_int_equal(match(rt, HTTP_PATCH, "/v1/events/abc/instances/20261109T140000Z", &r, &allowed), 2);
    assert_int_equal(r.nparams, 2);
    assert_int_equal(r.params[0].len, 3);
    assert_memory_equal(r.params[0].ptr, "abc", 3);
    assert_memory_equal(r.params[1].ptr, "20261109T140000Z", 16);
    assert_int_equal(match(rt, HTTP_GET, "/v1/events/xyz", &r, &allowed), 1);
    assert_int_equal(match(rt, HTTP_GET, "/v1/events/xyz/", &r, &allowed), 1); /* trailing slash */
    assert_int_equal(match(rt, HTTP_GET, "/", &r, &allowed), 3);
    free(rt);
}

static void test_not_found_and_not_allowed(void **state)
{
    (void)state;
    router *rt = make();
    http_req r;
    unsigned allowed;
    assert_int_equal(match(rt, HTTP_GET, "/v1/nope", &r, &allowed), -1);
    assert_int_equal(match(rt, HTTP_GET, "/v1/events/a/b", &r, &allowed), -1);
    assert_int_equal(match(rt, HTTP_GET, "/v1//events", &r, &allowed), -1);
    assert_int_equal(match(rt, HTTP_GET, "v1/events", &r, &allowed), -1);
    assert_int_equal(match(rt, HTTP_DELETE, "/v1/events/x", &r, &allowed), -2);
    assert_true(allowed & HTTP_GET);
    assert_true(allowed & HTTP_PATCH);
    assert_true(allowed & HTTP_HEAD); /* GET routes answer HEAD */
    assert_false(allowed & HTTP_DELETE);
    assert_int_equal(match(rt, HTTP_HEAD, "/v1/events", &r, &allowed), 0);
    free(rt);
}

static void test_limits(void **state)
{
    (void)state;
    router *rt = calloc(1, sizeof *rt);
    assert_int_equal(router_add(rt, HTTP_GET, "/a/b/c/d/e/f/g/h/i", h1, NULL, 0), -1); /* too deep */
    assert_int_equal(router_add(rt, HTTP_GET, "/{a}/{b}/{c}/{d}/{e}", h1, NULL, 0), -1); /* too many params */
    assert_int_equal(router_add(rt, HTTP_GET, "nope", h1, NULL, 0), -1);
    char deep[200] = "";
    for (int i = 0; i < 20; i++) strcat(deep, "/x");
    http_req r;
    unsigned allowed;
    assert_int_equal(router_add(rt, HTTP_GET, "/x", h1, NULL, 0), 0);
    assert_int_equal(match(rt, HTTP_GET, deep, &r, &allowed), -1);
    free(rt);
}

/* The WebDAV methods route like the others: one pattern may carry several
 * routes, each with its own methods (and flags). */
static void test_webdav_methods(void **state)
{
    (void)state;
    router *rt = calloc(1, sizeof *rt);
    http_req r;
    unsigned allowed;
    assert_int_equal(router_add(rt, HTTP_OPTIONS, "/dav/{user}", h1, NULL, 0), 0);
    assert_int_equal(router_add(rt, HTTP_PROPFIND | HTTP_REPORT, "/dav/{user}", h2, NULL, HTTP_ROUTE_BASIC), 0);
    assert_int_equal(router_add(rt, HTTP_MKCALENDAR | HTTP_MKCOL | HTTP_PROPPATCH, "/dav/{user}", h2, NULL, 0), 0);
    assert_int_equal(match(rt, HTTP_OPTIONS, "/dav/u", &r, &allowed), 0);
    assert_int_equal(match(rt, HTTP_REPORT, "/dav/u/", &r, &allowed), 1);
    assert_int_equal(match(rt, HTTP_MKCALENDAR, "/dav/u", &r, &allowed), 2);
    assert_int_equal(match(rt, HTTP_PUT, "/dav/u", &r, &allowed), -2);
    assert_true(allowed & HTTP_PROPFIND);
    assert_true(allowed & HTTP_MKCOL);
    assert_false(allowed & HTTP_GET);
    free(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_not_found_and_not_allowed),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_webdav_methods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
