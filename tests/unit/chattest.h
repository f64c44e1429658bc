/* chattest.h -- what the chat's unit tests share. Include after
 * testutil.h. */
#ifndef CHIME_CHATTEST_H
#define CHIME_CHATTEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "chat/chat.h"
#include "chat/chat_writer.h"

/* A number in [0, n) from a xorshift walk the test seeds itself (so a
 * walk is the same on both backends). */
static inline int64_t chattest_pick(uint64_t *rng, int64_t n)
{
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    return (int64_t)(*rng % (uint64_t)n);
}

/* The id of the conversation a write's answer shows. */
static inline int64_t chattest_conv_id(const chat_result *r)
{
    int64_t id = 0;
    const char *hex = json_string_value(json_object_get(r->body, "id"));
    assert_non_null(hex);
    assert_int_equal(base_id_parse(hex, strlen(hex), &id), 0);
    return id;
}

/* A send of "hello" by me in conv as client_msg_id cid, answered to
 * finish(op) with ctx; for chat_writer_submit (which then owns it). */
static inline chat_op *chattest_send_op(int64_t me, int64_t conv, const char *cid, void (*finish)(chat_op *),
                                        void *ctx)
{
    chat_op *op = calloc(1, sizeof *op);
    assert_non_null(op);
    op->kind = CHAT_OP_SEND;
    op->me = me;
    op->conv = conv;
    op->client_id = strdup(cid);
    op->text = strdup("hello");
    op->finish = finish;
    op->ctx = ctx;
    return op;
}

#endif
