/* migrations.c -- the schema, as an ordered list of steps.
 *
 * To change the schema, append a step with the next version number; never
 * edit or renumber one that has shipped. sql_pg NULL means the SQLite text
 * is also valid PostgreSQL (stick to BIGINT ids and ms times, INTEGER 0/1
 * booleans, TEXT). A step may hold several statements separated by ';'.
 *
 * Each step runs in its own transaction together with the row recording it
 * in schema_migrations, so a crash leaves the schema at a step boundary. On
 * PostgreSQL every step first takes a transaction-scoped advisory lock:
 * processes starting at once queue on it, and each re-checks under the lock
 * whether the step is still to do. On SQLite BEGIN IMMEDIATE does the same.
 */
#include "store/store_int.h"

#include <string.h>

typedef struct migration {
    int version;
    const char *name;
    const char *sql_sqlite;
    const char *sql_pg;
} migration;

#define REMINDERS_TABLES(SEQ_COL)                                                                          \
    "CREATE TABLE reminders ("                                                                            \
    " id BIGINT PRIMARY KEY,"                                                                             \
    " event_id BIGINT NOT NULL REFERENCES events(id) ON DELETE CASCADE,"                                  \
    " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                    \
    " method TEXT NOT NULL,"                                                                              \
    " minutes_before INTEGER NOT NULL,"                                                                   \
    " shard INTEGER NOT NULL,"                                                                            \
    " single INTEGER NOT NULL DEFAULT 0,"                                                                 \
    " floor_ms BIGINT NOT NULL,"                                                                          \
    " next_fire_ms BIGINT,"                                                                               \
    " occurrence_ms BIGINT,"                                                                              \
    " start_ms BIGINT,"                                                                                   \
    " UNIQUE (event_id, user_id, method, minutes_before));"                                               \
    "CREATE INDEX reminders_due ON reminders(shard, next_fire_ms);"                                       \
    "CREATE TABLE reminder_dirty ("                                                                       \
    " event_id BIGINT PRIMARY KEY,"                                                                       \
    " gen BIGINT NOT NULL,"                                                                               \
    " marked_ms BIGINT NOT NULL);"                                                                              \
    "CREATE TABLE deliveries ("                                                                           \
    " id TEXT PRIMARY KEY,"                                                                               \
    " reminder_id BIGINT NOT NULL,"                                                                       \
    " event_id BIGINT NOT NULL,"                                                                          \
    " user_id BIGINT NOT NULL,"                                                                           \
    " channel TEXT NOT NULL,"                                                                             \
    " endpoint_id BIGINT NOT NULL DEFAULT 0,"                                                             \
    " summary TEXT NOT NULL,"                                                                             \
    " occurrence_ms BIGINT NOT NULL,"                                                                     \
    " due_ms BIGINT NOT NULL,"                                                                            \
    " fired_ms BIGINT,"                                                                                   \
    " late INTEGER NOT NULL DEFAULT 0,"                                                                   \
    " state TEXT NOT NULL,"                                                                               \
    " attempts INTEGER NOT NULL DEFAULT 0,"                                                               \
    " next_attempt_ms BIGINT NOT NULL,"                                                                   \
    " last_error TEXT,"                                                                                   \
    " created_ms BIGINT NOT NULL,"                                                                        \
    " updated_ms BIGINT NOT NULL);"                                                                       \
    "CREATE INDEX deliveries_queue ON deliveries(state, next_attempt_ms);"                                \
    "CREATE TABLE notifications ("                                                                        \
    SEQ_COL ","                                                                                           \
    " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"                                    \
    " delivery_id TEXT NOT NULL UNIQUE,"                                                                  \
    " event_id BIGINT NOT NULL,"                                                                          \
    " summary TEXT NOT NULL,"                                                                             \
    " original_start_ms BIGINT NOT NULL,"                                                                 \
    " due_ms BIGINT NOT NULL,"                                                                            \
    " fired_ms BIGINT NOT NULL,"                                                                          \
    " late INTEGER NOT NULL DEFAULT 0,"                                                                   \
    " method TEXT NOT NULL,"                                                                              \
    " read INTEGER NOT NULL DEFAULT 0,"                                                                   \
    " created_ms BIGINT NOT NULL);"                                                                       \
    "CREATE INDEX notifications_user ON notifications(user_id, seq);"

