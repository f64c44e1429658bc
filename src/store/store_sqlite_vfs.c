/* store_sqlite_vfs.c -- the WAL-write VFS (see store_sqlite_vfs.h).
 *
 * A file opened through it is a walvfs_file followed by the file of the
 * VFS under it. Files other than WALs are opened by the VFS under it right
 * into that space and keep its methods: only WALs pass through here. */
#include "store/store_sqlite_vfs.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define WAL_FRAME_HEADER 24

typedef struct walvfs_db walvfs_db;

typedef struct walvfs_file {
    sqlite3_file base;   /* our methods */
    sqlite3_file *real;  /* the file under us, right after this struct */
    walvfs_db *db;       /* its database file, when that is ours */
    unsigned char *buf;  /* held bytes: the file's [off, off + len) */
    sqlite3_int64 off;
    size_t len, cap;
    sqlite3_int64 end;   /* where this write transaction's writes reach */
    bool may_hold;       /* linked to its database file, power-safe writes */
    bool writing;        /* this connection holds the WAL's write lock */
    int err;             /* a write that failed: every later call fails */
    bool commit_page_next; /* the last write was a commit frame's header */
} walvfs_file;

/* A main database file: SQLite's own, with its WAL's held writes sent out
 * before a commit is published (xShmBarrier) and before the WAL's write
 * lock is let go (xShmLock). */
struct walvfs_db {
    sqlite3_file base;
    sqlite3_file *real;
    walvfs_file *wal;
};

#define UNDER(vfs) ((sqlite3_vfs *)(vfs)->pAppData)
#define REAL(f) (((walvfs_file *)(f))->real)

/* ---- the held writes ----------------------------------------------------- */

/* A failed write is SQLITE_IOERR_WRITE from then on, whatever the disk
 * said: SQLite rolls a whole transaction back on an I/O error, but only a
 * statement on SQLITE_FULL, and the frames lost were written for earlier
 * statements too. */
static int held_flush(walvfs_file *w)
{
    if (w->err) return w->err;
    if (!w->len) return SQLITE_OK;
    int rc = w->real->pMethods->xWrite(w->real, w->buf, (int)w->len, w->off);
    w->len = 0;
    if (rc != SQLITE_OK) w->err = SQLITE_IOERR_WRITE;
    return w->err;
}

static bool held_grow(walvfs_file *w, size_t need)
{
    if (need <= w->cap) return true;
    size_t cap = w->cap ? w->cap : 64 * 1024;
    while (cap < need) cap *= 2;
    unsigned char *b = realloc(w->buf, cap);
    if (!b) return false;
    w->buf = b;
    w->cap = cap;
    return true;
}

/* A frame header names the database's size in pages after a commit, and
 * 0 in every other frame. */
static bool frame_is_commit(const unsigned char *h)
{
    return (h[4] | h[5] | h[6] | h[7]) != 0;
}

static int wal_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    walvfs_file *w = (walvfs_file *)f;
    bool commit_page = w->commit_page_next && n != WAL_FRAME_HEADER;
    w->commit_page_next = n == WAL_FRAME_HEADER && frame_is_commit(p);
    int rc = w->err;
    if (rc) return rc;
    /* Only what extends the transaction's writes is held: a write below
     * their end goes over a frame already written (a page written again,
     * walRewriteChecksums' headers, a savepoint's undo), and goes now, so
     * that a failure is told to SQLite where it looks for it. */
    bool extends = off >= w->end;
    if (off + n > w->end) w->end = off + n;
    if (!w->writing) { /* exclusive locking mode: no lock calls to lean on */
        rc = held_flush(w);
        return rc == SQLITE_OK ? w->real->pMethods->xWrite(w->real, p, n, off) : rc;
    }
    if (!w->may_hold || !w->db || !extends) {
        if ((rc = held_flush(w)) == SQLITE_OK && (rc = w->real->pMethods->xWrite(w->real, p, n, off)) != SQLITE_OK)
            w->err = SQLITE_IOERR_WRITE;
        return rc == SQLITE_OK ? rc : w->err;
    }
    bool follows = off == w->off + (sqlite3_int64)w->len;
    if (w->len && (!follows || w->len + (size_t)n > STORE_WALVFS_MAX) && (rc = held_flush(w)) != SQLITE_OK)
        return rc;
    if ((size_t)n > STORE_WALVFS_MAX || !held_grow(w, w->len + (size_t)n)) {
        rc = held_flush(w); /* then as SQLite would, in order */
        if (rc == SQLITE_OK && (rc = w->real->pMethods->xWrite(w->real, p, n, off)) != SQLITE_OK)
            w->err = SQLITE_IOERR_WRITE;
        return rc == SQLITE_OK ? rc : w->err;
    }
    if (!w->len) w->off = off;
    memcpy(w->buf + w->len, p, (size_t)n);
    w->len += (size_t)n;
    return commit_page ? held_flush(w) : SQLITE_OK;
}

