/* test-channels.c -- the webhook and email senders against real receivers
 * on loopback (tests/api/receivers.py, started here): signatures, headers,
 * failure then success, timeouts, redirects not followed, the private
 * address guard after DNS, keep-alive reuse, bounded in-flight sends, and
 * a multipart email with a header-injection attempt. */
#include "testutil.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "deliver/channels.h"
#include "receivers.h"

/* ---- results -------------------------------------------------------------- */

typedef struct result {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    bool ok;
    int status;
    char error[512];
} result;

static void result_init(result *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void on_done(void *ctx, bool ok, int status, const char *error)
{
    result *r = ctx;
    pthread_mutex_lock(&r->mu);
    r->calls++;
    r->ok = ok;
    r->status = status;
    snprintf(r->error, sizeof r->error, "%s", error ? error : "");
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void result_wait(result *r)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 15;
    pthread_mutex_lock(&r->mu);
    while (r->calls == 0)
        if (pthread_cond_timedwait(&r->cv, &r->mu, &until) != 0) break;
    pthread_mutex_unlock(&r->mu);
    assert_int_equal(r->calls, 1);
}

static channels *open_channels(bool allow_private, int64_t timeout_ms, int max_in_flight)
{
    char smtp[64];
    snprintf(smtp, sizeof smtp, "smtp://127.0.0.1:%d", rx.smtp_port);
    channels_config cfg = {.smtp_url = smtp, .smtp_from = "chime <noreply@chime.test>",
                           .allow_private = allow_private, .timeout_ms = timeout_ms,
                           .max_in_flight = max_in_flight};
    channels *c = channels_new(&cfg);
    assert_non_null(c);
    return c;
}

static void url_of(char *buf, size_t size, const char *host, const char *path)
{
    snprintf(buf, size, "http://%s:%d%s", host, rx.http_port, path);
}

/* Sends one webhook and waits for its report. */
static void send_wait(channels *c, const char *url, const char *id, result *r)
{
    result_init(r);
    const char *body = "{\"event\":\"reminder\"}";
    assert_int_equal(channels_webhook(c, url, "s3cret-key", id, body, strlen(body), on_done, r), 0);
    result_wait(r);
}

/* ---- URL and address rules ------------------------------------------------ */

static void test_url_check(void **state)
{
    static const char *good[] = {"http://example.com/hook", "https://example.com", "HTTPS://a.b:8443/x?y=1",
                                 "http://127.0.0.1:80/", "http://[::1]:8080/p", "http://[2001:db8::1]/",
                                 "http://localhost/hook", "https://hooks.example.com/a/b/c?d=e&f=g"};
    static const char *bad[] = {"", "ftp://example.com/", "example.com/hook", "http://", "http:///path",
                                "http://user:pw@example.com/", "http://user@example.com/", "http://exa mple.com/",
                                "http://example.com/\r\nX: y", "http://example.com:0/", "http://example.com:65536/",
                                "http://example.com:/", "http://example.com:8x/", "http://[::1/", "http://[zz::1]/",
                                "http://ex%41mple.com/", "http://example.com/#frag", "http://exa\\mple.com/",
                                "javascript:alert(1)", "http://caf\xc3\xa9.com/", "http://-a.com/", "gopher://x/"};
    char err[160];
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (channels_url_check(good[i], err, sizeof err) != 0) fail_msg("rejected %s: %s", good[i], err);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        if (channels_url_check(bad[i], err, sizeof err) != -1) fail_msg("accepted %s", bad[i]);
        assert_true(strncmp(err, "url", 3) == 0);
    }
    char longurl[CHANNELS_URL_MAX + 10];
    memset(longurl, 'a', sizeof longurl - 1);
    longurl[sizeof longurl - 1] = '\0';
    memcpy(longurl, "http://a.com/", 13);
    assert_int_equal(channels_url_check(longurl, err, sizeof err), -1);
    longurl[CHANNELS_URL_MAX] = '\0';
    assert_int_equal(channels_url_check(longurl, err, sizeof err), 0);
    assert_int_equal(channels_url_check(NULL, err, sizeof err), -1);
}

