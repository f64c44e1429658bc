/* store_pg.c -- the shared backend: libpq, one connection per store.
 *
 * Each cached statement is PQprepare'd once per connection under its own
 * name, lazily at its first execution so that integer parameters can be
 * declared bigint (an untyped `$1 + $2` does not resolve, and an untyped
 * `$1 - 1000` is inferred as int4, too small for millisecond times). Other
 * parameters are left for the server to infer. Parameters and results travel
 * as text.
 *
 * A lost connection is re-established at the start of the next call, unless
 * it was lost inside a transaction: then every call but store_rollback
 * reports STORE_CONN until the caller rolls back, so work meant to be atomic
 * is never silently continued in autocommit mode on a new connection.
 */
#include "store/store_int.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PG_INT8OID 20
#define STORE_STALE (-100)     /* internal: prepared plan outdated by DDL */

typedef struct pg_store {
    store base;
    PGconn *conn;
    unsigned next_name;
    bool in_tx;                /* a transaction is open, as last seen */
    bool conflict;             /* the last error was a deadlock or serialization failure */
} pg_store;

typedef struct pg_stmt {
    store_stmt base;
    char name[16];
    bool prepared;
    PGresult *res;
    int row, nrows;
    const char **values;       /* nparams each, one allocation */
    char (*num)[24];
    unsigned *types;
} pg_stmt;

#define PG(s) ((pg_store *)(s))

static void quiet_notices(void *arg, const char *msg) { (void)arg; (void)msg; }

static void trim_copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
    size_t len = strlen(dst);
    while (len && (dst[len - 1] == '\n' || dst[len - 1] == ' ')) dst[--len] = '\0';
}

