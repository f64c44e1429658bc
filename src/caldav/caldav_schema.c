/* caldav_schema.c -- CalDAV's schema steps (versions 31-39; 30 is the
 * users' app passwords). See store.h for the rules of a step (never edit or
 * renumber one that has shipped).
 *
 * caldav_resources is at once the collections' membership (which path
 * segment names which event) and their change log for sync-collection
 * (RFC 6578): one row per (collection, name), carrying the collection's
 * sequence number at its last change, and kept as a tombstone (deleted = 1)
 * when the resource goes. A collection is a calendar (its id) or a user's
 * invitations (minus the user's id: both ids are positive, so the two never
 * meet). caldav_collections holds each collection's sequence -- its sync
 * token and CTag -- and the floor below which tokens have expired
 * (tombstones older than that were pruned).
 *
 * Triggers on the calendar's tables keep both up to date in the writer's
 * own transaction, whichever code wrote (the JSON API, an import, a PUT):
 * a sync can never miss a change that committed. Bumping the collection's
 * row first makes concurrent writers of one collection take turns on it
 * (PostgreSQL row lock; SQLite has one writer), so sequence order is
 * commit order within a collection, which tokens rely on. */
#include "caldav/caldav_store.h"

#define TABLES                                                                                              \
    "CREATE TABLE caldav_collections ("                                                                     \
    " id BIGINT PRIMARY KEY,"                                                                               \
    " seq BIGINT NOT NULL,"                                                                                 \
    " floor BIGINT NOT NULL DEFAULT 0);"                                                                    \
    "CREATE TABLE caldav_resources ("                                                                       \
    " collection_id BIGINT NOT NULL,"                                                                       \
    " name TEXT NOT NULL,"                                                                                  \
    " event_id BIGINT NOT NULL,"                                                                            \
    " seq BIGINT NOT NULL,"                                                                                 \
    " deleted INTEGER NOT NULL DEFAULT 0,"                                                                  \
    " changed_ms BIGINT NOT NULL,"                                                                          \
    " PRIMARY KEY (collection_id, name));"                                                                  \
    "CREATE INDEX caldav_resources_event ON caldav_resources(event_id, collection_id);"                     \
    "CREATE INDEX caldav_resources_seq ON caldav_resources(collection_id, seq);"                            \
    "CREATE TABLE caldav_names ("                                                                           \
    " calendar_id BIGINT NOT NULL,"                                                                         \
    " uid TEXT NOT NULL,"                                                                                   \
    " name TEXT NOT NULL,"                                                                                  \
    " PRIMARY KEY (calendar_id, uid));"                                                                     \
    "CREATE TABLE caldav_calendars ("                                                                       \
    " calendar_id BIGINT PRIMARY KEY REFERENCES calendars(id) ON DELETE CASCADE,"                           \
    " owner_id BIGINT NOT NULL,"                                                                            \
    " name TEXT,"                                                                                           \
    " color TEXT,"                                                                                          \
    " description TEXT,"                                                                                    \
    " sort_order TEXT);"                                                                                    \
    "CREATE UNIQUE INDEX caldav_calendars_name ON caldav_calendars(owner_id, name);"

/* ---- SQLite: no functions, so each trigger spells its statements out ---- */

#define NOW_SQ "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
#define DEFAULT_SQ(uid) "replace(" uid ", '/', '%2F')"
/* The name of an event's resource in its calendar: the one a client chose
 * (PUT to another name than "{uid}.ics"), else "{uid}.ics" ('/' escaped,
 * since a name is one path segment), else, when a client already put
 * another event there, "{uid}-{event id}.ics". */
#define NAME_SQ(cal, uid, id)                                                                               \
    "COALESCE((SELECT n.name FROM caldav_names n WHERE n.calendar_id = " cal " AND n.uid = " uid "), "       \
    "CASE WHEN EXISTS (SELECT 1 FROM caldav_resources x WHERE x.collection_id = " cal " AND x.name = "      \
    DEFAULT_SQ(uid) " || '.ics' AND x.deleted = 0 AND x.event_id <> " id ") THEN " DEFAULT_SQ(uid)          \
    " || '-' || printf('%016x', " id ") || '.ics' ELSE " DEFAULT_SQ(uid) " || '.ics' END)"
