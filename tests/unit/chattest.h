/* chattest.h -- what the chat's unit tests share. Include after
 * testutil.h. */
#ifndef CHIME_CHATTEST_H
#define CHIME_CHATTEST_H

#include <stdint.h>
#include <string.h>

#include "base/base.h"
#include "chat/chat.h"

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

#endif
