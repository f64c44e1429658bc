/* fuzz-hot-body.c -- the hot list's inputs: the comment and share bodies,
 * and the queries of /v1/hot and the comment pages (limit, cursor). What
 * passes keeps the promised bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hot/hot.h"
#include "hot/hot_body.h"
#include "http/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    http_err e;
    http_req r;
    memset(&r, 0, sizeof r);
    r.query.ptr = (const char *)data;
    r.query.len = size;
    char buf[32];
    int limit;
    int64_t cursor;
    if (http_query(&r, "limit", buf, sizeof buf) > 0 && hot_query_limit(buf, 50, HOT_LIMIT_MAX, &limit, &e) == 0 &&
        (limit < 1 || limit > HOT_LIMIT_MAX))
        abort();
    if (http_query(&r, "cursor", buf, sizeof buf) > 0 && hot_query_cursor(buf, &cursor, &e) == 0 && cursor < 0)
        abort();
    json_t *body = http_json_decode((const char *)data, size, &e);
    if (!body) return 0;
    const char *text;
    if (hot_body_comment(body, &text, &e) == 0 && (strlen(text) == 0 || strlen(text) > HOT_COMMENT_MAX)) abort();
    if (hot_body_share(body, &text, &e) == 0 && strlen(text) > HOT_COMMENT_MAX) abort();
    json_decref(body);
    return 0;
}