static bool addr_private(const char *text)
{
    struct sockaddr_storage ss = {0};
    if (strchr(text, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        if (inet_pton(AF_INET6, text, &a->sin6_addr) != 1) fail_msg("bad test address %s", text);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        if (inet_pton(AF_INET, text, &a->sin_addr) != 1) fail_msg("bad test address %s", text);
    }
    return channels_addr_private((struct sockaddr *)&ss);
}

static void test_private_addresses(void **state)
{
    static const char *priv[] = {"0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.0.9", "10.0.0.1", "10.255.255.255",
                                 "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
                                 "100.127.255.255", "224.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.0.8",
                                 "::", "::1", "fc00::1", "fdff::1", "fe80::1", "febf::1", "ff02::1",
                                 "::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "::127.0.0.1",
                                 "64:ff9b::10.0.0.1", "2002:7f00:1::", "2002:c0a8:101::1"};
    static const char *pub[] = {"1.1.1.1", "8.8.8.8", "93.184.216.34", "172.15.255.255", "172.32.0.1",
                                "100.63.255.255", "100.128.0.1", "169.253.0.1", "192.169.0.1", "11.0.0.1",
                                "2001:4860:4860::8888", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8",
                                "2002:0808:0808::1", "fbff::1"};
    for (size_t i = 0; i < sizeof priv / sizeof *priv; i++)
        if (!addr_private(priv[i])) fail_msg("%s should be private", priv[i]);
    for (size_t i = 0; i < sizeof pub / sizeof *pub; i++)
        if (addr_private(pub[i])) fail_msg("%s should be public", pub[i]);
    struct sockaddr unix_sa = {.sa_family = AF_UNIX};
    assert_true(channels_addr_private(&unix_sa));
}

/* ---- webhooks ------------------------------------------------------------- */

static void test_webhook_signed_and_headers(void **state)
{
    channels *c = open_channels(true, 5000, 16);
    char url[128];
    url_of(url, sizeof url, "127.0.0.1", "/ok");
    result r;
    int64_t before = time(NULL);
    send_wait(c, url, "dlv-signed-1", &r);
    assert_true(r.ok);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.error, "");
    json_t *reqs = requests_to("/ok");
    json_t *req = NULL, *it;
    size_t i;
    json_array_foreach(reqs, i, it) {
        const char *d = json_string_value(json_object_get(json_object_get(it, "headers"), "x-chime-delivery"));
        if (d && strcmp(d, "dlv-signed-1") == 0) req = it;
    }
    assert_non_null(req);
    json_t *h = json_object_get(req, "headers");
    assert_string_equal(json_string_value(json_object_get(req, "method")), "POST");
    assert_string_equal(json_string_value(json_object_get(h, "content-type")), "application/json");
    const char *body = json_string_value(json_object_get(req, "body"));
    assert_string_equal(body, "{\"event\":\"reminder\"}");
    const char *ts = json_string_value(json_object_get(h, "x-chime-timestamp"));
    assert_non_null(ts);
    long long t = atoll(ts);
    assert_true(t >= before && t <= (long long)time(NULL));
    /* Verify the way a receiver would, with libsodium directly. */
    char text[256], want[80] = "sha256=";
    snprintf(text, sizeof text, "%s.%s", ts, body);
    unsigned char mac[32];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)"s3cret-key", 10);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)text, strlen(text));
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_bin2hex(want + 7, sizeof want - 7, mac, sizeof mac);
    assert_string_equal(json_string_value(json_object_get(h, "x-chime-signature")), want);
    /* The wrong secret gives a different signature. */
    char other[CHANNELS_SIG_SIZE];
    channels_sign("another-key", ts, body, strlen(body), other);
    assert_string_not_equal(other, want);
    json_decref(reqs);
    channels_free(c);
}

