/* jsonw.h -- a streaming JSON writer into one growing buffer.
 *
 * Responses that carry many items (a month of calendar instances) spent two
 * thirds of their time building and freeing jansson trees (measured with
 * perf: bench/calendar); writing the text directly costs one buffer. Commas
 * are placed automatically; keys and strings are escaped. On allocation
 * failure the writer stops growing and jw_failed says so. */
#ifndef CHIME_HTTP_JSONW_H
#define CHIME_HTTP_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JW_MAX_DEPTH 32

typedef struct jsonw {
    char *buf;
    size_t len, cap;
    bool failed;
    int depth;
    bool first[JW_MAX_DEPTH]; /* nothing written yet at this level */
    bool after_key;
} jsonw;

void jw_init(jsonw *w, size_t cap);
void jw_free(jsonw *w);
bool jw_failed(const jsonw *w);

void jw_obj(jsonw *w);      /* { */
void jw_obj_end(jsonw *w);  /* } */
void jw_arr(jsonw *w);      /* [ */
void jw_arr_end(jsonw *w);  /* ] */
/* Keys are program literals and are written as they are: never pass a key
 * that needs escaping (a quote, a backslash, a control character). */
void jw_key(jsonw *w, const char *key);
void jw_str(jsonw *w, const char *s);
void jw_strn(jsonw *w, const char *s, size_t n);
void jw_int(jsonw *w, int64_t v);
void jw_bool(jsonw *w, bool v);
void jw_null(jsonw *w);

/* Appends members already rendered ("k":v,"k":v) into the open object,
 * with the comma they need. For fragments repeated across many objects. */
void jw_members(jsonw *w, const char *frag, size_t len);
/* The members written so far into w's open top-level object, for reuse
 * with jw_members: a pointer into w's buffer. */
const char *jw_open_members(const jsonw *w, size_t *len);

/* key + value in one call. */
void jw_kstr(jsonw *w, const char *key, const char *s);
void jw_kint(jsonw *w, const char *key, int64_t v);
/* A string value the program formatted itself and knows needs no escaping
 * (hex ids, RFC 3339 times, enum names): copied without scanning. */
void jw_kplain(jsonw *w, const char *key, const char *s);

#endif
