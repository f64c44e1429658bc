/* store_sqlite.c -- the embedded backend: one sqlite3 connection per store,
 * WAL journal, 5 s busy timeout, foreign keys on. Writers of one process
 * queue for the file in store_sqlite_lock.c before they meet SQLite's lock.
 *
 * Transactions follow PostgreSQL's rule: once a statement fails inside a
 * transaction, the transaction is aborted -- further statements fail and
 * COMMIT rolls back. SQLite alone would carry on and commit the rest, so code
 * that only ever ran on SQLite could pass its tests and then break on
 * PostgreSQL; this way both backends behave alike.
 */
#include "store/store_int.h"
#include "store/store_sqlite_lock.h"
#include "store/store_sqlite_vfs.h"

#include "base/base.h"

#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* How long a writer queues for the file, in this process and then in
 * SQLite's busy handler (each). */
#define SQ_BUSY_MS STORE_BUSY_MS

typedef struct sqlite_store {
    store base;
    sqlite3 *db;
    bool tx_failed;            /* a statement failed in the open transaction */
    sqlite_wlock *wlock;       /* the file's writer queue; NULL in memory */
    bool wlocked;              /* held for the open write transaction */
    bool held;                 /* held by store_writers_hold */
    int log_fd, data_fd;       /* store_sync_log's and store_sync_data's (-1: not open yet) */
} sqlite_store;

typedef struct sqlite_stmt {
    store_stmt base;
    sqlite3_stmt *vm;
    bool readonly;
    bool writes;               /* a change outside a transaction queues (not PRAGMAs) */
    bool wlocked;              /* held while this statement runs on its own */
    int64_t total_before;      /* sqlite3_total_changes64 when execution began */
} sqlite_stmt;

#define DB(s) (((sqlite_store *)(s))->db)
#define VM(st) (((sqlite_stmt *)(st))->vm)

static int map_rc(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_CONSTRAINT: return STORE_CONSTRAINT;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return STORE_BUSY;
    default: return STORE_ERROR;
    }
}

static void mark_failed(store *s)
{
    if (!sqlite3_get_autocommit(DB(s)))
        ((sqlite_store *)s)->tx_failed = true;
}

/* A sync to disk failed: the file is failed for every connection of the
 * process (disk_refuse), and the log says so once. */
static void file_fail(sqlite_store *ss, const char *why)
{
    if (!sqlite_wlock_failed(ss->wlock))
        log_error("sqlite: a sync to disk failed (%s); no write is taken until chime restarts", why);
    sqlite_wlock_fail(ss->wlock);
}

/* rc: an extended result code; a sync SQLite itself ran (a commit's, a
 * checkpoint's) failed? */
static void note_sync_error(store *s, int rc)
{
    if (rc == SQLITE_IOERR_FSYNC || rc == SQLITE_IOERR_DIR_FSYNC)
        file_fail((sqlite_store *)s, sqlite3_errmsg(DB(s)));
}

/* Once a sync of the file failed, nothing more is written to it: what the
 * disk lost is a hole under every later commit (store_disk_failed). */
static int disk_refuse(store *s)
{
    if (!sqlite_wlock_failed(((sqlite_store *)s)->wlock)) return STORE_OK;
    mark_failed(s);
    return store_fail(s, STORE_ERROR, STORE_DISK_FAILED_MSG);
}

static int sq_fail(store *s, int rc)
{
    note_sync_error(s, rc);
    mark_failed(s);
    return store_fail(s, map_rc(rc), "%s", sqlite3_errmsg(DB(s)));
}

static int check_not_aborted(store *s)
{
    sqlite_store *ss = (sqlite_store *)s;
    if (sqlite3_get_autocommit(ss->db))
        ss->tx_failed = false;                 /* SQLite may end one by itself */
    if (ss->tx_failed)
        return store_fail(s, STORE_ERROR, "transaction aborted by an earlier error; "
                                          "commands ignored until store_rollback");
    return STORE_OK;
}

/* Queues for the file, then leaves SQLite's lock what is left of the
 * busy timeout, so the whole wait is bounded as it was before the queue.
 * True if it shortened the busy timeout: busy_restore after the lock. */
