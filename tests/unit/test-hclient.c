/* test-hclient.c -- the webhook client (src/net/hclient.h) against real
 * receivers on loopback (tests/api/receivers.py): the request it writes,
 * how it reads answers (lengths, chunks, read to the close, interim 100s,
 * garbage, oversized heads), keep-alive reuse and the connections a peer
 * ends, one retry of a request a kept-alive connection dropped, an answer
 * before the whole request is written, timeouts,
 * refused addresses, failed connects and lookups, TLS with a trusted, an
 * untrusted and a misnamed certificate, the per-origin limit and a clean
 * stop, also when the stop message is slow to reach the loop. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <h2o.h>
#include <netdb.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/base.h"
#include "net/hclient.h"
#include "receivers.h"

typedef struct answer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls, status;
    char error[512];
} answer;

static void answer_init(answer *a)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
}

static void on_answer(void *ctx, int status, const char *error)
{
    answer *a = ctx;
    pthread_mutex_lock(&a->mu);
    a->calls++;
    a->status = status;
    snprintf(a->error, sizeof a->error, "%s", error ? error : "");
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void answer_wait_s(answer *a, int seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += seconds;
    pthread_mutex_lock(&a->mu);
    while (a->calls == 0)
        if (pthread_cond_timedwait(&a->cv, &a->mu, &until) != 0) break;
    pthread_mutex_unlock(&a->mu);
    assert_int_equal(a->calls, 1);
}

static void answer_wait(answer *a)
{
    answer_wait_s(a, 15);
}

static hclient *open_client(int64_t timeout_ms, int per_origin)
{
    hclient_config cfg = {.timeout_ms = timeout_ms, .per_origin = per_origin};
    hclient *c = hclient_new(&cfg);
    assert_non_null(c);
    return c;
}

static void url_of(char *buf, size_t size, bool tls, const char *host, const char *path)
{
    snprintf(buf, size, "%s://%s:%d%s", tls ? "https" : "http", host, tls ? rx.https_port : rx.http_port, path);
}

/* Posts {"n":1} to the receiver's path and waits for the answer. */
static void post_wait(hclient *c, bool tls, const char *host, const char *path, answer *a)
{
    char url[256];
    url_of(url, sizeof url, tls, host, path);
    answer_init(a);
    assert_int_equal(hclient_post(c, url, "X-Test: yes\r\n", "{\"n\":1}", 7, on_answer, a), 0);
    answer_wait(a);
}

static void expect_ok(hclient *c, bool tls, const char *host, const char *path)
{
    answer a;
    post_wait(c, tls, host, path, &a);
    if (a.status != 200) fail_msg("%s: status %d, error %s", path, a.status, a.error);
}

static void expect_error(hclient *c, bool tls, const char *host, const char *path, const char *says)
{
    answer a;
    post_wait(c, tls, host, path, &a);
    if (a.status != 0 || !strstr(a.error, says)) fail_msg("%s: status %d, error '%s'", path, a.status, a.error);
}

/* The client port of the last request logged for path. */
static json_int_t last_port(const char *path)
{
    json_t *reqs = requests_to(path);
    size_t n = json_array_size(reqs);
    assert_true(n > 0);
    json_int_t port = json_integer_value(json_object_get(json_array_get(reqs, n - 1), "client_port"));
    json_decref(reqs);
    return port;
}

static size_t count_of(const char *path)
{
    json_t *reqs = requests_to(path);
    size_t n = json_array_size(reqs);
    json_decref(reqs);
    return n;
}

/* ---- the request ---------------------------------------------------------- */

