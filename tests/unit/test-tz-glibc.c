/* test-tz-glibc.c -- differential test against glibc's localtime_r.
 *
 * For every TZif zone under /usr/share/zoneinfo (regular files only, so each
 * zone's data once; posix/ and right/ skipped), 1970..2100: a grid of
 * instants about three days apart, plus every transition either side finds
 * between grid points (located to the second by bisection), checked at the
 * transition and one second before. glibc runs in a child process with TZ
 * set, so this process's own time zone state is never touched. Also checks
 * tz_utc_to_local / tz_local_to_utc round trips and the RFC 5545 gap and
 * overlap rule at every transition. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "time/tz.h"

#define ZONEINFO "/usr/share/zoneinfo"
#define T_FIRST INT64_C(0)           /* 1970-01-01 */
#define T_LAST INT64_C(4102444800)   /* 2100-01-01 */
#define STEP (3 * 86400 + 7 * 3600 + 13 * 60 + 7)

typedef struct sample {
    int64_t t;
    int32_t off;
} sample;

typedef struct samples {
    sample *v;
    size_t n, cap;
} samples;

static void push(samples *s, int64_t t, int32_t off)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        assert_non_null(s->v);
    }
    s->v[s->n++] = (sample){t, off};
}

typedef int32_t (*offset_fn)(const void *ctx, int64_t t);

/* Grid samples plus, wherever the offset changes between two grid points,
 * the transition instant T (found by bisection) sampled at T-1 and T. */
static void scan(offset_fn f, const void *ctx, samples *grid, samples *trans)
{
    int32_t prev = f(ctx, T_FIRST);
    push(grid, T_FIRST, prev);
    for (int64_t t = T_FIRST + STEP; t <= T_LAST; t += STEP) {
        int32_t off = f(ctx, t);
        push(grid, t, off);
        if (off == prev) continue;
        int64_t lo = t - STEP, hi = t; /* f(lo) == prev, f(hi) != prev */
        while (hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;
            if (f(ctx, mid) == prev) lo = mid;
            else hi = mid;
        }
        push(trans, hi - 1, prev);
        push(trans, hi, f(ctx, hi));
        prev = off;
    }
}

static int32_t glibc_offset(const void *ctx, int64_t t)
{
    (void)ctx;
    time_t tt = (time_t)t;
    struct tm tm;
    if (!localtime_r(&tt, &tm)) return INT32_MIN;
    return (int32_t)tm.tm_gmtoff;
}

static int32_t ours_offset(const void *ctx, int64_t t)
{
    return tz_offset_at(ctx, t);
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) _exit(2);
        c += w;
        n -= (size_t)w;
    }
}

/* In a child with TZ=:name: glibc's offsets at our instants, then glibc's
 * own transition samples. Everything comes back over a pipe. */
static void glibc_child(int fd, const char *name, const samples *ask)
{
    char tz[600];
    snprintf(tz, sizeof tz, ":%s", name);
    setenv("TZ", tz, 1);
    tzset();
    for (size_t i = 0; i < ask->n; i++) {
        sample s = {ask->v[i].t, glibc_offset(NULL, ask->v[i].t)};
        write_all(fd, &s, sizeof s);
    }
    samples grid = {0}, trans = {0};
    scan(glibc_offset, NULL, &grid, &trans);
    write_all(fd, trans.v, trans.n * sizeof *trans.v);
    _exit(0);
}

static void read_samples(int fd, samples *out)
{
    sample s;
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd, (char *)&s + got, sizeof s - got)) > 0) {
        got += (size_t)r;
        if (got == sizeof s) {
            push(out, s.t, s.off);
            got = 0;
        }
    }
    assert_int_equal(got, 0);
}

static int failures;

static void mismatch(const char *name, const char *what, int64_t t, int32_t ours, int32_t glibc)
{
    if (failures++ < 20)
        fprintf(stderr, "%s: %s at %lld: ours %d, glibc %d\n", name, what, (long long)t,
                (int)ours, (int)glibc);
}

