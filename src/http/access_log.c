/* access_log.c -- one line per request, buffered per event loop, the way
 * nginx's access_log buffer= and flush= work.
 *
 * A write per request was a fifth of the server's throughput (issue 24.7).
 * Each loop appends its lines to its own buffer, without locks, and writes
 * the buffer out when it is half full, once a second (a timer on the loop)
 * and when the loop ends, so no line is lost by a clean stop; a crash loses
 * at most the last second. Lines are whole in every write: to a pipe (stderr
 * under a supervisor) a write is cut at a line end to at most PIPE_BUF
 * bytes, which the kernel never interleaves with the other threads' log
 * lines; to a regular file opened O_APPEND each write is one append. */
#include "http/access_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

struct http_access_log {
    int fd;
    bool owned;        /* a file we opened (not stderr) */
    bool whole_writes; /* a regular file: no need to cut writes */
};

struct http_access_buf {
    http_access_log *log;
    h2o_evloop_t *loop;
    h2o_timeout_t tick;
    h2o_timeout_entry_t tick_entry;
    time_t stamp_sec;  /* the second stamp[] spells */
    char stamp[64];    /* "2026-11-22T04:30:00" */
    size_t len;
    char data[HTTP_ACCESS_BUF_BYTES];
};

int http_access_log_open(const char *spec, http_access_log **out)
{
    *out = NULL;
    if (!spec) spec = "-";
    if (strcmp(spec, "off") == 0) return 0;
    int fd = strcmp(spec, "-") == 0 ? STDERR_FILENO : open(spec, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        log_error("access log %s: %s", spec, strerror(errno));
        return -1;
    }
    http_access_log *log = calloc(1, sizeof *log);
    if (!log) {
        if (fd != STDERR_FILENO) close(fd);
        return -1;
    }
    struct stat st;
    log->fd = fd;
    log->owned = fd != STDERR_FILENO;
    log->whole_writes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    *out = log;
    return 0;
}

void http_access_log_close(http_access_log *log)
{
    if (!log) return;
    if (log->owned) close(log->fd);
    free(log);
}

/* Writes p[0..n) whole; a failing destination loses the lines (a log must
 * not stop the server) and says so once. */
static void write_fully(int fd, const char *p, size_t n)
{
    static atomic_bool warned;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            poll(&pfd, 1, 1000);
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else {
            if (!atomic_exchange(&warned, true))
                log_warn("access log: lines lost: %s", w < 0 ? strerror(errno) : "nothing written");
            return;
        }
    }
}

static void flush(http_access_buf *b)
{
    const char *p = b->data;
    size_t left = b->len;
    while (left > 0) {
        size_t n = left;
        if (!b->log->whole_writes && n > PIPE_BUF) {
            /* Cut after the last whole line that fits. */
            n = PIPE_BUF;
            while (n > 0 && p[n - 1] != '\n') n--;
            if (n == 0) n = left < PIPE_BUF ? left : PIPE_BUF;
        }
        write_fully(b->log->fd, p, n);
        p += n;
        left -= n;
    }
    b->len = 0;
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    http_access_buf *b = H2O_STRUCT_FROM_MEMBER(http_access_buf, tick_entry, entry);
    if (b->len) flush(b);
    h2o_timeout_link(b->loop, &b->tick, &b->tick_entry);
}

http_access_buf *http_access_buf_new(http_access_log *log, h2o_evloop_t *loop)
{
    if (!log) return NULL;
    http_access_buf *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->log = log;
    b->loop = loop;
    b->stamp_sec = -1;
    h2o_timeout_init(loop, &b->tick, HTTP_ACCESS_FLUSH_MS);
    b->tick_entry.cb = on_tick;
    h2o_timeout_link(loop, &b->tick, &b->tick_entry);
    return b;
}

void http_access_buf_free(http_access_buf *b)
{
    if (!b) return;
    if (b->len) flush(b);
    if (h2o_timeout_is_linked(&b->tick_entry)) h2o_timeout_unlink(&b->tick_entry);
    h2o_timeout_dispose(b->loop, &b->tick);
    free(b);
}

/* The line's time, to the millisecond; the date and time of day are
 * formatted once a second. */
static const char *stamp_of(http_access_buf *b, int *ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != b->stamp_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        snprintf(b->stamp, sizeof b->stamp, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        b->stamp_sec = ts.tv_sec;
    }
    *ms = (int)(ts.tv_nsec / 1000000);
    return b->stamp;
}

#define LINE_MAX_BYTES 1024

void http_access_buf_add(http_access_buf *b, const http_access_entry *e)
{
    if (!b) return;
    if (sizeof b->data - b->len < LINE_MAX_BYTES) flush(b);
    int ms;
    const char *stamp = stamp_of(b, &ms);
    char *line = b->data + b->len;
    int n = snprintf(line, LINE_MAX_BYTES, "%s.%03dZ access id=%s peer=%s %.*s %.*s %d %zuB %.3fms\n", stamp, ms,
                     e->request_id, e->peer, (int)e->method.len, e->method.base,
                     (int)(e->path.len > 512 ? 512 : e->path.len), e->path.base, e->status, e->bytes, e->ms);
    if (n < 0) return;
    if (n > LINE_MAX_BYTES - 1) { /* cut: still one line */
        n = LINE_MAX_BYTES - 1;
        line[n - 1] = '\n';
    }
    b->len += (size_t)n;
    if (b->len >= HTTP_ACCESS_FLUSH_BYTES) flush(b);
}