static void test_request_written(void **state)
{
    hclient *c = open_client(5000, 4);
    expect_ok(c, false, "127.0.0.1", "/ok?x=1&y=%20");
    json_t *reqs = requests_to("/ok?x=1&y=%20");
    json_t *req = json_array_get(reqs, json_array_size(reqs) - 1), *h = json_object_get(req, "headers");
    assert_string_equal(json_string_value(json_object_get(req, "method")), "POST");
    assert_string_equal(json_string_value(json_object_get(req, "body")), "{\"n\":1}");
    char host[64];
    snprintf(host, sizeof host, "127.0.0.1:%d", rx.http_port);
    assert_string_equal(json_string_value(json_object_get(h, "host")), host);
    assert_string_equal(json_string_value(json_object_get(h, "content-length")), "7");
    assert_string_equal(json_string_value(json_object_get(h, "x-test")), "yes");
    json_decref(reqs);
    /* No path at all is "/"; a query alone goes after it. */
    char url[128];
    answer a;
    snprintf(url, sizeof url, "http://127.0.0.1:%d", rx.http_port);
    answer_init(&a);
    assert_int_equal(hclient_post(c, url, NULL, NULL, 0, on_answer, &a), 0);
    answer_wait(&a);
    assert_int_equal(a.status, 200);
    assert_int_equal(count_of("/"), 1);
    hclient_free(c);
}

static void test_urls_refused_up_front(void **state)
{
    hclient *c = open_client(5000, 4);
    static const char *bad[] = {"ftp://127.0.0.1/", "http://", "http:///x", "http://a b/", "http://a/\r\nX: 1",
                                "http://u@127.0.0.1/", "http://127.0.0.1:0/", "http://127.0.0.1:65536/",
                                "http://127.0.0.1:8x/", "http://[::1/", "http://h/#frag", "127.0.0.1/"};
    answer a;
    answer_init(&a);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (hclient_post(c, bad[i], NULL, "{}", 2, on_answer, &a) != -1) fail_msg("%s was taken", bad[i]);
    hclient_free(c);
    assert_int_equal(a.calls, 0);
}

/* ---- answers -------------------------------------------------------------- */

static void test_statuses(void **state)
{
    hclient *c = open_client(5000, 4);
    answer a;
    post_wait(c, false, "127.0.0.1", "/status/404", &a);
    assert_int_equal(a.status, 404);
    assert_string_equal(a.error, "");
    post_wait(c, false, "127.0.0.1", "/status/204", &a);
    assert_int_equal(a.status, 204);
    post_wait(c, false, "127.0.0.1", "/redirect", &a);
    assert_int_equal(a.status, 302);
    hclient_free(c);
}

static void test_chunked_body_keeps_connection(void **state)
{
    hclient *c = open_client(5000, 1);
    expect_ok(c, false, "127.0.0.1", "/chunked");
    expect_ok(c, false, "127.0.0.1", "/ok");
    assert_int_equal(last_port("/chunked"), last_port("/ok"));
    hclient_free(c);
}

static void test_interim_answer_skipped(void **state)
{
    hclient *c = open_client(5000, 1);
    expect_ok(c, false, "127.0.0.1", "/continue");
    expect_ok(c, false, "127.0.0.1", "/ok");
    assert_int_equal(last_port("/continue"), last_port("/ok"));
    hclient_free(c);
}

static void test_body_to_the_close(void **state)
{
    hclient *c = open_client(5000, 1);
    expect_ok(c, false, "127.0.0.1", "/http10");
    expect_ok(c, false, "127.0.0.1", "/ok"); /* on a new connection */
    assert_int_not_equal(last_port("/http10"), last_port("/ok"));
    hclient_free(c);
}

static void test_connection_close_honoured(void **state)
{
    hclient *c = open_client(5000, 1);
    expect_ok(c, false, "127.0.0.1", "/close");
    expect_ok(c, false, "127.0.0.1", "/ok");
    assert_int_not_equal(last_port("/close"), last_port("/ok"));
    hclient_free(c);
}

static void test_bad_answers(void **state)
{
    hclient *c = open_client(5000, 2);
    expect_error(c, false, "127.0.0.1", "/garbage", "not HTTP");
    expect_error(c, false, "127.0.0.1", "/bigheaders", "too large");
    expect_ok(c, false, "127.0.0.1", "/ok"); /* the origin goes on */
    hclient_free(c);
}

/* ---- connections ---------------------------------------------------------- */

static void test_keep_alive_reused(void **state)
{
    hclient *c = open_client(5000, 4);
    expect_ok(c, false, "127.0.0.1", "/ok");
    json_int_t first = last_port("/ok");
    expect_ok(c, false, "127.0.0.1", "/ok");
    assert_int_equal(last_port("/ok"), first);
    hclient_free(c);
}

