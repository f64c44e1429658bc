/* test-store-checkpoint.c -- the SQLite WAL checkpointer: while writes go
 * on it copies the WAL behind them without reaching its end (a pass that
 * reaches the end fsyncs the database file, and lets the WAL start over),
 * and it reaches the end once the writes pause. SQLite only. */
#include "testutil.h"
#include "testdb.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

#include "base/base.h"
#include "store/store_checkpoint.h"

/* The WAL-index in the -shm file (SQLite's file format document, "the
 * WAL-index format"; native byte order): mxFrame, the frames in the WAL,
 * is the u32 at byte 16 of the header; nBackfill, the frames copied into
 * the database file, the u32 at byte 96. */
static void wal_index(const char *dbpath, uint32_t *mx, uint32_t *backfill)
{
    char p[800];
    snprintf(p, sizeof p, "%s-shm", dbpath);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, mx, 4, 16), 4);
    assert_int_equal(pread(fd, backfill, 4, 96), 4);
    close(fd);
}

/* The test table and a checkpointer on db (frames, calm_ms: 0 for the
 * defaults), behind gate. */
static store_checkpoint *checkpointer_on(testdb *db, store_gate *gate, int64_t frames, int64_t calm_ms)
{
    EXEC_OK(db->s, "CREATE TABLE t (i INTEGER PRIMARY KEY, b BLOB)");
    store_gate_init(gate, true);
    store_checkpoint *c = store_checkpoint_start(db->url, gate, "test", "test-ckpt", frames, calm_ms);
    assert_non_null(c);
    return c;
}

/* A commit every 5 ms, each a page or so, for 1.5 s: about 60 of the
 * checkpointer's 25 ms rounds. Copying all it could each round (the
 * checkpointer before the pin) reached the WAL's end, fsynced the database
 * file and let the WAL start over before 3 to 18 of the 270 commits here
 * (whenever a pass fell between two commits). Copying behind the writes,
 * it gets there only if this thread was held up for a whole round (a
 * loaded machine; 0 or 1 here): hence a bound, not zero. Then, the writes
 * stopped, the copy reaches the end. */
static void test_copies_behind_the_writes(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    store_gate gate;
    store_checkpoint *c = checkpointer_on(db, &gate, 0, 0);

    store_stmt *ins = store_prepare(s, "INSERT INTO t (b) VALUES (randomblob(3000))");
    assert_non_null(ins);
    uint32_t mx = 0, backfill = 0, most_copied = 0;
    int at_end = 0, commits = 0;
    for (int64_t end = base_now_ms() + 1500; base_now_ms() < end; commits++) {
        wal_index(db->path, &mx, &backfill);
        if (commits > 0 && backfill == mx) at_end++;
        if (backfill > most_copied) most_copied = backfill;
        assert_int_equal(store_step(ins), STORE_DONE);
        store_reset(ins);
        nap_ms(5);
    }
    assert_true(commits > 100);
    if (at_end > 2) fail_msg("the copy had reached the WAL's end before %d of %d commits", at_end, commits);
    if (most_copied == 0) fail_msg("nothing was copied while the writes went on (%u frames)", mx);
    uint32_t last = mx;

    bool caught_up = false;
    for (int i = 0; i < 60 && !caught_up; i++) {
        nap_ms(100);
        wal_index(db->path, &mx, &backfill);
        caught_up = backfill == mx && mx > 0;
    }
    if (!caught_up) fail_msg("the writes stopped 6 s ago and %u of %u frames are copied", backfill, mx);

    /* the copy is whole: the next commit starts the WAL over */
    assert_int_equal(store_step(ins), STORE_DONE);
    store_reset(ins);
    wal_index(db->path, &mx, &backfill);
    assert_true(mx < last);
    store_checkpoint_stop(c);
    store_gate_destroy(&gate);
}

/* A writer on a connection of its own, outside the gate (as the chat
 * writer is), commits back to back with its own checkpoints off. The
 * checkpointer's closing pass holds the file's writers' queue, so it finds
 * the WAL's end between two of those commits and the next one starts the
 * WAL over, each time the WAL passes the size. When the pass held only the
 * gate, a commit nearly always landed during it: the WAL grew the whole
 * time, and the chat writer had to checkpoint by itself, stalling every
 * message queued behind it. */
static void test_starts_the_wal_over_under_a_writer_outside_the_gate(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    EXEC_OK(s, "PRAGMA wal_autocheckpoint = 0");
    store_gate gate;
    enum { FRAMES = 256 };
    store_checkpoint *c = checkpointer_on(db, &gate, FRAMES, 0);

    store_stmt *ins = store_prepare(s, "INSERT INTO t (b) VALUES (randomblob(3000))");
    assert_non_null(ins);
    uint32_t mx = 0, backfill = 0, prev = 0, most = 0;
    int restarts = 0, commits = 0;
    /* (The checkpointer looks once a second while the WAL is still: the
     * first second's growth is not counted.) */
    int64_t start = base_now_ms();
    for (int64_t now = start; now < start + 4000; now = base_now_ms(), commits++) {
        assert_int_equal(store_begin(s), STORE_OK);
        assert_int_equal(store_step(ins), STORE_DONE);
        store_reset(ins);
        assert_int_equal(store_commit(s), STORE_OK);
        wal_index(db->path, &mx, &backfill);
        if (mx < prev) restarts++;
        if (mx > most && now > start + 1500) most = mx;
        prev = mx;
    }
    store_checkpoint_stop(c);
    store_gate_destroy(&gate);
    if (restarts < 3 || most > 16 * FRAMES)
        fail_msg("%d commits: the WAL started over %d times and reached %u frames (starts over past %d)", commits,
                 restarts, most, FRAMES);
}

