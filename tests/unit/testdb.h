/* testdb.h -- fresh databases for unit tests, on both backends.
 *
 * Include after testutil.h. The usual way: write the test body once against
 * a store and list it with TESTDB_TEST, which runs it twice -- on a fresh
 * SQLite file and on a fresh PostgreSQL database -- with the schema migrated:
 *
 *     static void test_thing(void **state)
 *     {
 *         testdb *db = *state;            // db->s is open, db->url its URL
 *         ...
 *     }
 *     const struct CMUnitTest tests[] = { TESTDB_TEST(test_thing), ... };
 *
 * TESTDB_TEST_RAW does the same without running testdb_migrate. Teardown
 * closes the store and deletes the database, also when the test failed.
 *
 * PostgreSQL comes from $CHIME_TEST_PG (tests/run.sh starts a server and
 * sets it); each test gets its own database created through it. If the
 * variable is unset the test fails: store tests never skip silently.
 * SQLite files go under $CHIME_TEST_TMP, else /tmp.
 */
#ifndef CHIME_TESTDB_H
#define CHIME_TESTDB_H

#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "schema.h"
#include "store/store.h"

/* A statement that must succeed. */
#define EXEC_OK(s, sql) assert_int_equal(store_exec((s), (sql)), STORE_OK)

typedef struct testdb {
    store_backend backend;
    store *s;                  /* open on the fresh database */
    char url[1024];            /* store_open URL of that database */
    char path[768];            /* SQLite: the file */
    char pgname[64];           /* PostgreSQL: the database name */
} testdb;

/* A bare users row with id and email (lower case), for the tables whose
 * foreign keys name a user. */
static inline void testdb_user_email(store *s, int64_t id, const char *email)
{
    store_stmt *st = store_prepare(s, "INSERT INTO users (id, email, email_lower, name, password_hash, created_ms) "
                                      "VALUES ($1, $2, $2, 'n', 'h', 0)");
    store_bind_int64(st, 1, id);
    store_bind_str(st, 2, email);
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);
}

/* The same with the email "u<id>@x.com". */
static inline void testdb_user(store *s, int64_t id)
{
    char email[40];
    snprintf(email, sizeof email, "u%lld@x.com", (long long)id);
    testdb_user_email(s, id, email);
}

/* The one row's first column of sql, $1 bound to id. */
static inline int64_t testdb_int64(store *s, const char *sql, int64_t id)
{
    store_stmt *st = store_prepare(s, sql);
    store_bind_int64(st, 1, id);
    assert_int_equal(store_step(st), STORE_ROW);
    int64_t v = store_col_int64(st, 0);
    store_reset(st);
    return v;
}

/* A name no other test in this run uses. */
static inline void testdb_unique(char *buf, size_t n, const char *prefix)
{
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, n, "%s%ld_%u_%ld", prefix, (long)getpid(), counter++, (long)ts.tv_nsec);
}

/* A path for a new SQLite file (nothing there yet) and its URL. */
static inline void testdb_sqlite_path(char *path, size_t pathlen, char *url, size_t urllen)
{
    const char *dir = getenv("CHIME_TEST_TMP");
    char name[64];
    testdb_unique(name, sizeof name, "chime_t_");
    snprintf(path, pathlen, "%s/%s.db", dir && *dir ? dir : "/tmp", name);
    if (url)
        snprintf(url, urllen, "sqlite:%s", path);
}

static inline void testdb_sqlite_remove(const char *path)
{
    char p[800];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    snprintf(p, sizeof p, "%s.nodes", path); /* node ids' locks (cluster/identity.c) */
    unlink(p);
}

/* Percent-encodes everything but unreserved characters and '/'. */
static inline void testdb_urlenc(char *out, size_t n, const char *in)
{
    size_t o = 0;
    for (; *in && o + 4 < n; in++) {
        unsigned char c = (unsigned char)*in;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~/", c))
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, n - o, "%%%02X", c);
    }
    out[o] = '\0';
}

