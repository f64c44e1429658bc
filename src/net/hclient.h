/* hclient.h -- outbound HTTP/1.1 POSTs of small bodies (webhooks).
 *
 * A thread and event loop of its own (h2o's sockets, its DNS thread and
 * its TLS handshake), so callers never block on the network. Connections
 * are kept alive per origin (scheme, host, port); an origin gets at most
 * per_origin of them, one request on each at a time, and its other
 * requests wait in its own queue -- a slow receiver holds back only its
 * own requests, and a request's timeout starts when it gets a connection
 * to work on, so it measures the receiver. Every address a name resolves
 * to is checked with `refused` before anything connects to it. TLS checks
 * the certificate chain against the system's trust store (SSL_CERT_FILE
 * and SSL_CERT_DIR are honoured) and the certificate's names against the
 * URL's host (DNS names, or IP addresses for an address host).
 * Redirects are the caller's business: the answer's status is all it
 * gets.
 *
 * Why not libcurl, which carries email: on bench/reminders its thread
 * spent ~50 us of CPU a webhook (easy handles, option parsing, its state
 * machine, a poll of every handle on every wakeup), the largest cost of a
 * webhook delivery on the two cores the benchmark shares. */
#ifndef CHIME_NET_HCLIENT_H
#define CHIME_NET_HCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;
typedef struct hclient hclient;

typedef struct hclient_config {
    int64_t timeout_ms; /* per request, once it has a connection to work on (default 10000) */
    int per_origin;     /* connections per origin (default 16) */
    int64_t idle_ms;    /* kept-alive connections idle this long are closed (default 30000) */
    /* Addresses never to connect to (NULL: none); refused_why finishes the
     * error "refused: ADDRESS <refused_why>". */
    bool (*refused)(const struct sockaddr *sa);
    const char *refused_why;
} hclient_config;

/* status: the answer's HTTP status, error NULL; or status 0 and error
 * saying why no answer came (valid only during the call). */
typedef void (*hclient_done_fn)(void *ctx, int status, const char *error);

/* NULL when the thread, the loop or TLS cannot be set up (logged). */
hclient *hclient_new(const hclient_config *cfg);
/* Lets every request posted finish (their timeouts bound the wait), then
 * stops the thread and frees everything. */
void hclient_free(hclient *c);

/* Queues a POST of body to url (http or https, a host, an optional port,
 * then the path and query; no spaces or controls), adding Host and
 * Content-Length to `headers`, which are whole lines ("Name: value\r\n"
 * each) the caller vouches for. Copies what it needs. Returns 0, and done
 * is called exactly once on the client's thread; or -1, and done is not
 * called: a URL it cannot use, out of memory, or the client stopping. */
int hclient_post(hclient *c, const char *url, const char *headers, const char *body, size_t body_len,
                 hclient_done_fn done, void *ctx);

/* Requests posted and not yet answered (for tests and metrics). */
int hclient_outstanding(hclient *c);

#endif
