/* fuzz-ws-frame.c -- what a device sends on its WebSocket: raw bytes
 * through wslay's server side (framing, masking, fragments, control
 * frames, the 64 KiB limit), whose messages reach chime's frame rule
 * (chat_ws_frame), as in the gateway. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wslay/wslay.h>

#include "chat/chat_body.h"

typedef struct fuzz_feed {
    const uint8_t *data;
    size_t size, at;
} fuzz_feed;

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    fuzz_feed *f = user;
    if (f->at == f->size) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t n = f->size - f->at < len ? f->size - f->at : len;
    if (n > 7) n = 7 + f->data[f->at] % (n - 6); /* uneven reads, as sockets give */
    memcpy(buf, f->data + f->at, n);
    f->at += n;
    return (ssize_t)n;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user)
{
    return (ssize_t)len;
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
    if (arg->opcode != WSLAY_TEXT_FRAME) return;
    if (arg->msg_length > 65536) abort(); /* the limit must hold */
    char *reply = NULL;
    if (chat_ws_frame((const char *)arg->msg, arg->msg_length, &reply) == 0 && !reply) abort();
    free(reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_feed f = {data, size, 0};
    struct wslay_event_callbacks cb = {.recv_callback = on_recv, .send_callback = on_send,
                                       .on_msg_recv_callback = on_msg};
    wslay_event_context_ptr ctx;
    if (wslay_event_context_server_init(&ctx, &cb, &f) != 0) return 0;
    wslay_event_config_set_max_recv_msg_length(ctx, 65536);
    for (int i = 0; i < 1000 && wslay_event_want_read(ctx) && f.at < f.size; i++) {
        if (wslay_event_recv(ctx) != 0) break;
        while (wslay_event_want_write(ctx) && wslay_event_send(ctx) == 0) continue;
    }
    wslay_event_context_free(ctx);
    return 0;
}
