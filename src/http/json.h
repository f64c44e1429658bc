/* json.h -- request body decoding and field validation. Each validator
 * returns 0, or -1 with e filled in (status, code, the field, the reason). */
#ifndef CHIME_HTTP_JSON_H
#define CHIME_HTTP_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/text.h"
#include "http/http.h"

/* Parses text as a JSON object (400 invalid_json otherwise). Caller owns it. */
json_t *http_json_decode(const char *text, size_t len, http_err *e);
/* Rejects any key not in the NULL-terminated list (400 unknown_field). */
int http_json_only(const json_t *obj, const char *const *allowed, http_err *e);
/* A non-blank string of at most max_len bytes; *out is NULL when absent and
 * optional. The pointer lives as long as obj. */
int http_json_str(const json_t *obj, const char *name, bool required, size_t max_len, const char **out,
                   http_err *e);
/* http_json_str, and no control character a `kind` text may not hold
 * (base/text.h): 400 invalid_value naming the field and the character. */
int http_json_text(const json_t *obj, const char *name, bool required, size_t max_len, text_kind kind,
                   const char **out, http_err *e);
/* The same check on a value already taken (an empty one passes). */
int http_text_check(const char *s, size_t len, const char *name, text_kind kind, http_err *e);
int http_json_int(const json_t *obj, const char *name, bool required, int64_t min, int64_t max, int64_t *out,
                   bool *present, http_err *e);

#endif