/* The peer ends a kept-alive connection after its answer: the next
 * request goes on a new one, without an error. */
static void test_peer_closed_idle_connection(void **state)
{
    hclient *c = open_client(5000, 1);
    expect_ok(c, false, "127.0.0.1", "/hangup");
    struct timespec nap = {0, 200 * 1000000};
    nanosleep(&nap, NULL);
    expect_ok(c, false, "127.0.0.1", "/ok");
    assert_int_not_equal(last_port("/hangup"), last_port("/ok"));
    hclient_free(c);
}

/* A kept-alive connection that dies under a request before any answer
 * (the peer's idle close racing our reuse): the request goes again, once,
 * on a fresh connection. On a fresh connection the same is an error. */
static void test_dropped_request_retried_once(void **state)
{
    hclient *c = open_client(5000, 1);
    expect_ok(c, false, "127.0.0.1", "/ok");
    expect_ok(c, false, "127.0.0.1", "/drop-once/kept");
    assert_int_equal(count_of("/drop-once/kept"), 2);
    hclient_free(c);
    c = open_client(5000, 1);
    expect_error(c, false, "127.0.0.1", "/drop-once/fresh", "closed before the answer");
    assert_int_equal(count_of("/drop-once/fresh"), 1);
    hclient_free(c);
}

/* A receiver that answers 413 once it has a request's head, and reads no
 * more of it: a large body stays unwritten. Its connections stay open. */
typedef struct early {
    int listen_fd, port;
    int conns[2];
} early;

static void *early_serve(void *p)
{
    early *e = p;
    static const char answer413[] = "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n";
    for (int i = 0; i < 2; i++) {
        int fd = e->conns[i] = accept(e->listen_fd, NULL, NULL);
        if (fd < 0) return NULL;
        char head[4096] = "";
        for (size_t n = 0; n < sizeof head - 1 && !strstr(head, "\r\n\r\n"); n++)
            if (read(fd, head + n, 1) != 1) break;
        if (write(fd, answer413, sizeof answer413 - 1) < 0) return NULL;
    }
    return NULL;
}

static void early_start(early *e, pthread_t *t)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    *e = (early){.listen_fd = socket(AF_INET, SOCK_STREAM, 0), .conns = {-1, -1}};
    assert_int_equal(bind(e->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(e->listen_fd, 4), 0);
    assert_int_equal(getsockname(e->listen_fd, (struct sockaddr *)&sa, &len), 0);
    e->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(t, NULL, early_serve, e), 0);
}

/* The answer comes while the request is still being written (32 MB:
 * more than loopback's buffers hold). The connection must not be kept:
 * h2o still holds the request's buffer and takes one write at a time, so
 * the next request goes on a new connection, and gets its answer too. */
static void test_answer_before_the_request_is_written(void **state)
{
    enum { BIG = 32 << 20 };
    early e;
    pthread_t t;
    early_start(&e, &t);
    hclient *c = open_client(5000, 1);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/upload", e.port);
    char *body = calloc(1, BIG);
    assert_non_null(body);
    answer a[2];
    for (int i = 0; i < 2; i++) {
        answer_init(&a[i]);
        assert_int_equal(hclient_post(c, url, NULL, body, i == 0 ? BIG : 2, on_answer, &a[i]), 0);
        answer_wait(&a[i]);
        if (a[i].status != 413) fail_msg("request %d: %d %s", i, a[i].status, a[i].error);
    }
    free(body);
    hclient_free(c);
    pthread_join(t, NULL);
    for (int i = 0; i < 2; i++) close(e.conns[i]);
    close(e.listen_fd);
}

static void test_timeout(void **state)
{
    hclient *c = open_client(300, 1);
    int64_t t0 = base_mono_ns();
    expect_error(c, false, "127.0.0.1", "/slow/2000", "timed out after 300 ms");
    int64_t ms = (base_mono_ns() - t0) / 1000000;
    assert_true(ms >= 250 && ms < 1800);
    hclient_free(c);
}

