/* store_checkpoint.c -- the WAL checkpointer (SQLite) of a connection
 * that writer threads share under a store_gate.
 *
 * SQLite copies the WAL back into the database file (a checkpoint) on the
 * thread whose commit pushes the WAL past a size: with one connection
 * shared by writers that is inside the gate's lock, where every claim and
 * delivery waits for the copy and its fsync. So the writers' connection
 * does not checkpoint; this thread does, on a connection of its own, while
 * writers go on. A checkpoint that races writers leaves the newest frames
 * uncopied, and the WAL restarts from its beginning only after a complete
 * one; so after the long passes, a short one runs under the gate's lock
 * and the file's writers' queue (store_writers_hold: nothing new can
 * arrive, from the gate's writers or from any other connection of the
 * process, such as the chat writer's) to finish the job. That one stalls
 * every writer for its copy and two fsyncs, so it is rare (a large WAL: at
 * 1M reminders a minute a 32 MiB one made it every half second, 40-100 ms
 * each, which was the p99; 512 MiB, every 4 s or so, measured better than
 * 256 MiB, in-app p99 67-77 ms against 87-97; a WAL of gigabytes slows
 * every read) and small: the passes before it leave little to copy (see
 * checkpoint_converge), and the database file is synced just before it,
 * outside the locks, so its own sync has only the last moments' pages to
 * write. It goes ahead of the gate's queued writers
 * (store_gate_lock_first) and waits its turn among the others.
 *
 * Holding only the gate, that pass almost never found the WAL's end while
 * the chat writer committed back to back, so the chat writer had to
 * checkpoint by itself, after a commit, with every queued message waiting
 * for the copy and the sync of everything copied since the last one: a
 * 20-25 ms stall every 3 s at 5,000 messages a second, most of the send
 * p99 (12-14 ms; 8-10 ms with the hold, 7-10 ms with the sync before it,
 * bench/chat).
 *
 * A pass that copies the whole WAL also fsyncs the database file; one that
 * stops short does not (SQLite lets the WAL start over only after a
 * complete, synced pass, so the frames stay in the WAL until then). In
 * bench/chat at 5,000 messages a second a pass fell between two commits
 * about 3 times a second, and its fsync (6-8 ms: every page copied since
 * the last one) held up the chat writer's commits at the device: send p99
 * 9 ms, 6-7 ms without. So while the WAL is short of checkpoint_pin_end
 * (1/16 short of the size), a read transaction of the checkpointer's own
 * (the pin) holds each pass to the WAL's end as it was when the pin last
 * moved (every STORE_CKPT_PIN_MS): while writes go on, a pass copies all
 * but the newest frames and syncs nothing. The database file is synced
 * when the writes pause (a pass then reaches the end), and in the rounds
 * past checkpoint_pin_end, before the WAL closes.
 *
 * The WAL starts over in place, and keeps its size on disk. Pages of the
 * file not written for a while may leave the kernel's cache (this VM
 * kind's DAMON reclaims pages idle for 60 s; memory pressure does the same
 * anywhere), and then every frame written over them reads its page back
 * from the disk first: SQLite writes a frame's 24-byte header and its page
 * separately, so no write covers a whole page (a burst of 5,000 messages a
 * second after an idle minute, bench/chat: send p99 80-130 ms for the
 * WAL's first cycle, 4 s, against 5-6 ms). So when for calm_ms no write
 * has come, or none has taken the WAL past a quarter of its file, most of
 * the file has not been written for that long, and the thread empties it
 * (wal_checkpoint(TRUNCATE)): the next burst appends, which reads nothing
 * (12.3 ms). Appending costs more CPU than writing over cached pages (the
 * kernel zeroes each new page around SQLite's partial writes: twice the
 * chat writer's CPU while the file grows; a full bench/chat run with
 * calm_ms at 30 s gave p99 21 ms, its slow sends all in the 5,000/s
 * phase's first 3 s: there the 200/s phase keeps the WAL under a quarter
 * of the file the seeding grew for about 40 s before it), so a WAL that
 * cycles through its file under steady load is left alone, and calm_ms
 * is 45 s: under the minute after which this VM kind drops idle pages,
 * long enough that a short pause between bursts keeps the file.
 *
 * Since the WAL-write VFS (store_sqlite_vfs.h) a commit's frames reach the
 * file as one write, which covers whole pages but at its two ends, so
 * writing over a cold WAL reads two pages a commit instead of every one
 * (5,000 commits of 20 pages over a dropped WAL and database file: 3.1 s
 * against 10.2 s, bench/store); emptying the file stays, for the pages the
 * ends of each write still read. */