static void test_webhook_fail_then_succeed(void **state)
{
    channels *c = open_channels(true, 5000, 16);
    char url[128];
    url_of(url, sizeof url, "127.0.0.1", "/fail/1/k1");
    result r;
    send_wait(c, url, "dlv-retry", &r);
    assert_false(r.ok);
    assert_int_equal(r.status, 500);
    assert_non_null(strstr(r.error, "500"));
    send_wait(c, url, "dlv-retry", &r);
    assert_true(r.ok);
    assert_int_equal(r.status, 200);
    url_of(url, sizeof url, "127.0.0.1", "/status/404");
    send_wait(c, url, "dlv-404", &r);
    assert_false(r.ok);
    assert_int_equal(r.status, 404);
    url_of(url, sizeof url, "127.0.0.1", "/status/204");
    send_wait(c, url, "dlv-204", &r);
    assert_true(r.ok);
    assert_int_equal(r.status, 204);
    channels_free(c);
}

static void test_webhook_timeout(void **state)
{
    channels *c = open_channels(true, 300, 16);
    char url[128];
    url_of(url, sizeof url, "127.0.0.1", "/slow/3000");
    result r;
    int64_t t0 = base_mono_ns();
    send_wait(c, url, "dlv-slow", &r);
    int64_t ms = (base_mono_ns() - t0) / 1000000;
    assert_false(r.ok);
    assert_non_null(strstr(r.error, "timed out"));
    assert_true(ms >= 250 && ms < 2500);
    channels_free(c);
}

static void test_webhook_redirect_not_followed(void **state)
{
    channels *c = open_channels(true, 5000, 16);
    char url[128];
    url_of(url, sizeof url, "127.0.0.1", "/redirect");
    json_t *before = requests_to("/ok");
    result r;
    send_wait(c, url, "dlv-redirect", &r);
    assert_false(r.ok);
    assert_int_equal(r.status, 302);
    assert_non_null(strstr(r.error, "redirect"));
    json_t *after = requests_to("/ok");
    assert_int_equal(json_array_size(after), json_array_size(before));
    json_decref(before);
    json_decref(after);
    channels_free(c);
}

static void test_webhook_private_refused(void **state)
{
    channels *c = open_channels(false, 3000, 16);
    /* A literal, a name resolving to loopback, IPv6 loopback, IPv4-mapped
     * loopback, "this host", and a decimal spelling of 127.0.0.1. */
    static const char *hosts[] = {"127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "0.0.0.0",
                                  "2130706433", "127.1"};
    json_t *before = log_items("http");
    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++) {
        char url[128];
        url_of(url, sizeof url, hosts[i], "/ok");
        result r;
        send_wait(c, url, "dlv-private", &r);
        if (r.ok || !strstr(r.error, "private")) fail_msg("%s: ok=%d error=%s", url, r.ok, r.error);
        assert_int_equal(r.status, 0);
    }
    json_t *after = log_items("http");
    assert_int_equal(json_array_size(after), json_array_size(before)); /* nothing reached the receiver */
    json_decref(before);
    json_decref(after);
    channels_free(c);
}

static void test_webhook_private_allowed(void **state)
{
    channels *c = open_channels(true, 3000, 16);
    static const char *hosts[] = {"127.0.0.1", "localhost", "2130706433"};
    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++) {
        char url[128];
        url_of(url, sizeof url, hosts[i], "/ok");
        result r;
        send_wait(c, url, "dlv-allowed", &r);
        if (!r.ok) fail_msg("%s: %s", url, r.error);
    }
    channels_free(c);
}

static void test_webhook_connection_reused(void **state)
{
    channels *c = open_channels(true, 5000, 16);
    char url[128];
    url_of(url, sizeof url, "127.0.0.1", "/ok");
    result r;
    send_wait(c, url, "dlv-reuse-1", &r);
    assert_true(r.ok);
    send_wait(c, url, "dlv-reuse-2", &r);
    assert_true(r.ok);
    json_t *reqs = requests_to("/ok");
    size_t n = json_array_size(reqs);
    assert_true(n >= 2);
    json_int_t p1 = json_integer_value(json_object_get(json_array_get(reqs, n - 2), "client_port"));
    json_int_t p2 = json_integer_value(json_object_get(json_array_get(reqs, n - 1), "client_port"));
    assert_int_equal(p1, p2); /* the same keep-alive connection */
    json_decref(reqs);
    channels_free(c);
}