/* ---- the WAL's other methods: what is held goes out first ---------------- */

static int wal_close(sqlite3_file *f)
{
    walvfs_file *w = (walvfs_file *)f;
    int rc = held_flush(w);
    int rc2 = w->real->pMethods ? w->real->pMethods->xClose(w->real) : SQLITE_OK;
    if (w->db) w->db->wal = NULL;
    free(w->buf);
    w->buf = NULL;
    w->cap = 0;
    return rc != SQLITE_OK ? rc : rc2;
}

#define FLUSH_THEN(call)                                                                                  \
    do {                                                                                                  \
        int flush_rc_ = held_flush((walvfs_file *)f);                                                     \
        if (flush_rc_ != SQLITE_OK) return flush_rc_;                                                     \
        return REAL(f)->pMethods->call;                                                                   \
    } while (0)

static int wal_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    FLUSH_THEN(xRead(REAL(f), p, n, off));
}

static int wal_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    FLUSH_THEN(xTruncate(REAL(f), size));
}

static int wal_sync(sqlite3_file *f, int flags)
{
    FLUSH_THEN(xSync(REAL(f), flags));
}

static int wal_size(sqlite3_file *f, sqlite3_int64 *size)
{
    FLUSH_THEN(xFileSize(REAL(f), size));
}

static int wal_lock(sqlite3_file *f, int lock)
{
    FLUSH_THEN(xLock(REAL(f), lock));
}

static int wal_unlock(sqlite3_file *f, int lock)
{
    FLUSH_THEN(xUnlock(REAL(f), lock));
}

static int wal_reserved(sqlite3_file *f, int *out)
{
    FLUSH_THEN(xCheckReservedLock(REAL(f), out));
}

static int wal_control(sqlite3_file *f, int op, void *arg)
{
    FLUSH_THEN(xFileControl(REAL(f), op, arg));
}

static int wal_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int wal_device(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

/* A WAL has no shared memory or mapping of its own; SQLite does not ask
 * for them, and these answer as a file without them would. */
static int wal_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **p)
{
    (void)f, (void)region, (void)size, (void)extend;
    *p = NULL;
    return SQLITE_IOERR_SHMMAP;
}

static int wal_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    (void)f, (void)offset, (void)n, (void)flags;
    return SQLITE_IOERR_SHMLOCK;
}

static void wal_shm_barrier(sqlite3_file *f)
{
    held_flush((walvfs_file *)f);
}

static int wal_shm_unmap(sqlite3_file *f, int del)
{
    (void)f, (void)del;
    return SQLITE_OK;
}

static int wal_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p)
{
    (void)f, (void)off, (void)n;
    *p = NULL; /* read it with xRead instead */
    return SQLITE_OK;
}

static int wal_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    (void)f, (void)off, (void)p;
    return SQLITE_OK;
}