#define EVENT_NAME_SQ NAME_SQ("NEW.calendar_id", "NEW.ical_uid", "NEW.id")
#define INVITED_NAME_SQ "printf('%016x', NEW.event_id) || '.ics'"
#define BUMP_SQ(select)                                                                                     \
    "INSERT INTO caldav_collections (id, seq) " select " ON CONFLICT (id) DO UPDATE SET seq = seq + 1;"
#define SEQ_OF_ROW_SQ "(SELECT c.seq FROM caldav_collections c WHERE c.id = caldav_resources.collection_id)"
/* A live resource (new, revived or changed) in one collection. */
#define LIVE_SQ(coll, name, ev)                                                                             \
    BUMP_SQ("SELECT " coll ", 1 WHERE 1")                                                                   \
    "INSERT INTO caldav_resources (collection_id, name, event_id, seq, deleted, changed_ms) VALUES ("       \
    coll ", " name ", " ev ", (SELECT seq FROM caldav_collections WHERE id = " coll "), 0, " NOW_SQ ") "    \
    "ON CONFLICT (collection_id, name) DO UPDATE SET event_id = excluded.event_id, seq = excluded.seq, "    \
    "deleted = 0, changed_ms = excluded.changed_ms;"
/* The event's live rows that `where` picks become tombstones. */
#define GONE_SQ(ev, where)                                                                                  \
    BUMP_SQ("SELECT collection_id, 1 FROM caldav_resources WHERE event_id = " ev " AND deleted = 0 AND "    \
            where)                                                                                          \
    "UPDATE caldav_resources SET deleted = 1, seq = " SEQ_OF_ROW_SQ ", changed_ms = " NOW_SQ                \
    " WHERE event_id = " ev " AND deleted = 0 AND " where ";"
/* The event's live rows that `where` picks changed (its text did). */
#define TOUCH_SQ(ev, where)                                                                                 \
    BUMP_SQ("SELECT collection_id, 1 FROM caldav_resources WHERE event_id = " ev " AND deleted = 0 AND "    \
            where)                                                                                          \
    "UPDATE caldav_resources SET seq = " SEQ_OF_ROW_SQ ", changed_ms = " NOW_SQ " WHERE event_id = " ev     \
    " AND deleted = 0 AND " where ";"
/* A calendar being deleted takes its rows itself (caldav_calendar_gone):
 * events cascading out of it must not bring its collection back. */
#define STILL_THERE_SQ "(collection_id < 0 OR EXISTS (SELECT 1 FROM calendars k WHERE k.id = collection_id))"
#define TRIGGER_SQ(name, op, table, body) "CREATE TRIGGER " name " AFTER " op " ON " table " BEGIN " body " END;"