/* SQLite: one trigger per table and operation. The mark is an upsert that
 * bumps gen, so a drain that read gen N deletes the mark only if nobody
 * marked the event again meanwhile; marked_ms keeps the first unsynced
 * change's time, which is "now" for the rows it creates (so a crash before
 * the recompute cannot push a reminder that was due meanwhile into the
 * past, where it would never fire). */
#define SQLITE_MARK(name, op, table, ref)                                                                  \
    "CREATE TRIGGER " name " AFTER " op " ON " table " BEGIN INSERT INTO reminder_dirty (event_id, gen, "  \
    "marked_ms) VALUES (" ref ", 1, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)) "          \
    "ON CONFLICT (event_id) DO UPDATE SET gen = gen + 1; END;"

/* PostgreSQL: row triggers whose names sort before the foreign keys'
 * "RI_ConstraintTrigger_..." so the mark is locked before cascaded reminder
 * rows are, the same order the drain takes them in (no deadlock). */
#define PG_MARK_FN(fn, col)                                                                                \
    "CREATE OR REPLACE FUNCTION " fn "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "                               \
    "IF TG_OP <> 'INSERT' THEN INSERT INTO reminder_dirty (event_id, gen, marked_ms) VALUES (OLD." col      \
    ", 1, (extract(epoch from clock_timestamp()) * 1000)::bigint) "                                        \
    "ON CONFLICT (event_id) DO UPDATE SET gen = reminder_dirty.gen + 1; END IF; "                         \
    "IF TG_OP <> 'DELETE' THEN INSERT INTO reminder_dirty (event_id, gen, marked_ms) VALUES (NEW." col      \
    ", 1, (extract(epoch from clock_timestamp()) * 1000)::bigint) "                                        \
    "ON CONFLICT (event_id) DO UPDATE SET gen = reminder_dirty.gen + 1; END IF; "                         \
    "RETURN NULL; END $$;"
#define PG_MARK(name, table, fn)                                                                           \
    "CREATE TRIGGER \"" name "\" AFTER INSERT OR UPDATE OR DELETE ON " table                               \
    " FOR EACH ROW EXECUTE FUNCTION " fn "();"

#define DELIVERIES_INDEXES                                                                                 \
    "CREATE INDEX deliveries_queue ON deliveries(next_attempt_ms) WHERE state = 'pending';"                \
    "CREATE INDEX deliveries_ended ON deliveries(state, updated_ms) WHERE state IN ('dead', 'missed', 'cancelled')"