static const sqlite3_io_methods wal_methods = {
    .iVersion = 3,
    .xClose = wal_close,
    .xRead = wal_read,
    .xWrite = wal_write,
    .xTruncate = wal_truncate,
    .xSync = wal_sync,
    .xFileSize = wal_size,
    .xLock = wal_lock,
    .xUnlock = wal_unlock,
    .xCheckReservedLock = wal_reserved,
    .xFileControl = wal_control,
    .xSectorSize = wal_sector,
    .xDeviceCharacteristics = wal_device,
    .xShmMap = wal_shm_map,
    .xShmLock = wal_shm_lock,
    .xShmBarrier = wal_shm_barrier,
    .xShmUnmap = wal_shm_unmap,
    .xFetch = wal_fetch,
    .xUnfetch = wal_unfetch,
};

/* ---- the database file: SQLite's, but for two calls ---------------------- */

#define DB_REAL(f) (((walvfs_db *)(f))->real)

static int db_close(sqlite3_file *f)
{
    walvfs_db *d = (walvfs_db *)f;
    if (d->wal) d->wal->db = NULL;
    return d->real->pMethods ? d->real->pMethods->xClose(d->real) : SQLITE_OK;
}

static int db_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    return DB_REAL(f)->pMethods->xRead(DB_REAL(f), p, n, off);
}

static int db_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    return DB_REAL(f)->pMethods->xWrite(DB_REAL(f), p, n, off);
}

static int db_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return DB_REAL(f)->pMethods->xTruncate(DB_REAL(f), size);
}

static int db_sync(sqlite3_file *f, int flags)
{
    return DB_REAL(f)->pMethods->xSync(DB_REAL(f), flags);
}

static int db_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return DB_REAL(f)->pMethods->xFileSize(DB_REAL(f), size);
}

static int db_lock(sqlite3_file *f, int lock)
{
    return DB_REAL(f)->pMethods->xLock(DB_REAL(f), lock);
}

static int db_unlock(sqlite3_file *f, int lock)
{
    return DB_REAL(f)->pMethods->xUnlock(DB_REAL(f), lock);
}

static int db_reserved(sqlite3_file *f, int *out)
{
    return DB_REAL(f)->pMethods->xCheckReservedLock(DB_REAL(f), out);
}

static int db_control(sqlite3_file *f, int op, void *arg)
{
    return DB_REAL(f)->pMethods->xFileControl(DB_REAL(f), op, arg);
}

static int db_sector(sqlite3_file *f)
{
    return DB_REAL(f)->pMethods->xSectorSize(DB_REAL(f));
}

static int db_device(sqlite3_file *f)
{
    return DB_REAL(f)->pMethods->xDeviceCharacteristics(DB_REAL(f));
}

static int db_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **p)
{
    return DB_REAL(f)->pMethods->xShmMap(DB_REAL(f), region, size, extend, p);
}

/* Letting go of the WAL's write lock (slot 0): the transaction is over,
 * and nothing of it may stay held, where a later flush could land on
 * frames another writer has written since. */
static int db_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    walvfs_db *d = (walvfs_db *)f;
    walvfs_file *w = d->wal;
    if (w && (flags & SQLITE_SHM_UNLOCK) && offset == 0) {
        /* A commit went out at its barrier: anything still held is of a
         * transaction rolled back (spilled frames past the WAL's end, which
         * nothing reads), and a failure ends with it. */
        w->len = 0;
        w->end = 0;
        w->err = SQLITE_OK;
        w->commit_page_next = false;
        w->writing = false;
    }
    int rc = d->real->pMethods->xShmLock(d->real, offset, n, flags);
    /* Writes are held only between this lock and its unlock: in exclusive
     * locking mode SQLite makes neither call, and the WAL is written as
     * SQLite writes it. */
    if (w && rc == SQLITE_OK && offset == 0 && (flags & SQLITE_SHM_LOCK) && (flags & SQLITE_SHM_EXCLUSIVE))
        w->writing = true;
    return rc;
}

