/* test-web.c -- the web app's static files: what a request path names
 * (traversal impossible), content types, gzip negotiation, If-None-Match,
 * and the in-memory site read from a directory. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "web/web.h"

static web_kind kind(const char *path, char *out)
{
    return web_path_parse(path, strlen(path), out, WEB_PATH_MAX);
}

static void test_paths(void **state)
{
    (void)state;
    char out[WEB_PATH_MAX];
    assert_int_equal(kind("/", out), WEB_APP_ROUTE);
    assert_int_equal(kind("/calendar", out), WEB_APP_ROUTE);
    assert_int_equal(kind("/chat/0123abcd", out), WEB_APP_ROUTE);
    assert_int_equal(kind("/calendar/", out), WEB_APP_ROUTE);
    assert_int_equal(kind("/index.html", out), WEB_FILE);
    assert_string_equal(out, "/index.html");
    assert_int_equal(kind("/js/app%2Ejs", out), WEB_FILE);
    assert_string_equal(out, "/js/app.js");
    /* Nothing outside the root, nothing hidden, nothing ambiguous. */
    const char *bad[] = {"/../etc/passwd", "/js/../../x.js", "/%2e%2e/x.js", "/.git/config", "/js/.env",
                         "/js%2fapp.js", "/a\\b.js", "/x%00.js", "/x%0a.js", "//x.js", "/a//b.js", "x.js", "",
                         "/v1/events", "/v1", "/v1/x.js", "/%zz.js", "/%2", "/app.js/", "/nope", "/calendarx",
                         "/js"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (kind(bad[i], out) != WEB_NOT_FOUND) fail_msg("%s should be refused", bad[i]);
    }
    char longp[400];
    memset(longp, 'a', sizeof longp);
    longp[0] = '/';
    assert_int_equal(web_path_parse(longp, sizeof longp, out, WEB_PATH_MAX), WEB_NOT_FOUND);
}

static void test_types(void **state)
{
    (void)state;
    assert_string_equal(web_content_type("/index.html"), "text/html; charset=utf-8");
    assert_string_equal(web_content_type("/js/app.js"), "text/javascript; charset=utf-8");
    assert_string_equal(web_content_type("/a.CSS"), "text/css; charset=utf-8");
    assert_string_equal(web_content_type("/icon.svg"), "image/svg+xml");
    assert_string_equal(web_content_type("/x.d/noext"), "application/octet-stream");
    assert_string_equal(web_content_type("/blob.bin"), "application/octet-stream");
}

static bool gz(const char *v)
{
    return web_accepts_gzip(v, strlen(v));
}

static void test_accept_encoding(void **state)
{
    (void)state;
    assert_true(gz("gzip"));
    assert_true(gz("gzip, deflate, br"));
    assert_true(gz("br;q=1.0, GZIP;q=0.5"));
    assert_true(gz(" deflate , gzip ; q=0.001"));
    assert_false(gz(""));
    assert_false(gz("br, deflate"));
    assert_false(gz("gzip;q=0"));
    assert_false(gz("gzip; q=0.000"));
    assert_false(gz("x-gzip2"));
    assert_false(gz("gzipx"));
}

static bool inm(const char *v, const char *etag)
{
    return web_etag_matches(v, strlen(v), etag);
}

static void test_if_none_match(void **state)
{
    (void)state;
    assert_true(inm("\"abc\"", "\"abc\""));
    assert_true(inm("W/\"abc\"", "\"abc\""));
    assert_true(inm("\"x\", \"abc\"", "\"abc\""));
    assert_true(inm("*", "\"abc\""));
    assert_false(inm("\"abcd\"", "\"abc\""));
    assert_false(inm("\"ab", "\"abc\""));
    assert_false(inm("abc", "\"abc\""));
    assert_false(inm("", "\"abc\""));
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_site_load(void **state)
{
    (void)state;
    char dir[] = "/tmp/chime-web-XXXXXX", p[512];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/index.html", dir);
    put(p, "<!doctype html><title>x</title>");
    snprintf(p, sizeof p, "%s/js", dir);
    mkdir(p, 0755);
    char big[4096];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(p, sizeof p, "%s/js/app.js", dir);
    put(p, big);
    snprintf(p, sizeof p, "%s/.secret", dir);
    put(p, "no");
    char target[512];
    snprintf(target, sizeof target, "%s/link.txt", dir);
    assert_int_equal(symlink("/etc/passwd", target), 0);

    char err[256];
    web_site *s = web_site_load(dir, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(s->n, 2);
    assert_non_null(s->index);
    assert_null(web_site_find(s, "/.secret"));
    assert_null(web_site_find(s, "/link.txt"));
    const web_file *js = web_site_find(s, "/js/app.js");
    assert_non_null(js);
    assert_int_equal(js->len, sizeof big - 1);
    assert_non_null(js->gz); /* 4 KiB of one letter shrinks */
    assert_true(js->gzlen < 100);
    assert_int_equal(strlen(js->etag), 18);
    assert_string_not_equal(js->etag, js->etag_gz);
    assert_null(s->index->gz); /* too small to bother */
    web_site_free(s);

    assert_null(web_site_load("/nonexistent-chime-web", err, sizeof err));
    snprintf(p, sizeof p, "rm -rf %s", dir);
    assert_int_equal(system(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_accept_encoding),
        cmocka_unit_test(test_if_none_match),
        cmocka_unit_test(test_site_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