#define SQLITE_TRIGGERS                                                                                     \
    TRIGGER_SQ("caldav_events_ins", "INSERT", "events", LIVE_SQ("NEW.calendar_id", EVENT_NAME_SQ, "NEW.id")) \
    TRIGGER_SQ("caldav_events_upd", "UPDATE", "events",                                                     \
               GONE_SQ("OLD.id", "collection_id = OLD.calendar_id AND (OLD.calendar_id <> NEW.calendar_id " \
                                 "OR name <> " EVENT_NAME_SQ ")")                                           \
               "DELETE FROM caldav_names WHERE calendar_id = OLD.calendar_id AND uid = OLD.ical_uid AND "   \
               "(OLD.calendar_id <> NEW.calendar_id OR OLD.ical_uid <> NEW.ical_uid);"                      \
               LIVE_SQ("NEW.calendar_id", EVENT_NAME_SQ, "NEW.id") TOUCH_SQ("NEW.id", "collection_id < 0")) \
    TRIGGER_SQ("caldav_events_del", "DELETE", "events",                                                     \
               GONE_SQ("OLD.id", STILL_THERE_SQ)                                                            \
               "DELETE FROM caldav_names WHERE calendar_id = OLD.calendar_id AND uid = OLD.ical_uid;")      \
    TRIGGER_SQ("caldav_overrides_ins", "INSERT", "event_overrides", TOUCH_SQ("NEW.event_id", "1"))          \
    TRIGGER_SQ("caldav_overrides_upd", "UPDATE", "event_overrides",                                         \
               TOUCH_SQ("NEW.event_id", "1") TOUCH_SQ("OLD.event_id", "NEW.event_id <> OLD.event_id"))     \
    TRIGGER_SQ("caldav_overrides_del", "DELETE", "event_overrides", TOUCH_SQ("OLD.event_id", "1"))          \
    TRIGGER_SQ("caldav_attendees_ins", "INSERT", "attendees",                                               \
               LIVE_SQ("-NEW.user_id", INVITED_NAME_SQ, "NEW.event_id")                                     \
               TOUCH_SQ("NEW.event_id", "collection_id > 0"))                                               \
    TRIGGER_SQ("caldav_attendees_upd", "UPDATE", "attendees", TOUCH_SQ("NEW.event_id", "1"))                \
    TRIGGER_SQ("caldav_attendees_del", "DELETE", "attendees",                                               \
               GONE_SQ("OLD.event_id", "collection_id = -OLD.user_id")                                      \
               TOUCH_SQ("OLD.event_id", "collection_id > 0"))                                               \
    TRIGGER_SQ("caldav_calendars_del", "DELETE", "calendars",                                               \
               "DELETE FROM caldav_resources WHERE collection_id = OLD.id;"                                 \
               "DELETE FROM caldav_collections WHERE id = OLD.id;"                                          \
               "DELETE FROM caldav_names WHERE calendar_id = OLD.id;")

/* What was there before this step: every event in its calendar, every
 * invitation in its attendee's collection, all at sequence 1. */
#define BACKFILL(HEX)                                                                                       \
    "INSERT INTO caldav_collections (id, seq) SELECT id, 1 FROM calendars;"                                 \
    "INSERT INTO caldav_collections (id, seq) SELECT DISTINCT -user_id, 1 FROM attendees;"                  \
    "INSERT INTO caldav_resources (collection_id, name, event_id, seq, deleted, changed_ms) "               \
    "SELECT calendar_id, replace(ical_uid, '/', '%2F') || '.ics', id, 1, 0, updated_ms FROM events "        \
    "WHERE 1 = 1 ON CONFLICT DO NOTHING;"                                                                   \
    "INSERT INTO caldav_resources (collection_id, name, event_id, seq, deleted, changed_ms) "               \
    "SELECT -a.user_id, " HEX("a.event_id") " || '.ics', a.event_id, 1, 0, e.updated_ms FROM attendees a "  \
    "JOIN events e ON e.id = a.event_id WHERE 1 = 1 ON CONFLICT DO NOTHING;"

#define HEX_SQ(x) "printf('%016x', " x ")"

/* ---- PostgreSQL: the same rules as functions ---------------------------- */

#define NOW_PG "(extract(epoch from clock_timestamp()) * 1000)::bigint"
#define HEX_PG(x) "lpad(to_hex(" x "), 16, '0')"

