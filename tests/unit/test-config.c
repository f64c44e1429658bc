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

/* Boolean options (issue 24.6): bare on the command line, or with a value
 * in any spelling; env and file forms unchanged. */
static void test_bare_boolean(void **state)
{
    (void)state;
    chime_config c;
    unsetenv("CHIME_WEBHOOK_ALLOW_PRIVATE");
    config_defaults(&c);
    char *bare[] = {"--webhook-allow-private"};
    assert_int_equal(config_load(&c, "serve", 1, bare), 0);
    assert_int_equal(c.webhook_allow_private, 1);

    config_defaults(&c);
    char *bare_then_flag[] = {"--webhook-allow-private", "--threads", "3"};
    assert_int_equal(config_load(&c, "serve", 3, bare_then_flag), 0);
    assert_int_equal(c.webhook_allow_private, 1);
    assert_int_equal(c.threads, 3);

    static const struct { const char *arg; int64_t want; } forms[] = {
        {"--webhook-allow-private=1", 1}, {"--webhook-allow-private=0", 0},
        {"--webhook-allow-private=true", 1}, {"--webhook-allow-private=false", 0},
        {"--webhook-allow-private=TRUE", 1}, {"--webhook-allow-private=off", 0}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        config_defaults(&c);
        c.webhook_allow_private = !forms[i].want;
        char *argv[] = {(char *)forms[i].arg};
        assert_int_equal(config_load(&c, "serve", 1, argv), 0);
        assert_int_equal(c.webhook_allow_private, forms[i].want);
    }
    /* The old spelling, a separate value, still works. */
    config_defaults(&c);
    char *spaced[] = {"--webhook-allow-private", "1"};
    assert_int_equal(config_load(&c, "serve", 2, spaced), 0);
    assert_int_equal(c.webhook_allow_private, 1);
    char *spaced_off[] = {"--webhook-allow-private", "false"};
    assert_int_equal(config_load(&c, "serve", 2, spaced_off), 0);
    assert_int_equal(c.webhook_allow_private, 0);

    char *bad[] = {"--webhook-allow-private=2"};
    assert_int_equal(config_load(&c, "serve", 1, bad), -1);
    char *bad_spaced[] = {"--webhook-allow-private", "maybe"};
    assert_int_equal(config_load(&c, "serve", 2, bad_spaced), -1);

    config_defaults(&c);
    setenv("CHIME_WEBHOOK_ALLOW_PRIVATE", "true", 1);
    assert_int_equal(config_load(&c, "serve", 0, NULL), 0);
    assert_int_equal(c.webhook_allow_private, 1);
    unsetenv("CHIME_WEBHOOK_ALLOW_PRIVATE");

    char *path = write_file("webhook-allow-private = 1\n");
    char *file[] = {"--config", path};
    config_defaults(&c);
    assert_int_equal(config_load(&c, "serve", 2, file), 0);
    assert_int_equal(c.webhook_allow_private, 1);
    unlink(path);
}

/* --help shows a boolean as a bare flag, other options with a metavariable. */
static void test_help_shows_flags(void **state)
{
    (void)state;
    char path[] = "/tmp/chime-help-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fd, STDOUT_FILENO);
    config_print_help("serve");
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    char buf[16384] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    buf[n] = '\0';
    const char *line = strstr(buf, "--webhook-allow-private");
    assert_non_null(line);
    assert_true(line[strlen("--webhook-allow-private")] == ' ');
    assert_null(strstr(buf, "--webhook-allow-private N"));
    assert_non_null(strstr(buf, "--threads N"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_bare_boolean),
        cmocka_unit_test(test_help_shows_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
