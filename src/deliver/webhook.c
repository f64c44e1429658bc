/* webhook.c -- a signed JSON POST to a user's endpoint, sent by the
 * webhook client (src/net/hclient.h), which also enforces the private
 * address rule on every address a name resolves to. The receiver checks
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
#include "net/hclient.h"
#include "deliver/channels_int.h"

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

/* A webhook on its way: what its answer goes back to. */
typedef struct hook_send {
    channels *c;
    channels_done_fn done;
    void *ctx;
    char id[CHANNELS_ID_MAX + 1];
} hook_send;

/* 2xx is done; a redirect is not followed (the receiver must answer at
 * the address it registered); anything else failed. */
static void hook_done(void *p, int status, const char *error)
{
    hook_send *h = p;
    char msg[120];
    bool ok = !error && status >= 200 && status <= 299;
    if (!error && !ok) {
        if (status >= 300 && status < 400) snprintf(msg, sizeof msg, "HTTP %d: redirects are not followed", status);
        else snprintf(msg, sizeof msg, "HTTP %d from the receiver", status);
        error = msg;
    }
    if (!ok) log_debug("channels: webhook %s failed: %s", h->id, error);
    chan_slot_give(h->c); /* room first, so a done() that queues a retry at once finds it */
    h->done(h->ctx, ok, status, ok ? NULL : error);
    free(h);
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
    hook_send *h = malloc(sizeof *h);
    if (!h) return -1;
    *h = (hook_send){.c = c, .done = done, .ctx = ctx};
    snprintf(h->id, sizeof h->id, "%s", delivery_id);
    char ts[24], sig[CHANNELS_SIG_SIZE], headers[CHANNELS_ID_MAX + 256];
    snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
    channels_sign(secret, ts, body ? body : "", body_len, sig);
    snprintf(headers, sizeof headers,
             "User-Agent: chime-webhook/1\r\nContent-Type: application/json\r\nX-Chime-Delivery: %s\r\n"
             "X-Chime-Timestamp: %s\r\nX-Chime-Signature: %s\r\n",
             delivery_id, ts, sig);
    if (!chan_slot_take(c)) {
        free(h);
        return -1;
    }
    if (hclient_post(chan_hooks(c), url, headers, body, body_len, hook_done, h) != 0) {
        chan_slot_give(c);
        free(h);
        return -1;
    }
    return 0;
}
