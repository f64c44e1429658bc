/* receivers.h -- the real receivers (tests/api/receivers.py) as a child
 * process of a C unit test: HTTP, HTTPS and SMTP on loopback, each request
 * appended to a JSON-lines log the test reads back. Include once per test
 * program, which passes receivers_start and receivers_stop to cmocka. */
#ifndef CHIME_TEST_RECEIVERS_H
#define CHIME_TEST_RECEIVERS_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

/* ---- the receivers process ------------------------------------------------ */

static struct {
    pid_t pid;
    int stdin_fd;
    int http_port, smtp_port, https_port, https_other_port;
    char dir[256];
} rx;

static int receivers_start(void **state)
{
    const char *tmp = getenv("CHIME_TEST_TMP");
    snprintf(rx.dir, sizeof rx.dir, "%s/chan-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(rx.dir)) return -1;
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return -1;
    rx.pid = fork();
    if (rx.pid < 0) return -1;
    if (rx.pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl("/usr/bin/python3", "python3", "tests/api/receivers.py", rx.dir, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    rx.stdin_fd = in[1];
    FILE *f = fdopen(out[0], "r");
    char line[128];
    if (!f || !fgets(line, sizeof line, f) || sscanf(line, "http %d smtp %d https %d https-other %d", &rx.http_port, &rx.smtp_port, &rx.https_port,
                                  &rx.https_other_port) != 4) {
        if (f) fclose(f);
        return -1;
    }
    fclose(f);
    return base_init();
}

static int receivers_stop(void **state)
{
    close(rx.stdin_fd); /* receivers.py exits when its stdin closes */
    int st;
    waitpid(rx.pid, &st, 0);
    return 0;
}

/* Every JSON line of LOGDIR/NAME.jsonl; caller decrefs. */
static json_t *log_items(const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s.jsonl", rx.dir, name);
    json_t *arr = json_array();
    FILE *f = fopen(path, "r");
    if (!f) return arr;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        if (j) json_array_append_new(arr, j);
    }
    free(line);
    fclose(f);
    return arr;
}

/* The HTTP requests recorded for one path. */
static json_t *requests_to(const char *path)
{
    json_t *all = log_items("http"), *out = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(all, i, it) if (strcmp(json_string_value(json_object_get(it, "path")), path) == 0)
        json_array_append(out, it);
    json_decref(all);
    return out;
}

#endif