static bool refuse_all(const struct sockaddr *sa)
{
    return true;
}

static void test_refused_addresses(void **state)
{
    hclient_config cfg = {.timeout_ms = 3000, .refused = refuse_all, .refused_why = "is off limits"};
    hclient *c = hclient_new(&cfg);
    assert_non_null(c);
    size_t before = count_of("/ok");
    expect_error(c, false, "127.0.0.1", "/ok", "refused: 127.0.0.1 is off limits");
    expect_error(c, false, "localhost", "/ok", "is off limits");
    assert_int_equal(count_of("/ok"), before); /* nothing connected */
    hclient_free(c);
}

static void test_connect_failure(void **state)
{
    /* A port nobody listens on: bound, then closed. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    hclient *c = open_client(3000, 2);
    char url[128];
    answer a;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/x", ntohs(sa.sin_port));
    answer_init(&a);
    assert_int_equal(hclient_post(c, url, NULL, "{}", 2, on_answer, &a), 0);
    answer_wait(&a);
    assert_int_equal(a.status, 0);
    assert_non_null(strstr(a.error, "cannot connect"));
    hclient_free(c);
}

/* A name that does not resolve: at once where DNS answers, after the
 * resolver's own retries (10 s with glibc's defaults) where it cannot be
 * reached -- either way before the request's timeout. */
static void test_lookup_failure(void **state)
{
    hclient *c = open_client(40000, 2);
    answer a;
    answer_init(&a);
    assert_int_equal(hclient_post(c, "http://no-such-host.invalid/x", NULL, "{}", 2, on_answer, &a), 0);
    answer_wait_s(&a, 45);
    assert_int_equal(a.status, 0);
    if (!strstr(a.error, "cannot resolve no-such-host.invalid")) fail_msg("%s", a.error);
    hclient_free(c);
}

/* A client freed while its names are being looked up waits for their
 * answers (each lookup's thread answers under the client's lock, so no
 * answer is still being sent when the loop unmakes its queue), then
 * answers every request, many times over with lookups of names that
 * resolve and names that fail. */
static void test_free_during_lookups(void **state)
{
    enum { ROUNDS = 40 };
    for (int i = 0; i < ROUNDS; i++) {
        hclient *c = open_client(5000, 2);
        answer ok, bad;
        answer_init(&ok);
        answer_init(&bad);
        char url[128];
        url_of(url, sizeof url, false, "localhost", "/ok");
        assert_int_equal(hclient_post(c, url, NULL, "{}", 2, on_answer, &ok), 0);
        assert_int_equal(hclient_post(c, "http://no-such-host.invalid/x", NULL, "{}", 2, on_answer, &bad), 0);
        hclient_free(c);
        assert_int_equal(ok.calls, 1);
        assert_int_equal(ok.status, 200);
        assert_int_equal(bad.calls, 1);
        if (!strstr(bad.error, "cannot resolve no-such-host.invalid")) fail_msg("%s", bad.error);
    }
}

/* The C library's getaddrinfo, seen through this program's: "esys.test"
 * fails with EAI_SYSTEM and errno EMFILE; "slow-N.test" takes 200 ms
 * (counting how many are under way at once) and then is not found. */
static int (*real_getaddrinfo)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
static pthread_once_t real_gai_once = PTHREAD_ONCE_INIT;
static atomic_int slow_now, slow_most;

static void real_gai_find(void)
{
    real_getaddrinfo = (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))dlsym(
        RTLD_NEXT, "getaddrinfo");
    if (!real_getaddrinfo) abort();
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
    pthread_once(&real_gai_once, real_gai_find);
    if (node && strcmp(node, "esys.test") == 0) {
        errno = EMFILE;
        return EAI_SYSTEM;
    }
    if (node && strncmp(node, "slow-", 5) == 0) {
        int now = atomic_fetch_add(&slow_now, 1) + 1, most = atomic_load(&slow_most);
        while (now > most && !atomic_compare_exchange_weak(&slow_most, &most, now)) {
        }
        nap_ms(200);
        atomic_fetch_sub(&slow_now, 1);
        return EAI_NONAME;
    }
    return real_getaddrinfo(node, service, hints, res);
}

