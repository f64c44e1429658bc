/* channels.c -- the sending threads. Webhooks go through the webhook
 * client (src/net/hclient.h, its own thread and event loop); email through
 * the curl thread here: one libcurl multi handle drives every SMTP
 * transaction, so connections are reused across sends and no caller ever
 * blocks on the network. Both share the max_in_flight sends.
 *
 * A send is prepared completely (its easy handle, headers, copied payload)
 * on the caller's thread, then queued; the channel thread only adds queued
 * handles to the multi handle, runs transfers and reports results. The
 * queue and the in-flight transfers together never hold more than
 * max_in_flight sends, so memory stays bounded whatever callers do.
 *
 * Each receiver (scheme and authority of the URL; the SMTP relay) has at
 * most as many handles in the multi handle as it may have connections;
 * the rest wait in its own queue here. So a send's timeout, which starts
 * when its handle goes in, measures the receiver, not a wait inside
 * libcurl for a connection (at three handles a connection, sends to a
 * receiver answering in 3 s timed out after 10 s). And libcurl's work per
 * wakeup grows with the handles it holds: on bench/reminders, 1,000
 * handles queued for 16 connections to one receiver cost its thread 52 us
 * a send. A queue per receiver, not one cap for all, so a slow receiver
 * holds back only its own sends. */
#include "deliver/channels.h"

#include <curl/curl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "net/hclient.h"
#include "deliver/channels_int.h"

#define CHANNELS_HOST_CONNECTIONS 16
#define CHANNELS_PER_ORIGIN CHANNELS_HOST_CONNECTIONS
#define CHANNELS_ORIGIN_BUCKETS 1024

/* A receiver with sends in the multi handle or waiting for it. */
typedef struct chan_origin {
    struct chan_origin *next; /* in its bucket */
    char key[128];
    int active;
    chan_send *wait_head, *wait_tail;
} chan_origin;

struct channels {
    char *smtp_url;      /* NULL: email disabled */
    char *smtp_from;     /* the From: header */
    char *from_addr;     /* the bare address inside smtp_from, for MAIL FROM */
    char *msgid_domain;  /* right of '@' in Message-ID */
    bool allow_private;
    int64_t timeout_ms;
    int max_in_flight;

