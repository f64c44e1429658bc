/* hot_body.c -- see hot_body.h. */
#include "hot/hot_body.h"

#include <stdlib.h>
#include <string.h>

#include "feed/feed_body.h"
#include "hot/hot.h"
#include "http/json.h"

static int text_field(const json_t *body, size_t min, const char **text, http_err *e)
{
    json_t *t = json_object_get(body, "text");
    if (!t && min == 0) {
        *text = "";
        return 0;
    }
    if (!json_is_string(t) || json_string_length(t) < min || json_string_length(t) > HOT_COMMENT_MAX) {
        http_err_set(e, 400, t ? "invalid_value" : "missing_field", "text", "text must be %zu to %d bytes of UTF-8",
                     min, HOT_COMMENT_MAX);
        return -1;
    }
    *text = json_string_value(t);
    if (strlen(*text) != json_string_length(t)) {
        http_err_set(e, 400, "invalid_value", "text", "text may not contain NUL characters");
        return -1;
    }
    return http_text_check(*text, json_string_length(t), "text", TEXT_MULTILINE, e);
}

int hot_body_comment(const json_t *body, const char **text, http_err *e)
{
    static const char *const fields[] = {"text", NULL};
    if (http_json_only(body, fields, e)) return -1;
    return text_field(body, 1, text, e);
}

int hot_body_share(const json_t *body, const char **text, http_err *e)
{
    static const char *const fields[] = {"text", NULL};
    *text = "";
    if (!body) return 0;
    if (http_json_only(body, fields, e)) return -1;
    return text_field(body, 0, text, e);
}

int hot_query_limit(const char *value, int def, int max, int *out, http_err *e)
{
    *out = def;
    if (!value) return 0;
    char *end = (char *)value;
    long v = value[0] >= '0' && value[0] <= '9' ? strtol(value, &end, 10) : 0;
    if (v < 1 || v > max || *end) {
        http_err_set(e, 400, "invalid_value", "limit", "limit must be 1 to %d", max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int hot_query_cursor(const char *value, int64_t *out, http_err *e)
{
    *out = 0;
    if (!value || !value[0]) return 0;
    if (feed_id_parse(value, strlen(value), out) == 0) return 0;
    http_err_set(e, 400, "invalid_value", "cursor", "cursor must be one this server gave out");
    return -1;
}
