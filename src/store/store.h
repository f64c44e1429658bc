/* store.h -- the one seam to the database.
 *
 * A `store` is one connection, owned by one thread at a time. Two backends
 * behind the same calls: SQLite (embedded default, WAL) and PostgreSQL
 * (libpq). SQL is written once in the portable subset both understand, with
 * PostgreSQL-style numbered parameters ($1, $2, ...); the SQLite backend
 * rewrites them to ?1, ?2. Values are only ever bound, never spliced into SQL.
 *
 * Portable conventions the schema follows: ids are BIGINT, times are BIGINT
 * milliseconds since the Unix epoch (UTC), booleans are INTEGER 0/1, text is
 * UTF-8. Both backends accept INSERT ... ON CONFLICT and RETURNING.
 *
 * Usage:
 *     store_stmt *st = store_prepare(s, "SELECT name FROM users WHERE id = $1");
 *     store_bind_int64(st, 1, id);
 *     while ((rc = store_step(st)) == STORE_ROW) use(store_col_text(st, 0));
 *     store_reset(st);            // ready for new bindings; keep it cached
 * Statements are cached per connection by their SQL text, so handlers may
 * call store_prepare on every request cheaply.
 *
 * Details both backends share:
 * - One SQL text is one statement: store_prepare returns the same (reset)
 *   statement each time, so do not nest two uses of the same text. The cache
 *   never evicts; SQL must come from a fixed set of strings (at most 4096
 *   distinct texts per connection), never be built from data.
 * - Any failed statement aborts the open transaction (PostgreSQL's rule,
 *   enforced on SQLite too): later statements fail and store_commit rolls
 *   back. Use ON CONFLICT rather than trying and catching inside one.
 * - A failed store_commit has rolled the transaction back. store_rollback
 *   outside a transaction is a no-op returning STORE_OK.
 * - Lock waits end after STORE_BUSY_MS (5 s) with STORE_BUSY (SQLite
 *   busy_timeout, PostgreSQL lock_timeout); retry the whole transaction.
 * - After STORE_DONE or an error, store_step repeats that answer until
 *   store_reset; binding needs a reset statement.
 * - A failed store_prepare returns NULL, and every statement call accepts
 *   NULL (binds and steps return STORE_ERROR, store_errmsg keeps the
 *   prepare error), so checking store_step's result is enough.
 * - PostgreSQL prepares a statement at its first store_step, so an SQL error
 *   shows there rather than at store_prepare (as it does on SQLite). An
 *   integer parameter is typed bigint (write $1::int where a function wants
 *   int4); other parameters are typed by the server from context.
 * - store_col_int64 reads booleans as 1/0 and truncates fractions on both
 *   backends; non-numeric text reads as 0.
 * - STORE_CONN (PostgreSQL): the connection dropped. Outside a transaction the
 *   next call reconnects; inside one, every call fails until store_rollback.
 */
#ifndef CHIME_STORE_H
#define CHIME_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct store store;
typedef struct store_stmt store_stmt;

typedef enum store_backend { STORE_SQLITE, STORE_PG } store_backend;

/* How long a statement waits for a lock before STORE_BUSY. */
#define STORE_BUSY_MS 5000

/* Results. Everything below 0 is an error; store_errmsg says more. */
enum {
    STORE_OK = 0,
    STORE_ROW = 1,        /* store_step: a row is available */
    STORE_DONE = 2,       /* store_step: no more rows */
    STORE_ERROR = -1,     /* anything else */
    STORE_CONSTRAINT = -2,/* unique / foreign key / check violation */
    STORE_BUSY = -3,      /* lock timeout, serialization failure, deadlock: retry */
    STORE_CONN = -4,      /* connection lost */
};

/* url: "sqlite:PATH" (PATH ":memory:" allowed) or "postgres://..." /
 * "postgresql://...". On failure returns NULL and writes a message to err. */
store *store_open(const char *url, char *err, size_t errlen);
void store_close(store *s);
store_backend store_backend_of(const store *s);
const char *store_errmsg(const store *s);