static void test_bounded_and_free_waits(void **state)
{
    channels *c = open_channels(true, 5000, 2);
    char url[128];
    url_of(url, sizeof url, "127.0.0.1", "/slow/300");
    result r[3];
    for (int i = 0; i < 3; i++) result_init(&r[i]);
    assert_int_equal(channels_webhook(c, url, "k", "dlv-b1", "{}", 2, on_done, &r[0]), 0);
    assert_int_equal(channels_webhook(c, url, "k", "dlv-b2", "{}", 2, on_done, &r[1]), 0);
    assert_int_equal(channels_webhook(c, url, "k", "dlv-b3", "{}", 2, on_done, &r[2]), -1);
    /* Bad arguments are refused up front, and done is not called. */
    assert_int_equal(channels_webhook(c, "ftp://x/", "k", "dlv-b4", "{}", 2, on_done, &r[2]), -1);
    assert_int_equal(channels_webhook(c, url, "k", "bad\r\nid", "{}", 2, on_done, &r[2]), -1);
    channels_free(c); /* waits for both */
    assert_int_equal(r[0].calls, 1);
    assert_int_equal(r[1].calls, 1);
    assert_true(r[0].ok && r[1].ok);
    assert_int_equal(r[2].calls, 0);
}

/* Many sends at once from two threads, more than the channel thread lets
 * into libcurl at once (the rest wait in its queue): each reported
 * exactly once. */
#define BURST 200 /* per thread */
typedef struct burst {
    channels *c;
    result *r; /* BURST results */
    const char *prefix;
} burst;

static void *burst_send(void *p)
{
    burst *b = p;
    char url[128], id[32];
    url_of(url, sizeof url, "127.0.0.1", "/ok");
    for (int i = 0; i < BURST; i++) {
        snprintf(id, sizeof id, "dlv-%s-%d", b->prefix, i);
        if (channels_webhook(b->c, url, "k3y-k3y-k3y", id, "{}", 2, on_done, &b->r[i]) != 0) abort();
    }
    return NULL;
}

static void test_webhook_burst_from_threads(void **state)
{
    static result r[2 * BURST];
    channels *c = open_channels(true, 5000, 2 * BURST);
    for (int i = 0; i < 2 * BURST; i++) result_init(&r[i]);
    burst b1 = {c, r, "a"}, b2 = {c, r + BURST, "b"};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, burst_send, &b1);
    pthread_create(&t2, NULL, burst_send, &b2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    for (int i = 0; i < 2 * BURST; i++) {
        result_wait(&r[i]);
        if (!r[i].ok) fail_msg("send %d: %s", i, r[i].error);
    }
    channels_free(c);
    for (int i = 0; i < 2 * BURST; i++) assert_int_equal(r[i].calls, 1);
}

/* More sends to one slow receiver than it may have connections (16): the
 * rest wait in its own queue, each still gets its whole timeout for its
 * own request (a wait for a connection inside libcurl would count), and a
 * send to another receiver (the same server by another name) goes past
 * them all. */
static void test_slow_receiver_holds_back_only_its_own(void **state)
{
    enum { SLOW = 40 };
    static result r[SLOW];
    result quick;
    channels *c = open_channels(true, 2500, 64); /* 3 rounds of 1.5 s: 4.5 s in all */
    char url[128], id[32];
    url_of(url, sizeof url, "127.0.0.1", "/slow/1500");
    for (int i = 0; i < SLOW; i++) {
        result_init(&r[i]);
        snprintf(id, sizeof id, "dlv-slow-%d", i);
        assert_int_equal(channels_webhook(c, url, "k3y-k3y-k3y", id, "{}", 2, on_done, &r[i]), 0);
    }
    url_of(url, sizeof url, "localhost", "/ok");
    send_wait(c, url, "dlv-quick", &quick);
    assert_true(quick.ok);
    int slow_done = 0;
    for (int i = 0; i < SLOW; i++) {
        pthread_mutex_lock(&r[i].mu);
        slow_done += r[i].calls;
        pthread_mutex_unlock(&r[i].mu);
    }
    assert_int_equal(slow_done, 0);
    for (int i = 0; i < SLOW; i++) {
        result_wait(&r[i]);
        if (!r[i].ok) fail_msg("slow send %d: %s", i, r[i].error);
    }
    channels_free(c);
}

