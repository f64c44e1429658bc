/* store.c -- backend-neutral half of the store: URL dispatch, the statement
 * cache, $N scanning and parameter storage. See store_int.h for the split. */
#include "store/store_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- open */

store *store_open(const char *url, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!url) {
        snprintf(err, errlen, "store_open: no URL");
        return NULL;
    }
    if (strncmp(url, "sqlite:", 7) == 0)
        return store_sqlite_open(url + 7, err, errlen);
    if (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0)
        return store_pg_open(url, err, errlen);
    snprintf(err, errlen,
             "store_open: unsupported URL (want sqlite:PATH, postgres:// or postgresql://)");
    return NULL;
}

void store_base_init(store *s, const store_ops *ops)
{
    s->ops = ops;
    s->buckets = NULL;
    s->nbuckets = s->nstmts = 0;
    s->err[0] = '\0';
    s->guard = NULL;
    s->guard_ctx = NULL;
}

void store_set_guard(store *s, bool (*held)(void *ctx), void *ctx)
{
    s->guard = held;
    s->guard_ctx = ctx;
}

/* A programming error, not a runtime condition: stop before the connection
 * is corrupted (see store_set_guard). */
static void guard_check(store *s, const char *call)
{
    if (s->guard && !s->guard(s->guard_ctx)) {
        fprintf(stderr, "chime: BUG: %s on a shared database connection without its lock\n", call);
        abort();
    }
}

static void cache_free_all(store *s)
{
    for (size_t b = 0; b < s->nbuckets; b++) {
        store_stmt *st = s->buckets[b];
        while (st) {
            store_stmt *next = st->next;
            s->ops->stmt_free(st);
            st = next;
        }
    }
    free(s->buckets);
    s->buckets = NULL;
    s->nbuckets = s->nstmts = 0;
    memset(s->by_addr, 0, sizeof s->by_addr);
}

void store_close(store *s)
{
    if (!s)
        return;
    cache_free_all(s);   /* statements first: SQLite refuses to close with live ones */
    s->ops->close(s);
}

store_backend store_backend_of(const store *s) { return s->ops->backend; }

const char *store_errmsg(const store *s) { return s ? s->err : "no store"; }

int store_fail(store *s, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return rc;
}

/* -------------------------------------------------------- transactions */

int store_begin(store *s)
{
    guard_check(s, "store_begin");
    return s->ops->begin(s);
}

int store_commit(store *s)
{
    guard_check(s, "store_commit");
    return s->ops->commit(s);
}

int store_rollback(store *s)
{
    guard_check(s, "store_rollback");
    return s->ops->rollback(s);
}

int store_exec(store *s, const char *sql)
{
    guard_check(s, "store_exec");
    return s->ops->exec(s, sql);
}

int store_change_stamp(store *s, store_stamp *out)
{
    return s->ops->change_stamp ? s->ops->change_stamp(s, out) : STORE_ERROR;
}

int store_sync_log(store *s)
{
    return s->ops->sync_log ? s->ops->sync_log(s) : STORE_OK;
}

int store_sync_data(store *s)
{
    return s->ops->sync_data ? s->ops->sync_data(s) : STORE_OK;
}

bool store_writers_hold(store *s)
{
    return s->ops->writers_hold && s->ops->writers_hold(s);
}

void store_writers_release(store *s)
{
    if (s->ops->writers_release) s->ops->writers_release(s);
}

bool store_disk_failed(store *s)
{
    return s->ops->disk_failed && s->ops->disk_failed(s);
}

/* ------------------------------------------------------ $N parameters */

static bool is_ident_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c >= 0x80;
}

/* At p (a '$'), a PostgreSQL dollar-quote opener "$tag$" or "$$"? Returns its
 * length, or 0. Tags do not start with a digit, so "$1" is never one. */