/* walIndexWriteHdr calls this between the two copies of the WAL-index
 * header: every commit is published after it, so its frames go out here
 * at the latest, whatever the synchronous setting. */
static void db_shm_barrier(sqlite3_file *f)
{
    walvfs_db *d = (walvfs_db *)f;
    if (d->wal) held_flush(d->wal);
    d->real->pMethods->xShmBarrier(d->real);
}

static int db_shm_unmap(sqlite3_file *f, int del)
{
    return DB_REAL(f)->pMethods->xShmUnmap(DB_REAL(f), del);
}

static int db_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p)
{
    return DB_REAL(f)->pMethods->xFetch(DB_REAL(f), off, n, p);
}

static int db_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    return DB_REAL(f)->pMethods->xUnfetch(DB_REAL(f), off, p);
}

static const sqlite3_io_methods db_methods = {
    .iVersion = 3,
    .xClose = db_close,
    .xRead = db_read,
    .xWrite = db_write,
    .xTruncate = db_truncate,
    .xSync = db_sync,
    .xFileSize = db_size,
    .xLock = db_lock,
    .xUnlock = db_unlock,
    .xCheckReservedLock = db_reserved,
    .xFileControl = db_control,
    .xSectorSize = db_sector,
    .xDeviceCharacteristics = db_device,
    .xShmMap = db_shm_map,
    .xShmLock = db_shm_lock,
    .xShmBarrier = db_shm_barrier,
    .xShmUnmap = db_shm_unmap,
    .xFetch = db_fetch,
    .xUnfetch = db_unfetch,
};

/* ---- the VFS --------------------------------------------------------------- */

static int db_open(sqlite3_vfs *under, sqlite3_filename name, sqlite3_file *f, int flags, int *out_flags)
{
    walvfs_db *d = (walvfs_db *)f;
    memset(d, 0, sizeof *d);
    d->real = (sqlite3_file *)(d + 1);
    int rc = under->xOpen(under, name, d->real, flags, out_flags);
    /* The methods SQLite's VFS gave must have everything a WAL needs. */
    bool full = rc == SQLITE_OK && d->real->pMethods && d->real->pMethods->iVersion >= 3;
    if (rc == SQLITE_OK && !full) {
        if (d->real->pMethods) d->real->pMethods->xClose(d->real);
        rc = SQLITE_CANTOPEN;
    }
    d->base.pMethods = full ? &db_methods : NULL;
    return rc;
}

static int vfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out_flags)
{
    sqlite3_vfs *under = UNDER(vfs);
    if (flags & SQLITE_OPEN_MAIN_DB) return db_open(under, name, f, flags, out_flags);
    if (!(flags & SQLITE_OPEN_WAL)) return under->xOpen(under, name, f, flags, out_flags);
    walvfs_file *w = (walvfs_file *)f;
    memset(w, 0, sizeof *w);
    w->real = (sqlite3_file *)(w + 1);
    int rc = under->xOpen(under, name, w->real, flags, out_flags);
    w->base.pMethods = rc == SQLITE_OK && w->real->pMethods ? &wal_methods : NULL;
    /* Without power-safe overwrites SQLite pads a commit out to a sector,
     * syncing part way (walWriteToLog's sync point): such a WAL is written
     * as SQLite writes it. */
    w->may_hold = w->base.pMethods &&
                  (w->real->pMethods->xDeviceCharacteristics(w->real) & SQLITE_IOCAP_POWERSAFE_OVERWRITE);
    /* Held writes need their database file's barrier and unlock: without
     * that file (opened elsewhere), the WAL writes as SQLite would. */
    sqlite3_file *db = rc == SQLITE_OK && name ? sqlite3_database_file_object(name) : NULL;
    if (db && w->base.pMethods && db->pMethods == &db_methods) {
        w->db = (walvfs_db *)db;
        w->db->wal = w;
    }
    return rc;
}

