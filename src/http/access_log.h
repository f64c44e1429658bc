/* access_log.h -- the access log, buffered per event loop (access_log.c);
 * internal to src/http, used by server.c. */
#ifndef CHIME_HTTP_ACCESS_LOG_H
#define CHIME_HTTP_ACCESS_LOG_H

#include <h2o.h>
#include <stddef.h>

typedef struct http_access_log http_access_log; /* where lines go */
typedef struct http_access_buf http_access_buf; /* one loop's lines on their way */

/* spec: "-" (stderr), "off", or a file opened for appending. 0 with *out
 * NULL when off; -1 (logged) when the file cannot be opened. */
int http_access_log_open(const char *spec, http_access_log **out);
void http_access_log_close(http_access_log *log);

/* A loop's buffer; NULL when log is NULL (off). Written out when it holds
 * HTTP_ACCESS_FLUSH_BYTES, every HTTP_ACCESS_FLUSH_MS by a timer on the
 * loop, and by http_access_buf_free (the loop's last act). */
#define HTTP_ACCESS_BUF_BYTES 65536
#define HTTP_ACCESS_FLUSH_BYTES 32768
#define HTTP_ACCESS_FLUSH_MS 1000
http_access_buf *http_access_buf_new(http_access_log *log, h2o_evloop_t *loop);
void http_access_buf_free(http_access_buf *b);

typedef struct http_access_entry {
    const char *request_id, *peer;
    h2o_iovec_t method, path;
    int status;
    size_t bytes;
    double ms;
} http_access_entry;

/* Appends one line (on the loop's own thread). */
void http_access_buf_add(http_access_buf *b, const http_access_entry *e);

#endif
