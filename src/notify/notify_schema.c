/* notify_schema.c -- the reminders' schema steps: reminder rows and their
 * dirty marks (with the triggers on the calendar's tables that write
 * them, in the writer's own transaction), the outbox, the inbox, and the
 * webhook endpoints. See store.h for the rules of a step (never edit or
 * renumber one that has shipped). */
#include "notify/notify.h"

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
static const store_migration notify_steps[] = {
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
     * change from pending (see INAPP_DELIVER_PG in notify_inapp.c), so
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
    /* Secrets every node shares, made once here. 'inbox_ids': the key
     * that conceals an inbox item's seq as its id (notify_http.c), 16
     * random bytes as hex. */
    {20, "server_keys",
     "CREATE TABLE server_keys (name TEXT PRIMARY KEY, value TEXT NOT NULL);"
     "INSERT INTO server_keys (name, value) VALUES ('inbox_ids', lower(hex(randomblob(16))))",
     "CREATE TABLE server_keys (name TEXT PRIMARY KEY, value TEXT NOT NULL);"
     "INSERT INTO server_keys (name, value) VALUES ('inbox_ids', "
     "replace(CAST(gen_random_uuid() AS text), '-', ''))"},
    /* Flood bounds (notify_budget.c): each recipient's deliveries in its
     * current clock hour and UTC day (asked: the last claim's ask, kept:
     * its grant, for the upsert's arithmetic). The outbox's end states
     * gain dropped_quota, and an index by recipient for
     * GET /v1/me/deliveries; both partial, so the hot path (pending and
     * done rows) writes neither. */
    {23, "delivery_budgets",
     "CREATE TABLE delivery_budget ("
     " user_id BIGINT PRIMARY KEY,"
     " hour_ms BIGINT NOT NULL,"
     " hour_n BIGINT NOT NULL,"
     " day_ms BIGINT NOT NULL,"
     " day_n BIGINT NOT NULL,"
     " asked BIGINT NOT NULL,"
     " kept BIGINT NOT NULL);"
     "DROP INDEX deliveries_ended;"
     "CREATE INDEX deliveries_ended ON deliveries(state, updated_ms) "
     "WHERE state IN ('dead', 'missed', 'cancelled', 'dropped_quota');"
     "CREATE INDEX deliveries_ended_user ON deliveries(user_id, state, updated_ms) "
     "WHERE state IN ('dead', 'missed', 'cancelled', 'dropped_quota')",
     NULL},
    /* notify.cleanup finds done deliveries past --deliveries-keep-days by
     * age (the other end states have deliveries_ended). */
    {24, "deliveries_done_age", "CREATE INDEX deliveries_done ON deliveries(updated_ms) WHERE state = 'done'", NULL},
    /* Two budgets a recipient: reminders of events it organizes, and of
     * events it is invited to (invited = 1), so that invitations from
     * others cannot use up what its own reminders need. The counts start
     * again (they are for the current hour and day only). */
    {25, "delivery_budgets_invited",
     "DROP TABLE delivery_budget;"
     "CREATE TABLE delivery_budget ("
     " user_id BIGINT NOT NULL,"
     " invited INTEGER NOT NULL,"
     " hour_ms BIGINT NOT NULL,"
     " hour_n BIGINT NOT NULL,"
     " day_ms BIGINT NOT NULL,"
     " day_n BIGINT NOT NULL,"
     " asked BIGINT NOT NULL,"
     " kept BIGINT NOT NULL,"
     " PRIMARY KEY (user_id, invited))",
     NULL},
};

int notify_schema_add(store_schema *s)
{
    return store_schema_add(s, notify_steps, sizeof notify_steps / sizeof notify_steps[0]);
}
