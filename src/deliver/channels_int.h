/* channels_int.h -- what channels.c shares with its senders (webhook.c,
 * email.c). Not part of the channels API. The curl thread carries email;
 * webhooks go through the webhook client (src/net/hclient.h). */
#ifndef CHIME_DELIVER_CHANNELS_INT_H
#define CHIME_DELIVER_CHANNELS_INT_H

#include <curl/curl.h>

#include "deliver/channels.h"

typedef enum { CHAN_WEBHOOK, CHAN_EMAIL } chan_kind;

/* One send, owned by its creator until chan_enqueue accepts it, then by the
 * channel thread, which reports it and frees it. */
typedef struct chan_send {
    struct chan_send *next;
    channels *c;
    chan_kind kind;
    char origin[128];         /* the receiver, as the channel thread groups sends */
    struct chan_origin *at;   /* the channel thread's entry for it, once taken */
    CURL *easy;
    struct curl_slist *list;  /* webhook headers, or SMTP recipients */
    char *payload;            /* the body, or the whole email message */
    size_t payload_len, read_pos;
    channels_done_fn done;
    void *ctx;
    char id[CHANNELS_ID_MAX + 1];
    bool refused;             /* the guard refused the address below */
    char refused_addr[64];
    char errbuf[CURL_ERROR_SIZE];
} chan_send;

typedef struct chan_settings {
    const char *smtp_url, *smtp_from, *from_addr, *msgid_domain;
    bool allow_private;
} chan_settings;

chan_send *chan_send_new(channels *c, channels_done_fn done, void *ctx);
void chan_send_free(chan_send *s);
/* Sets s->origin from the URL: its scheme and authority, lowercased. */
void chan_origin_set(chan_send *s, const char *url);
int chan_enqueue(channels *c, chan_send *s);
/* Webhooks go through the webhook client, not the curl thread, but share
 * the max_in_flight sends: a slot is taken before one goes out (false
 * when none is free or the channels are stopping) and given back before
 * its done runs. */
bool chan_slot_take(channels *c);
void chan_slot_give(channels *c);
struct hclient *chan_hooks(channels *c);
const chan_settings *chan_settings_of(const channels *c, chan_settings *out);
/* A delivery id fit for headers: 1..CHANNELS_ID_MAX visible ASCII
 * characters other than <>()[]\",;@. */
bool chan_id_valid(const char *id);

#endif
