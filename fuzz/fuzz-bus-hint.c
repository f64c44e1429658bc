/* fuzz-bus-hint.c -- arbitrary bytes as a signal hint from the bus
 * (push_news_parse): never more items than asked for, every item's
 * numbers in range; and what parses encodes (push_news_encode) and parses
 * back to the same items. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/bus.h"
#include "deliver/push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { MAX = BUS_PAYLOAD_MAX / 17 + 1 };
    static ws_news news[MAX], back[MAX];
    static char buf[BUS_PAYLOAD_MAX];
    if (size > BUS_PAYLOAD_MAX) return 0;
    size_t max = size ? data[0] % MAX + 1 : 1;
    size_t n = push_news_parse((const char *)data, size, news, max);
    if (n > max) abort();
    for (size_t i = 0; i < n; i++)
        if (news[i].seq < 0 || news[i].unread < 0 || news[i].user_id < 0) abort();
    if (n == 0 || news[0].seq == 0) return 0; /* the old form: no numbers to send on */
    size_t len, done = push_news_encode(news, n, buf, sizeof buf, &len);
    if (done == 0 || push_news_parse(buf, len, back, done) != done) abort();
    if (memcmp(news, back, done * sizeof *news) != 0) abort();
    return 0;
}
