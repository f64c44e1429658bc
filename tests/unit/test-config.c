/* test-config.c -- defaults, file, environment and flags, in that order of
 * precedence, and errors that name the option. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static char *write_file(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/chime-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_defaults(void **state)
{
    (void)state;
    chime_config c;
    config_defaults(&c);
    unsetenv("CHIME_LISTEN");
    assert_int_equal(config_load(&c, "serve", 0, NULL), 0);
    assert_string_equal(c.listen, "127.0.0.1:8080");
    assert_string_equal(c.db, "sqlite:var/chime.db");
    assert_int_equal(c.max_body, 1 << 20);
}

static void test_precedence(void **state)
{
    (void)state;
    char *path = write_file("# comment\nlisten = 127.0.0.1:1000\nmax-body = 2k\nthreads=3\n");
    chime_config c;
    config_defaults(&c);
    char *argv1[] = {"--config", path};
    assert_int_equal(config_load(&c, "serve", 2, argv1), 0);
    assert_string_equal(c.listen, "127.0.0.1:1000");
    assert_int_equal(c.max_body, 2048);
    assert_int_equal(c.threads, 3);

    setenv("CHIME_LISTEN", "127.0.0.1:2000", 1);
    config_defaults(&c);
    assert_int_equal(config_load(&c, "serve", 2, argv1), 0);
    assert_string_equal(c.listen, "127.0.0.1:2000");

    config_defaults(&c);
    char *argv2[] = {"--listen=127.0.0.1:3000", "--config", path, "--max-body", "1m"};
    assert_int_equal(config_load(&c, "serve", 5, argv2), 0);
    assert_string_equal(c.listen, "127.0.0.1:3000");
    assert_int_equal(c.max_body, 1 << 20);
    unsetenv("CHIME_LISTEN");
    unlink(path);
}

static void test_errors(void **state)
{
    (void)state;
    chime_config c;
    char *bad_num[] = {"--threads", "many"};
    char *too_big[] = {"--threads", "100000"};
    char *unknown[] = {"--frobnicate", "1"};
    char *no_value[] = {"--listen"};
    char *positional[] = {"stray"};
    config_defaults(&c);
    assert_int_equal(config_load(&c, "serve", 2, bad_num), -1);
    assert_int_equal(config_load(&c, "serve", 2, too_big), -1);
    assert_int_equal(config_load(&c, "serve", 2, unknown), -1);
    assert_int_equal(config_load(&c, "serve", 1, no_value), -1);
    assert_int_equal(config_load(&c, "serve", 1, positional), -1);
    char *path = write_file("listen 127.0.0.1:1\n");
    char *argv[] = {"--config", path};
    assert_int_equal(config_load(&c, "serve", 2, argv), -1);
    unlink(path);
    char *missing[] = {"--config", "/nonexistent/chime.conf"};
    assert_int_equal(config_load(&c, "serve", 2, missing), -1);
    setenv("CHIME_MAX_BODY", "-5", 1);
    assert_int_equal(config_load(&c, "serve", 0, NULL), -1);
    unsetenv("CHIME_MAX_BODY");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
