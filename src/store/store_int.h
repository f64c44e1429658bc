/* store_int.h -- what store.c shares with the two backends. Not for callers
 * outside src/store (and the store's own unit tests).
 *
 * store.c owns everything backend-neutral: URL dispatch, the per-connection
 * statement cache, parameter scanning/rewriting and parameter storage.
 * Bindings are kept here, not pushed into the backend at bind time, so the
 * hot path never allocates: text goes into a per-statement buffer that keeps
 * its capacity across resets, and the backend reads the parameters once, at
 * the first store_step after a reset.
 */
#ifndef CHIME_STORE_INT_H
#define CHIME_STORE_INT_H

#include "store/store.h"

#define STORE_ERRLEN 512
/* SQLite's default SQLITE_MAX_VARIABLE_NUMBER; PostgreSQL allows more. */
#define STORE_MAX_PARAMS 32766
/* The cache never evicts (callers hold statement pointers), so SQL text must
 * come from a bounded set; past this many distinct texts store_prepare fails. */
#define STORE_MAX_STMTS 4096
/* A text buffer grown past this is released at reset rather than kept. */
#define STORE_KEEP_TEXT_BYTES (256 * 1024)

typedef enum store_param_kind { STORE_P_NULL = 0, STORE_P_INT, STORE_P_TEXT } store_param_kind;

typedef struct store_param {
    store_param_kind kind;
    int64_t i;
    size_t off, len;           /* text: bytes at stmt->text + off, NUL follows */
} store_param;

typedef enum store_stmt_state {
    STORE_ST_READY = 0,        /* reset: bindable, not executed */
    STORE_ST_ROW,              /* positioned on a row */
    STORE_ST_DONE,             /* finished; steps return STORE_DONE until reset */
    STORE_ST_FAILED,           /* failed; steps return `failed_rc` until reset */
} store_stmt_state;

struct store_stmt {
    store *s;
    store_stmt *next;          /* hash chain */
    uint32_t hash;
    char *sql;                 /* the caller's text: the cache key */
    const char *addr;          /* where the caller's text was last time */
    int nparams;
    store_param *params;       /* nparams entries */
    char *text;                /* bound text, NUL-separated */
    size_t text_len, text_cap;
    store_stmt_state state;
    bool bound;                /* something was bound since the last reset */
    int failed_rc;
    int64_t changes;
};

typedef struct store_ops {
    store_backend backend;
    void (*close)(store *s);
    int (*exec)(store *s, const char *sql);
    int (*begin)(store *s);
    int (*commit)(store *s);
    int (*rollback)(store *s);
    /* Allocates the backend's statement (embedding store_stmt) for the text
     * `sql`, whose parameters store.c has already counted. */
    store_stmt *(*stmt_new)(store *s, const char *sql, int nparams);
    void (*stmt_free)(store_stmt *st);
    int (*step)(store_stmt *st);
    void (*reset)(store_stmt *st);
    bool (*col_is_null)(store_stmt *st, int col);
    int64_t (*col_int64)(store_stmt *st, int col);
    const char *(*col_text)(store_stmt *st, int col);
    size_t (*col_len)(store_stmt *st, int col);
    const char *now_sql;       /* one row, one BIGINT column: ms since epoch */
    int (*sync_log)(store *s); /* store_sync_log; NULL: nothing to do */
    int (*sync_data)(store *s); /* store_sync_data; NULL: nothing to do */
    int (*change_stamp)(store *s, store_stamp *out); /* NULL: cannot tell */
    bool (*writers_hold)(store *s);    /* store_writers_hold; NULL: false */
    void (*writers_release)(store *s); /* store_writers_release */
    bool (*disk_failed)(store *s);     /* store_disk_failed; NULL: false */
} store_ops;

/* Statements last prepared from a given address (see store_prepare): 64,
 * the top 6 bits of a multiplicative hash. */
#define STORE_ADDR_SLOTS 64

struct store {
    const store_ops *ops;
    store_stmt **buckets;
    size_t nbuckets, nstmts;
    store_stmt *by_addr[STORE_ADDR_SLOTS];
    char err[STORE_ERRLEN];
    bool (*guard)(void *ctx); /* store_set_guard; NULL: one thread owns it */
    void *guard_ctx;
};

extern const store_ops store_sqlite_ops;
extern const store_ops store_pg_ops;

/* Backend constructors; `target` is the URL without the "sqlite:" prefix
 * for SQLite, the whole URL for PostgreSQL. */
store *store_sqlite_open(const char *target, char *err, size_t errlen);
store *store_pg_open(const char *target, char *err, size_t errlen);

/* Common init for a freshly allocated backend struct. */
void store_base_init(store *s, const store_ops *ops);

/* printf into s->err; returns rc so callers can `return store_fail(...)`. */
int store_fail(store *s, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Scans SQL for $N parameters outside string literals, quoted identifiers
 * and comments. Writes the highest N to *maxp. If `out` is non-NULL (same
 * size as sql, NUL included) it receives the text with each such `$` turned
 * into `?` -- the SQLite spelling ?N, same length. Returns 0, or -1 with a
 * message in err for $0 or N > STORE_MAX_PARAMS. */
int store_sql_params(const char *sql, char *out, int *maxp, char *err, size_t errlen);

/* Calls fn on every cached statement (the PostgreSQL backend uses it to
 * forget server-side prepared statements after reconnecting). */
void store_cache_foreach(store *s, void (*fn)(store_stmt *st, void *arg), void *arg);

/* Releases parameter storage; backends call it from stmt_free. */
void store_stmt_base_free(store_stmt *st);

#endif
