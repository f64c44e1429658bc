/* bench/store/walwrite.c -- commits through chime's WAL-write VFS
 * (src/store/store_sqlite_vfs.c) against SQLite's own unix VFS, the one a
 * user of SQLite gets, on the same file and machine, in turns.
 *
 * Each round: a table of 20,000 rows of 3,000 bytes (a page each), then
 * N commits each updating 20 random rows (20 table pages plus the
 * interior ones: about the WAL frames of two chat messages), with
 * synchronous=FULL as chime runs, in three states of the WAL file:
 *   grow  -- the WAL emptied (truncated) before: every commit appends;
 *   warm  -- the WAL started over in place, its pages in the page cache;
 *   cold  -- the same, with the WAL's and the database's pages dropped from
 *            the cache first (POSIX_FADV_DONTNEED), as after an idle
 *            minute on this VM kind or under memory pressure.
 * Prints wall and CPU seconds per state for each VFS, the medians over
 * the rounds, and the ratio (SQLite's / chime's).
 * Usage: walwrite DIR COMMITS ROUNDS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store_sqlite_vfs.h"

enum { GROW, WARM, COLD, STATES };
static const char *state_name[STATES] = {"grow", "warm", "cold"};

typedef struct {
    double wall, cpu;
} cost;

static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_now(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static void exec_or_die(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "walwrite: %s: %s\n", sql, err ? err : "?");
        exit(1);
    }
}

static void drop_cached(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static cost commits(sqlite3 *db, sqlite3_stmt *up, int n, unsigned seed)
{
    srand(seed);
    double w0 = wall_now(), c0 = cpu_now();
    for (int i = 0; i < n; i++) {
        exec_or_die(db, "BEGIN");
        for (int j = 0; j < 20; j++) {
            sqlite3_bind_int(up, 1, 1 + rand() % 20000);
            if (sqlite3_step(up) != SQLITE_DONE) {
                fprintf(stderr, "walwrite: update: %s\n", sqlite3_errmsg(db));
                exit(1);
            }
            sqlite3_reset(up);
        }
        exec_or_die(db, "COMMIT");
    }
    return (cost){wall_now() - w0, cpu_now() - c0};
}

/* One round on a fresh file through vfs (NULL: SQLite's default). */
static void round_of(const char *dir, const char *vfs, int n, cost out[STATES])
{
    char path[512], wal[600];
    snprintf(path, sizeof path, "%s/walwrite.db", dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(path);
    unlink(wal);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs) != SQLITE_OK) exit(1);
    exec_or_die(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=0;"
                    "CREATE TABLE t (k INTEGER PRIMARY KEY, b BLOB);"
                    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) "
                    "INSERT INTO t SELECT x, randomblob(3000) FROM c;"
                    "PRAGMA wal_checkpoint(TRUNCATE)");
    sqlite3_stmt *up = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE t SET b = randomblob(3000) WHERE k = ?", -1, &up, NULL) != SQLITE_OK) exit(1);
    out[GROW] = commits(db, up, n, 1);
    exec_or_die(db, "PRAGMA wal_checkpoint(RESTART)");
    out[WARM] = commits(db, up, n, 2);
    exec_or_die(db, "PRAGMA wal_checkpoint(RESTART)");
    drop_cached(wal);
    drop_cached(path);
    out[COLD] = commits(db, up, n, 3);
    sqlite3_finalize(up);
    sqlite3_close(db);
    unlink(path);
    unlink(wal);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: walwrite DIR COMMITS ROUNDS\n");
        return 2;
    }
    int n = atoi(argv[2]), rounds = atoi(argv[3]);
    const char *ours = sqlite_walvfs_default();
    if (n < 1 || rounds < 1 || !ours) return 2;
    double *w[2][STATES], *c[2][STATES];
    for (int v = 0; v < 2; v++)
        for (int s = 0; s < STATES; s++) {
            w[v][s] = calloc((size_t)rounds, sizeof(double));
            c[v][s] = calloc((size_t)rounds, sizeof(double));
        }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            int v = (r + k) % 2; /* each VFS goes first every other round */
            cost got[STATES];
            round_of(argv[1], v ? ours : NULL, n, got);
            for (int s = 0; s < STATES; s++) {
                w[v][s][r] = got[s].wall;
                c[v][s][r] = got[s].cpu;
            }
            printf("round %d %-6s grow %.2f/%.2f s, warm %.2f/%.2f s, cold %.2f/%.2f s (wall/CPU)\n", r + 1,
                   v ? "chime" : "sqlite", got[GROW].wall, got[GROW].cpu, got[WARM].wall, got[WARM].cpu,
                   got[COLD].wall, got[COLD].cpu);
            fflush(stdout);
        }
    printf("\n| WAL state | SQLite's VFS: wall / CPU | chime's VFS: wall / CPU | ratio (wall) | ratio (CPU) |\n");
    printf("|---|---|---|---|---|\n");
    for (int s = 0; s < STATES; s++) {
        double sw = median(w[0][s], rounds), sc = median(c[0][s], rounds);
        double cw = median(w[1][s], rounds), cc = median(c[1][s], rounds);
        printf("| %s | %.2f / %.2f s | %.2f / %.2f s | %.2fx | %.2fx |\n", state_name[s], sw, sc, cw, cc, sw / cw,
               sc / cc);
    }
    for (int v = 0; v < 2; v++)
        for (int s = 0; s < STATES; s++) {
            free(w[v][s]);
            free(c[v][s]);
        }
    return 0;
}