/* Connects to the server named by $CHIME_TEST_PG; prints why not. */
static inline PGconn *testdb_pg_admin(void)
{
    const char *base = getenv("CHIME_TEST_PG");
    if (!base || !*base) {
        print_error("CHIME_TEST_PG is not set: run the unit tests through tests/run.sh, "
                    "which starts PostgreSQL\n");
        return NULL;
    }
    PGconn *c = PQconnectdb(base);
    if (PQstatus(c) != CONNECTION_OK) {
        print_error("cannot connect to CHIME_TEST_PG=%s: %s\n", base, PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

static inline int testdb_pg_command(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        print_error("%s: %s\n", sql, PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

/* Creates a fresh database; writes its name and a store_open URL for it.
 * Returns 0, or -1 after printing why. */
static inline int testdb_pg_create(char *name, size_t namelen, char *url, size_t urllen)
{
    PGconn *c = testdb_pg_admin();
    if (!c)
        return -1;
    testdb_unique(name, namelen, "chime_t_");
    char sql[160];
    snprintf(sql, sizeof sql, "CREATE DATABASE \"%s\"", name);
    int rc = testdb_pg_command(c, sql);
    if (rc == 0) {
        char user[256], host[512];
        testdb_urlenc(user, sizeof user, PQuser(c));
        testdb_urlenc(host, sizeof host, PQhost(c));
        snprintf(url, urllen, "postgresql://%s@/%s?host=%s&port=%s", user, name, host,
                 PQport(c));
    }
    PQfinish(c);
    return rc;
}

static inline void testdb_pg_drop(const char *name)
{
    PGconn *c = testdb_pg_admin();
    if (!c)
        return;
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", name);
    testdb_pg_command(c, sql);
    PQfinish(c);
}

/* Fills db with a fresh, empty database of the given backend (not opened). */
static inline int testdb_create(testdb *db, store_backend backend)
{
    memset(db, 0, sizeof *db);
    db->backend = backend;
    if (backend == STORE_SQLITE) {
        testdb_sqlite_path(db->path, sizeof db->path, db->url, sizeof db->url);
        return 0;
    }
    return testdb_pg_create(db->pgname, sizeof db->pgname, db->url, sizeof db->url);
}

static inline void testdb_destroy(testdb *db)
{
    store_close(db->s);
    db->s = NULL;
    if (db->backend == STORE_SQLITE)
        testdb_sqlite_remove(db->path);
    else if (db->pgname[0])
        testdb_pg_drop(db->pgname);
}

/* Another connection to the same database (for concurrency tests). */
static inline store *testdb_open(const testdb *db)
{
    char err[512];
    store *s = store_open(db->url, err, sizeof err);
    if (!s)
        print_error("store_open(%s): %s\n", db->url, err);
    return s;
}

/* store_migrate with chime's whole schema (src/schema.c). */
static inline int testdb_migrate(store *s)
{
    store_schema schema;
    return chime_schema(&schema) == 0 ? store_migrate(s, &schema) : STORE_ERROR;
}

/* The newest version chime's schema knows. */
static inline int testdb_latest(void)
{
    store_schema schema;
    return chime_schema(&schema) == 0 ? store_schema_latest(&schema) : -1;
}

/* How many steps chime's schema has (versions need not be contiguous). */
static inline int testdb_nsteps(void)
{
    store_schema schema;
    return chime_schema(&schema) == 0 ? schema.n : -1;
}

/* initial_state codes for the fixtures below. */
enum { TESTDB_SQLITE_RAW = 1, TESTDB_PG_RAW, TESTDB_SQLITE_MIGRATED, TESTDB_PG_MIGRATED };

static inline int testdb_setup(void **state)
{
    int code = (int)(uintptr_t)*state;
    store_backend backend =
        (code == TESTDB_SQLITE_RAW || code == TESTDB_SQLITE_MIGRATED) ? STORE_SQLITE : STORE_PG;
    testdb *db = malloc(sizeof *db);
    if (!db || testdb_create(db, backend) < 0 || !(db->s = testdb_open(db)))
        goto fail;
    if ((code == TESTDB_SQLITE_MIGRATED || code == TESTDB_PG_MIGRATED) && testdb_migrate(db->s)) {
        print_error("store_migrate: %s\n", store_errmsg(db->s));
        goto fail;
    }
    *state = db;
    return 0;
fail:
    if (db)
        testdb_destroy(db);
    free(db);
    return -1;
}

static inline int testdb_teardown(void **state)
{
    testdb *db = *state;
    testdb_destroy(db);
    free(db);
    return 0;
}

#define TESTDB_CASE_(f, backend, code) \
    {#f "[" backend "]", f, testdb_setup, testdb_teardown, (void *)(uintptr_t)(code)}
/* The body f(void **state) on both backends, schema migrated. */
#define TESTDB_TEST(f) \
    TESTDB_CASE_(f, "sqlite", TESTDB_SQLITE_MIGRATED), TESTDB_CASE_(f, "pg", TESTDB_PG_MIGRATED)
/* The same on empty databases. */
#define TESTDB_TEST_RAW(f) \
    TESTDB_CASE_(f, "sqlite", TESTDB_SQLITE_RAW), TESTDB_CASE_(f, "pg", TESTDB_PG_RAW)
/* One backend only, for behaviour the other does not have (empty database;
 * TESTDB_TEST_PG: migrated). */
#define TESTDB_TEST_SQLITE_RAW(f) TESTDB_CASE_(f, "sqlite", TESTDB_SQLITE_RAW)
#define TESTDB_TEST_SQLITE(f) TESTDB_CASE_(f, "sqlite", TESTDB_SQLITE_MIGRATED)
#define TESTDB_TEST_PG_RAW(f) TESTDB_CASE_(f, "pg", TESTDB_PG_RAW)
#define TESTDB_TEST_PG(f) TESTDB_CASE_(f, "pg", TESTDB_PG_MIGRATED)

#endif