static int sqlstate_rc(const char *state)
{
    if (!state)
        return STORE_ERROR;
    if (strncmp(state, "23", 2) == 0)
        return STORE_CONSTRAINT;
    if (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03"))
        return STORE_BUSY;
    if (strncmp(state, "08", 2) == 0)
        return STORE_CONN;
    return STORE_ERROR;
}

/* Inside a transaction as the server sees it, or as last seen before the
 * connection dropped (begun by store_begin or by hand with store_exec). */
static bool pg_in_tx(pg_store *p)
{
    PGTransactionStatusType t = PQtransactionStatus(p->conn);
    return p->in_tx || t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

static void note_tx(pg_store *p)
{
    PGTransactionStatusType t = PQtransactionStatus(p->conn);
    if (t == PQTRANS_IDLE || t == PQTRANS_INTRANS || t == PQTRANS_INERROR)
        p->in_tx = t != PQTRANS_IDLE;          /* UNKNOWN: keep what we knew */
}

/* Records the error of `res` (may be NULL) and returns its store code. */
static int pg_fail(store *s, PGresult *res)
{
    pg_store *p = PG(s);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    int rc = sqlstate_rc(state);
    p->conflict = state && (!strcmp(state, "40001") || !strcmp(state, "40P01"));
    if (PQstatus(p->conn) == CONNECTION_BAD)
        rc = STORE_CONN;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
    if (msg)
        snprintf(s->err, sizeof s->err, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
    else
        trim_copy(s->err, sizeof s->err, PQerrorMessage(p->conn));
    return rc;
}

static void forget_prepared(store_stmt *st, void *arg)
{
    (void)arg;
    ((pg_stmt *)st)->prepared = false;
}

/* Session settings, after every (re)connect. lock_timeout mirrors SQLite's
 * busy_timeout: a writer blocked longer than that gets STORE_BUSY. */
static int pg_session_setup(store *s)
{
    PGconn *c = PG(s)->conn;
    PQsetNoticeProcessor(c, quiet_notices, NULL);
    if (PQsetClientEncoding(c, "UTF8") != 0)
        return store_fail(s, STORE_ERROR, "cannot set client encoding UTF8");
    PGresult *res = PQexec(c, "SET lock_timeout = 5000");
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? STORE_OK : pg_fail(s, res);
    PQclear(res);
    return rc;
}

/* Called before anything is sent: reconnects a broken connection unless a
 * transaction died with it. */
static int pg_ready(store *s)
{
    pg_store *p = PG(s);
    if (PQstatus(p->conn) == CONNECTION_OK)
        return STORE_OK;
    if (p->in_tx)
        return store_fail(s, STORE_CONN, "connection lost inside a transaction; roll back");
    PQreset(p->conn);
    if (PQstatus(p->conn) != CONNECTION_OK) {
        char msg[STORE_ERRLEN];
        trim_copy(msg, sizeof msg, PQerrorMessage(p->conn));
        return store_fail(s, STORE_CONN, "connection lost: %s", msg);
    }
    store_cache_foreach(s, forget_prepared, NULL);
    return pg_session_setup(s);
}

static int pg_simple(store *s, const char *sql)
{
    PGresult *res = PQexec(PG(s)->conn, sql);
    note_tx(PG(s));
    ExecStatusType t = PQresultStatus(res);
    int rc = (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK || t == PGRES_EMPTY_QUERY)
                 ? STORE_OK : pg_fail(s, res);
    PQclear(res);
    return rc;
}

static int pg_exec(store *s, const char *sql)
{
    int rc = pg_ready(s);
    return rc < 0 ? rc : pg_simple(s, sql);
}

static int pg_begin(store *s)
{
    pg_store *p = PG(s);
    if (pg_in_tx(p))
        return store_fail(s, STORE_ERROR, "store_begin: already in a transaction");
    int rc = pg_exec(s, "BEGIN");
    if (rc == STORE_OK)
        p->in_tx = true;
    return rc;
}

/* PostgreSQL ends the transaction whatever COMMIT answers. */
static int pg_commit(store *s)
{
    pg_store *p = PG(s);
    if (!pg_in_tx(p))
        return store_fail(s, STORE_ERROR, "store_commit: no transaction");
    p->in_tx = false;
    if (PQstatus(p->conn) != CONNECTION_OK)
        return store_fail(s, STORE_CONN, "connection lost; transaction rolled back");
    bool aborted = PQtransactionStatus(p->conn) == PQTRANS_INERROR;
    PGresult *res = PQexec(p->conn, "COMMIT");
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? STORE_OK : pg_fail(s, res);
    /* COMMIT of a failed transaction "succeeds" as ROLLBACK. */
    if (rc == STORE_OK && (aborted || strcmp(PQcmdStatus(res), "ROLLBACK") == 0))
        rc = store_fail(s, STORE_ERROR,
                        "transaction aborted by an earlier error; rolled back");
    PQclear(res);
    return rc;
}

static int pg_rollback(store *s)
{
    pg_store *p = PG(s);
    if (!pg_in_tx(p))
        return STORE_OK;
    p->in_tx = false;
    if (PQstatus(p->conn) != CONNECTION_OK)
        return STORE_OK;                       /* the server already dropped it */
    return pg_simple(s, "ROLLBACK");
}

static void pg_close(store *s)
{
    PQfinish(PG(s)->conn);
    free(s);
}

static store_stmt *pg_stmt_new(store *s, const char *sql, int nparams)
{
    (void)sql;
    pg_store *p = PG(s);
    pg_stmt *st = calloc(1, sizeof *st);
    size_t n = (size_t)nparams;
    if (st && n) {
        st->values = calloc(n, sizeof *st->values);
        st->num = calloc(n, sizeof *st->num);
        st->types = calloc(n, sizeof *st->types);
    }
    if (!st || (n && (!st->values || !st->num || !st->types))) {
        if (st) { free(st->values); free(st->num); free(st->types); }
        free(st);
        store_fail(s, STORE_ERROR, "out of memory");
        return NULL;
    }
    snprintf(st->name, sizeof st->name, "chime_%u", p->next_name++);
    return &st->base;
}

static void pg_stmt_free(store_stmt *base)
{
    pg_stmt *st = (pg_stmt *)base;
    PQclear(st->res);
    free(st->values);
    free(st->num);
    free(st->types);
    store_stmt_base_free(base);
    free(st);
}

static int pg_run(store_stmt *base);

static int pg_prepare(store_stmt *base)
{
    pg_stmt *st = (pg_stmt *)base;
    for (int i = 0; i < base->nparams; i++)
        st->types[i] = base->params[i].kind == STORE_P_INT ? PG_INT8OID : 0;
    PGresult *res = PQprepare(PG(base->s)->conn, st->name, base->sql, base->nparams,
                              base->nparams ? st->types : NULL);
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? STORE_OK : pg_fail(base->s, res);
    PQclear(res);
    if (rc == STORE_OK)
        st->prepared = true;
    return rc;
}

static bool is_dml(const char *status)
{
    return !strncmp(status, "INSERT", 6) || !strncmp(status, "UPDATE", 6) ||
           !strncmp(status, "DELETE", 6) || !strncmp(status, "MERGE", 5);
}

/* After DDL changed a table's columns, the server refuses to run a statement
 * prepared against the old shape ("cached plan must not change result
 * type"). Outside a transaction nothing has run, so prepare it afresh. */
static bool stale_plan(PGresult *res, store *s)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    return state && strcmp(state, "0A000") == 0 && !pg_in_tx(PG(s)) &&
           PQstatus(PG(s)->conn) == CONNECTION_OK;
}

static int pg_deallocate(store_stmt *base)
{
    pg_stmt *st = (pg_stmt *)base;
    char sql[40];
    snprintf(sql, sizeof sql, "DEALLOCATE %s", st->name);
    st->prepared = false;
    return pg_simple(base->s, sql);
}

static int pg_execute(store_stmt *base)
{
    pg_stmt *st = (pg_stmt *)base;
    int rc = pg_ready(base->s);
    if (rc < 0)
        return rc;
    for (int attempt = 0, busy = 0;; attempt++) {
        if (!st->prepared && (rc = pg_prepare(base)) < 0)
            return rc;
        rc = pg_run(base);
        /* A statement of its own (no transaction open) that lost a deadlock
         * or a serialization conflict (not a lock timeout: that already
         * waited its full time) was rolled back whole: nothing of it
         * happened, so run it again after a short, jittered pause. Inside a
         * transaction only the caller can redo the transaction. */
        if (rc == STORE_BUSY && PG(base->s)->conflict && !pg_in_tx(PG(base->s)) && busy++ < 4) {
            struct timespec now, pause;
            clock_gettime(CLOCK_MONOTONIC, &now);
            pause.tv_sec = 0;
            pause.tv_nsec = (long)busy * 5000000L + now.tv_nsec % 5000000L;
            nanosleep(&pause, NULL);
            continue;
        }
        if (rc != STORE_STALE || attempt > 0 || pg_deallocate(base) < 0)
            return rc == STORE_STALE ? STORE_ERROR : rc;
    }
}

static int pg_run(store_stmt *base)
{
    pg_stmt *st = (pg_stmt *)base;
    int rc;
    for (int i = 0; i < base->nparams; i++) {
        const store_param *p = &base->params[i];
        switch (p->kind) {
        case STORE_P_INT:
            snprintf(st->num[i], sizeof st->num[i], "%lld", (long long)p->i);
            st->values[i] = st->num[i];
            break;
        case STORE_P_TEXT: st->values[i] = base->text + p->off; break;
        default: st->values[i] = NULL; break;
        }
    }
    PGresult *res = PQexecPrepared(PG(base->s)->conn, st->name, base->nparams, st->values,
                                   NULL, NULL, 0);
    note_tx(PG(base->s));
    ExecStatusType t = PQresultStatus(res);
    if (t != PGRES_TUPLES_OK && t != PGRES_COMMAND_OK) {
        rc = pg_fail(base->s, res);
        if (stale_plan(res, base->s))
            rc = STORE_STALE;
        PQclear(res);
        return rc;
    }
    const char *status = PQcmdStatus(res);
    base->changes = is_dml(status) ? strtoll(PQcmdTuples(res), NULL, 10) : 0;
    st->res = res;
    st->row = 0;
    st->nrows = t == PGRES_TUPLES_OK ? PQntuples(res) : 0;
    return st->nrows > 0 ? STORE_ROW : STORE_DONE;
}

static int pg_step(store_stmt *base)
{
    pg_stmt *st = (pg_stmt *)base;
    if (base->state == STORE_ST_READY)
        return pg_execute(base);
    return ++st->row < st->nrows ? STORE_ROW : STORE_DONE;
}

static void pg_reset(store_stmt *base)
{
    pg_stmt *st = (pg_stmt *)base;
    PQclear(st->res);
    st->res = NULL;
    st->row = st->nrows = 0;
}

static bool cell_ok(pg_stmt *st, int col)
{
    return st->res && st->row < st->nrows && col < PQnfields(st->res);
}

static bool pg_col_is_null(store_stmt *base, int col)
{
    pg_stmt *st = (pg_stmt *)base;
    return !cell_ok(st, col) || PQgetisnull(st->res, st->row, col);
}

/* Booleans come back as t/f; reading them as 1/0 matches SQLite, where a
 * comparison or EXISTS yields an integer. */
static int64_t pg_col_int64(store_stmt *base, int col)
{
    pg_stmt *st = (pg_stmt *)base;
    if (!cell_ok(st, col))
        return 0;
    const char *v = PQgetvalue(st->res, st->row, col);
    if (v[0] == 't' && !v[1])
        return 1;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end == '.' || *end == 'e' || *end == 'E') {
        /* numeric or float8 (extract() yields numeric): truncate like SQLite */
        double d = strtod(v, NULL);
        if (d >= 9223372036854775807.0) return INT64_MAX;
        if (d <= -9223372036854775808.0) return INT64_MIN;
        return d == d ? (int64_t)d : 0;
    }
    return n;
}

static const char *pg_col_text(store_stmt *base, int col)
{
    pg_stmt *st = (pg_stmt *)base;
    return cell_ok(st, col) ? PQgetvalue(st->res, st->row, col) : NULL;
}

static size_t pg_col_len(store_stmt *base, int col)
{
    pg_stmt *st = (pg_stmt *)base;
    return cell_ok(st, col) ? (size_t)PQgetlength(st->res, st->row, col) : 0;
}

const store_ops store_pg_ops = {
    .backend = STORE_PG,
    .close = pg_close,
    .exec = pg_exec,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .stmt_new = pg_stmt_new,
    .stmt_free = pg_stmt_free,
    .step = pg_step,
    .reset = pg_reset,
    .col_is_null = pg_col_is_null,
    .col_int64 = pg_col_int64,
    .col_text = pg_col_text,
    .col_len = pg_col_len,
    .now_sql = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
};

store *store_pg_open(const char *url, char *err, size_t errlen)
{
    /* Defaults first: keywords inside the URL override them. */
    const char *keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *vals[] = {"10", "chime", url, NULL};
    pg_store *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    store_base_init(&p->base, &store_pg_ops);
    p->conn = PQconnectdbParams(keys, vals, 1);
    if (!p->conn || PQstatus(p->conn) != CONNECTION_OK) {
        char msg[STORE_ERRLEN];
        trim_copy(msg, sizeof msg, p->conn ? PQerrorMessage(p->conn) : "out of memory");
        snprintf(err, errlen, "postgres: %s", msg);
        PQfinish(p->conn);
        free(p);
        return NULL;
    }
    if (pg_session_setup(&p->base) < 0) {
        snprintf(err, errlen, "postgres: %s", p->base.err);
        PQfinish(p->conn);
        free(p);
        return NULL;
    }
    return &p->base;
}
