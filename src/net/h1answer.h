/* h1answer.h -- reads one HTTP/1.1 answer (RFC 9112) off a connection,
 * for the webhook client: its status, and where its body ends -- by
 * Content-Length, by chunks, or by the connection's close -- so a
 * connection is reused only when the answer's end is certain. The body is
 * not kept. Pure: no I/O, no allocation; the caller owns the buffer. */
#ifndef CHIME_NET_H1ANSWER_H
#define CHIME_NET_H1ANSWER_H

#include <stdbool.h>
#include <stddef.h>

#define H1ANSWER_HEAD_MAX 16384 /* status line and headers, at most */
#define H1ANSWER_HEADERS_MAX 64

typedef enum { H1_MORE, H1_DONE, H1_ERROR } h1answer_rc;
typedef enum { H1_BODY_NONE, H1_BODY_LENGTH, H1_BODY_CHUNKED, H1_BODY_TO_CLOSE } h1answer_body;

typedef struct h1answer {
    bool head_done;
    bool close_after; /* the connection cannot carry another request */
    int status;       /* once head_done: the final (non-1xx) status */
    h1answer_body body;
    size_t left;      /* H1_BODY_LENGTH: bytes to go */
    struct {          /* picohttpparser's chunked decoder, as libh2o lays it out */
        size_t bytes_left_in_chunk;
        char consume_trailer, hex_count, state;
    } chunks;
} h1answer;

void h1answer_init(h1answer *a);
/* Reads what has arrived: buf[0..len), which it may rewrite (chunks are
 * decoded in place). *used is how much of it the answer took: drop that
 * much and call again with more. H1_DONE: the answer is complete (status,
 * close_after); H1_ERROR: *why says what is wrong, and the connection is
 * done for. Bytes beyond a complete answer make close_after true. */
h1answer_rc h1answer_feed(h1answer *a, char *buf, size_t len, size_t *used, const char **why);
/* The peer closed the connection: H1_DONE when that ends this body. */
h1answer_rc h1answer_eof(h1answer *a, const char **why);

#endif