/* A lookup's EAI_SYSTEM names the lookup thread's errno, not the loop's. */
static void test_lookup_system_error(void **state)
{
    hclient *c = open_client(5000, 2);
    answer a;
    answer_init(&a);
    assert_int_equal(hclient_post(c, "http://esys.test/x", NULL, "{}", 2, on_answer, &a), 0);
    answer_wait(&a);
    if (!strstr(a.error, "cannot resolve esys.test: Too many open files")) fail_msg("%s", a.error);
    hclient_free(c);
}

/* At most 16 lookups run at once; the rest wait their turn, and every
 * request is answered. */
static void test_lookups_bounded(void **state)
{
    enum { N = 40 };
    static answer a[N];
    hclient *c = open_client(10000, 2);
    atomic_store(&slow_most, 0);
    for (int i = 0; i < N; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://slow-%d.test/x", i);
        answer_init(&a[i]);
        assert_int_equal(hclient_post(c, url, NULL, "{}", 2, on_answer, &a[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        answer_wait(&a[i]);
        if (!strstr(a[i].error, "cannot resolve slow-")) fail_msg("%d: %s", i, a[i].error);
    }
    int most = atomic_load(&slow_most);
    if (most < 8 || most > 16) fail_msg("%d lookups at once", most);
    hclient_free(c);
}

/* More requests to one origin than it may have connections: the rest
 * wait their turn (three rounds of 300 ms), each with its whole timeout,
 * while another origin's request goes past them. */
static void test_per_origin_limit(void **state)
{
    enum { N = 6 };
    static answer slow[N];
    hclient *c = open_client(1000, 2);
    char url[128];
    url_of(url, sizeof url, false, "127.0.0.1", "/slow/300");
    int64_t t0 = base_mono_ns();
    for (int i = 0; i < N; i++) {
        answer_init(&slow[i]);
        assert_int_equal(hclient_post(c, url, NULL, "{}", 2, on_answer, &slow[i]), 0);
    }
    expect_ok(c, false, "localhost", "/ok");
    assert_true((base_mono_ns() - t0) / 1000000 < 250);
    for (int i = 0; i < N; i++) {
        answer_wait(&slow[i]);
        if (slow[i].status != 200) fail_msg("slow %d: %d %s", i, slow[i].status, slow[i].error);
    }
    assert_true((base_mono_ns() - t0) / 1000000 >= 850);
    hclient_free(c);
}

static void test_free_waits_for_requests(void **state)
{
    hclient *c = open_client(5000, 4);
    char url[128];
    url_of(url, sizeof url, false, "127.0.0.1", "/slow/300");
    answer a[3];
    for (int i = 0; i < 3; i++) {
        answer_init(&a[i]);
        assert_int_equal(hclient_post(c, url, NULL, "{}", 2, on_answer, &a[i]), 0);
    }
    hclient_free(c);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a[i].calls, 1);
        assert_int_equal(a[i].status, 200);
    }
}

/* h2o's send, made slow once for one thread: this program's definition is
 * the one hclient.o links to, and it calls h2o's own after the nap. */
static pthread_t slow_sender;
static atomic_bool slow_send;
static void (*real_send)(h2o_multithread_receiver_t *, h2o_multithread_message_t *);
static pthread_once_t real_send_once = PTHREAD_ONCE_INIT;

static void real_send_find(void)
{
    real_send = (void (*)(h2o_multithread_receiver_t *, h2o_multithread_message_t *))dlsym(
        RTLD_NEXT, "h2o_multithread_send_message");
    if (!real_send) abort();
}

void h2o_multithread_send_message(h2o_multithread_receiver_t *receiver, h2o_multithread_message_t *message)
{
    pthread_once(&real_send_once, real_send_find);
    if (atomic_load(&slow_send) && pthread_equal(pthread_self(), slow_sender) && atomic_exchange(&slow_send, false))
        nap_ms(400);
    real_send(receiver, message);
}

/* hclient_free's stop message is queued after the loop has had time to
 * wake (it does every 100 ms) and find nothing outstanding: the loop must
 * still wait for the message, not unmake the queue the send is about to
 * touch (the once-seen segfault at the end of test-channels'
 * test_webhook_timeout, where the caller was preempted there). */
static void test_free_with_a_slow_stop_message(void **state)
{
    hclient *c = open_client(300, 1);
    expect_error(c, false, "127.0.0.1", "/slow/2000", "timed out after 300 ms");
    slow_sender = pthread_self();
    atomic_store(&slow_send, true);
    hclient_free(c);
}

/* ---- TLS ------------------------------------------------------------------ */

static void test_tls_trusted(void **state)
{
    setenv("SSL_CERT_FILE", "tests/data/tls/ca.pem", 1);
    hclient *c = open_client(5000, 1);
    unsetenv("SSL_CERT_FILE");
    expect_ok(c, true, "localhost", "/tls-ok");
    expect_ok(c, true, "localhost", "/tls-ok");
    json_t *reqs = requests_to("/tls-ok");
    assert_int_equal(json_array_size(reqs), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(reqs, 0), "client_port")),
                     json_integer_value(json_object_get(json_array_get(reqs, 1), "client_port")));
    json_decref(reqs);
    /* An address host is checked against the certificate's addresses. */
    expect_ok(c, true, "127.0.0.1", "/tls-ip");
    hclient_free(c);
}