static const migration migrations[] = {
    {1, "users",
     "CREATE TABLE users ("
     " id BIGINT PRIMARY KEY,"
     " email TEXT NOT NULL,"
     " email_lower TEXT NOT NULL UNIQUE,"
     " name TEXT NOT NULL,"
     " password_hash TEXT NOT NULL,"
     " is_admin INTEGER NOT NULL DEFAULT 0,"
     " created_ms BIGINT NOT NULL);"
     "CREATE TABLE sessions ("
     " token_hash TEXT PRIMARY KEY,"
     " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " created_ms BIGINT NOT NULL,"
     " expires_ms BIGINT NOT NULL);"
     "CREATE INDEX sessions_user ON sessions(user_id);"
     "CREATE TABLE auth_failures ("
     " key TEXT PRIMARY KEY,"
     " failures INTEGER NOT NULL,"
     " window_start_ms BIGINT NOT NULL,"
     " locked_until_ms BIGINT NOT NULL DEFAULT 0)",
     NULL},
    /* Calendars, events (a series is one row; its instances are computed),
     * per-instance overrides keyed by the original start, and attendees.
     * Times: *_ms are UTC instants; *_local are wall times in basic format
     * (YYYYMMDD for all-day, YYYYMMDDTHHMMSS otherwise) in the event's
     * time_zone, or the calendar's zone when time_zone is NULL (floating). */
    {2, "calendar",
     "CREATE TABLE calendars ("
     " id BIGINT PRIMARY KEY,"
     " owner_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " summary TEXT NOT NULL,"
     " time_zone TEXT NOT NULL,"
     " is_primary INTEGER NOT NULL DEFAULT 0,"
     " feed_token_hash TEXT,"
     " created_ms BIGINT NOT NULL);"
     "CREATE INDEX calendars_owner ON calendars(owner_id);"
     "CREATE UNIQUE INDEX calendars_primary ON calendars(owner_id) WHERE is_primary = 1;"
     "CREATE UNIQUE INDEX calendars_feed ON calendars(feed_token_hash);"
     "CREATE TABLE events ("
     " id BIGINT PRIMARY KEY,"
     " calendar_id BIGINT NOT NULL REFERENCES calendars(id) ON DELETE CASCADE,"
     " created_by BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " ical_uid TEXT NOT NULL,"
     " summary TEXT NOT NULL DEFAULT '',"
     " description TEXT NOT NULL DEFAULT '',"
     " location TEXT NOT NULL DEFAULT '',"
     " status TEXT NOT NULL DEFAULT 'confirmed',"
     " all_day INTEGER NOT NULL DEFAULT 0,"
     " time_zone TEXT,"
     " start_local TEXT NOT NULL,"
     " end_local TEXT NOT NULL,"
     " start_ms BIGINT NOT NULL,"
     " duration_s BIGINT NOT NULL,"
     " rrule TEXT,"
     " rdates TEXT NOT NULL DEFAULT '',"
     " exdates TEXT NOT NULL DEFAULT '',"
     " series_end_ms BIGINT,"
     " reminders TEXT NOT NULL DEFAULT '',"
     " etag TEXT NOT NULL,"
     " created_ms BIGINT NOT NULL,"
     " updated_ms BIGINT NOT NULL);"
     "CREATE INDEX events_calendar ON events(calendar_id, start_ms);"
     "CREATE UNIQUE INDEX events_uid ON events(calendar_id, ical_uid);"
     "CREATE TABLE event_overrides ("
     " event_id BIGINT NOT NULL REFERENCES events(id) ON DELETE CASCADE,"
     " original_ms BIGINT NOT NULL,"
     " cancelled INTEGER NOT NULL DEFAULT 0,"
     " summary TEXT,"
     " description TEXT,"
     " location TEXT,"
     " status TEXT,"
     " start_local TEXT,"
     " end_local TEXT,"
     " start_ms BIGINT NOT NULL,"
     " end_ms BIGINT NOT NULL,"
     " updated_ms BIGINT NOT NULL,"
     " PRIMARY KEY (event_id, original_ms));"
     "CREATE INDEX event_overrides_time ON event_overrides(start_ms);"
     "CREATE TABLE attendees ("
     " event_id BIGINT NOT NULL REFERENCES events(id) ON DELETE CASCADE,"
     " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " response_status TEXT NOT NULL DEFAULT 'needs_action',"
     " reminders TEXT,"
     " PRIMARY KEY (event_id, user_id));"
     "CREATE INDEX attendees_user ON attendees(user_id)",
     NULL},
    {3, "jobs",
     /* Leases: owner NULL = free. The epoch only ever grows, also across
      * releases, so an epoch names one tenure-and-renewal for good. */
     "CREATE TABLE leases ("
     " name TEXT PRIMARY KEY,"
     " owner TEXT,"
     " epoch BIGINT NOT NULL,"
     " expires_ms BIGINT NOT NULL);"
     "CREATE TABLE nodes ("
     " id TEXT PRIMARY KEY,"
     " address TEXT NOT NULL,"
     " started_ms BIGINT NOT NULL,"
     " heartbeat_ms BIGINT NOT NULL);"
     /* One row per registered job; next_run_ms is written only under the
      * job's lease (fenced), run_requested_ms by POST .../run. */
     "CREATE TABLE jobs ("
     " name TEXT PRIMARY KEY,"
     " schedule TEXT NOT NULL,"
     " time_zone TEXT NOT NULL,"
     " enabled INTEGER NOT NULL,"
     " next_run_ms BIGINT,"
     " run_requested_ms BIGINT);"
     "CREATE TABLE job_runs ("
     " id BIGINT PRIMARY KEY,"
     " job TEXT NOT NULL,"
     " scheduled_ms BIGINT NOT NULL,"
     " started_ms BIGINT NOT NULL,"
     " finished_ms BIGINT NOT NULL,"
     " node TEXT NOT NULL,"
     " epoch BIGINT NOT NULL,"
     " outcome TEXT NOT NULL,"
     " error TEXT);"
     "CREATE INDEX job_runs_job ON job_runs(job, started_ms);"
     /* The proof job's output (--test-tick-job); deliberately no unique key
      * on tick, so a tick run twice would show rather than fail. */
     "CREATE TABLE job_ticks ("
     " id BIGINT PRIMARY KEY,"
     " tick BIGINT NOT NULL,"
     " node TEXT NOT NULL,"
     " epoch BIGINT NOT NULL,"
     " recorded_ms BIGINT NOT NULL)",
     NULL},
    /* Reminders (src/notify): one row per (event, recipient, method,
     * minutes_before) with its next fire time; reminder_dirty marks events
     * whose rows must be recomputed -- written by triggers, so the mark
     * commits with the calendar change that needs it whatever code made
     * it; deliveries is the outbox (one row per recipient, channel and
     * endpoint, keyed by a stable delivery id); notifications the in-app
     * inbox, ordered by seq for "after CURSOR". */
    {4, "reminders",
     REMINDERS_TABLES(" seq INTEGER PRIMARY KEY")
     SQLITE_MARK("events_mark_ins", "INSERT", "events", "NEW.id")
     SQLITE_MARK("events_mark_upd", "UPDATE", "events", "NEW.id")
     SQLITE_MARK("events_mark_del", "DELETE", "events", "OLD.id")
     SQLITE_MARK("overrides_mark_ins", "INSERT", "event_overrides", "NEW.event_id")
     SQLITE_MARK("overrides_mark_upd", "UPDATE", "event_overrides", "NEW.event_id")
     SQLITE_MARK("overrides_mark_upd_old", "UPDATE", "event_overrides", "OLD.event_id")
     SQLITE_MARK("overrides_mark_del", "DELETE", "event_overrides", "OLD.event_id")
     SQLITE_MARK("attendees_mark_ins", "INSERT", "attendees", "NEW.event_id")
     SQLITE_MARK("attendees_mark_upd", "UPDATE", "attendees", "NEW.event_id")
     SQLITE_MARK("attendees_mark_del", "DELETE", "attendees", "OLD.event_id"),
     REMINDERS_TABLES(" seq BIGSERIAL PRIMARY KEY")
     PG_MARK_FN("reminder_mark_event", "id")
     PG_MARK_FN("reminder_mark_child", "event_id")
     PG_MARK("A_reminder_mark", "events", "reminder_mark_event")
     PG_MARK("A_reminder_mark", "event_overrides", "reminder_mark_child")
     PG_MARK("A_reminder_mark", "attendees", "reminder_mark_child")},
    /* Version 4 ("reminders") belongs to the notify branch. A user's webhook
     * endpoints; the secret is kept as given, since signing needs it. */
    {5, "webhooks",
     "CREATE TABLE webhooks ("
     " id BIGINT PRIMARY KEY,"
     " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " url TEXT NOT NULL,"
     " secret TEXT NOT NULL,"
     " created_ms BIGINT NOT NULL);"
     "CREATE INDEX webhooks_user ON webhooks(user_id)",
     NULL},
    /* The outbox, reshaped for its write rate. SQLite: clustered on the
     * delivery id (WITHOUT ROWID), which begins with the nominal fire time,
     * so the rows a delivery batch updates -- due together -- share pages,
     * where rowids in claim order scattered them over a page per lease
     * group; and one b-tree instead of a table plus its primary key index.
     * Both: the queue index holds only pending rows, so finishing a
     * delivery deletes an entry instead of moving it; the admin listing of
     * the rarer end states keeps an index of its own. */
    {6, "deliveries_clustered",
     "CREATE TABLE deliveries_new ("
     " id TEXT PRIMARY KEY,"
     " reminder_id BIGINT NOT NULL,"
     " event_id BIGINT NOT NULL,"
     " user_id BIGINT NOT NULL,"
     " channel TEXT NOT NULL,"
     " endpoint_id BIGINT NOT NULL DEFAULT 0,"
     " summary TEXT NOT NULL,"
     " occurrence_ms BIGINT NOT NULL,"
     " due_ms BIGINT NOT NULL,"
     " fired_ms BIGINT,"
     " late INTEGER NOT NULL DEFAULT 0,"
     " state TEXT NOT NULL,"
     " attempts INTEGER NOT NULL DEFAULT 0,"
     " next_attempt_ms BIGINT NOT NULL,"
     " last_error TEXT,"
     " created_ms BIGINT NOT NULL,"
     " updated_ms BIGINT NOT NULL) WITHOUT ROWID;"
     "INSERT INTO deliveries_new SELECT id, reminder_id, event_id, user_id, channel, endpoint_id, summary, "
     "occurrence_ms, due_ms, fired_ms, late, state, attempts, next_attempt_ms, last_error, created_ms, updated_ms "
     "FROM deliveries;"
     "DROP TABLE deliveries;"
     "ALTER TABLE deliveries_new RENAME TO deliveries;"
     DELIVERIES_INDEXES,
     "DROP INDEX deliveries_queue;" DELIVERIES_INDEXES},
    /* PostgreSQL's inbox keeps a delivery out twice by the outbox row's
     * change from pending (see INAPP_DELIVER_PG in notify_engine.c), so
     * its unique index on delivery_id -- a third of an inbox INSERT's cost
     * at 1M reminders a minute -- goes. SQLite keeps it: it costs little
     * there, and dropping it means rebuilding the table. */
    {7, "inbox_unique_by_outbox", "SELECT 1",
     "ALTER TABLE notifications DROP CONSTRAINT notifications_delivery_id_key"},
    /* PostgreSQL's inbox is read in (writing transaction, seq) order, up
     * to the oldest write transaction still running (see notify_http.c):
     * with several connections delivering, seq order is not commit order,
     * and a cursor past a row not yet committed would skip it for good.
     * Rows already there get xid 0 (all final), so their cursors hold. */
    {8, "inbox_commit_order", "SELECT 1",
     "ALTER TABLE notifications ADD COLUMN xid xid8 NOT NULL DEFAULT '0';"
     "ALTER TABLE notifications ALTER COLUMN xid SET DEFAULT pg_current_xact_id();"
     "DROP INDEX notifications_user;"
     "CREATE INDEX notifications_user ON notifications(user_id, xid, seq)"},
    /* A reminder whose series has ended keeps its row (pending deliveries
     * check it is still there) but leaves the due index: firing a one-off
     * then writes one index entry less, and ended rows stop piling up in
     * the index the scanner seeks in. */
    {9, "reminders_due_partial",
     "DROP INDEX reminders_due;"
     "CREATE INDEX reminders_due ON reminders(shard, next_fire_ms) WHERE next_fire_ms IS NOT NULL",
     NULL},
    /* PostgreSQL compares text in the database's collation, through
     * strcoll, unless it is "C" (a "C.UTF-8" or "en_US.UTF-8" database is
     * not): every lookup and insert on the outbox's key, a delivery id
     * read, written and finished at 1M a minute, and on the reminders'
     * unique key (method), paid a dozen strcoll calls. Ids order bytewise
     * anyway (SQLite compares them so). */
    {10, "bytewise_keys", "SELECT 1",
     "ALTER TABLE deliveries ALTER COLUMN id TYPE TEXT COLLATE \"C\";"
     "ALTER TABLE reminders ALTER COLUMN method TYPE TEXT COLLATE \"C\""},
};

