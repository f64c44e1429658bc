/* channels.h -- outbound delivery channels: webhook (HTTP POST, signed)
 * and email (SMTP). Sends are asynchronous; done() is called exactly once
 * per send, from a channel thread.
 *
 * Webhooks go through chime's own HTTP/1.1 client (src/net/hclient.h) on
 * its own event loop thread: connections to a receiver are kept alive and
 * reused (at most 16 per origin, the rest queued). They never follow
 * redirects and, unless allow_private is set, refuse to connect to
 * loopback, private, link-local and other non-public addresses; the check
 * runs on every address a name resolves to, before connecting, so a name
 * that resolves to 127.0.0.1 is refused like 127.0.0.1 itself. Email goes
 * through one libcurl multi handle on a thread of its own (SMTP, STARTTLS
 * when offered). Both share the max_in_flight sends.
 *
 * This header is the seam the senders (the reminder engine, src/notify;
 * next, chat and feed pushes) code against. */
#ifndef CHIME_DELIVER_CHANNELS_H
#define CHIME_DELIVER_CHANNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;

typedef struct channels channels;
typedef struct channels_config {
    const char *smtp_url;      /* "smtp://127.0.0.1:2525"; NULL: email disabled */
    const char *smtp_from;     /* "chime <noreply@localhost>" */
    bool allow_private;        /* --webhook-allow-private */
    int64_t timeout_ms;        /* per attempt, default 10000 */
    int max_in_flight;         /* default 256 */
} channels_config;
/* http_status: the HTTP status of a webhook (0 when no answer came), the
 * SMTP reply code of an email. error: NULL when ok, else why (valid only
 * during the call). */
typedef void (*channels_done_fn)(void *ctx, bool ok, int http_status, const char *error);

/* NULL when the thread or curl cannot be set up (logged). Fields left 0 or
 * NULL take the defaults above. */
channels *channels_new(const channels_config *cfg);
void channels_free(channels *c);            /* waits for in-flight sends */

/* body is the JSON payload; the sender adds X-Chime-Delivery (delivery_id),
 * X-Chime-Timestamp (Unix seconds), X-Chime-Signature: sha256=HEX of
 * HMAC-SHA256(secret, timestamp + "." + body), Content-Type: application/json.
 * 2xx = ok. Copies every argument it needs before returning. Returns 0, or
 * -1 when it cannot queue (then done is not called): max_in_flight sends
 * already accepted and not yet done, the channels shutting down, or an
 * argument that cannot be sent (URL failing channels_url_check, a
 * delivery_id that is not CHANNELS_ID_MAX visible characters without
 * specials, a body over CHANNELS_BODY_MAX). */
int channels_webhook(channels *c, const char *url, const char *secret, const char *delivery_id,
                     const char *body, size_t body_len, channels_done_fn done, void *ctx);
/* Plain-text and HTML parts; to is one address. Returns -1 as above, and
 * also when email is disabled (no smtp_url) or `to` is not one plain
 * address. Line breaks in the subject become spaces. */
int channels_email(channels *c, const char *to, const char *subject, const char *text,
                   const char *html, const char *delivery_id, channels_done_fn done, void *ctx);
/* Validates a webhook URL for registration: http or https, a host, no
 * userinfo, length <= 2048; the private-network rule is enforced at send
 * time (after DNS resolution), not here. 0 or -1 with a reason. */
int channels_url_check(const char *url, char *err, size_t errlen);

/* ---- beyond the seam: helpers the server and the tests use ---- */

#define CHANNELS_URL_MAX 2048
#define CHANNELS_ID_MAX 128
#define CHANNELS_BODY_MAX (1 << 20)
#define CHANNELS_TEXT_MAX (1 << 20)

/* How many sends may be outstanding at once (max_in_flight): a caller
 * that keeps below it is never refused for a full queue. */
int channels_capacity(const channels *c);
/* Whether channels_email can send at all (an smtp_url was configured). */
bool channels_email_enabled(const channels *c);
/* Whether an outbound call may not go to this address: loopback,
 * unspecified, private, shared (100.64/10), link-local, multicast,
 * reserved, and IPv6 forms that embed such an IPv4 address. Anything but
 * AF_INET/AF_INET6 counts as private. */
bool channels_addr_private(const struct sockaddr *sa);
/* "sha256=" + hex HMAC-SHA256(secret, timestamp "." body); out needs
 * CHANNELS_SIG_SIZE bytes. */
#define CHANNELS_SIG_SIZE (7 + 64 + 1)
void channels_sign(const char *secret, const char *timestamp, const char *body, size_t body_len,
                   char out[CHANNELS_SIG_SIZE]);

#endif