/* A trusted certificate for another name (example.org) is refused, by
 * name and by address, before anything is sent. */
static void test_tls_other_name(void **state)
{
    setenv("SSL_CERT_FILE", "tests/data/tls/ca.pem", 1);
    hclient *c = open_client(5000, 1);
    unsetenv("SSL_CERT_FILE");
    char url[128];
    static const char *hosts[] = {"localhost", "127.0.0.1"};
    for (size_t i = 0; i < 2; i++) {
        answer a;
        snprintf(url, sizeof url, "https://%s:%d/tls-misnamed", hosts[i], rx.https_other_port);
        answer_init(&a);
        assert_int_equal(hclient_post(c, url, NULL, "{}", 2, on_answer, &a), 0);
        answer_wait(&a);
        if (a.status != 0 || !strstr(a.error, "TLS with")) fail_msg("%s: %d %s", hosts[i], a.status, a.error);
    }
    assert_int_equal(count_of("/tls-misnamed"), 0);
    hclient_free(c);
}

static void test_tls_untrusted(void **state)
{
    unsetenv("SSL_CERT_FILE");
    hclient *c = open_client(5000, 1); /* the system's store: no test CA there */
    expect_error(c, true, "localhost", "/tls-untrusted", "TLS with localhost failed");
    assert_int_equal(count_of("/tls-untrusted"), 0);
    hclient_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_written),
        cmocka_unit_test(test_urls_refused_up_front),
        cmocka_unit_test(test_statuses),
        cmocka_unit_test(test_chunked_body_keeps_connection),
        cmocka_unit_test(test_interim_answer_skipped),
        cmocka_unit_test(test_body_to_the_close),
        cmocka_unit_test(test_connection_close_honoured),
        cmocka_unit_test(test_bad_answers),
        cmocka_unit_test(test_keep_alive_reused),
        cmocka_unit_test(test_peer_closed_idle_connection),
        cmocka_unit_test(test_dropped_request_retried_once),
        cmocka_unit_test(test_answer_before_the_request_is_written),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_refused_addresses),
        cmocka_unit_test(test_connect_failure),
        cmocka_unit_test(test_lookup_failure),
        cmocka_unit_test(test_free_during_lookups),
        cmocka_unit_test(test_lookup_system_error),
        cmocka_unit_test(test_lookups_bounded),
        cmocka_unit_test(test_per_origin_limit),
        cmocka_unit_test(test_free_waits_for_requests),
        cmocka_unit_test(test_free_with_a_slow_stop_message),
        cmocka_unit_test(test_tls_trusted),
        cmocka_unit_test(test_tls_untrusted),
        cmocka_unit_test(test_tls_other_name),
    };
    return cmocka_run_group_tests(tests, receivers_start, receivers_stop);
}