    hclient *hooks;      /* the webhook client */
    CURLM *multi;        /* touched only by the channel thread (wakeup aside) */
    chan_origin *origins[CHANNELS_ORIGIN_BUCKETS]; /* the channel thread's alone */
    pthread_t thread;
    pthread_mutex_t mu;  /* guards what follows */
    chan_send *queue_head, *queue_tail;
    int outstanding;     /* accepted and not yet reported */
    bool stopping;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- send lifetime -------------------------------------------------------- */

chan_send *chan_send_new(channels *c, channels_done_fn done, void *ctx)
{
    chan_send *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->c = c;
    s->done = done;
    s->ctx = ctx;
    s->easy = curl_easy_init();
    if (!s->easy) {
        free(s);
        return NULL;
    }
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
    curl_easy_setopt(s->easy, CURLOPT_ERRORBUFFER, s->errbuf);
    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(s->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
    /* An environment proxy would carry our sends somewhere the operator
     * did not configure, and hide the real destination from the guard. */
    curl_easy_setopt(s->easy, CURLOPT_PROXY, "");
    return s;
}

void chan_send_free(chan_send *s)
{
    if (!s) return;
    curl_easy_cleanup(s->easy);
    curl_slist_free_all(s->list);
    if (s->payload) sodium_memzero(s->payload, s->payload_len);
    free(s->payload);
    free(s);
}

/* Queues a prepared send, or returns -1 (the caller frees it). */
int chan_enqueue(channels *c, chan_send *s)
{
    pthread_mutex_lock(&c->mu);
    if (c->stopping || c->outstanding >= c->max_in_flight) {
        pthread_mutex_unlock(&c->mu);
        return -1;
    }
    c->outstanding++;
    if (c->queue_tail) c->queue_tail->next = s;
    else c->queue_head = s;
    c->queue_tail = s;
    pthread_mutex_unlock(&c->mu);
    curl_multi_wakeup(c->multi);
    return 0;
}

bool chan_slot_take(channels *c)
{
    pthread_mutex_lock(&c->mu);
    bool ok = !c->stopping && c->outstanding < c->max_in_flight;
    if (ok) c->outstanding++;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

void chan_slot_give(channels *c)
{
    pthread_mutex_lock(&c->mu);
    c->outstanding--;
    pthread_mutex_unlock(&c->mu);
}

struct hclient *chan_hooks(channels *c)
{
    return c->hooks;
}

/* ---- the thread ----------------------------------------------------------- */

static void report(channels *c, chan_send *s, CURLcode rc)
{
    long code = 0;
    char msg[CURL_ERROR_SIZE + 128];
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
    bool ok = false;
    if (rc != CURLE_OK && s->refused) {
        snprintf(msg, sizeof msg, "refused: %s is a private or reserved address"
                                  " (the server allows it only with --webhook-allow-private)", s->refused_addr);
    } else if (rc != CURLE_OK) {
        snprintf(msg, sizeof msg, "%s: %s", curl_easy_strerror(rc), s->errbuf[0] ? s->errbuf : "no detail");
        if (rc == CURLE_OPERATION_TIMEDOUT)
            snprintf(msg, sizeof msg, "timed out after %lld ms: %s", (long long)c->timeout_ms, s->errbuf);
    } else {
        ok = true;
    }
    if (!ok) log_debug("channels: %s %s failed: %s", s->kind == CHAN_WEBHOOK ? "webhook" : "email", s->id, msg);
    s->done(s->ctx, ok, (int)code, ok ? NULL : msg);
}

/* ---- receivers (the channel thread's) --------------------------------------- */

static size_t origin_bucket(const char *key)
{
    size_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = h * 33 + *p;
    return h % CHANNELS_ORIGIN_BUCKETS;
}

/* A send that cannot start is reported failed. */
static void fail_send(channels *c, chan_send *s, const char *why)
{
    pthread_mutex_lock(&c->mu);
    c->outstanding--;
    pthread_mutex_unlock(&c->mu);
    s->done(s->ctx, false, 0, why);
    chan_send_free(s);
}

/* A receiver no send needs any more is forgotten. */
static void origin_forget(channels *c, chan_origin *o)
{
    chan_origin **pp = &c->origins[origin_bucket(o->key)];
    while (*pp != o) pp = &(*pp)->next;
    *pp = o->next;
    free(o);
}

/* Starts the receiver's waiting sends while it has room; forgets it once
 * nothing of it is left. */
static void origin_run(channels *c, chan_origin *o)
{
    while (o->wait_head && o->active < CHANNELS_PER_ORIGIN) {
        chan_send *s = o->wait_head;
        o->wait_head = s->next;
        if (!o->wait_head) o->wait_tail = NULL;
        s->next = NULL;
        CURLMcode mc = curl_multi_add_handle(c->multi, s->easy);
        if (mc == CURLM_OK) o->active++;
        else fail_send(c, s, curl_multi_strerror(mc));
    }
    if (o->active == 0 && !o->wait_head) origin_forget(c, o);
}

/* A newly queued send joins its receiver's queue, which runs at once. */
static void origin_take(channels *c, chan_send *s)
{
    chan_origin **head = &c->origins[origin_bucket(s->origin)], *o = *head;
    while (o && strcmp(o->key, s->origin) != 0) o = o->next;
    if (!o) {
        if (!(o = calloc(1, sizeof *o))) {
            fail_send(c, s, "out of memory");
            return;
        }
        snprintf(o->key, sizeof o->key, "%s", s->origin);
        o->next = *head;
        *head = o;
    }
    s->at = o;
    if (o->wait_tail) o->wait_tail->next = s;
    else o->wait_head = s;
    o->wait_tail = s;
    origin_run(c, o);
}

/* A send of o's ended: room for the next. */
static void origin_done(channels *c, chan_origin *o)
{
    o->active--;
    origin_run(c, o);
}

void chan_origin_set(chan_send *s, const char *url)
{
    const char *p = strstr(url, "://");
    const char *end = p ? p + 3 + strcspn(p + 3, "/?#") : url + strlen(url);
    size_t n = 0;
    for (const char *q = url; q < end && n < sizeof s->origin - 1; q++)
        s->origin[n++] = (char)((*q >= 'A' && *q <= 'Z') ? *q + 32 : *q);
    s->origin[n] = '\0';
}

static void finish_done(channels *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        CURL *easy = m->easy_handle;
        CURLcode rc = m->data.result;
        chan_send *s = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&s);
        curl_multi_remove_handle(c->multi, easy);
        origin_done(c, s->at);
        /* Room first, so a done() that queues a retry at once finds it. */
        pthread_mutex_lock(&c->mu);
        c->outstanding--;
        pthread_mutex_unlock(&c->mu);
        report(c, s, rc);
        chan_send_free(s);
    }
}

static void *channels_thread(void *p)
{
    channels *c = p;
    base_thread_name("channels");
    for (;;) {
        pthread_mutex_lock(&c->mu);
        chan_send *q = c->queue_head;
        c->queue_head = c->queue_tail = NULL;
        bool stop = c->stopping && c->outstanding == 0;
        pthread_mutex_unlock(&c->mu);
        if (stop) break;
        while (q) {
            chan_send *next = q->next;
            q->next = NULL;
            origin_take(c, q);
            q = next;
        }
        int running = 0;
        curl_multi_perform(c->multi, &running);
        finish_done(c);
        curl_multi_poll(c->multi, NULL, 0, 1000, NULL);
    }
    return NULL;
}

/* ---- setup ---------------------------------------------------------------- */

static bool has_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
    return false;
}

