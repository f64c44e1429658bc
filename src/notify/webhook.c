/* webhook.c -- a signed JSON POST to a user's endpoint. The receiver checks
 * X-Chime-Signature against its copy of the secret; the timestamp is inside
 * the signed text so a captured request cannot be replayed as new later. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "notify/channels_int.h"

void channels_sign(const char *secret, const char *timestamp, const char *body, size_t body_len,
                   char out[CHANNELS_SIG_SIZE])
{
    crypto_auth_hmacsha256_state st;
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)secret, strlen(secret));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)timestamp, strlen(timestamp));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)".", 1);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)body, body_len);
    crypto_auth_hmacsha256_final(&st, mac);
    memcpy(out, "sha256=", 7);
    base_hex(mac, sizeof mac, out + 7);
    sodium_memzero(&st, sizeof st);
}

/* Runs for every connection curl opens, with the address it resolved: the
 * one place a DNS answer, an IP literal or an IPv6 spelling of loopback
 * all end up, so no URL trick gets past it. */
static curl_socket_t guarded_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    chan_send *s = clientp;
    chan_settings st;
    chan_settings_of(s->c, &st);
    bool sized = (a->family == AF_INET && a->addrlen >= sizeof(struct sockaddr_in)) ||
                 (a->family == AF_INET6 && a->addrlen >= sizeof(struct sockaddr_in6));
    if (!st.allow_private && (!sized || channels_addr_private(&a->addr))) {
        s->refused = true;
        const void *raw = a->family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&a->addr)->sin6_addr
                                                : (const void *)&((struct sockaddr_in *)&a->addr)->sin_addr;
        if (!sized || !inet_ntop(a->family, raw, s->refused_addr, sizeof s->refused_addr))
            snprintf(s->refused_addr, sizeof s->refused_addr, "an address of family %d", a->family);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

static size_t discard(char *ptr, size_t size, size_t n, void *p)
{
    return size * n;
}

static int add_header(chan_send *s, const char *name, const char *value)
{
    char line[512];
    snprintf(line, sizeof line, "%s: %s", name, value);
    struct curl_slist *l = curl_slist_append(s->list, line);
    if (!l) return -1;
    s->list = l;
    return 0;
}

int channels_webhook(channels *c, const char *url, const char *secret, const char *delivery_id,
                     const char *body, size_t body_len, channels_done_fn done, void *ctx)
{
    char why[160];
    if (!c || !done || !secret || (!body && body_len) || body_len > CHANNELS_BODY_MAX || !chan_id_valid(delivery_id))
        return -1;
    if (channels_url_check(url, why, sizeof why) != 0) {
        log_warn("channels: webhook %s not sent: %s", delivery_id, why);
        return -1;
    }
    chan_send *s = chan_send_new(c, done, ctx);
    if (!s) return -1;
    s->kind = CHAN_WEBHOOK;
    chan_origin_set(s, url);
    snprintf(s->id, sizeof s->id, "%s", delivery_id);
    s->payload = malloc(body_len + 1);
    if (!s->payload) goto fail;
    if (body_len) memcpy(s->payload, body, body_len);
    s->payload[body_len] = '\0';
    s->payload_len = body_len;

    char ts[24], sig[CHANNELS_SIG_SIZE];
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    channels_sign(secret, ts, s->payload, body_len, sig);
    /* "Expect:" stops curl waiting a second for 100-continue on big bodies. */
    if (add_header(s, "Content-Type", "application/json") || add_header(s, "X-Chime-Delivery", delivery_id) ||
        add_header(s, "X-Chime-Timestamp", ts) || add_header(s, "X-Chime-Signature", sig) ||
        add_header(s, "Expect", ""))
        goto fail;

    CURL *e = s->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->list);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, s->payload);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "chime-webhook/1");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, guarded_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, s);
    if (chan_enqueue(c, s) != 0) goto fail;
    return 0;
fail:
    chan_send_free(s);
    return -1;
}
