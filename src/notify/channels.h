/* channels.h -- outbound delivery channels: webhook (HTTP POST, signed)
 * and email (SMTP). Sends are asynchronous on the channel's own thread(s);
 * done() is called exactly once per send, from a channel thread.
 *
 * NOTE (notify branch): this is the agreed seam, copied verbatim so the
 * notify branch builds on its own. The channels branch owns this file; at
 * merge take the channels branch's version and delete channels_stub.c. */
#ifndef CHIME_NOTIFY_CHANNELS_H
#define CHIME_NOTIFY_CHANNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct channels channels;
typedef struct channels_config {
    const char *smtp_url;      /* "smtp://127.0.0.1:2525"; NULL: email disabled */
    const char *smtp_from;     /* "chime <noreply@localhost>" */
    bool allow_private;        /* --webhook-allow-private */
    int64_t timeout_ms;        /* per attempt, default 10000 */
    int max_in_flight;         /* default 256 */
} channels_config;
typedef void (*channels_done_fn)(void *ctx, bool ok, int http_status, const char *error);
channels *channels_new(const channels_config *cfg);
void channels_free(channels *c);            /* waits for in-flight sends */
/* body is the JSON payload; the sender adds X-Chime-Delivery (delivery_id),
 * X-Chime-Timestamp (Unix seconds), X-Chime-Signature: sha256=HEX of
 * HMAC-SHA256(secret, timestamp + "." + body), Content-Type: application/json.
 * 2xx = ok. Copies every argument it needs before returning. Returns 0, or
 * -1 when it cannot queue (then done is not called). */
int channels_webhook(channels *c, const char *url, const char *secret, const char *delivery_id,
                     const char *body, size_t body_len, channels_done_fn done, void *ctx);
/* Plain-text and HTML parts; to is one address. */
int channels_email(channels *c, const char *to, const char *subject, const char *text,
                   const char *html, const char *delivery_id, channels_done_fn done, void *ctx);
/* Validates a webhook URL for registration: http or https, a host, no
 * userinfo, length <= 2048; the private-network rule is enforced at send
 * time (after DNS resolution), not here. 0 or -1 with a reason. */
int channels_url_check(const char *url, char *err, size_t errlen);

#endif