#include "store/store_checkpoint.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/base.h"
#include "store/store.h"

#define STORE_SYNC_TICK_MS 25    /* rounds while the WAL changes */
#define STORE_CKPT_PIN_MS 250    /* the pin moves this often (see the top of the file) */
#define STORE_CKPT_CLOSE 256     /* frames a locked pass may be left to copy (1 MiB) */
#define STORE_CKPT_ROUNDS 16     /* unlocked passes tried to get there */
#define STORE_CKPT_CALM_MS 45000 /* the WAL under a quarter of its file this long: emptied */
#define STORE_CKPT_EMPTY_MIN (1 << 20) /* a WAL file smaller than this is left as it is */
#define STORE_CKPT_EMPTY_WAIT_MS 50 /* how long emptying waits for a reader */

struct store_checkpoint {
    char *url;
    store_gate *gate;
    const char *who;
    const char *thread_name;
    int64_t frames; /* the WAL starts over past this many */
    int64_t calm_ms; /* the WAL under a quarter of its file this long: emptied */
    char *wal_path;  /* the WAL file, NULL when it cannot be told */
    int64_t frame_bytes; /* a frame: its header and a page */
    pthread_t thread;
    pthread_mutex_t mu; /* guards stopping */
    pthread_cond_t cv;  /* stopping set */
    bool stopping;
};

/* No pin past here. */
static int64_t checkpoint_pin_end(const store_checkpoint *c)
{
    return c->frames - c->frames / 16;
}

/* Sleeps until wake_ms or a stop; false when stopping. */
static bool checkpoint_sleep_until(store_checkpoint *c, int64_t wake_ms)
{
    struct timespec ts = {.tv_sec = wake_ms / 1000, .tv_nsec = (wake_ms % 1000) * 1000000};
    pthread_mutex_lock(&c->mu);
    while (!c->stopping && base_now_ms() < wake_ms)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT) break;
    bool stop = c->stopping;
    pthread_mutex_unlock(&c->mu);
    return !stop;
}

/* PRAGMA wal_checkpoint(PASSIVE): *log frames in the WAL, *done of them copied. */
static int checkpoint_passive(store *db, int64_t *log, int64_t *done)
{
    store_stmt *st = store_prepare(db, "PRAGMA wal_checkpoint(PASSIVE)");
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        *log = store_col_int64(st, 1);
        *done = store_col_int64(st, 2);
    }
    store_reset(st);
    return rc == STORE_ROW ? STORE_OK : rc;
}

/* Passes without the lock until one leaves few frames behind: the locked
 * pass then copies and syncs only those. (A locked pass that came right
 * after a long one held the writers 40-100 ms: the frames written during
 * the long pass, some megabytes, flushed and copied and flushed again.)
 * False on an error. */
static bool checkpoint_converge(store *db, int64_t *log, int64_t *done)
{
    for (int i = 0; i < STORE_CKPT_ROUNDS; i++) {
        int64_t before = *log;
        if (checkpoint_passive(db, log, done) != STORE_OK) return false;
        if (*log - before < STORE_CKPT_CLOSE) break;
    }
    return true;
}

/* The pin (see the top of the file): *pinned says whether pin holds a read
 * transaction. Unpinning never fails for good: a failed COMMIT of a read
 * transaction is rolled back. */
static void checkpoint_unpin(store *pin, bool *pinned)
{
    if (*pinned && store_exec(pin, "COMMIT") != STORE_OK) store_rollback(pin);
    *pinned = false;
}

/* Moves the pin to the WAL's end as it is now. A pin that cannot be taken
 * is left off: the passes then copy everything, as SQLite does alone. */
