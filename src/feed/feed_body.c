/* feed_body.c -- see feed_body.h. */
#include "feed/feed_body.h"

#include <string.h>

#include "http/json.h"

int feed_id_parse(const char *text, size_t len, int64_t *id)
{
    if (len == 0 || len > 19) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return -1;
        v = v * 10 + (uint64_t)(text[i] - '0');
    }
    if (v == 0 || v > (uint64_t)INT64_MAX) return -1;
    *id = (int64_t)v;
    return 0;
}

int feed_body_post(const json_t *body, const char **text, const char **client_id, http_err *e)
{
    static const char *const fields[] = {"text", "client_post_id", NULL};
    if (http_json_only(body, fields, e) ||
        http_json_str(body, "client_post_id", false, FEED_CLIENT_ID_MAX, client_id, e))
        return -1;
    json_t *t = json_object_get(body, "text");
    if (!json_is_string(t) || json_string_length(t) == 0 || json_string_length(t) > FEED_TEXT_MAX) {
        http_err_set(e, 400, "invalid_value", "text", "text must be 1 to %d bytes of UTF-8", FEED_TEXT_MAX);
        return -1;
    }
    *text = json_string_value(t);
    if (strlen(*text) != json_string_length(t)) {
        http_err_set(e, 400, "invalid_value", "text", "text may not contain NUL characters");
        return -1;
    }
    return 0;
}

int feed_body_markers(const json_t *body, int64_t *last_read_id, http_err *e)
{
    static const char *const fields[] = {"home", NULL};
    static const char *const home_fields[] = {"last_read_id", NULL};
    if (http_json_only(body, fields, e)) return -1;
    json_t *home = json_object_get(body, "home");
    if (!json_is_object(home)) {
        http_err_set(e, 400, "invalid_value", "home", "home must be an object {\"last_read_id\": ID}");
        return -1;
    }
    if (http_json_only(home, home_fields, e)) {
        http_err_prefix(e, "home");
        return -1;
    }
    json_t *v = json_object_get(home, "last_read_id");
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        *last_read_id = json_integer_value(v);
        return 0;
    }
    if (json_is_string(v) && feed_id_parse(json_string_value(v), json_string_length(v), last_read_id) == 0) return 0;
    http_err_set(e, 400, "invalid_value", "home.last_read_id", "last_read_id must be a post id");
    return -1;
}