#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

/* "chime" in ASCII: the advisory lock key every chime migrator agrees on. */
#define MIGRATE_LOCK_SQL "SELECT pg_advisory_xact_lock(426953502053)"

static const char *table_exists_sql(store *s)
{
    return store_backend_of(s) == STORE_PG
               ? "SELECT count(*) FROM pg_catalog.pg_tables"
                 " WHERE schemaname = current_schema() AND tablename = 'schema_migrations'"
               : "SELECT count(*) FROM sqlite_master"
                 " WHERE type = 'table' AND name = 'schema_migrations'";
}

int store_schema_version(store *s)
{
    int64_t n = 0;
    int rc = store_query_int64(s, table_exists_sql(s), &n);
    if (rc < 0)
        return rc;
    if (n == 0)
        return 0;
    rc = store_query_int64(s, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &n);
    return rc < 0 ? rc : (int)n;
}

/* Prefixes the current error with the step, for a message that says where. */
static int step_fail(store *s, const migration *m, int rc)
{
    char keep[STORE_ERRLEN];
    memcpy(keep, s->err, sizeof keep);
    return store_fail(s, rc, "migration %d (%s): %s", m->version, m->name, keep);
}

/* Inside the transaction: applies m unless another process already did. */
static int apply_locked(store *s, const migration *m)
{
    int rc;
    bool pg = store_backend_of(s) == STORE_PG;
    /* Startup may queue behind another node's long migration: wait longer
     * than the session's usual lock_timeout. */
    if (pg && ((rc = store_exec(s, "SET LOCAL lock_timeout = '120s'")) < 0 ||
               (rc = store_exec(s, MIGRATE_LOCK_SQL)) < 0))
        return rc;
    rc = store_exec(s, "CREATE TABLE IF NOT EXISTS schema_migrations ("
                       " version BIGINT PRIMARY KEY,"
                       " name TEXT NOT NULL,"
                       " applied_ms BIGINT NOT NULL)");
    if (rc < 0)
        return rc;
    store_stmt *st = store_prepare(s, "SELECT count(*) FROM schema_migrations WHERE version = $1");
    if (!st)
        return STORE_ERROR;
    store_bind_int64(st, 1, m->version);
    rc = store_step(st);
    int64_t done = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    if (rc < 0 || done)
        return rc < 0 ? rc : STORE_OK;
    rc = store_exec(s, pg && m->sql_pg ? m->sql_pg : m->sql_sqlite);
    if (rc < 0)
        return rc;
    int64_t now = 0;
    if ((rc = store_now_ms(s, &now)) < 0)
        return rc;
    st = store_prepare(s, "INSERT INTO schema_migrations (version, name, applied_ms)"
                          " VALUES ($1, $2, $3)");
    if (!st)
        return STORE_ERROR;
    store_bind_int64(st, 1, m->version);
    store_bind_str(st, 2, m->name);
    store_bind_int64(st, 3, now);
    rc = store_step(st);
    store_reset(st);
    return rc < 0 ? rc : STORE_OK;
}