/* The schema, as one ordered list of steps (store_migrate.c). Each domain
 * declares its own steps (users_schema.c, cal_schema.c, ...) and adds them
 * to the list (src/schema.c gathers them all), so a domain's tables live
 * beside its code while every database still moves through one sequence
 * of versions.
 *
 * To change the schema, add a step with a version no other step has;
 * never edit or renumber one that has shipped. sql_pg NULL means the
 * SQLite text is also valid PostgreSQL (stick to BIGINT ids and ms times,
 * INTEGER 0/1 booleans, TEXT). A step may hold several statements
 * separated by ';'. */
typedef struct store_migration {
    int version;
    const char *name;
    const char *sql_sqlite;
    const char *sql_pg; /* NULL: the same as sql_sqlite */
} store_migration;

#define STORE_SCHEMA_MAX 256

/* The C part of a step whose rows need computing in C (say, Unicode
 * normalization): run after the step's SQL, in its transaction. STORE_OK,
 * or an error that rolls the step back. */
typedef int (*store_migration_fn)(store *s);

typedef struct store_schema {
    const store_migration *steps[STORE_SCHEMA_MAX]; /* by version; borrowed */
    store_migration_fn fns[STORE_SCHEMA_MAX];       /* each step's, or NULL */
    int n;
} store_schema;

/* Adds a domain's steps (static tables that outlive the schema), keeping
 * the list in version order. 0, or -1 on a version already present, a
 * version below 1, or a full list. */
int store_schema_add(store_schema *s, const store_migration *steps, size_t n);
/* Gives the step of this version (added already) its C part: 0, or -1
 * when there is no such step. */
int store_schema_add_fn(store_schema *s, int version, store_migration_fn fn);

/* Applies every step of the schema not yet applied, in order, each in a
 * transaction. Safe to call from several processes at once on PostgreSQL
 * (advisory lock). Refuses a database migrated by a newer program. */
int store_migrate(store *s, const store_schema *schema);
/* The schema version after the last applied migration. */
int store_schema_version(store *s);
/* The newest version the schema knows (its last step's). */
int store_schema_latest(const store_schema *schema);

/* A connection shared by threads under a lock of the caller's: held(ctx)
 * says whether the calling thread holds that lock. From then on begin,
 * commit, rollback, exec, prepare, step and reset check it, and a call
 * without the lock aborts the process with a message. Unlocked, two
 * threads on one connection corrupt it silently (seen: SQLite answering
 * "file is not a database", then a double free); checked on every call,
 * the mistake shows the first time the code runs, not the day two threads
 * happen to collide. */
void store_set_guard(store *s, bool (*held)(void *ctx), void *ctx);

/* SQLite: writes what the WAL file holds to disk now (fdatasync on a
 * descriptor of its own), taking no lock. A commit with synchronous=FULL
 * syncs the WAL while it holds the write lock, and that sync carries every
 * unsynced commit before it (the reminder engine's are not synced one by
 * one): at 1M reminders a minute one such sync took 40-240 ms, and every
 * writer waited. Done often in the background, it leaves that commit
 * little to flush. PostgreSQL: nothing to do, STORE_OK. */
int store_sync_log(store *s);

/* SQLite: writes the database file's dirty pages to disk now (fdatasync
 * on a descriptor of its own), taking no lock; so that a checkpoint that
 * follows, under the writers' lock, has little left to sync.
 * PostgreSQL: nothing to do, STORE_OK. */
int store_sync_data(store *s);

/* SQLite: takes this connection's turn in the file's writers' queue
 * (store_sqlite_lock.h) with no transaction of its own, so that no other
 * connection of the process starts a write until store_writers_release:
 * for a checkpoint that must reach the WAL's end while writers keep
 * coming. Waits at most the busy timeout. False when not held (timed out,
 * in memory, held already, PostgreSQL): go on without it. */
bool store_writers_hold(store *s);
void store_writers_release(store *s);

