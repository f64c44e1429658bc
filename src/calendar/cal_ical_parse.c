/* cal_ical_parse.c -- iCalendar content lines into a component tree.
 *
 * RFC 5545 section 3.1: lines end in CRLF (a bare LF is accepted, as every
 * producer's files get converted somewhere), a line starting with a space or
 * tab continues the one before, and each unfolded line is
 * NAME *(";" param) ":" value. Everything is checked here so that a broken
 * file is refused with the number of the line that breaks it: invalid UTF-8,
 * control characters, a missing colon, an unterminated quoted parameter,
 * BEGIN/END that do not pair up. Blank lines are skipped (trailing newlines
 * are common). All memory comes from one arena owned by the ical_doc. */
#include "calendar/cal_ical.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena -------------------------------------------------------------- */

#define ARENA_BLOCK 65536

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    char data[];
} arena_block;

struct ical_arena {
    arena_block *head;
};

static void *arena_alloc(ical_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    arena_block *b = a->head;
    if (!b || b->size - b->used < n) {
        size_t size = n > ARENA_BLOCK / 2 ? n : ARENA_BLOCK;
        b = malloc(sizeof *b + size);
        if (!b) return NULL;
        b->used = 0;
        b->size = size;
        /* A big one-off block goes behind the head so the head keeps its room. */
        if (a->head && size != ARENA_BLOCK) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

static char *arena_strndup(ical_arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void ical_doc_free(ical_doc *d)
{
    if (!d->arena) return;
    arena_block *b = d->arena->head;
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    free(d->arena);
    memset(d, 0, sizeof *d);
}

/* ---- helpers ------------------------------------------------------------ */

static int fail(ical_err *err, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ical_err *err, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err->line = line;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    ical_utf8_sanitize(err->msg);
    return -1;
}

static bool is_name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

static void upcase(char *s)
{
    for (; *s; s++)
        if (*s >= 'a' && *s <= 'z') *s = (char)(*s - 32);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || c > 0xF4 || n > left) return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))) return 0; /* overlong, surrogates */
    if (n == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))) return 0;
    return n;
}

/* ---- one content line --------------------------------------------------- */

typedef struct ical_parser {
    ical_doc *doc;
    ical_err *err;
    ical_comp *stack[ICAL_MAX_DEPTH];
    ical_prop *last_prop[ICAL_MAX_DEPTH];
    ical_comp *last_sub[ICAL_MAX_DEPTH];
    ical_comp *last_root;
    int depth;
    size_t ncomps;
} ical_parser;

/* Splits "NAME;P=V:value" (already unfolded, NUL-terminated, in the arena). */
static int parse_prop(ical_parser *p, char *s, int line, ical_prop *out)
{
    char *q = s;
    while (is_name_char(*q)) q++;
    if (q == s) return fail(p->err, line, "expected a property name at the start of the line");
    if (*q != ';' && *q != ':')
        return fail(p->err, line, "%.*s: expected ';' or ':' after the name", (int)(q - s > 64 ? 64 : q - s), s);
    out->line = line;
    out->name = s;
    ical_param **tail = &out->params;
    char sep = *q;
    *q++ = '\0'; /* ends the name */
    while (sep == ';') {
        char *pn = q;
        while (is_name_char(*q)) q++;
        if (q == pn || *q != '=') return fail(p->err, line, "%s: expected NAME=value after ';'", out->name);
        *q++ = '\0';
        ical_param *prm = arena_alloc(p->doc->arena, sizeof *prm);
        if (!prm) return fail(p->err, line, "out of memory");
        upcase(pn);
        prm->name = pn;
        /* Values: quoted or plain, comma-separated; quotes are dropped in
         * place by shifting the text left (w never passes q). */
        char *w = q, *start = q;
        for (;;) {
            if (*q == '"') {
                q++;
                while (*q && *q != '"') *w++ = *q++;
                if (*q != '"') return fail(p->err, line, "parameter %s: unterminated quoted value", pn);
                q++;
            } else {
                while (*q && *q != ';' && *q != ':' && *q != ',' && *q != '"') *w++ = *q++;
                if (*q == '"') return fail(p->err, line, "parameter %s: a quote inside an unquoted value", pn);
            }
            if (*q != ',') break;
            *w++ = *q++;
        }
        if (*q != ';' && *q != ':') return fail(p->err, line, "parameter %s: expected ';' or ':' after its value", pn);
        sep = *q++;
        *w = '\0';
        prm->value = start;
        *tail = prm;
        tail = &prm->next;
    }
    if (sep != ':') return fail(p->err, line, "%s: missing ':' before the value", out->name);
    upcase(s);
    out->value = q;
    return 0;
}

static void append_comp(ical_parser *p, ical_comp *c)
{
    if (p->depth == 0) {
        if (p->last_root) p->last_root->next = c;
        else p->doc->roots = c;
        p->last_root = c;
        return;
    }
    int d = p->depth - 1;
    if (p->last_sub[d]) p->last_sub[d]->next = c;
    else p->stack[d]->subs = c;
    p->last_sub[d] = c;
}