/* A done() that queues the next attempt at once, as a retry policy may. */
typedef struct chain {
    channels *c;
    char url[128];
    result second;
} chain;

static void on_first_done(void *ctx, bool ok, int status, const char *error)
{
    chain *ch = ctx;
    if (ok || status != 500) abort();
    if (channels_webhook(ch->c, ch->url, "k3y-k3y-k3y", "dlv-chain-2", "{}", 2, on_done, &ch->second) != 0) abort();
}

static void test_done_may_send_again(void **state)
{
    static chain ch;
    ch.c = open_channels(true, 5000, 1); /* room for one: the first must be out */
    url_of(ch.url, sizeof ch.url, "127.0.0.1", "/fail/1/chain");
    result_init(&ch.second);
    assert_int_equal(channels_webhook(ch.c, ch.url, "k3y-k3y-k3y", "dlv-chain-1", "{}", 2, on_first_done, &ch), 0);
    result_wait(&ch.second);
    assert_true(ch.second.ok);
    channels_free(ch.c);
}

/* ---- email ---------------------------------------------------------------- */

/* The decoded body of the part with this content type. */
static char *mime_part(const char *data, const char *type)
{
    char needle[64];
    snprintf(needle, sizeof needle, "Content-Type: %s;", type);
    const char *p = strstr(data, needle);
    if (!p) return NULL;
    const char *start = strstr(p, "\r\n\r\n");
    const char *end = start ? strstr(start, "\r\n--") : NULL;
    if (!end) return NULL;
    start += 4;
    size_t cap = (size_t)(end - start) + 1;
    unsigned char *out = calloc(1, cap);
    size_t n = 0;
    if (sodium_base642bin(out, cap, start, (size_t)(end - start), "\r\n", &n, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return (char *)out;
}

static json_t *last_email(void)
{
    json_t *all = log_items("smtp");
    size_t n = json_array_size(all);
    json_t *m = n ? json_incref(json_array_get(all, n - 1)) : NULL;
    json_decref(all);
    return m;
}

static void test_email_multipart(void **state)
{
    channels *c = open_channels(false, 5000, 16);
    assert_true(channels_email_enabled(c));
    result r;
    result_init(&r);
    const char *text = "Standup at 09:00\n.\nA line with a dot above.";
    assert_int_equal(channels_email(c, "alice@example.com", "Reminder: standup\r\nBcc: evil@example.com", text,
                                    "<p>Standup at <b>09:00</b></p>", "dlv-mail-1", on_done, &r), 0);
    result_wait(&r);
    if (!r.ok) fail_msg("email failed: %s", r.error);
    assert_int_equal(r.status, 250);
    json_t *m = last_email();
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "mail_from")), "<noreply@chime.test>");
    json_t *rcpt = json_object_get(m, "rcpt_to");
    assert_int_equal(json_array_size(rcpt), 1);
    assert_string_equal(json_string_value(json_array_get(rcpt, 0)), "<alice@example.com>");
    const char *data = json_string_value(json_object_get(m, "data"));
    assert_non_null(strstr(data, "\r\nSubject: Reminder: standup  Bcc: evil@example.com\r\n"));
    assert_null(strstr(data, "\r\nBcc:"));
    assert_non_null(strstr(data, "X-Chime-Delivery: dlv-mail-1\r\n"));
    assert_non_null(strstr(data, "Message-ID: <chime.dlv-mail-1@chime.test>\r\n"));
    assert_non_null(strstr(data, "To: <alice@example.com>\r\n"));
    assert_non_null(strstr(data, "\r\nDate: "));
    assert_non_null(strstr(data, "Content-Type: multipart/alternative; boundary="));
    char *plain = mime_part(data, "text/plain"), *html = mime_part(data, "text/html");
    assert_non_null(plain);
    assert_non_null(html);
    assert_string_equal(plain, text);
    assert_string_equal(html, "<p>Standup at <b>09:00</b></p>");
    free(plain);
    free(html);
    json_decref(m);

    /* No HTML given: one is made from the text, escaped. A non-ASCII
     * subject travels as encoded words. */
    result_init(&r);
    assert_int_equal(channels_email(c, "bob@example.com", "Caf\xc3\xa9 \xe2\x98\x95 at <noon>", "a < b & c", NULL,
                                    "dlv-mail-2", on_done, &r), 0);
    result_wait(&r);
    assert_true(r.ok);
    m = last_email();
    data = json_string_value(json_object_get(m, "data"));
    assert_non_null(strstr(data, "Subject: =?UTF-8?B?"));
    html = mime_part(data, "text/html");
    assert_non_null(html);
    assert_non_null(strstr(html, "a &lt; b &amp; c"));
    free(html);
    json_decref(m);

    /* Addresses that would smuggle a second recipient or command. */
    assert_int_equal(channels_email(c, "a@example.com\r\nRCPT TO:<x@y>", "s", "t", NULL, "d3", on_done, &r), -1);
    assert_int_equal(channels_email(c, "a@example.com>, <b@example.com", "s", "t", NULL, "d3", on_done, &r), -1);
    assert_int_equal(channels_email(c, "not-an-address", "s", "t", NULL, "d3", on_done, &r), -1);
    channels_free(c);
}