static void checkpoint_pin(store *pin, bool *pinned)
{
    checkpoint_unpin(pin, pinned);
    if (store_exec(pin, "BEGIN") == STORE_OK && store_exec(pin, "SELECT 1 FROM sqlite_master LIMIT 1") == STORE_OK)
        *pinned = true;
    else
        store_rollback(pin);
}

/* Empties the WAL file, all of it copied first (wal_checkpoint(TRUNCATE)),
 * holding the writers as the closing pass does. A reader still on older
 * frames makes it give up after STORE_CKPT_EMPTY_WAIT_MS (busy): the next
 * round tries again. */
static void checkpoint_empty(store_checkpoint *c, store *db, int64_t *log, int64_t *done)
{
    char wait[48];
    snprintf(wait, sizeof wait, "PRAGMA busy_timeout = %d", STORE_CKPT_EMPTY_WAIT_MS);
    if (store_exec(db, wait) != STORE_OK) return;
    store_gate_lock_first(c->gate);
    bool held = store_writers_hold(db);
    store_stmt *st = store_prepare(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    int rc = store_step(st);
    if (rc == STORE_ROW && store_col_int64(st, 0) == 0) {
        *log = store_col_int64(st, 1);
        *done = store_col_int64(st, 2);
    }
    store_reset(st);
    if (held) store_writers_release(db);
    store_gate_unlock_first(c->gate);
    if (rc != STORE_ROW) log_warn("%s: emptying the WAL failed: %s", c->who, store_errmsg(db));
    snprintf(wait, sizeof wait, "PRAGMA busy_timeout = %d", STORE_BUSY_MS);
    if (store_exec(db, wait) != STORE_OK) log_warn("%s: busy timeout not restored: %s", c->who, store_errmsg(db));
}

/* Where the WAL file is and how long a frame is, from the database. */
static void checkpoint_learn_wal(store_checkpoint *c, store *db)
{
    int64_t page = 0;
    store_stmt *st = store_prepare(db, "SELECT file FROM pragma_database_list WHERE name = 'main'");
    if (store_step(st) == STORE_ROW && store_col_text(st, 0) && *store_col_text(st, 0)) {
        size_t n = strlen(store_col_text(st, 0)) + 5;
        if ((c->wal_path = malloc(n))) snprintf(c->wal_path, n, "%s-wal", store_col_text(st, 0));
    }
    store_reset(st);
    if (store_query_int64(db, "PRAGMA page_size", &page) == STORE_ROW && page > 0) c->frame_bytes = page + 24;
}

/* The WAL file's length in frames (0 when it cannot be told). */
static int64_t checkpoint_wal_room(const store_checkpoint *c)
{
    struct stat st;
    if (!c->wal_path || !c->frame_bytes || stat(c->wal_path, &st) != 0) return 0;
    return st.st_size < STORE_CKPT_EMPTY_MIN ? 0 : st.st_size / c->frame_bytes;
}

static void *checkpoint_main(void *p)
{
    store_checkpoint *c = p;
    base_thread_name(c->thread_name);
    char err[256];
    store *db = store_open(c->url, err, sizeof err);
    store *pin = db ? store_open(c->url, err, sizeof err) : NULL;
    if (!pin) {
        log_error("%s: the checkpointer cannot open the database: %s", c->who, err);
        if (db) store_close(db);
        return NULL;
    }
    checkpoint_learn_wal(c, db);
    int64_t log = 0, done = 0, last = -1, filled_ms = base_now_ms(), pinned_ms = 0;
    bool busy = false, pinned = false;
    store_stamp seen = {.others = -1};
    /* Each round writes the WAL to disk if it changed (store_sync_log: so
     * a durable commit elsewhere -- the API's, the jobs' -- does not wait
     * under the write lock for the gate's writers' unsynced ones), and
     * copies what the WAL holds (and fsyncs the database file if there was
     * anything): every STORE_SYNC_TICK_MS while the writers write, once a
     * second while nothing changes, so an idle server does not fsync.
     * The pin moves on only every STORE_CKPT_PIN_MS, so the passes copy
     * that often: a page the writers change all the time (a b-tree's root,
     * its newest leaf) is copied once in that time rather than ten times,
     * and the rounds between copy nothing. At 5,000 chat messages a second
     * this thread's CPU fell from 0.60-0.66 s to 0.24-0.30 s in 10 s, and
     * the server's by 5% in each of five paired runs (bench/RESULTS.md,
     * chat, session 34); the copies are bigger, but the pulled p99 was
     * lower in four of those pairs (session 22 copied every 250 ms with
     * the WAL's length read as often, and its tail did not move).
     * The passes still read the WAL's length every round, so its
     * start-over comes on time.
     * Whether anything was written is data_version's to say: the WAL's
     * length is no witness once the WAL has started over (it had grown
     * back to the same length 25 ms later, in the tests, and the thread
     * slept a second while the WAL grew 50-fold). */
    while (checkpoint_sleep_until(c, base_now_ms() + (busy ? STORE_SYNC_TICK_MS : 1000))) {
        store_stamp now;
        if (store_disk_failed(db)) { /* nothing more goes to the disk (store.h) */
            checkpoint_unpin(pin, &pinned);
            busy = false;
            continue;
        }
        if (store_change_stamp(db, &now) != STORE_OK || checkpoint_passive(db, &log, &done) != STORE_OK) continue;
        busy = now.others != seen.others || log != last;
        seen = now;
        last = log;
        if (busy && store_sync_log(db) != STORE_OK) log_warn("%s: WAL sync failed: %s", c->who, store_errmsg(db));
        int64_t room = checkpoint_wal_room(c);
        if (busy && 4 * log >= room) filled_ms = base_now_ms();
        if (room > 0 && base_now_ms() - filled_ms >= c->calm_ms) {
            checkpoint_unpin(pin, &pinned);
            checkpoint_empty(c, db, &log, &done);
            last = log;
            filled_ms = base_now_ms(); /* (tried again after calm_ms if it gave up) */
            continue;
        }
        if (log >= checkpoint_pin_end(c)) {
            checkpoint_unpin(pin, &pinned);
        } else if (!pinned || done >= log || base_now_ms() - pinned_ms >= STORE_CKPT_PIN_MS) {
            /* (A pin taken on a WAL copied to its end reads the database
             * file alone and does not keep the next commit from starting
             * the WAL over, as a pin left on its last frame would.) */
            checkpoint_pin(pin, &pinned);
            pinned_ms = base_now_ms();
        }
        if (log < c->frames || !checkpoint_converge(db, &log, &done)) continue;
        if (store_sync_data(db) != STORE_OK) log_warn("%s: database sync failed: %s", c->who, store_errmsg(db));
        if (!checkpoint_converge(db, &log, &done)) continue;
        store_gate_lock_first(c->gate);
        bool held = store_writers_hold(db);
        /* (A reader's older snapshot may still hold some frames back: the
         * next round copies them.) */
        if (checkpoint_passive(db, &log, &done) != STORE_OK)
            log_warn("%s: checkpoint failed: %s", c->who, store_errmsg(db));
        if (held) store_writers_release(db);
        store_gate_unlock_first(c->gate);
        last = log;
    }
    checkpoint_unpin(pin, &pinned);
    store_close(pin);
    store_close(db);
    return NULL;
}

static void checkpoint_free(store_checkpoint *c)
{
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->url);
    free(c->wal_path);
    free(c);
}

store_checkpoint *store_checkpoint_start(const char *url, store_gate *gate, const char *who,
                                         const char *thread_name, int64_t frames, int64_t calm_ms)
{
    store_checkpoint *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->frames = frames > 0 ? frames : STORE_CKPT_FRAMES;
    c->calm_ms = calm_ms > 0 ? calm_ms : STORE_CKPT_CALM_MS;
    c->url = strdup(url);
    c->gate = gate;
    c->who = who;
    c->thread_name = thread_name;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (!c->url || pthread_create(&c->thread, NULL, checkpoint_main, c) != 0) {
        checkpoint_free(c);
        return NULL;
    }
    return c;
}

void store_checkpoint_stop(store_checkpoint *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    checkpoint_free(c);
}