static int apply_one(store *s, const migration *m)
{
    int rc = store_begin(s);
    if (rc < 0)
        return step_fail(s, m, rc);
    rc = apply_locked(s, m);
    if (rc < 0) {
        step_fail(s, m, rc);
        char keep[STORE_ERRLEN];
        memcpy(keep, s->err, sizeof keep);
        store_rollback(s);
        memcpy(s->err, keep, sizeof keep);
        return rc;
    }
    rc = store_commit(s);
    return rc < 0 ? step_fail(s, m, rc) : STORE_OK;
}

int store_schema_latest(void)
{
    return migrations[NMIGRATIONS - 1].version;
}

int store_migrate(store *s)
{
    int latest = migrations[NMIGRATIONS - 1].version;
    int have = store_schema_version(s);
    if (have < 0)
        return have;
    /* A newer program has migrated this database; running old code on a
     * schema it does not know could corrupt data, so refuse. */
    if (have > latest)
        return store_fail(s, STORE_ERROR,
                          "database schema version %d is newer than this program's %d",
                          have, latest);
    /* Apply every step not recorded yet, not just those above the highest:
     * a database may have a later step and miss an earlier one (branches
     * merged in another order). Each step re-checks under the lock. */
    bool done[NMIGRATIONS] = {0};
    store_stmt *st = store_prepare(s, "SELECT version FROM schema_migrations");
    while (st && store_step(st) == STORE_ROW)
        for (int i = 0; i < NMIGRATIONS; i++)
            if (migrations[i].version == store_col_int64(st, 0)) done[i] = true;
    store_reset(st);
    for (int i = 0; i < NMIGRATIONS; i++) {
        if (done[i])
            continue;
        int rc = apply_one(s, &migrations[i]);
        if (rc < 0)
            return rc;
    }
    return STORE_OK;
}
