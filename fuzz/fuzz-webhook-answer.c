/* fuzz-webhook-answer.c -- arbitrary bytes as a receiver's answer to a
 * webhook, read by h1answer the way the webhook client reads a socket:
 * once in one piece, once cut into up to four pieces at points the input
 * chooses. Whatever arrives, the reader never takes more than it was
 * given, and it ends the same way (more wanted, done with a status, or an
 * error) however the bytes were cut; a connection the whole reading keeps
 * is kept by the cut one too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/h1answer.h"

typedef struct outcome {
    h1answer_rc rc;
    int status;
    bool close_after;
} outcome;

/* Feeds data in pieces cut at cuts[0..ncuts) (increasing), then the
 * peer's close if the answer still wants more. */
static outcome read_in_pieces(const uint8_t *data, size_t size, const size_t *cuts, size_t ncuts)
{
    h1answer a;
    h1answer_init(&a);
    char *pending = malloc(size + 1);
    size_t have = 0, from = 0;
    const char *why = NULL;
    outcome o = {H1_MORE, 0, false};
    for (size_t i = 0; i <= ncuts && o.rc == H1_MORE; i++) {
        size_t to = i < ncuts ? cuts[i] : size;
        memcpy(pending + have, data + from, to - from);
        have += to - from;
        from = to;
        size_t used = 0;
        o.rc = h1answer_feed(&a, pending, have, &used, &why);
        if (used > have) abort();
        if (o.rc == H1_ERROR && !why) abort();
        memmove(pending, pending + used, have - used);
        have -= used;
    }
    if (o.rc == H1_MORE) o.rc = h1answer_eof(&a, &why);
    if (o.rc == H1_DONE) {
        if (!a.head_done || a.status < 200 || a.status > 999) abort();
        o.status = a.status;
        o.close_after = a.close_after;
    }
    free(pending);
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536) return 0;
    size_t ncuts = data[0] % 5, cuts[4];
    data++;
    size--;
    if (size < ncuts * 2) return 0;
    /* Each cut point is a byte of the input, scaled to its length. */
    size_t at = 0;
    for (size_t i = 0; i < ncuts; i++) {
        size_t step = (size_t)data[i] * (size - ncuts) / 256;
        at = at + step < size - ncuts ? at + step : size - ncuts;
        cuts[i] = at;
    }
    data += ncuts;
    size -= ncuts;
    outcome whole = read_in_pieces(data, size, NULL, 0);
    outcome cut = read_in_pieces(data, size, cuts, ncuts);
    if (whole.rc != cut.rc || whole.status != cut.status) abort();
    if (!whole.close_after && cut.close_after) abort();
    return 0;
}