/* RFC 5545 at a transition T from a to b: a wall time before T + max(a, b)
 * takes offset a (in a gap: the offset before; in an overlap: the first). */
static void check_local(const char *name, const tz_zone *z, const samples *trans)
{
    for (size_t i = 0; i + 1 < trans->n; i += 2) {
        int64_t t = trans->v[i + 1].t;
        int32_t a = trans->v[i].off, b = trans->v[i + 1].off;
        int32_t hi = a > b ? a : b, lo = a < b ? a : b;
        int64_t probes[] = {t + lo - 1, t + lo, t + (lo + hi) / 2, t + hi - 1, t + hi};
        for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
            int64_t l = probes[k];
            int64_t want = l < t + hi ? l - a : l - b;
            int64_t got = tz_local_to_utc(z, l);
            if (got != want) mismatch(name, "local_to_utc", l, (int32_t)(got - l), (int32_t)(want - l));
        }
    }
}

static void check_round_trips(const char *name, const tz_zone *z, const samples *grid)
{
    for (size_t i = 0; i < grid->n; i++) {
        int64_t u = grid->v[i].t, l = tz_utc_to_local(z, u);
        int64_t back = tz_local_to_utc(z, l);
        /* Equal, or an earlier instant with the same wall time (overlap). */
        if (back != u && !(back < u && tz_utc_to_local(z, back) == l))
            mismatch(name, "round trip", u, (int32_t)(back - u), 0);
    }
}

static void check_zone(tz_db *db, const char *name, size_t *nzones, size_t *nsamples)
{
    const tz_zone *z = tz_db_get(db, name);
    if (!z) {
        mismatch(name, "load", 0, 0, 0);
        return;
    }
    samples grid = {0}, trans = {0}, theirs = {0};
    scan(ours_offset, z, &grid, &trans);
    samples ask = grid;
    for (size_t i = 0; i < trans.n; i++) push(&ask, trans.v[i].t, trans.v[i].off);
    grid.v = NULL; /* now owned by ask */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        glibc_child(fds[1], name, &ask);
    }
    close(fds[1]);
    read_samples(fds[0], &theirs);
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(theirs.n >= ask.n);
    for (size_t i = 0; i < ask.n; i++)
        if (theirs.v[i].off != ask.v[i].off)
            mismatch(name, "offset", ask.v[i].t, ask.v[i].off, theirs.v[i].off);
    for (size_t i = ask.n; i < theirs.n; i++) { /* glibc's transitions */
        int32_t mine = tz_offset_at(z, theirs.v[i].t);
        if (mine != theirs.v[i].off) mismatch(name, "glibc transition", theirs.v[i].t, mine, theirs.v[i].off);
    }
    check_local(name, z, &trans);
    check_round_trips(name, z, &ask);
    *nzones += 1;
    *nsamples += theirs.n;
    free(ask.v);
    free(trans.v);
    free(theirs.v);
}

static bool is_tzif(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char magic[4];
    bool yes = fread(magic, 1, 4, f) == 4 && memcmp(magic, "TZif", 4) == 0;
    fclose(f);
    return yes;
}

static void walk(tz_db *db, const char *rel, size_t *nzones, size_t *nsamples)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s%s%s", ZONEINFO, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (!*rel && (!strcmp(e->d_name, "posix") || !strcmp(e->d_name, "right"))) continue;
        char name[512], path[1024];
        snprintf(name, sizeof name, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(path, sizeof path, "%s/%s", ZONEINFO, name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) walk(db, name, nzones, nsamples);
        else if (S_ISREG(st.st_mode) && is_tzif(path)) check_zone(db, name, nzones, nsamples);
    }
    closedir(d);
}

static void test_every_zone_against_glibc(void **state)
{
    (void)state;
    tz_db *db = tz_db_new(NULL);
    assert_non_null(db);
    size_t nzones = 0, nsamples = 0;
    walk(db, "", &nzones, &nsamples);
    fprintf(stderr, "%zu zones, %zu instants compared, %d mismatches\n", nzones, nsamples, failures);
    tz_db_free(db);
    assert_true(nzones > 300);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_zone_against_glibc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