#define PG_FUNCTIONS                                                                                        \
    "CREATE FUNCTION caldav_bump(p_coll BIGINT) RETURNS BIGINT LANGUAGE sql AS $$ "                          \
    "INSERT INTO caldav_collections (id, seq) VALUES (p_coll, 1) ON CONFLICT (id) DO UPDATE "                \
    "SET seq = caldav_collections.seq + 1 RETURNING seq $$;"                                                \
    "CREATE FUNCTION caldav_name(p_cal BIGINT, p_uid TEXT, p_ev BIGINT) RETURNS TEXT LANGUAGE plpgsql AS $$ " \
    "DECLARE n TEXT; d TEXT := replace(p_uid, '/', '%2F'); BEGIN "                                          \
    "SELECT c.name INTO n FROM caldav_names c WHERE c.calendar_id = p_cal AND c.uid = p_uid; "              \
    "IF n IS NOT NULL THEN RETURN n; END IF; "                                                              \
    "IF EXISTS (SELECT 1 FROM caldav_resources x WHERE x.collection_id = p_cal AND x.name = d || '.ics' "   \
    "AND x.deleted = 0 AND x.event_id <> p_ev) THEN RETURN d || '-' || " HEX_PG("p_ev") " || '.ics'; END IF; " \
    "RETURN d || '.ics'; END $$;"                                                                           \
    /* A row this transaction already wrote needs no second bump: its     \
     * sequence is newer than any token a client can hold, and the client \
     * reads the content as it commits. (Saving an event with 200         \
     * attendees touched its calendar row 200 times.) */                  \
    "CREATE FUNCTION caldav_live(p_coll BIGINT, p_name TEXT, p_ev BIGINT) RETURNS void LANGUAGE plpgsql "   \
    "AS $$ BEGIN IF EXISTS (SELECT 1 FROM caldav_resources x WHERE x.collection_id = p_coll AND "            \
    "x.name = p_name AND x.event_id = p_ev AND x.deleted = 0 AND x.xmin = pg_current_xact_id()::xid) "       \
    "THEN RETURN; END IF; "                                                                                 \
    "INSERT INTO caldav_resources (collection_id, name, event_id, seq, deleted, changed_ms) "               \
    "VALUES (p_coll, p_name, p_ev, caldav_bump(p_coll), 0, " NOW_PG ") ON CONFLICT (collection_id, name) "  \
    "DO UPDATE SET event_id = excluded.event_id, seq = excluded.seq, deleted = 0, "                         \
    "changed_ms = excluded.changed_ms; END $$;"                                                             \
    /* p_coll NULL: every collection; p_keep: the one name to leave live. */                                \
    "CREATE FUNCTION caldav_gone(p_ev BIGINT, p_coll BIGINT, p_keep TEXT) RETURNS void LANGUAGE plpgsql "   \
    "AS $$ DECLARE r RECORD; BEGIN FOR r IN SELECT x.collection_id, x.name FROM caldav_resources x "        \
    "WHERE x.event_id = p_ev AND x.deleted = 0 AND (p_coll IS NULL OR x.collection_id = p_coll) "           \
    "AND x.name IS DISTINCT FROM p_keep AND (x.collection_id < 0 OR EXISTS "                                \
    "(SELECT 1 FROM calendars k WHERE k.id = x.collection_id)) ORDER BY x.collection_id LOOP "              \
    "UPDATE caldav_resources SET deleted = 1, seq = caldav_bump(r.collection_id), changed_ms = " NOW_PG     \
    " WHERE collection_id = r.collection_id AND name = r.name; END LOOP; END $$;"                           \
    /* p_sign: 0 every collection, -1 invitations only, 1 calendars only. */                                \
    "CREATE FUNCTION caldav_touch(p_ev BIGINT, p_sign INT) RETURNS void LANGUAGE plpgsql AS $$ "            \
    "DECLARE r RECORD; BEGIN FOR r IN SELECT x.collection_id, x.name FROM caldav_resources x "              \
    "WHERE x.event_id = p_ev AND x.deleted = 0 AND (p_sign = 0 OR (p_sign < 0) = (x.collection_id < 0)) "  \
    "AND x.xmin <> pg_current_xact_id()::xid "                                                              \
    "ORDER BY x.collection_id LOOP UPDATE caldav_resources SET seq = caldav_bump(r.collection_id), "        \
    "changed_ms = " NOW_PG " WHERE collection_id = r.collection_id AND name = r.name; END LOOP; END $$;"    \
    "CREATE FUNCTION caldav_on_event() RETURNS trigger LANGUAGE plpgsql AS $$ DECLARE n TEXT; BEGIN "       \
    "IF TG_OP = 'DELETE' THEN PERFORM caldav_gone(OLD.id, NULL, NULL); "                                    \
    "DELETE FROM caldav_names WHERE calendar_id = OLD.calendar_id AND uid = OLD.ical_uid; RETURN NULL; "    \
    "END IF; n := caldav_name(NEW.calendar_id, NEW.ical_uid, NEW.id); "                                     \
    "IF TG_OP = 'UPDATE' THEN PERFORM caldav_gone(OLD.id, OLD.calendar_id, "                                \
    "CASE WHEN OLD.calendar_id = NEW.calendar_id THEN n END); "                                             \
    "IF OLD.calendar_id <> NEW.calendar_id OR OLD.ical_uid <> NEW.ical_uid THEN DELETE FROM caldav_names "  \
    "WHERE calendar_id = OLD.calendar_id AND uid = OLD.ical_uid; END IF; END IF; "                          \
    "PERFORM caldav_live(NEW.calendar_id, n, NEW.id); "                                                     \
    "IF TG_OP = 'UPDATE' THEN PERFORM caldav_touch(NEW.id, -1); END IF; RETURN NULL; END $$;"               \
    "CREATE FUNCTION caldav_on_override() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "                    \
    "IF TG_OP <> 'INSERT' THEN PERFORM caldav_touch(OLD.event_id, 0); END IF; "                             \
    "IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.event_id <> OLD.event_id) THEN "                      \
    "PERFORM caldav_touch(NEW.event_id, 0); END IF; RETURN NULL; END $$;"                                   \
    "CREATE FUNCTION caldav_on_attendee() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "                    \
    "IF TG_OP = 'INSERT' THEN PERFORM caldav_live(-NEW.user_id, " HEX_PG("NEW.event_id") " || '.ics', "     \
    "NEW.event_id); PERFORM caldav_touch(NEW.event_id, 1); "                                                \
    "ELSIF TG_OP = 'UPDATE' THEN PERFORM caldav_touch(NEW.event_id, 0); "                                   \
    "ELSE PERFORM caldav_gone(OLD.event_id, -OLD.user_id, NULL); PERFORM caldav_touch(OLD.event_id, 1); "   \
    "END IF; RETURN NULL; END $$;"                                                                          \
    "CREATE FUNCTION caldav_on_calendar() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "                    \
    "DELETE FROM caldav_resources WHERE collection_id = OLD.id; "                                           \
    "DELETE FROM caldav_collections WHERE id = OLD.id; "                                                    \
    "DELETE FROM caldav_names WHERE calendar_id = OLD.id; RETURN NULL; END $$;"