static off_t wal_bytes(const char *dbpath)
{
    char p[800];
    struct stat st;
    snprintf(p, sizeof p, "%s-wal", dbpath);
    return stat(p, &st) == 0 ? st.st_size : -1;
}

static int64_t rows(store *s)
{
    int64_t n = -1;
    assert_int_equal(store_query_int64(s, "SELECT count(*) FROM t", &n), STORE_ROW);
    return n;
}

/* Writes a commit every ms milliseconds for span ms. */
static void write_for(store *s, int64_t span, int ms)
{
    store_stmt *ins = store_prepare(s, "INSERT INTO t (b) VALUES (randomblob(3000))");
    assert_non_null(ins);
    for (int64_t end = base_now_ms() + span; base_now_ms() < end;) {
        assert_int_equal(store_step(ins), STORE_DONE);
        store_reset(ins);
        nap_ms(ms);
    }
}

/* A WAL grown past a megabyte and then kept under a quarter of its file
 * for calm_ms (here by a write every 200 ms: each starts the WAL over), or
 * not written at all for calm_ms, is emptied, everything copied first: the
 * pages past the active part have not been written for that long, and
 * after an idle minute the kernel may have dropped them, so that writing
 * frames over them read each page back first. A reader still on older
 * frames holds it off until it ends. */
static void test_empties_a_wal_long_under_its_file(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    store_gate gate;
    store_checkpoint *c = checkpointer_on(db, &gate, 0, 1500);

    /* 2 MB in one transaction: the file grows past the floor */
    EXEC_OK(s, "BEGIN");
    for (int i = 0; i < 600; i++) EXEC_OK(s, "INSERT INTO t (b) VALUES (randomblob(3000))");
    EXEC_OK(s, "COMMIT");
    off_t grown = wal_bytes(db->path);
    assert_true(grown > 2000000);

    /* a trickle: not emptied at first, emptied within calm_ms + 2 s */
    write_for(s, 500, 200);
    if (wal_bytes(db->path) < grown) fail_msg("emptied before calm_ms");
    off_t bytes = grown;
    for (int i = 0; i < 20 && bytes >= grown; i++) {
        write_for(s, 200, 200);
        bytes = wal_bytes(db->path);
    }
    if (bytes >= grown) fail_msg("written to every 200 ms for 4 s, the WAL still holds %lld bytes", (long long)bytes);
    int64_t all = rows(s);
    assert_true(all > 600);

    /* grown again, then a reader on older frames: kept while it reads */
    EXEC_OK(s, "BEGIN");
    for (int i = 0; i < 600; i++) EXEC_OK(s, "INSERT INTO t (b) VALUES (randomblob(3000))");
    EXEC_OK(s, "COMMIT");
    char err[256];
    store *reader = store_open(db->url, err, sizeof err);
    assert_non_null(reader);
    EXEC_OK(reader, "BEGIN");
    int64_t seen = rows(reader);
    EXEC_OK(s, "INSERT INTO t (b) VALUES (randomblob(3000))");
    grown = wal_bytes(db->path);
    nap_ms(4000);
    bytes = grown;
    if (wal_bytes(db->path) < grown) fail_msg("the WAL was emptied under a reader's older snapshot");
    assert_int_equal(rows(reader), seen);
    EXEC_OK(reader, "COMMIT");
    for (int i = 0; i < 50 && bytes != 0; i++) {
        nap_ms(100);
        bytes = wal_bytes(db->path);
    }
    if (bytes != 0) fail_msg("5 s past the reader's end, the WAL still holds %lld bytes", (long long)bytes);
    assert_int_equal(rows(s), seen + 1);
    assert_int_equal(rows(reader), seen + 1);
    store_close(reader);

    /* the next write appends to the empty file, and is kept */
    EXEC_OK(s, "INSERT INTO t (b) VALUES (randomblob(3000))");
    assert_true(wal_bytes(db->path) > 0);
    assert_int_equal(rows(s), seen + 2);
    store_checkpoint_stop(c);
    store_gate_destroy(&gate);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST_SQLITE_RAW(test_copies_behind_the_writes),
        TESTDB_TEST_SQLITE_RAW(test_starts_the_wal_over_under_a_writer_outside_the_gate),
        TESTDB_TEST_SQLITE_RAW(test_empties_a_wal_long_under_its_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
