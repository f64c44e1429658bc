/* jsonw.c -- see jsonw.h. */
#include "http/jsonw.h"

#include <stdlib.h>
#include <string.h>

void jw_init(jsonw *w, size_t cap)
{
    memset(w, 0, sizeof *w);
    w->cap = cap ? cap : 256;
    w->buf = malloc(w->cap);
    w->failed = w->buf == NULL;
    w->first[0] = true;
}

void jw_free(jsonw *w)
{
    free(w->buf);
    memset(w, 0, sizeof *w);
}

bool jw_failed(const jsonw *w)
{
    return w->failed;
}

static bool reserve(jsonw *w, size_t n)
{
    if (w->failed) return false;
    if (w->len + n <= w->cap) return true;
    size_t cap = w->cap * 2;
    while (cap < w->len + n) cap *= 2;
    char *b = realloc(w->buf, cap);
    if (!b) {
        w->failed = true;
        return false;
    }
    w->buf = b;
    w->cap = cap;
    return true;
}

static void put(jsonw *w, const char *s, size_t n)
{
    if (!reserve(w, n)) return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void putc1(jsonw *w, char c)
{
    if (reserve(w, 1)) w->buf[w->len++] = c;
}

/* A comma before every value but the first of its container (keys carry
 * the comma for object members). */
static void value_prefix(jsonw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (!w->first[w->depth]) putc1(w, ',');
    w->first[w->depth] = false;
}

static void open(jsonw *w, char c)
{
    value_prefix(w);
    putc1(w, c);
    if (w->depth + 1 < JW_MAX_DEPTH) w->first[++w->depth] = true;
    else w->failed = true;
}

static void close(jsonw *w, char c)
{
    putc1(w, c);
    if (w->depth > 0) w->depth--;
}

void jw_obj(jsonw *w) { open(w, '{'); }
void jw_obj_end(jsonw *w) { close(w, '}'); }
void jw_arr(jsonw *w) { open(w, '['); }
void jw_arr_end(jsonw *w) { close(w, ']'); }

static void escaped(jsonw *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (!reserve(w, n + 2)) return;
    w->buf[w->len++] = '"';
    /* Bytes that need escaping: controls, quote, backslash. */
    static const bool special[256] = {
        [0 ... 0x1f] = true, ['"'] = true, ['\\'] = true,
    };
    size_t run = 0; /* bytes copied in one go when nothing needs escaping */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!special[c]) continue;
        put(w, s + run, i - run);
        run = i + 1;
        char e[6] = {'\\', 0};
        switch (c) {
        case '"': e[1] = '"'; put(w, e, 2); break;
        case '\\': e[1] = '\\'; put(w, e, 2); break;
        case '\n': e[1] = 'n'; put(w, e, 2); break;
        case '\r': e[1] = 'r'; put(w, e, 2); break;
        case '\t': e[1] = 't'; put(w, e, 2); break;
        default:
            e[1] = 'u'; e[2] = '0'; e[3] = '0'; e[4] = hex[c >> 4]; e[5] = hex[c & 15];
            put(w, e, 6);
        }
    }
    put(w, s + run, n - run);
    putc1(w, '"');
}

void jw_key(jsonw *w, const char *key)
{
    size_t n = strlen(key);
    if (!reserve(w, n + 4)) return;
    if (!w->first[w->depth]) w->buf[w->len++] = ',';
    w->first[w->depth] = false;
    w->buf[w->len++] = '"';
    memcpy(w->buf + w->len, key, n);
    w->len += n;
    w->buf[w->len++] = '"';
    w->buf[w->len++] = ':';
    w->after_key = true;
}

void jw_kplain(jsonw *w, const char *key, const char *s)
{
    size_t n = strlen(s);
    jw_key(w, key);
    w->after_key = false;
    if (!reserve(w, n + 2)) return;
    w->buf[w->len++] = '"';
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len++] = '"';
}

void jw_strn(jsonw *w, const char *s, size_t n)
{
    value_prefix(w);
    escaped(w, s, n);
}

void jw_str(jsonw *w, const char *s)
{
    jw_strn(w, s ? s : "", s ? strlen(s) : 0);
}

void jw_int(jsonw *w, int64_t v)
{
    char buf[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do buf[sizeof buf - 1 - n++] = (char)('0' + u % 10); while ((u /= 10) > 0);
    if (v < 0) buf[sizeof buf - 1 - n++] = '-';
    value_prefix(w);
    put(w, buf + sizeof buf - n, (size_t)n);
}

void jw_bool(jsonw *w, bool v)
{
    value_prefix(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(jsonw *w)
{
    value_prefix(w);
    put(w, "null", 4);
}

void jw_kstr(jsonw *w, const char *key, const char *s)
{
    jw_key(w, key);
    jw_str(w, s);
}

void jw_kint(jsonw *w, const char *key, int64_t v)
{
    jw_key(w, key);
    jw_int(w, v);
}

void jw_members(jsonw *w, const char *frag, size_t len)
{
    if (len == 0) return;
    if (!w->first[w->depth]) putc1(w, ',');
    w->first[w->depth] = false;
    put(w, frag, len);
}

const char *jw_open_members(const jsonw *w, size_t *len)
{
    *len = w->len > 0 ? w->len - 1 : 0; /* after the opening brace */
    return w->buf ? w->buf + 1 : "";
}
