/* fuzz-feed-body.c -- the feed's inputs: the post and marker bodies, post
 * ids in paths, and the timeline's query (max_id, since_id, limit). What
 * passes keeps the promised bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "feed/feed_body.h"
#include "http/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    http_err e;
    int64_t id;
    if (feed_id_parse((const char *)data, size, &id) == 0 && id <= 0) abort();
    http_req r;
    memset(&r, 0, sizeof r);
    r.query.ptr = (const char *)data;
    r.query.len = size;
    char buf[32];
    if (http_query(&r, "max_id", buf, sizeof buf) > 0 && feed_id_parse(buf, strlen(buf), &id) == 0 && id <= 0) abort();
    json_t *body = http_json_decode((const char *)data, size, &e);
    if (!body) return 0;
    const char *text, *client_id;
    if (feed_body_post(body, &text, &client_id, &e) == 0) {
        size_t n = strlen(text);
        if (n == 0 || n > FEED_TEXT_MAX || (client_id && strlen(client_id) > FEED_CLIENT_ID_MAX)) abort();
    }
    if (feed_body_markers(body, &id, &e) == 0 && id <= 0) abort();
    json_decref(body);
    return 0;
}
