/* push.c -- see push.h. On the bus a signal is "u" and the users in hex,
 * comma-separated (several hints when they do not fit one); a frame is
 * "f", the user in hex, ':' and the frame's text. */
#include "deliver/push.h"

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

void push_signal(push *p, const int64_t *users, size_t n)
{
    if (n == 0) return;
    ws_hub_signal(p->hub, users, n);
    if (!bus_enabled(p->bus)) return;
    char buf[BUS_PAYLOAD_MAX + 1];
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (len + 18 > BUS_PAYLOAD_MAX) {
            bus_publish(p->bus, buf, len);
            len = 0;
        }
        if (len == 0) buf[len++] = 'u';
        else buf[len++] = ',';
        base_id_format(users[i], buf + len);
        len += 16;
    }
    bus_publish(p->bus, buf, len);
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

static void on_signal_hint(push *p, const char *s, size_t len)
{
    int64_t users[BUS_PAYLOAD_MAX / 17 + 1];
    size_t n = 0;
    for (size_t at = 0; at + 16 <= len && n < sizeof users / sizeof users[0]; at += 17)
        if (base_id_parse(s + at, 16, &users[n]) == 0) n++;
    ws_hub_signal(p->hub, users, n);
}

void push_on_bus(void *arg, const char *payload, size_t len)
{
    push *p = arg;
    int64_t user;
    if (len > 1 && payload[0] == 'u') on_signal_hint(p, payload + 1, len - 1);
    else if (len > 18 && payload[0] == 'f' && payload[17] == ':' && base_id_parse(payload + 1, 16, &user) == 0)
        ws_hub_send_user(p->hub, user, payload + 18, len - 18);
}