static size_t dollar_tag_len(const char *p)
{
    size_t n = 1;
    if (!((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') || p[n] == '_' ||
          p[n] == '$'))
        return 0;
    while (p[n] && p[n] != '$') {
        unsigned char c = (unsigned char)p[n];
        if (!is_ident_byte(c))
            return 0;
        n++;
    }
    return p[n] == '$' ? n + 1 : 0;
}

/* Skips from p (an opening quote q) past the closing one; doubled quotes
 * are escapes. Unterminated literals run to the end. */
static const char *skip_quoted(const char *p, char q)
{
    p++;
    while (*p) {
        if (*p == q) {
            if (p[1] == q) { p += 2; continue; }
            return p + 1;
        }
        p++;
    }
    return p;
}

int store_sql_params(const char *sql, char *out, int *maxp, char *err, size_t errlen)
{
    int max = 0;
    const char *p = sql;
    if (out)
        memcpy(out, sql, strlen(sql) + 1);
    while (*p) {
        if (*p == '\'' || *p == '"') {
            p = skip_quoted(p, *p);
        } else if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else if (*p == '$' && p > sql && is_ident_byte((unsigned char)p[-1])) {
            p++;                               /* inside an identifier like a$1 */
        } else if (*p == '$' && p[1] >= '0' && p[1] <= '9') {
            const char *q = p + 1;
            long n = 0;
            while (*q >= '0' && *q <= '9') {
                if (n <= STORE_MAX_PARAMS) n = n * 10 + (*q - '0');
                q++;
            }
            if (n == 0 || n > STORE_MAX_PARAMS) {
                snprintf(err, errlen, "bad parameter %.*s (want $1..$%d)",
                         (int)(q - p > 12 ? 12 : q - p), p, STORE_MAX_PARAMS);
                return -1;
            }
            if (n > max) max = (int)n;
            if (out) out[p - sql] = '?';
            p = q;
        } else if (*p == '$' && dollar_tag_len(p)) {
            size_t tl = dollar_tag_len(p);
            const char *body = p + tl, *end = body;
            while ((end = strchr(end, '$')) && strncmp(end, p, tl) != 0) end++;
            p = end ? end + tl : body + strlen(body);
        } else {
            p++;
        }
    }
    *maxp = max;
    return 0;
}

/* ---------------------------------------------------- statement cache */

static uint32_t sql_hash(const char *s)
{
    uint32_t h = 2166136261u;                  /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int cache_grow(store *s)
{
    size_t n = s->nbuckets ? s->nbuckets * 2 : 64;
    store_stmt **b = calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < s->nbuckets; i++) {
        store_stmt *st = s->buckets[i];
        while (st) {
            store_stmt *next = st->next;
            st->next = b[st->hash & (n - 1)];
            b[st->hash & (n - 1)] = st;
            st = next;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
    return 0;
}

void store_cache_foreach(store *s, void (*fn)(store_stmt *st, void *arg), void *arg)
{
    for (size_t b = 0; b < s->nbuckets; b++)
        for (store_stmt *st = s->buckets[b]; st; st = st->next) fn(st, arg);
}

void store_stmt_base_free(store_stmt *st)
{
    free(st->sql);
    free(st->params);
    free(st->text);
}

/* A cached statement, ready: one left mid-iteration is reset, so a
 * forgotten store_reset cannot leak state into the next request. */
static store_stmt *prepared(store_stmt *st)
{
    if (st->state != STORE_ST_READY || st->bound) store_reset(st);
    return st;
}

store_stmt *store_prepare(store *s, const char *sql)
{
    if (!sql) {
        store_fail(s, STORE_ERROR, "store_prepare: no SQL");
        return NULL;
    }
    guard_check(s, "store_prepare");
    /* SQL comes from string literals, so the same text mostly comes from
     * the same address: a slot by address, confirmed by strcmp (a buffer
     * reused for another text must not match), skips hashing the text,
     * which was 4% of the chat writer's instructions. */
    store_stmt **slot = &s->by_addr[(uint64_t)(uintptr_t)sql * 0x9E3779B97F4A7C15ull >> 58];
    store_stmt *st = *slot;
    if (st && st->addr == sql && strcmp(st->sql, sql) == 0) return prepared(st);
    uint32_t h = sql_hash(sql);
    if (s->nbuckets) {
        for (st = s->buckets[h & (s->nbuckets - 1)]; st; st = st->next) {
            if (st->hash == h && strcmp(st->sql, sql) == 0) {
                st->addr = sql;
                *slot = st;
                return prepared(st);
            }
        }
    }
    if (s->nstmts >= STORE_MAX_STMTS) {
        store_fail(s, STORE_ERROR, "statement cache full (%d distinct SQL texts); "
                   "SQL must come from a fixed set of strings", STORE_MAX_STMTS);
        return NULL;
    }
    int nparams;
    if (store_sql_params(sql, NULL, &nparams, s->err, sizeof s->err) < 0)
        return NULL;
    if (s->nstmts >= s->nbuckets && cache_grow(s) < 0) {
        store_fail(s, STORE_ERROR, "out of memory");
        return NULL;
    }
    st = s->ops->stmt_new(s, sql, nparams);
    if (!st)
        return NULL;
    st->s = s;
    st->hash = h;
    st->nparams = nparams;
    st->sql = strdup(sql);
    st->params = nparams ? calloc((size_t)nparams, sizeof *st->params) : NULL;
    if (!st->sql || (nparams && !st->params)) {
        s->ops->stmt_free(st);
        store_fail(s, STORE_ERROR, "out of memory");
        return NULL;
    }
    st->next = s->buckets[h & (s->nbuckets - 1)];
    s->buckets[h & (s->nbuckets - 1)] = st;
    s->nstmts++;
    st->addr = sql;
    *slot = st;
    return st;
}

/* ------------------------------------------------------------ binding */

static store_param *bind_slot(store_stmt *st, int idx)
{
    if (!st)
        return NULL;
    if (st->state != STORE_ST_READY) {
        store_fail(st->s, STORE_ERROR, "bind after store_step without store_reset");
        return NULL;
    }
    if (idx < 1 || idx > st->nparams) {
        store_fail(st->s, STORE_ERROR, "parameter $%d out of range (statement has %d)", idx,
                   st->nparams);
        return NULL;
    }
    st->bound = true;
    return &st->params[idx - 1];
}

int store_bind_int64(store_stmt *st, int idx, int64_t v)
{
    store_param *p = bind_slot(st, idx);
    if (!p)
        return STORE_ERROR;
    p->kind = STORE_P_INT;
    p->i = v;
    return STORE_OK;
}

int store_bind_text(store_stmt *st, int idx, const char *v, size_t len)
{
    if (!v)
        return store_bind_null(st, idx);
    store_param *p = bind_slot(st, idx);
    if (!p)
        return STORE_ERROR;
    if (len > SIZE_MAX / 2 - st->text_len - 1)
        return store_fail(st->s, STORE_ERROR, "text parameter too large");
    size_t need = st->text_len + len + 1;
    if (need > st->text_cap) {
        size_t cap = st->text_cap ? st->text_cap : 256;
        while (cap < need) cap *= 2;
        char *t = realloc(st->text, cap);
        if (!t)
            return store_fail(st->s, STORE_ERROR, "out of memory");
        st->text = t;
        st->text_cap = cap;
    }
    memcpy(st->text + st->text_len, v, len);
    st->text[st->text_len + len] = '\0';       /* libpq's text format wants it */
    p->kind = STORE_P_TEXT;
    p->off = st->text_len;
    p->len = len;
    st->text_len = need;
    return STORE_OK;
}

int store_bind_str(store_stmt *st, int idx, const char *v)
{
    return v ? store_bind_text(st, idx, v, strlen(v)) : store_bind_null(st, idx);
}

int store_bind_null(store_stmt *st, int idx)
{
    store_param *p = bind_slot(st, idx);
    if (!p)
        return STORE_ERROR;
    p->kind = STORE_P_NULL;
    return STORE_OK;
}

/* ---------------------------------------------------- step and columns */

int store_step(store_stmt *st)
{
    if (!st)
        return STORE_ERROR;                    /* store_prepare failed; errmsg says why */
    switch (st->state) {
    case STORE_ST_DONE: return STORE_DONE;
    case STORE_ST_FAILED: return st->failed_rc;
    default: break;
    }
    guard_check(st->s, "store_step");
    int rc = st->s->ops->step(st);
    if (rc == STORE_ROW) {
        st->state = STORE_ST_ROW;
    } else if (rc == STORE_DONE) {
        st->state = STORE_ST_DONE;
    } else {
        st->state = STORE_ST_FAILED;
        st->failed_rc = rc;
    }
    return rc;
}

void store_reset(store_stmt *st)
{
    if (!st)
        return;
    guard_check(st->s, "store_reset");
    st->s->ops->reset(st);
    if (st->nparams) memset(st->params, 0, (size_t)st->nparams * sizeof *st->params);
    st->text_len = 0;
    if (st->text_cap > STORE_KEEP_TEXT_BYTES) {
        free(st->text);
        st->text = NULL;
        st->text_cap = 0;
    }
    st->state = STORE_ST_READY;
    st->bound = false;
}

static bool col_ok(store_stmt *st, int col)
{
    return st && st->state == STORE_ST_ROW && col >= 0;
}

bool store_col_is_null(store_stmt *st, int col)
{
    return col_ok(st, col) ? st->s->ops->col_is_null(st, col) : true;
}

int64_t store_col_int64(store_stmt *st, int col)
{
    return col_ok(st, col) ? st->s->ops->col_int64(st, col) : 0;
}

const char *store_col_text(store_stmt *st, int col)
{
    const char *t = col_ok(st, col) ? st->s->ops->col_text(st, col) : NULL;
    return t ? t : "";
}

size_t store_col_len(store_stmt *st, int col)
{
    return col_ok(st, col) ? st->s->ops->col_len(st, col) : 0;
}

int64_t store_changes(store_stmt *st) { return st ? st->changes : 0; }

/* ------------------------------------------------------------ helpers */

int store_query_int64(store *s, const char *sql, int64_t *out)
{
    store_stmt *st = store_prepare(s, sql);
    if (!st)
        return STORE_ERROR;
    int rc = store_step(st);
    if (rc == STORE_ROW && out)
        *out = store_col_int64(st, 0);
    store_reset(st);
    return rc;
}

char *store_ids_json(const int64_t *ids, size_t n)
{
    char *out = malloc(n * 21 + 3), *p = out; /* 20 digits and a comma each */
    if (!out) return NULL;
    *p++ = '[';
    for (size_t i = 0; i < n; i++) {
        if (i && ids[i] == ids[i - 1]) continue;
        p += sprintf(p, "%s%lld", p == out + 1 ? "" : ",", (long long)ids[i]);
    }
    *p++ = ']';
    *p = '\0';
    return out;
}

int store_now_ms(store *s, int64_t *out)
{
    int rc = store_query_int64(s, s->ops->now_sql, out);
    if (rc == STORE_ROW)
        return STORE_OK;
    return rc < 0 ? rc : store_fail(s, STORE_ERROR, "clock query returned no row");
}
