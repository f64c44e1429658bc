/* channels_stub.c -- STAND-IN for the channels branch, which owns the real
 * senders (channels.c). DELETE THIS FILE WHEN MERGING the channels branch.
 *
 * It sends nothing: each call is logged ("channels stub: webhook ...") and
 * reported done(ok) from a thread of its own, as the real channel would,
 * so the delivery workers' asynchronous path is exercised end to end. */
#include "notify/channels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

struct channels {
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int in_flight; /* channels_free waits for 0 */
};

typedef struct stub_call {
    channels *ch;
    channels_done_fn done;
    void *ctx;
} stub_call;

static void *stub_report(void *p)
{
    stub_call *c = p;
    channels *ch = c->ch;
    c->done(c->ctx, true, 200, NULL);
    free(c);
    pthread_mutex_lock(&ch->mu);
    if (--ch->in_flight == 0) pthread_cond_broadcast(&ch->idle);
    pthread_mutex_unlock(&ch->mu);
    return NULL;
}

static int stub_send(channels *ch, channels_done_fn done, void *ctx)
{
    stub_call *c = malloc(sizeof *c);
    if (!c) return -1;
    *c = (stub_call){.ch = ch, .done = done, .ctx = ctx};
    pthread_mutex_lock(&ch->mu);
    ch->in_flight++;
    pthread_mutex_unlock(&ch->mu);
    pthread_t t;
    if (pthread_create(&t, NULL, stub_report, c) != 0) {
        free(c);
        pthread_mutex_lock(&ch->mu);
        ch->in_flight--;
        pthread_mutex_unlock(&ch->mu);
        return -1;
    }
    pthread_detach(t);
    return 0;
}

channels *channels_new(const channels_config *cfg)
{
    (void)cfg;
    channels *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->idle, NULL);
    return c;
}

void channels_free(channels *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    while (c->in_flight > 0) pthread_cond_wait(&c->idle, &c->mu);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->idle);
    free(c);
}

int channels_webhook(channels *c, const char *url, const char *secret, const char *delivery_id, const char *body,
                     size_t body_len, channels_done_fn done, void *ctx)
{
    (void)secret;
    log_info("channels stub: webhook %s delivery %s body %.*s", url, delivery_id, (int)body_len, body);
    return stub_send(c, done, ctx);
}

int channels_email(channels *c, const char *to, const char *subject, const char *text, const char *html,
                   const char *delivery_id, channels_done_fn done, void *ctx)
{
    (void)text;
    (void)html;
    log_info("channels stub: email to %s subject \"%s\" delivery %s", to, subject, delivery_id);
    return stub_send(c, done, ctx);
}

int channels_url_check(const char *url, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return url && (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) ? 0 : -1;
}
