/* h1answer.c -- one HTTP/1.1 answer's head and framing (h1answer.h), on
 * picohttpparser, which libh2o carries (Debian installs no header for it:
 * the declarations below are its API). */
#include "net/h1answer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

struct phr_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};
int phr_parse_response(const char *buf, size_t len, int *minor_version, int *status, const char **msg,
                       size_t *msg_len, struct phr_header *headers, size_t *num_headers, size_t last_len);
struct phr_chunked_decoder {
    size_t bytes_left_in_chunk;
    char consume_trailer;
    char _hex_count;
    char _state;
};
ssize_t phr_decode_chunked(struct phr_chunked_decoder *decoder, char *buf, size_t *bufsz);

_Static_assert(sizeof(struct phr_chunked_decoder) == sizeof(((h1answer *)0)->chunks), "chunked decoder layout");

#define STR_(x) #x
#define STR(x) STR_(x)

void h1answer_init(h1answer *a)
{
    memset(a, 0, sizeof *a);
}

static bool header_is(const struct phr_header *h, const char *name, const char *value)
{
    return h->name && h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0 &&
           (!value || (h->value_len == strlen(value) && strncasecmp(h->value, value, h->value_len) == 0));
}

/* Whether a Transfer-Encoding value's last coding is chunked. */
static bool ends_chunked(const struct phr_header *h)
{
    size_t n = h->value_len;
    while (n && (h->value[n - 1] == ' ' || h->value[n - 1] == '\t')) n--;
    return n >= 7 && strncasecmp(h->value + n - 7, "chunked", 7) == 0 &&
           (n == 7 || h->value[n - 8] == ',' || h->value[n - 8] == ' ' || h->value[n - 8] == '\t');
}

/* A Content-Length value: digits only (RFC 9110 8.6), or -1. */
static int64_t length_of(const struct phr_header *h)
{
    if (h->value_len == 0 || h->value_len > 18) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < h->value_len; i++) {
        if (h->value[i] < '0' || h->value[i] > '9') return -1;
        v = v * 10 + (h->value[i] - '0');
    }
    return v;
}

/* How the body ends (RFC 9112 6.3), from the head. */
static void framing(h1answer *a, int minor, const struct phr_header *hs, size_t nh)
{
    bool coded = false, chunked = false, keep_alive = false, bad_len = false;
    int64_t len = -1;
    for (size_t i = 0; i < nh; i++) {
        if (header_is(&hs[i], "transfer-encoding", NULL)) {
            coded = true;
            chunked = ends_chunked(&hs[i]);
        }
        if (header_is(&hs[i], "content-length", NULL)) {
            int64_t v = length_of(&hs[i]);
            bad_len |= v < 0 || (len >= 0 && v != len);
            len = v;
        }
        if (header_is(&hs[i], "connection", "close")) a->close_after = true;
        if (header_is(&hs[i], "connection", "keep-alive")) keep_alive = true;
    }
    if (minor == 0 && !keep_alive) a->close_after = true;
    a->head_done = true;
    if (a->status == 204 || a->status == 304) {
        /* No body by definition; one sent anyway would be read as the
         * next answer. */
        a->body = H1_BODY_NONE;
        if (len > 0 || bad_len || coded) a->close_after = true;
    } else if (coded && chunked) { /* a length beside a coding is ignored */
        a->body = H1_BODY_CHUNKED;
        a->chunks.consume_trailer = 1;
    } else if (!coded && !bad_len && len >= 0) {
        a->body = len ? H1_BODY_LENGTH : H1_BODY_NONE;
        a->left = (size_t)len;
    } else { /* no length, another coding, or lengths that disagree: the close ends it */
        a->body = H1_BODY_TO_CLOSE;
        a->close_after = true;
    }
}

static h1answer_rc fail(const char **why, const char *msg)
{
    *why = msg;
    return H1_ERROR;
}

/* The head, skipping interim (1xx) answers. */
static h1answer_rc read_head(h1answer *a, char *buf, size_t len, size_t *used, const char **why)
{
    while (!a->head_done) {
        int minor, status;
        const char *msg;
        size_t msg_len, nh = H1ANSWER_HEADERS_MAX;
        struct phr_header hs[H1ANSWER_HEADERS_MAX];
        int n = phr_parse_response(buf + *used, len - *used, &minor, &status, &msg, &msg_len, hs, &nh, 0);
        if ((n == -2 && len - *used > H1ANSWER_HEAD_MAX) || n > H1ANSWER_HEAD_MAX)
            return fail(why, "the answer's headers are too large");
        if (n == -2) return H1_MORE;
        if (n < 0) return fail(why, "the answer is not HTTP (or has more than " STR(H1ANSWER_HEADERS_MAX) " headers)");
        *used += (size_t)n;
        if (status < 100) return fail(why, "the answer's status is not an HTTP status");
        if (status == 101) return fail(why, "the answer switches protocols");
        if (status >= 100 && status < 200) continue; /* interim (100 Continue): the real one follows */
        a->status = status;
        framing(a, minor, hs, nh);
    }
    return H1_DONE;
}

h1answer_rc h1answer_feed(h1answer *a, char *buf, size_t len, size_t *used, const char **why)
{
    *used = 0;
    h1answer_rc rc = read_head(a, buf, len, used, why);
    if (rc != H1_DONE) return rc;
    size_t avail = len - *used;
    switch (a->body) {
    case H1_BODY_NONE:
        break;
    case H1_BODY_LENGTH: {
        size_t take = avail < a->left ? avail : a->left;
        *used += take;
        a->left -= take;
        if (a->left) return H1_MORE;
        break;
    }
    case H1_BODY_CHUNKED: {
        size_t size = avail;
        ssize_t left = phr_decode_chunked((struct phr_chunked_decoder *)&a->chunks, buf + *used, &size);
        if (left == -1) return fail(why, "the answer's chunked body is malformed");
        *used = len; /* decoded or not, the body is not kept */
        if (left == -2) return H1_MORE;
        if (left > 0) a->close_after = true; /* bytes after the answer: none was asked for */
        return H1_DONE;
    }
    case H1_BODY_TO_CLOSE:
        *used = len;
        return H1_MORE;
    }
    if (*used < len) a->close_after = true;
    return H1_DONE;
}

h1answer_rc h1answer_eof(h1answer *a, const char **why)
{
    if (a->head_done && a->body == H1_BODY_TO_CLOSE) return H1_DONE;
    return fail(why, a->head_done ? "the connection closed before the answer was complete"
                                  : "the connection closed before the answer");
}