static void test_email_failures(void **state)
{
    /* Nothing listens on port 1: the report says so, status 0. */
    channels_config cfg = {.smtp_url = "smtp://127.0.0.1:1", .timeout_ms = 2000};
    channels *c = channels_new(&cfg);
    assert_non_null(c);
    result r;
    result_init(&r);
    assert_int_equal(channels_email(c, "a@example.com", "s", "t", NULL, "dlv-nosmtp", on_done, &r), 0);
    result_wait(&r);
    assert_false(r.ok);
    assert_true(r.error[0] != '\0');
    channels_free(c);
    /* The server refuses the recipient: a failure with its reply code. */
    c = open_channels(false, 5000, 16);
    result_init(&r);
    assert_int_equal(channels_email(c, "reject-me@example.com", "s", "t", NULL, "dlv-550", on_done, &r), 0);
    result_wait(&r);
    assert_false(r.ok);
    assert_int_equal(r.status, 550);
    channels_free(c);
    /* Email disabled: refused up front. */
    channels_config none = {.smtp_url = NULL};
    c = channels_new(&none);
    assert_false(channels_email_enabled(c));
    assert_int_equal(channels_email(c, "a@example.com", "s", "t", NULL, "d", on_done, &r), -1);
    channels_free(c);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_check),
        cmocka_unit_test(test_private_addresses),
        cmocka_unit_test(test_webhook_signed_and_headers),
        cmocka_unit_test(test_webhook_fail_then_succeed),
        cmocka_unit_test(test_webhook_timeout),
        cmocka_unit_test(test_webhook_redirect_not_followed),
        cmocka_unit_test(test_webhook_private_refused),
        cmocka_unit_test(test_webhook_private_allowed),
        cmocka_unit_test(test_webhook_connection_reused),
        cmocka_unit_test(test_bounded_and_free_waits),
        cmocka_unit_test(test_webhook_burst_from_threads),
        cmocka_unit_test(test_slow_receiver_holds_back_only_its_own),
        cmocka_unit_test(test_done_may_send_again),
        cmocka_unit_test(test_email_multipart),
        cmocka_unit_test(test_email_failures),
    };
    return cmocka_run_group_tests(tests, receivers_start, receivers_stop);
}
