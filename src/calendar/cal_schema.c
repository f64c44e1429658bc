/* cal_schema.c -- the calendar's schema steps. See store.h for the rules
 * of a step (never edit or renumber one that has shipped). */
#include "calendar/calendar.h"

static const store_migration cal_steps[] = {
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
    /* Listings find the events in a range by where they end (a series'
     * last instant; NULL: it never ends), and the series that may have an
     * instance moved into it among a calendar's series alone, so a month
     * view reads what overlaps it, the future and the series, not every
     * event of the calendar's history (cal_store.c, LISTING_CANDIDATES). */
    {11, "events_by_end",
     "CREATE INDEX events_calendar_end ON events(calendar_id, series_end_ms);"
     "CREATE INDEX events_series ON events(calendar_id) WHERE rrule IS NOT NULL OR rdates <> ''",
     NULL},
    /* The same for invitations: each attendee's copy of its event's end
     * (NULL: never) and whether it is a series, written with the attendee
     * rows (cal_store.c, attendees_save), so that a month view reads the
     * invitations that reach into it and the invited series, not every
     * invitation of the user's past (5,000 past meetings made a month view
     * five times slower: bench/calendar). A table of its own, not columns
     * of attendees, whose update triggers mark the event for CalDAV and
     * the reminders: filling in columns there would have made every
     * invited event look changed to both. The indexes hold event_id, so
     * the listing reads them alone. */
    {12, "attendee_spans",
     "CREATE TABLE attendee_spans ("
     " event_id BIGINT NOT NULL REFERENCES events(id) ON DELETE CASCADE,"
     " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " series_end_ms BIGINT,"
     " recurring INTEGER NOT NULL,"
     " PRIMARY KEY (event_id, user_id));"
     "CREATE INDEX attendee_spans_end ON attendee_spans(user_id, series_end_ms, event_id);"
     "CREATE INDEX attendee_spans_series ON attendee_spans(user_id, event_id) WHERE recurring = 1;"
     "INSERT INTO attendee_spans (event_id, user_id, series_end_ms, recurring) "
     "SELECT a.event_id, a.user_id, e.series_end_ms, CASE WHEN e.rrule IS NOT NULL OR e.rdates <> '' THEN 1 "
     "ELSE 0 END FROM attendees a JOIN events e ON e.id = a.event_id",
     NULL},
};

int cal_schema_add(store_schema *s)
{
    return store_schema_add(s, cal_steps, sizeof cal_steps / sizeof cal_steps[0]);
}