static bool wlock_take(sqlite3 *db, sqlite_wlock *l, bool *held)
{
    if (!l || *held) return false;
    int64_t t0 = base_mono_ns();
    *held = sqlite_wlock_lock(l, SQ_BUSY_MS);
    int64_t waited = (base_mono_ns() - t0) / 1000000;
    if (waited <= 0) return false;
    sqlite3_busy_timeout(db, waited < SQ_BUSY_MS ? SQ_BUSY_MS - (int)waited : 1);
    return true;
}

static void busy_restore(sqlite3 *db)
{
    sqlite3_busy_timeout(db, SQ_BUSY_MS);
}

/* Once the transaction is over (committed, rolled back, or ended by
 * SQLite itself), the next writer goes. */
static void wlock_drop_if_done(sqlite_store *ss)
{
    if (ss->wlocked && sqlite3_get_autocommit(ss->db)) {
        ss->wlocked = false;
        sqlite_wlock_unlock(ss->wlock);
    }
}

static int raw_exec(store *s, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(DB(s), sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        note_sync_error(s, sqlite3_extended_errcode(DB(s)));
        mark_failed(s);
        store_fail(s, map_rc(rc), "%s", msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return map_rc(rc);
    }
    return STORE_OK;
}

static int sq_exec(store *s, const char *sql)
{
    int rc = check_not_aborted(s);
    return rc < 0 ? rc : raw_exec(s, sql);
}

static int sq_begin(store *s)
{
    if (!sqlite3_get_autocommit(DB(s)))
        return store_fail(s, STORE_ERROR, "store_begin: already in a transaction");
    sqlite_store *ss = (sqlite_store *)s;
    ss->tx_failed = false;
    if (disk_refuse(s) < 0) return STORE_ERROR;
    bool shortened = wlock_take(ss->db, ss->wlock, &ss->wlocked);
    int rc = raw_exec(s, "BEGIN IMMEDIATE");
    if (shortened) busy_restore(ss->db);
    wlock_drop_if_done(ss);
    return rc;
}

/* A failed COMMIT leaves SQLite's transaction open (PostgreSQL ends it);
 * roll back so that on both backends a failed commit means nothing happened. */
static int sq_commit(store *s)
{
    sqlite_store *ss = (sqlite_store *)s;
    if (sqlite3_get_autocommit(ss->db))
        return store_fail(s, STORE_ERROR, "store_commit: no transaction");
    int rc = ss->tx_failed ? store_fail(s, STORE_ERROR, "transaction aborted by an earlier "
                                                        "error; rolled back")
             : disk_refuse(s) < 0 ? STORE_ERROR
                                  : raw_exec(s, "COMMIT");
    if (rc < 0 && !sqlite3_get_autocommit(ss->db)) {
        char keep[STORE_ERRLEN];
        memcpy(keep, s->err, sizeof keep);
        sqlite3_exec(ss->db, "ROLLBACK", NULL, NULL, NULL);
        memcpy(s->err, keep, sizeof keep);
    }
    ss->tx_failed = false;
    wlock_drop_if_done(ss);
    return rc;
}

/* SQLite rolls back by itself on some errors; rolling back nothing is fine. */
static int sq_rollback(store *s)
{
    sqlite_store *ss = (sqlite_store *)s;
    ss->tx_failed = false;
    int rc = sqlite3_get_autocommit(ss->db) ? STORE_OK : raw_exec(s, "ROLLBACK");
    wlock_drop_if_done(ss);
    return rc;
}

static void sq_close(store *s)
{
    sqlite_store *ss = (sqlite_store *)s;
    sqlite3_close_v2(ss->db);
    if (ss->log_fd >= 0) close(ss->log_fd);
    if (ss->data_fd >= 0) close(ss->data_fd);
    if (ss->wlocked) sqlite_wlock_unlock(ss->wlock);
    if (ss->held) sqlite_wlock_unlock(ss->wlock);
    sqlite_wlock_release(ss->wlock);
    free(s);
}

/* Is the rest after the first statement free of statements (comments,
 * blanks and semicolons only)? */
static bool only_trailer(sqlite3 *db, const char *tail)
{
    while (*tail) {
        sqlite3_stmt *vm = NULL;
        const char *next = NULL;
        if (sqlite3_prepare_v2(db, tail, -1, &vm, &next) != SQLITE_OK || vm) {
            sqlite3_finalize(vm);
            return false;
        }
        if (next == tail)
            break;
        tail = next;
    }
    return true;
}

static store_stmt *sq_stmt_new(store *s, const char *sql, int nparams)
{
    (void)nparams;
    size_t n = strlen(sql) + 1;
    char *text = malloc(n);
    sqlite_stmt *st = calloc(1, sizeof *st);
    int max;
    if (!text || !st) {
        free(text);
        free(st);
        store_fail(s, STORE_ERROR, "out of memory");
        return NULL;
    }
    store_sql_params(sql, text, &max, s->err, sizeof s->err);   /* counted already: ok */
    const char *tail = NULL;
    int rc = sqlite3_prepare_v3(DB(s), text, (int)n, SQLITE_PREPARE_PERSISTENT, &st->vm, &tail);
    if (rc != SQLITE_OK || !st->vm || (tail && !only_trailer(DB(s), tail))) {
        if (rc != SQLITE_OK)
            sq_fail(s, rc);
        else
            store_fail(s, STORE_ERROR, st->vm ? "store_prepare: more than one statement"
                                               : "store_prepare: empty statement");
        sqlite3_finalize(st->vm);
        free(text);
        free(st);
        return NULL;
    }
    free(text);
    st->readonly = sqlite3_stmt_readonly(st->vm) != 0;
    /* A PRAGMA is not a change to queue for: wal_checkpoint, above all,
     * must run beside the writers, not between them. */
    const char *p = sql;
    while (isspace((unsigned char)*p)) p++;
    st->writes = !st->readonly && strncasecmp(p, "PRAGMA", 6) != 0;
    return &st->base;
}

/* A change run outside a transaction queues for the file while it runs. */
static void stmt_wlock_drop(sqlite_stmt *ss)
{
    if (!ss->wlocked) return;
    ss->wlocked = false;
    sqlite_wlock_unlock(((sqlite_store *)ss->base.s)->wlock);
}

static void sq_stmt_free(store_stmt *st)
{
    stmt_wlock_drop((sqlite_stmt *)st);
    sqlite3_finalize(VM(st));
    store_stmt_base_free(st);
    free(st);
}

/* Text is bound SQLITE_STATIC from the statement's own buffer, which does not
 * move until the next reset -- so binding never makes SQLite copy. */
static int bind_all(store_stmt *st)
{
    sqlite3_stmt *vm = VM(st);
    for (int i = 0; i < st->nparams; i++) {
        const store_param *p = &st->params[i];
        int rc;
        switch (p->kind) {
        case STORE_P_INT: rc = sqlite3_bind_int64(vm, i + 1, p->i); break;
        case STORE_P_TEXT:
            rc = sqlite3_bind_text64(vm, i + 1, st->text + p->off, p->len, SQLITE_STATIC,
                                     SQLITE_UTF8);
            break;
        default: rc = sqlite3_bind_null(vm, i + 1); break;
        }
        if (rc != SQLITE_OK)
            return sq_fail(st->s, rc);
    }
    return STORE_OK;
}

/* sqlite3_changes64 is per connection and only moved by INSERT, UPDATE and
 * DELETE: after DDL or a query it still holds an older statement's count.
 * If nothing changed while this statement ran, its count is 0. */
static int64_t statement_changes(sqlite_stmt *ss)
{
    sqlite3 *db = DB(ss->base.s);
    if (ss->readonly || sqlite3_total_changes64(db) == ss->total_before)
        return 0;
    return sqlite3_changes64(db);
}

static int sq_step(store_stmt *st)
{
    sqlite_stmt *ss = (sqlite_stmt *)st;
    if (st->state == STORE_ST_READY) {
        int rc = check_not_aborted(st->s);
        if (rc == STORE_OK)
            rc = bind_all(st);
        if (rc < 0)
            return rc;
        ss->total_before = sqlite3_total_changes64(DB(st->s));
    }
    sqlite_store *conn = (sqlite_store *)st->s;
    bool alone = st->state == STORE_ST_READY && ss->writes && sqlite3_get_autocommit(conn->db);
    if (alone && disk_refuse(st->s) < 0) return STORE_ERROR;
    bool shortened = alone && wlock_take(conn->db, conn->wlock, &ss->wlocked);
    int rc = sqlite3_step(ss->vm);
    if (shortened) busy_restore(conn->db);
    if (rc == SQLITE_ROW)
        return STORE_ROW;
    stmt_wlock_drop(ss);
    if (rc == SQLITE_DONE) {
        st->changes = statement_changes(ss);
        return STORE_DONE;
    }
    return sq_fail(st->s, rc);
}

static void sq_reset(store_stmt *st)
{
    sqlite_stmt *ss = (sqlite_stmt *)st;
    sqlite3_reset(ss->vm);
    stmt_wlock_drop(ss);
    /* INSERT ... RETURNING read for one row and reset: the change count is
     * only final once the statement has run to completion or been reset. */
    if (st->state == STORE_ST_ROW)
        st->changes = statement_changes(ss);
}

static bool col_in(store_stmt *st, int col) { return col < sqlite3_column_count(VM(st)); }

static bool sq_col_is_null(store_stmt *st, int col)
{
    return !col_in(st, col) || sqlite3_column_type(VM(st), col) == SQLITE_NULL;
}

static int64_t sq_col_int64(store_stmt *st, int col)
{
    return col_in(st, col) ? sqlite3_column_int64(VM(st), col) : 0;
}

static const char *sq_col_text(store_stmt *st, int col)
{
    return col_in(st, col) ? (const char *)sqlite3_column_text(VM(st), col) : NULL;
}

static size_t sq_col_len(store_stmt *st, int col)
{
    if (!col_in(st, col))
        return 0;
    sqlite3_column_text(VM(st), col);          /* convert first, then measure */
    return (size_t)sqlite3_column_bytes(VM(st), col);
}

/* fdatasync on a descriptor of our own, opened at the first call and
 * kept: Linux reports a failed write-back once to each descriptor that
 * was open when it happened, and to one opened later only if no one was
 * told yet. Opened at each call (as it was), a sync could succeed after
 * another thread's sync of the same file had failed, and the frames that
 * never reached the disk would pass for written. The file stays the same
 * one while this connection is open (SQLite deletes the WAL only as the
 * last connection closes; emptying it truncates it in place). A file
 * that is not there yet has nothing to write. */
static int sync_path(store *s, const char *path, int *fd)
{
    if (disk_refuse(s) < 0) return STORE_ERROR;
    if (*fd < 0 && (*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno == ENOENT ? STORE_OK : store_fail(s, STORE_ERROR, "sync: %s: %s", path, strerror(errno));
    if (fdatasync(*fd) == 0) return STORE_OK;
    store_fail(s, STORE_ERROR, "sync: %s: %s", path, strerror(errno));
    file_fail((sqlite_store *)s, store_errmsg(s));
    return STORE_ERROR;
}

/* store_sync_log. No WAL (yet, or after the last connection closed):
 * nothing to write. */
static int sq_sync_log(store *s)
{
    const char *db = sqlite3_db_filename(DB(s), "main");
    if (!db || !*db) return STORE_OK; /* in memory: no file */
    return sync_path(s, sqlite3_filename_wal(db), &((sqlite_store *)s)->log_fd);
}

/* store_sync_data. */
static int sq_sync_data(store *s)
{
    const char *db = sqlite3_db_filename(DB(s), "main");
    return !db || !*db ? STORE_OK : sync_path(s, db, &((sqlite_store *)s)->data_fd);
}

/* store_writers_hold: the queue's turn, apart from any transaction's. */
static bool sq_writers_hold(store *s)
{
    sqlite_store *ss = (sqlite_store *)s;
    if (!ss->wlock || ss->held || ss->wlocked) return false;
    ss->held = sqlite_wlock_lock(ss->wlock, SQ_BUSY_MS);
    return ss->held;
}

static void sq_writers_release(store *s)
{
    sqlite_store *ss = (sqlite_store *)s;
    if (!ss->held) return;
    ss->held = false;
    sqlite_wlock_unlock(ss->wlock);
}

/* store_disk_failed. */
static bool sq_disk_failed(store *s)
{
    return sqlite_wlock_failed(((sqlite_store *)s)->wlock);
}

/* store_change_stamp. The count of this connection's changes is read
 * after data_version, so a commit of ours in between shows in one of them. */
static int sq_change_stamp(store *s, store_stamp *out)
{
    int64_t others;
    if (store_query_int64(s, "PRAGMA data_version", &others) != STORE_ROW) return STORE_ERROR;
    out->others = others;
    out->mine = sqlite3_total_changes64(DB(s));
    return STORE_OK;
}

const store_ops store_sqlite_ops = {
    .backend = STORE_SQLITE,
    .close = sq_close,
    .exec = sq_exec,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .stmt_new = sq_stmt_new,
    .stmt_free = sq_stmt_free,
    .step = sq_step,
    .reset = sq_reset,
    .col_is_null = sq_col_is_null,
    .col_int64 = sq_col_int64,
    .col_text = sq_col_text,
    .col_len = sq_col_len,
    .now_sql = "SELECT CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
    .sync_log = sq_sync_log,
    .sync_data = sq_sync_data,
    .change_stamp = sq_change_stamp,
    .writers_hold = sq_writers_hold,
    .writers_release = sq_writers_release,
    .disk_failed = sq_disk_failed,
};

/* PRAGMA journal_mode answers with the mode actually in force. */
static int enable_wal(store *s)
{
    sqlite3_stmt *vm;
    int rc = sqlite3_prepare_v2(DB(s), "PRAGMA journal_mode=WAL", -1, &vm, NULL);
    if (rc != SQLITE_OK)
        return sq_fail(s, rc);
    rc = sqlite3_step(vm);
    if (rc != SQLITE_ROW) {
        sq_fail(s, rc);
        sqlite3_finalize(vm);
        return map_rc(rc);
    }
    const char *mode = (const char *)sqlite3_column_text(vm, 0);
    bool ok = mode && (strcmp(mode, "wal") == 0 || strcmp(mode, "memory") == 0);
    if (!ok)
        store_fail(s, STORE_ERROR, "cannot use WAL journal (journal_mode is %s)",
                   mode ? mode : "?");
    sqlite3_finalize(vm);
    return ok ? STORE_OK : STORE_ERROR;
}

/* Before SQLite initializes (the first open does it): no memory
 * statistics. With them on (Debian's build does not turn them off), every
 * allocation of every connection takes one process-wide mutex to count
 * itself: 6% of the chat writer's instructions a 1:1 message (131.5k ->
 * 123.9k, bench/chat/writer.sh), and a lock the event loops, the writers
 * and the checkpointers all meet. chime reads none of them (no
 * sqlite3_memory_used, no soft heap limit). A failure (SQLite already
 * initialized by someone else) changes nothing but the speed. */
static void sqlite_configure(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

store *store_sqlite_open(const char *path, char *err, size_t errlen)
{
    static pthread_once_t configured = PTHREAD_ONCE_INIT;
    pthread_once(&configured, sqlite_configure);
    if (!*path) {
        snprintf(err, errlen, "sqlite: empty path");
        return NULL;
    }
    sqlite_store *ss = calloc(1, sizeof *ss);
    if (!ss) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    store *s = &ss->base;
    ss->log_fd = ss->data_fd = -1;
    store_base_init(s, &store_sqlite_ops);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path, &ss->db, flags, sqlite_walvfs_default());
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "sqlite: %s: %s", path,
                 ss->db ? sqlite3_errmsg(ss->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(ss->db, 1);
    sqlite3_busy_timeout(ss->db, SQ_BUSY_MS);
    /* synchronous=FULL: with WAL, NORMAL survives a crash of the process
     * but may lose the last commits to a power cut; an acknowledged
     * reminder, message or post must survive both. */
    if (enable_wal(s) < 0 ||
        raw_exec(s, "PRAGMA foreign_keys=ON; PRAGMA synchronous=FULL") < 0) {
        snprintf(err, errlen, "sqlite: %s: %s", path, s->err);
        goto fail;
    }
    /* SQLite silently opens a write-protected file read-only. */
    if (sqlite3_db_readonly(ss->db, "main") == 1) {
        snprintf(err, errlen, "sqlite: %s: database is read-only", path);
        goto fail;
    }
    ss->wlock = sqlite_wlock_for(sqlite3_db_filename(ss->db, "main"));
    return s;
fail:
    sqlite3_close_v2(ss->db);
    free(ss);
    return NULL;
}
