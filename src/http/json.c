/* json.c -- decoding request bodies and validating their fields. */
#include "http/json.h"

#include <string.h>
#include <strings.h>

json_t *http_json_body(const http_req *r, http_err *e)
{
    http_str ct;
    if (!http_header(r, "content-type", &ct) || ct.len < 16 ||
        strncasecmp(ct.ptr, "application/json", 16) != 0 ||
        (ct.len > 16 && ct.ptr[16] != ';' && ct.ptr[16] != ' ')) {
        http_err_set(e, 415, "unsupported_media_type", "content-type",
                     "the body must be sent as Content-Type: application/json");
        return NULL;
    }
    return http_json_decode(r->body.ptr, r->body.len, e);
}

json_t *http_json_decode(const char *text, size_t len, http_err *e)
{
    json_error_t je;
    if (len == 0) {
        http_err_set(e, 400, "invalid_json", "body", "the body is empty; a JSON object is expected");
        return NULL;
    }
    /* Rejects invalid UTF-8 and duplicate keys. "\u0000" inside a string is
     * let through so that json_field_str can name the field it is in. */
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!j) {
        http_err_set(e, 400, "invalid_json", "body", "malformed JSON at line %d, column %d: %s", je.line,
                     je.column, je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        http_err_set(e, 400, "invalid_json", "body", "the body must be a JSON object");
        return NULL;
    }
    return j;
}

int http_json_only(const json_t *obj, const char *const *allowed, http_err *e)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(*a, key) == 0;
        if (!ok) {
            http_err_set(e, 400, "unknown_field", key, "unknown field '%.60s'", key);
            return -1;
        }
    }
    return 0;
}

int http_json_str(const json_t *obj, const char *name, bool required, size_t max_len, const char **out,
                   http_err *e)
{
    json_t *v = json_object_get(obj, name);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (!required) return 0;
        http_err_set(e, 400, "missing_field", name, "%s is required", name);
        return -1;
    }
    if (!json_is_string(v)) {
        http_err_set(e, 400, "wrong_type", name, "%s must be a string", name);
        return -1;
    }
    size_t len = json_string_length(v);
    const char *s = json_string_value(v);
    if (len == 0 || strspn(s, " \t\r\n") == len) {
        http_err_set(e, 400, "empty_field", name, "%s must not be empty", name);
        return -1;
    }
    if (len > max_len) {
        http_err_set(e, 400, "too_long", name, "%s is longer than %zu bytes", name, max_len);
        return -1;
    }
    if (memchr(s, '\0', len)) {
        http_err_set(e, 400, "invalid_value", name, "%s must not contain NUL characters", name);
        return -1;
    }
    *out = s;
    return 0;
}

int http_text_check(const char *s, size_t len, const char *name, text_kind kind, http_err *e)
{
    uint32_t cp;
    ptrdiff_t at = text_find_control(s, len, kind, &cp);
    if (at < 0) return 0;
    http_err_set(e, 400, "invalid_value", name, "%s must not contain control characters (U+%04X at byte %td)%s",
                 name, (unsigned)cp, at,
                 kind == TEXT_MULTILINE ? "; tab and newline are allowed"
                 : kind == TEXT_LINE    ? "; tab is allowed, newline is not"
                                        : "");
    return -1;
}

int http_json_text(const json_t *obj, const char *name, bool required, size_t max_len, text_kind kind,
                   const char **out, http_err *e)
{
    if (http_json_str(obj, name, required, max_len, out, e) != 0) return -1;
    if (*out && http_text_check(*out, strlen(*out), name, kind, e) != 0) {
        *out = NULL;
        return -1;
    }
    return 0;
}

int http_json_int(const json_t *obj, const char *name, bool required, int64_t min, int64_t max, int64_t *out,
                   bool *present, http_err *e)
{
    json_t *v = json_object_get(obj, name);
    if (present) *present = false;
    if (!v || json_is_null(v)) {
        if (!required) return 0;
        http_err_set(e, 400, "missing_field", name, "%s is required", name);
        return -1;
    }
    if (!json_is_integer(v)) {
        http_err_set(e, 400, "wrong_type", name, "%s must be a whole number", name);
        return -1;
    }
    json_int_t i = json_integer_value(v);
    if (i < min || i > max) {
        http_err_set(e, 400, "out_of_range", name, "%s must be from %lld to %lld", name, (long long)min,
                     (long long)max);
        return -1;
    }
    *out = i;
    if (present) *present = true;
    return 0;
}