/* "Name <a@b>" -> "a@b"; "a@b" -> "a@b". */
static char *bare_address(const char *from)
{
    const char *lt = strrchr(from, '<');
    const char *gt = lt ? strchr(lt, '>') : NULL;
    if (lt && gt) return strndup(lt + 1, (size_t)(gt - lt - 1));
    return strdup(from);
}

static char *domain_of(const char *addr)
{
    const char *at = strrchr(addr, '@');
    char buf[256];
    size_t n = 0;
    for (const char *p = at ? at + 1 : "chime"; *p && n < sizeof buf - 1; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '-')
            buf[n++] = *p;
    buf[n] = '\0';
    return strdup(n ? buf : "chime");
}

channels *channels_new(const channels_config *cfg)
{
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK) {
        log_error("channels: curl_global_init failed");
        return NULL;
    }
    const char *from = cfg->smtp_from && cfg->smtp_from[0] ? cfg->smtp_from : "chime <noreply@localhost>";
    if (has_ctl(from) || (cfg->smtp_url && has_ctl(cfg->smtp_url))) {
        log_error("channels: smtp-url and smtp-from must not contain control characters");
        return NULL;
    }
    if (cfg->smtp_url && cfg->smtp_url[0] && strncasecmp(cfg->smtp_url, "smtp://", 7) != 0 &&
        strncasecmp(cfg->smtp_url, "smtps://", 8) != 0) {
        log_error("channels: smtp-url must start with smtp:// or smtps://, not '%s'", cfg->smtp_url);
        return NULL;
    }
    channels *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->smtp_url = cfg->smtp_url && cfg->smtp_url[0] ? strdup(cfg->smtp_url) : NULL;
    c->smtp_from = strdup(from);
    c->from_addr = bare_address(from);
    c->msgid_domain = c->from_addr ? domain_of(c->from_addr) : NULL;
    c->allow_private = cfg->allow_private;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 10000;
    c->max_in_flight = cfg->max_in_flight > 0 ? cfg->max_in_flight : 256;
    c->multi = curl_multi_init();
    pthread_mutex_init(&c->mu, NULL);
    hclient_config hc = {.timeout_ms = c->timeout_ms,
                         .per_origin = CHANNELS_HOST_CONNECTIONS,
                         .refused = c->allow_private ? NULL : channels_addr_private,
                         .refused_why = "is a private or reserved address"
                                        " (the server allows it only with --webhook-allow-private)"};
    if (!c->smtp_from || !c->from_addr || !c->msgid_domain || !c->multi || (cfg->smtp_url && cfg->smtp_url[0] && !c->smtp_url))
        goto fail;
    if (!(c->hooks = hclient_new(&hc))) goto fail;
    /* Several sends to one receiver share a connection rather than each
     * opening their own, and one receiver gets at most 16 at once (64
     * measured no faster on bench/reminders, and is a lot to ask of a
     * user's endpoint); the cache keeps connections to many receivers. */
    curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)CHANNELS_HOST_CONNECTIONS);
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 256L);
    if (pthread_create(&c->thread, NULL, channels_thread, c) != 0) goto fail;
    return c;
fail:
    log_error("channels: cannot start the sending thread");
    hclient_free(c->hooks);
    if (c->multi) curl_multi_cleanup(c->multi);
    pthread_mutex_destroy(&c->mu);
    free(c->smtp_url);
    free(c->smtp_from);
    free(c->from_addr);
    free(c->msgid_domain);
    free(c);
    return NULL;
}

void channels_free(channels *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_mutex_unlock(&c->mu);
    curl_multi_wakeup(c->multi);
    hclient_free(c->hooks); /* its sends finish (their timeouts bound this) */
    pthread_join(c->thread, NULL);
    curl_multi_cleanup(c->multi);
    pthread_mutex_destroy(&c->mu);
    free(c->smtp_url);
    free(c->smtp_from);
    free(c->from_addr);
    free(c->msgid_domain);
    free(c);
}

int channels_capacity(const channels *c)
{
    return c->max_in_flight;
}

bool channels_email_enabled(const channels *c)
{
    return c && c->smtp_url;
}

/* Accessors for the senders (webhook.c, email.c). */
const chan_settings *chan_settings_of(const channels *c, chan_settings *out)
{
    out->smtp_url = c->smtp_url;
    out->smtp_from = c->smtp_from;
    out->from_addr = c->from_addr;
    out->msgid_domain = c->msgid_domain;
    out->allow_private = c->allow_private;
    return out;
}

bool chan_id_valid(const char *id)
{
    if (!id) return false;
    size_t n = strnlen(id, CHANNELS_ID_MAX + 1);
    if (n == 0 || n > CHANNELS_ID_MAX) return false;
    /* Goes into headers and a Message-ID: visible ASCII, no specials. */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)id[i];
        if (ch <= 0x20 || ch >= 0x7f || strchr("<>()[]\\\",;@", ch)) return false;
    }
    return true;
}