/* Named to run after the reminders' "A_reminder_mark" and before the
 * foreign keys' "RI_ConstraintTrigger_..." (triggers fire in name order),
 * so a calendar's rows are gone before its events cascade out of it. */
#define PG_TRIGGER(table, ops, fn)                                                                          \
    "CREATE TRIGGER \"B_caldav\" AFTER " ops " ON " table " FOR EACH ROW EXECUTE FUNCTION " fn "();"

#define PG_TRIGGERS                                                                                         \
    PG_TRIGGER("events", "INSERT OR UPDATE OR DELETE", "caldav_on_event")                                   \
    PG_TRIGGER("event_overrides", "INSERT OR UPDATE OR DELETE", "caldav_on_override")                       \
    PG_TRIGGER("attendees", "INSERT OR UPDATE OR DELETE", "caldav_on_attendee")                             \
    PG_TRIGGER("calendars", "DELETE", "caldav_on_calendar")

static const store_migration caldav_steps[] = {
    {31, "caldav", TABLES SQLITE_TRIGGERS BACKFILL(HEX_SQ), TABLES PG_FUNCTIONS PG_TRIGGERS BACKFILL(HEX_PG)},
};

int caldav_schema_add(store_schema *s)
{
    return store_schema_add(s, caldav_steps, sizeof caldav_steps / sizeof caldav_steps[0]);
}