static int vfs_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    return UNDER(vfs)->xDelete(UNDER(vfs), name, sync_dir);
}

static int vfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    return UNDER(vfs)->xAccess(UNDER(vfs), name, flags, out);
}

static int vfs_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    return UNDER(vfs)->xFullPathname(UNDER(vfs), name, n, out);
}

static void *vfs_dlopen(sqlite3_vfs *vfs, const char *name)
{
    return UNDER(vfs)->xDlOpen(UNDER(vfs), name);
}

static void vfs_dlerror(sqlite3_vfs *vfs, int n, char *out)
{
    UNDER(vfs)->xDlError(UNDER(vfs), n, out);
}

static void (*vfs_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
    return UNDER(vfs)->xDlSym(UNDER(vfs), h, sym);
}

static void vfs_dlclose(sqlite3_vfs *vfs, void *h)
{
    UNDER(vfs)->xDlClose(UNDER(vfs), h);
}

static int vfs_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    return UNDER(vfs)->xRandomness(UNDER(vfs), n, out);
}

static int vfs_sleep(sqlite3_vfs *vfs, int us)
{
    return UNDER(vfs)->xSleep(UNDER(vfs), us);
}

static int vfs_current_time(sqlite3_vfs *vfs, double *out)
{
    return UNDER(vfs)->xCurrentTime(UNDER(vfs), out);
}

static int vfs_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    return UNDER(vfs)->xGetLastError ? UNDER(vfs)->xGetLastError(UNDER(vfs), n, out) : 0;
}

static int vfs_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    return UNDER(vfs)->xCurrentTimeInt64(UNDER(vfs), out);
}

static pthread_mutex_t register_mu = PTHREAD_MUTEX_INITIALIZER;

int sqlite_walvfs_register(const char *name, sqlite3_vfs *under)
{
    if (!name || !under) return SQLITE_MISUSE;
    pthread_mutex_lock(&register_mu);
    int rc = SQLITE_OK;
    if (!sqlite3_vfs_find(name)) {
        /* Owned by SQLite's list of VFSes for the life of the process. */
        sqlite3_vfs *v = calloc(1, sizeof *v + strlen(name) + 1);
        if (!v) {
            rc = SQLITE_NOMEM;
        } else {
            /* Version 2: the time in milliseconds. The system-call hooks of
             * version 3 are for tests of the VFS under; left out. */
            v->iVersion = under->iVersion < 2 ? under->iVersion : 2;
            v->szOsFile = (int)(sizeof(walvfs_file) > sizeof(walvfs_db) ? sizeof(walvfs_file) : sizeof(walvfs_db)) +
                          under->szOsFile;
            v->mxPathname = under->mxPathname;
            v->zName = strcpy((char *)(v + 1), name);
            v->pAppData = under;
            v->xOpen = vfs_open;
            v->xDelete = vfs_delete;
            v->xAccess = vfs_access;
            v->xFullPathname = vfs_full_pathname;
            v->xDlOpen = vfs_dlopen;
            v->xDlError = vfs_dlerror;
            v->xDlSym = vfs_dlsym;
            v->xDlClose = vfs_dlclose;
            v->xRandomness = vfs_randomness;
            v->xSleep = vfs_sleep;
            v->xCurrentTime = vfs_current_time;
            v->xGetLastError = vfs_last_error;
            if (v->iVersion >= 2) v->xCurrentTimeInt64 = vfs_current_time64;
            if ((rc = sqlite3_vfs_register(v, 0)) != SQLITE_OK) free(v);
        }
    }
    pthread_mutex_unlock(&register_mu);
    return rc;
}

const char *sqlite_walvfs_default(void)
{
    static const char name[] = "chime-wal";
    sqlite3_vfs *under = sqlite3_vfs_find(NULL);
    if (under && strcmp(under->zName, name) == 0) return name;
    return under && sqlite_walvfs_register(name, under) == SQLITE_OK ? name : NULL;
}