/* SQLite: true once a sync to disk of this database (its WAL or its
 * file) failed on any connection of this process: a commit's, a
 * checkpoint's, store_sync_log's or store_sync_data's. From then on every
 * write to the file is refused (store_begin, a change outside a
 * transaction, store_commit of a transaction begun before, the syncs:
 * STORE_ERROR, "the disk failed a write; ...") until the process
 * restarts; reads go on. Linux reports a failed write-back once and lets
 * the pages it could not write pass for clean, so a later sync succeeds
 * over a hole in the WAL, and a power cut would take every later commit
 * with it. After a restart SQLite goes on from what the disk holds.
 * PostgreSQL: false (its server stops itself on a failed sync). */
bool store_disk_failed(store *s);
/* What a refused write says (store_errmsg); the API says the same. */
#define STORE_DISK_FAILED_MSG "a write to disk failed; chime takes no writes until it restarts"

/* Transactions. store_begin takes the write lock at once on SQLite
 * (BEGIN IMMEDIATE) so two writers never deadlock on lock upgrade. */
int store_begin(store *s);
int store_commit(store *s);
int store_rollback(store *s);

/* Runs SQL with no parameters and no result rows (DDL, pragmas). */
int store_exec(store *s, const char *sql);

/* Prepared statements, cached per connection; never free them yourself. */
store_stmt *store_prepare(store *s, const char *sql);
int store_bind_int64(store_stmt *st, int idx, int64_t v);   /* idx from 1 */
int store_bind_text(store_stmt *st, int idx, const char *v, size_t len);
int store_bind_str(store_stmt *st, int idx, const char *v); /* NUL-terminated; NULL binds NULL */
int store_bind_null(store_stmt *st, int idx);
int store_step(store_stmt *st);          /* STORE_ROW, STORE_DONE or an error */
void store_reset(store_stmt *st);        /* clears bindings and results */
/* Columns of the current row, from 0. Text stays valid until the next
 * store_step or store_reset on the statement. */
bool store_col_is_null(store_stmt *st, int col);
int64_t store_col_int64(store_stmt *st, int col);
const char *store_col_text(store_stmt *st, int col); /* "" for NULL */
size_t store_col_len(store_stmt *st, int col);
/* Rows changed by the last completed INSERT/UPDATE/DELETE of this statement. */
int64_t store_changes(store_stmt *st);

/* One-shot helper: prepare, step once, reset. Returns STORE_DONE (no row),
 * STORE_ROW with *out set from column 0, or an error. */
int store_query_int64(store *s, const char *sql, int64_t *out);

/* A list of ids bound as one parameter: store_ids_json makes its text, a
 * JSON array ("[1,2,3]"; equal neighbours written once, so a sorted list
 * comes out distinct), and STORE_IDS_SQLITE / STORE_IDS_PG take it apart
 * in SQL as a subquery of BIGINTs, P the parameter ("$1"). One statement
 * for a whole list, whatever its length. NULL when out of memory. */
char *store_ids_json(const int64_t *ids, size_t n);
#define STORE_IDS_SQLITE(P) "(SELECT value FROM json_each(" P "))"
#define STORE_IDS_PG(P) "(SELECT CAST(value AS BIGINT) FROM json_array_elements_text(CAST(" P " AS json)))"

/* Whether anything was committed since, told as cheaply as the backend
 * can: two stamps taken on the same connection are equal only if no
 * transaction committed a change in between, on this connection or any
 * other. SQLite: PRAGMA data_version (other connections, this process's
 * included) and this connection's change count. STORE_OK, or STORE_ERROR
 * when the backend cannot tell (PostgreSQL): then assume it changed. */
typedef struct store_stamp {
    int64_t others, mine;
} store_stamp;
int store_change_stamp(store *s, store_stamp *out);

/* The database server's clock in milliseconds since the epoch. Leases use
 * this, never a node's own clock. */
int store_now_ms(store *s, int64_t *out);

#endif
