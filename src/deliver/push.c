/* push.c -- see push.h. On the bus a signal is "n" and its news
 * comma-separated, each the user in hex, ':', the number and ':' the
 * unread count in decimal (several hints when they do not fit one); "u"
 * and users in hex, comma-separated, is news not known (the form nodes
 * before the counts sent, still read). A frame is "f", the user in hex,
 * ':' and the frame's text. */
#include "deliver/push.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

struct push {
    ws_hub *hub;
    bus *bus;
};

push *push_new(ws_hub *hub)
{
    push *p = calloc(1, sizeof *p);
    if (p) p->hub = hub;
    return p;
}

void push_set_bus(push *p, bus *b)
{
    p->bus = b;
}

void push_free(push *p)
{
    free(p);
}

size_t push_news_encode(const ws_news *news, size_t n, char *buf, size_t cap, size_t *len)
{
    size_t i = 0;
    *len = 0;
    for (; i < n; i++) {
        char item[64];
        /* A count below 0 (a total gone wrong) goes as "not known": the
         * other node reads it, and the items after it still parse. */
        bool known = news[i].seq > 0 && news[i].unread >= 0;
        base_id_format(news[i].user_id, item);
        int k = 16 + snprintf(item + 16, sizeof item - 16, ":%" PRId64 ":%" PRId64, known ? news[i].seq : 0,
                              known ? news[i].unread : 0);
        if (*len + 1 + (size_t)k > cap) break;
        buf[*len] = *len == 0 ? 'n' : ',';
        memcpy(buf + *len + 1, item, (size_t)k);
        *len += 1 + (size_t)k;
    }
    return i;
}

void push_signal(push *p, const ws_news *news, size_t n)
{
    if (n == 0) return;
    ws_hub_signal(p->hub, news, n);
    if (!bus_enabled(p->bus)) return;
    char buf[BUS_PAYLOAD_MAX];
    size_t len, done;
    for (size_t at = 0; at < n; at += done) {
        done = push_news_encode(news + at, n - at, buf, sizeof buf, &len);
        if (done == 0) break; /* cannot happen: an item is at most 56 bytes */
        bus_publish(p->bus, buf, len);
    }
}

void push_frame(push *p, int64_t user, const char *text, size_t len)
{
    ws_hub_send_user(p->hub, user, text, len);
    if (!bus_enabled(p->bus) || len + 18 > BUS_PAYLOAD_MAX) return;
    char buf[BUS_PAYLOAD_MAX + 1];
    buf[0] = 'f';
    base_id_format(user, buf + 1);
    buf[17] = ':';
    memcpy(buf + 18, text, len);
    bus_publish(p->bus, buf, len + 18);
}

/* A decimal number of 1 to 18 digits at s (so it cannot overflow). */
static size_t number_at(const char *s, size_t len, int64_t *v)
{
    size_t i = 0;
    *v = 0;
    while (i < len && i < 18 && s[i] >= '0' && s[i] <= '9') *v = *v * 10 + (s[i++] - '0');
    return i;
}

size_t push_news_parse(const char *s, size_t len, ws_news *news, size_t max)
{
    size_t n = 0, at = 1;
    bool counts = len > 0 && s[0] == 'n';
    if (len == 0 || (s[0] != 'n' && s[0] != 'u')) return 0;
    while (at + 16 <= len && n < max) {
        ws_news x = {0};
        if (base_id_parse(s + at, 16, &x.user_id) != 0) return n;
        at += 16;
        if (counts) {
            size_t k;
            if (at >= len || s[at] != ':' || !(k = number_at(s + at + 1, len - at - 1, &x.seq))) return n;
            at += 1 + k;
            if (at >= len || s[at] != ':' || !(k = number_at(s + at + 1, len - at - 1, &x.unread))) return n;
            at += 1 + k;
            if (x.seq == 0) x.unread = 0; /* not known: no count goes with it */
        }
        news[n++] = x;
        if (at < len && s[at] != ',') return n;
        at++;
    }
    return n;
}

void push_on_bus(void *arg, const char *payload, size_t len)
{
    push *p = arg;
    int64_t user;
    if (len > 1 && (payload[0] == 'n' || payload[0] == 'u')) {
        ws_news news[BUS_PAYLOAD_MAX / 17 + 1];
        size_t n = push_news_parse(payload, len, news, sizeof news / sizeof news[0]);
        if (n) ws_hub_signal(p->hub, news, n);
    }
    else if (len > 18 && payload[0] == 'f' && payload[17] == ':' && base_id_parse(payload + 1, 16, &user) == 0)
        ws_hub_send_user(p->hub, user, payload + 18, len - 18);
}
