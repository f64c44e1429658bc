/* feed_body.h -- the shapes of the feed's request bodies and query ids
 * (feed_body.c, fuzzed by fuzz/fuzz-feed-body.c). Each returns 0, or -1
 * with e filled (status, code, the field, the reason). */
#ifndef CHIME_FEED_BODY_H
#define CHIME_FEED_BODY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "feed/feed.h"
#include "http/http.h"

/* POST /v1/posts {"text":T,"client_post_id":S?}: text 1 to 2000 bytes of
 * UTF-8 without NUL; *client_id NULL when absent. */
int feed_body_post(const json_t *body, const char **text, const char **client_id, http_err *e);
/* POST /v1/markers {"home":{"last_read_id":ID}} (ID a decimal string or
 * a number). */
int feed_body_markers(const json_t *body, int64_t *last_read_id, http_err *e);
/* A post id as the API writes it (decimal, 1 to 19 digits, > 0): 0, or -1
 * when text is not one. */
int feed_id_parse(const char *text, size_t len, int64_t *id);

#endif
