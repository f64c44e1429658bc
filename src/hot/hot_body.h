/* hot_body.h -- the shapes of the hot list's request bodies and queries
 * (hot_body.c, fuzzed by fuzz/fuzz-hot-body.c). Each returns 0, or -1 with
 * e filled (status, code, the field, the reason). */
#ifndef CHIME_HOT_BODY_H
#define CHIME_HOT_BODY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http.h"

#define HOT_LIMIT_MAX 1000 /* the largest --hot-size */

/* POST /v1/posts/{id}/comments {"text":T}: 1 to HOT_COMMENT_MAX bytes of
 * UTF-8, no NUL. */
int hot_body_comment(const json_t *body, const char **text, http_err *e);
/* POST /v1/posts/{id}/shares, body absent (NULL) or {"text":T?}: T, a
 * comment on the repost, 0 to HOT_COMMENT_MAX bytes; "" when absent. */
int hot_body_share(const json_t *body, const char **text, http_err *e);
/* ?limit= of GET /v1/hot (value: NULL when absent): 1 to HOT_LIMIT_MAX,
 * def when absent. */
int hot_query_limit(const char *value, int def, int max, int *out, http_err *e);
/* ?cursor= of the comment pages: a comment id ("" or NULL: 0). */
int hot_query_cursor(const char *value, int64_t *out, http_err *e);

#endif