static int handle_line(ical_parser *p, char *s, int line)
{
    ical_prop prop = {0};
    if (parse_prop(p, s, line, &prop) != 0) return -1;
    if (strcmp(prop.name, "BEGIN") == 0 || strcmp(prop.name, "END") == 0) {
        char *v = (char *)prop.value;
        const char *q = v;
        while (is_name_char(*q)) q++;
        if (q == v || *q || prop.params)
            return fail(p->err, line, "%s: expected a component name like VEVENT", prop.name);
        upcase(v);
        if (prop.name[0] == 'E') {
            if (p->depth == 0) return fail(p->err, line, "END:%s without a BEGIN", v);
            ical_comp *top = p->stack[p->depth - 1];
            if (strcmp(top->name, v) != 0)
                return fail(p->err, line, "END:%s does not close BEGIN:%s of line %d", v, top->name, top->line);
            p->depth--;
            return 0;
        }
        if (p->depth == 0 && strcmp(v, "VCALENDAR") != 0)
            return fail(p->err, line, "BEGIN:%s outside a VCALENDAR", v);
        if (p->depth == ICAL_MAX_DEPTH) return fail(p->err, line, "components nest deeper than %d", ICAL_MAX_DEPTH);
        if (++p->ncomps > 4 * ICAL_MAX_EVENTS) return fail(p->err, line, "too many components in one file");
        ical_comp *c = arena_alloc(p->doc->arena, sizeof *c);
        if (!c) return fail(p->err, line, "out of memory");
        c->name = v;
        c->line = line;
        append_comp(p, c);
        p->stack[p->depth] = c;
        p->last_prop[p->depth] = NULL;
        p->last_sub[p->depth] = NULL;
        p->depth++;
        return 0;
    }
    if (p->depth == 0) return fail(p->err, line, "%s outside BEGIN:VCALENDAR ... END:VCALENDAR", prop.name);
    ical_prop *np = arena_alloc(p->doc->arena, sizeof *np);
    if (!np) return fail(p->err, line, "out of memory");
    *np = prop;
    int d = p->depth - 1;
    if (p->last_prop[d]) p->last_prop[d]->next = np;
    else p->stack[d]->props = np;
    p->last_prop[d] = np;
    return 0;
}

/* ---- the file ----------------------------------------------------------- */

/* No control characters but tab on a physical line. */
static int check_controls(const char *s, size_t n, int line, ical_err *err)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7F)
            return fail(err, line, "control character 0x%02X at column %zu", c, i + 1);
    }
    return 0;
}

/* Valid UTF-8 on an unfolded line: checked after unfolding because some
 * producers fold in the middle of a character (RFC 5545 only says SHOULD NOT). */
static int check_utf8(const char *s, size_t n, int line, ical_err *err)
{
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len((const unsigned char *)s + i, n - i);
        if (k == 0) return fail(err, line, "invalid UTF-8 at byte %zu of the (unfolded) line", i + 1);
        i += k;
    }
    return 0;
}

static int flush_line(ical_parser *p, const char *cur, size_t n, int line)
{
    if (check_utf8(cur, n, line, p->err) != 0) return -1;
    char *logical = arena_strndup(p->doc->arena, cur, n);
    if (!logical) return fail(p->err, line, "out of memory");
    return handle_line(p, logical, line);
}

int ical_parse(const char *text, size_t len, ical_doc *out, ical_err *err)
{
    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    out->arena = calloc(1, sizeof *out->arena);
    if (!out->arena) return fail(err, 0, "out of memory");
    ical_parser p = {.doc = out, .err = err};
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3, len -= 3; /* a UTF-8 BOM */
    /* The logical line being unfolded: at most the file's size. */
    char *cur = arena_alloc(out->arena, len + 1);
    if (!cur) goto oom;
    size_t curlen = 0;
    int curline = 0, line = 0;
    bool have = false;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - i;
        const char *s = text + i;
        line++;
        i = nl ? end + 1 : len;
        if (n > 0 && s[n - 1] == '\r') n--;
        if (check_controls(s, n, line, err) != 0) goto bad;
        if (n > 0 && (s[0] == ' ' || s[0] == '\t')) {
            if (!have) {
                fail(err, line, "a continuation line (starting with a space) with no line before it");
                goto bad;
            }
            memcpy(cur + curlen, s + 1, n - 1);
            curlen += n - 1;
            continue;
        }
        if (have && flush_line(&p, cur, curlen, curline) != 0) goto bad;
        have = n > 0;
        curlen = 0;
        curline = line;
        memcpy(cur, s, n);
        curlen = n;
    }
    if (have && flush_line(&p, cur, curlen, curline) != 0) goto bad;
    if (p.depth > 0) {
        ical_comp *open = p.stack[p.depth - 1];
        fail(err, open->line, "BEGIN:%s is never closed by END:%s", open->name, open->name);
        goto bad;
    }
    if (!out->roots) {
        fail(err, line ? 1 : 0, "not an iCalendar file: no BEGIN:VCALENDAR");
        goto bad;
    }
    return 0;
oom:
    fail(err, 0, "out of memory");
bad:
    ical_doc_free(out);
    return -1;
}

const char *ical_param_get(const ical_prop *p, const char *name)
{
    for (const ical_param *q = p->params; q; q = q->next)
        if (strcmp(q->name, name) == 0) return q->value;
    return NULL;
}

const ical_prop *ical_prop_get(const ical_comp *c, const char *name)
{
    for (const ical_prop *p = c->props; p; p = p->next)
        if (strcmp(p->name, name) == 0) return p;
    return NULL;
}

void ical_utf8_sanitize(char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len((const unsigned char *)s + i, n - i);
        if (k == 0) s[i++] = '?';
        else i += k;
    }
}

char *ical_text_unescape(const char *v)
{
    size_t n = strlen(v);
    char *out = malloc(n + 1), *w = out;
    if (!out) return NULL;
    for (const char *s = v; *s; s++) {
        if (*s == '\\' && s[1]) {
            s++;
            *w++ = (*s == 'n' || *s == 'N') ? '\n' : *s;
        } else {
            *w++ = *s;
        }
    }
    *w = '\0';
    return out;
}
