/* cal_store.c -- calendars, events, overrides and attendees in the store.
 * Reminder lists are stored as "method:minutes,..." and date lists as
 * comma-separated basic-format wall times. */
#include "calendar/calendar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "users/users.h"

const char *cal_response_name(cal_response r)
{
    static const char *names[] = {"needs_action", "accepted", "declined", "tentative"};
    return names[r];
}

int cal_response_parse(const char *s, cal_response *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, cal_response_name((cal_response)i)) == 0) {
            *out = (cal_response)i;
            return 0;
        }
    return -1;
}

void cal_event_free(cal_event *e)
{
    free(e->ical_uid);
    free(e->summary);
    free(e->description);
    free(e->location);
    free(e->rrule);
    free(e->rdates);
    free(e->exdates);
    free(e->attendees);
    free(e->json_const);
    free(e->json_shown);
    memset(e, 0, sizeof *e);
}

void cal_override_free(cal_override *o)
{
    free(o->summary);
    free(o->description);
    free(o->location);
    memset(o, 0, sizeof *o);
}

const char *cal_event_zone_name(const cal_event *e)
{
    return e->time_zone[0] ? e->time_zone : e->calendar_zone;
}

/* A text column into a fixed buffer, cut to fit: snprintf's "%s" did
 * the same at a tenth of the cost of loading a listing's events. */
static void col_copy(store_stmt *st, int col, char *buf, size_t size)
{
    const char *v = store_col_text(st, col);
    size_t n = v ? (size_t)store_col_len(st, col) : 0;
    if (n >= size) n = size - 1;
    if (n) memcpy(buf, v, n);
    buf[n] = '\0';
}

static char *dup_col(store_stmt *st, int col)
{
    if (store_col_is_null(st, col)) return NULL;
    return strdup(store_col_text(st, col));
}

/* ---- value encodings ---------------------------------------------------- */

static void reminders_encode(const cal_reminder *r, int n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s:%d", i ? "," : "", r[i].method, r[i].minutes_before);
}

static int reminders_decode(const char *s, cal_reminder *r)
{
    int n = 0;
    while (s && *s && n < CAL_MAX_REMINDERS) {
        const char *colon = strchr(s, ':');
        if (!colon || colon - s >= (int)sizeof r[n].method) break;
        memcpy(r[n].method, s, (size_t)(colon - s));
        r[n].method[colon - s] = '\0';
        r[n].minutes_before = atoi(colon + 1);
        n++;
        s = strchr(colon, ',');
        if (s) s++;
    }
    return n;
}

static char *dates_encode(const int64_t *d, size_t n, bool date_only)
{
    char *out = malloc(n * 17 + 1), *p = out;
    if (!out) return NULL;
    *p = '\0';
    for (size_t i = 0; i < n; i++) {
        civil_time t;
        civil_from_seconds(d[i], &t);
        if (i) *p++ = ',';
        p += civil_format_basic(&t, date_only, p, 17);
    }
    return out;
}

static int dates_decode(const char *s, int64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!s || !*s) return 0;
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    int64_t *d = malloc(cap * sizeof *d);
    if (!d) return -1;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        civil_time t;
        if (civil_parse_basic(s, len, &t, NULL) == 0) d[(*n)++] = civil_to_seconds(&t);
        s += len + (end ? 1 : 0);
    }
    *out = d;
    return 0;
}

/* ---- calendars ---------------------------------------------------------- */

#define CAL_COLS "id, owner_id, summary, time_zone, is_primary, created_ms"

static void calendar_from_row(store_stmt *st, cal_calendar *c)
{
    c->id = store_col_int64(st, 0);
    c->owner_id = store_col_int64(st, 1);
    col_copy(st, 2, c->summary, sizeof c->summary);
    col_copy(st, 3, c->time_zone, sizeof c->time_zone);
    c->primary = store_col_int64(st, 4) != 0;
    c->created_ms = store_col_int64(st, 5);
}

static int calendar_one(store *db, const char *sql, int64_t a, int64_t b, cal_calendar *out)
{
    store_stmt *st = store_prepare(db, sql);
    store_bind_int64(st, 1, a);
    if (b) store_bind_int64(st, 2, b);
    int rc = store_step(st);
    if (rc == STORE_ROW) calendar_from_row(st, out);
    store_reset(st);
    return rc == STORE_ROW ? CAL_OK : rc == STORE_DONE ? CAL_NOT_FOUND : CAL_ERROR;
}

int cal_primary(store *db, int64_t user_id, cal_calendar *out)
{
    int rc = calendar_one(db, "SELECT " CAL_COLS " FROM calendars WHERE owner_id = $1 AND is_primary = 1", user_id,
                          0, out);
    if (rc != CAL_NOT_FOUND) return rc;
    /* Two requests may race to create it; the partial unique index keeps
     * one, and both then read that one. */
    store_stmt *st = store_prepare(
        db, "INSERT INTO calendars (id, owner_id, summary, time_zone, is_primary, created_ms) "
            "SELECT $1, $2, email, 'UTC', 1, $3 FROM users WHERE id = $2 ON CONFLICT DO NOTHING");
    store_bind_int64(st, 1, base_id_new());
    store_bind_int64(st, 2, user_id);
    store_bind_int64(st, 3, base_now_ms());
    int step = store_step(st);
    store_reset(st);
    if (step != STORE_DONE) return CAL_ERROR;
    return calendar_one(db, "SELECT " CAL_COLS " FROM calendars WHERE owner_id = $1 AND is_primary = 1", user_id, 0,
                        out);
}

int cal_calendar_get(store *db, int64_t user_id, int64_t id, cal_calendar *out)
{
    return calendar_one(db, "SELECT " CAL_COLS " FROM calendars WHERE id = $1 AND owner_id = $2", id, user_id, out);
}

int cal_calendar_list(store *db, int64_t user_id, cal_calendar **out, size_t *n)
{
    cal_calendar primary;
    if (cal_primary(db, user_id, &primary) != CAL_OK) return CAL_ERROR;
    store_stmt *st = store_prepare(
        db, "SELECT " CAL_COLS " FROM calendars WHERE owner_id = $1 ORDER BY is_primary DESC, created_ms, id");
    store_bind_int64(st, 1, user_id);
    size_t cap = 4;
    *n = 0;
    *out = malloc(cap * sizeof **out);
    int rc = STORE_ERROR;
    while (*out && (rc = store_step(st)) == STORE_ROW) {
        if (*n == cap) {
            cal_calendar *grown = realloc(*out, (cap *= 2) * sizeof **out);
            if (!grown) break;
            *out = grown;
        }
        calendar_from_row(st, &(*out)[(*n)++]);
    }
    store_reset(st);
    if (!*out || rc != STORE_DONE) {
        free(*out);
        *out = NULL;
        return CAL_ERROR;
    }
    return CAL_OK;
}

int cal_calendar_create(store *db, int64_t user_id, const char *summary, const char *zone, cal_calendar *out)
{
    int64_t count = 0;
    store_stmt *st = store_prepare(db, "SELECT COUNT(*) FROM calendars WHERE owner_id = $1");
    store_bind_int64(st, 1, user_id);
    if (store_step(st) == STORE_ROW) count = store_col_int64(st, 0);
    store_reset(st);
    if (count >= CAL_MAX_CALENDARS) return CAL_CONFLICT;
    st = store_prepare(db, "INSERT INTO calendars (id, owner_id, summary, time_zone, is_primary, created_ms) "
                           "VALUES ($1, $2, $3, $4, 0, $5) RETURNING " CAL_COLS);
    store_bind_int64(st, 1, base_id_new());
    store_bind_int64(st, 2, user_id);
    store_bind_str(st, 3, summary);
    store_bind_str(st, 4, zone);
    store_bind_int64(st, 5, base_now_ms());
    int rc = store_step(st);
    if (rc == STORE_ROW) calendar_from_row(st, out);
    store_reset(st);
    return rc == STORE_ROW ? CAL_OK : CAL_ERROR;
}

/* One text column of one of the user's calendars ($3), by sql. */
static int calendar_set_text(store *db, const char *sql, int64_t user_id, int64_t id, const char *value)
{
    store_stmt *st = store_prepare(db, sql);
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, user_id);
    store_bind_str(st, 3, value);
    int rc = store_step(st);
    int64_t changed = store_changes(st);
    store_reset(st);
    if (rc != STORE_DONE) return CAL_ERROR;
    return changed ? CAL_OK : CAL_NOT_FOUND;
}

int cal_calendar_rename(store *db, int64_t user_id, int64_t id, const char *summary)
{
    return calendar_set_text(db, "UPDATE calendars SET summary = $3 WHERE id = $1 AND owner_id = $2", user_id, id,
                             summary);
}

int cal_calendar_delete(store *db, int64_t user_id, int64_t id)
{
    cal_calendar c;
    int rc = cal_calendar_get(db, user_id, id, &c);
    if (rc != CAL_OK) return rc;
    if (c.primary) return CAL_FORBIDDEN;
    store_stmt *st = store_prepare(db, "DELETE FROM calendars WHERE id = $1 AND owner_id = $2");
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, user_id);
    rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

int cal_feed_set(store *db, int64_t user_id, int64_t id, const char *token_hash)
{
    return calendar_set_text(db, "UPDATE calendars SET feed_token_hash = $3 WHERE id = $1 AND owner_id = $2", user_id,
                             id, token_hash);
}

int cal_feed_lookup(store *db, const char *token_hash, cal_calendar *out)
{
    store_stmt *st = store_prepare(db, "SELECT " CAL_COLS " FROM calendars WHERE feed_token_hash = $1");
    store_bind_str(st, 1, token_hash);
    int rc = store_step(st);
    if (rc == STORE_ROW) calendar_from_row(st, out);
    store_reset(st);
    return rc == STORE_ROW ? CAL_OK : rc == STORE_DONE ? CAL_NOT_FOUND : CAL_ERROR;
}

/* ---- events ------------------------------------------------------------- */

#define EVENT_COLS                                                                                          \
    "e.id, e.calendar_id, e.created_by, e.ical_uid, e.summary, e.description, e.location, e.status, "       \
    "e.all_day, e.time_zone, e.start_local, e.end_local, e.start_ms, e.duration_s, e.rrule, e.rdates, "     \
    "e.exdates, e.series_end_ms, e.reminders, e.etag, e.created_ms, e.updated_ms, c.time_zone, u.email, "   \
    "c.owner_id"

/* Reads EVENT_COLS from a row; returns the calendar's owner. */
static int64_t event_from_row(store_stmt *st, cal_event *e)
{
    memset(e, 0, sizeof *e);
    e->id = store_col_int64(st, 0);
    e->calendar_id = store_col_int64(st, 1);
    e->created_by = store_col_int64(st, 2);
    e->ical_uid = dup_col(st, 3);
    e->summary = dup_col(st, 4);
    e->description = dup_col(st, 5);
    e->location = dup_col(st, 6);
    col_copy(st, 7, e->status, sizeof e->status);
    e->all_day = store_col_int64(st, 8) != 0;
    col_copy(st, 9, e->time_zone, sizeof e->time_zone);
    civil_parse_basic(store_col_text(st, 10), store_col_len(st, 10), &e->start_local, NULL);
    civil_parse_basic(store_col_text(st, 11), store_col_len(st, 11), &e->end_local, NULL);
    e->start_ms = store_col_int64(st, 12);
    e->duration_s = store_col_int64(st, 13);
    e->rrule = dup_col(st, 14);
    dates_decode(store_col_text(st, 15), &e->rdates, &e->nrdates);
    dates_decode(store_col_text(st, 16), &e->exdates, &e->nexdates);
    e->has_series_end = !store_col_is_null(st, 17);
    e->series_end_ms = store_col_int64(st, 17);
    e->nreminders = reminders_decode(store_col_text(st, 18), e->reminders);
    col_copy(st, 19, e->etag, sizeof e->etag);
    e->created_ms = store_col_int64(st, 20);
    e->updated_ms = store_col_int64(st, 21);
    col_copy(st, 22, e->calendar_zone, sizeof e->calendar_zone);
    col_copy(st, 23, e->organizer_email, sizeof e->organizer_email);
    return store_col_int64(st, 24);
}

/* Appends the attendee in the current row (columns from `col`). */
static int attendee_append(store_stmt *st, int col, cal_event *e)
{
    if ((e->nattendees & (e->nattendees - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
        int cap = e->nattendees ? e->nattendees * 2 : 1;
        cal_attendee *grown = realloc(e->attendees, (size_t)cap * sizeof *grown);
        if (!grown) return CAL_ERROR;
        e->attendees = grown;
    }
    cal_attendee *a = &e->attendees[e->nattendees++];
    memset(a, 0, sizeof *a);
    a->user_id = store_col_int64(st, col);
    col_copy(st, col + 1, a->email, sizeof a->email);
    cal_response_parse(store_col_text(st, col + 2), &a->response);
    a->has_reminders = !store_col_is_null(st, col + 3);
    a->nreminders = reminders_decode(store_col_text(st, col + 3), a->reminders);
    return CAL_OK;
}

static int attendees_load(store *db, cal_event *e)
{
    store_stmt *st = store_prepare(
        db, "SELECT a.user_id, u.email, a.response_status, a.reminders FROM attendees a "
            "JOIN users u ON u.id = a.user_id WHERE a.event_id = $1 ORDER BY u.email_lower");
    store_bind_int64(st, 1, e->id);
    int rc;
    e->nattendees = 0;
    while ((rc = store_step(st)) == STORE_ROW)
        if (attendee_append(st, 0, e) != CAL_OK) {
            rc = STORE_ERROR;
            break;
        }
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

int cal_event_load(store *db, int64_t viewer, int64_t id, cal_event *out, bool *is_organizer)
{
    store_stmt *st = store_prepare(
        db, "SELECT " EVENT_COLS " FROM events e JOIN calendars c ON c.id = e.calendar_id "
            "JOIN users u ON u.id = c.owner_id WHERE e.id = $1 AND (c.owner_id = $2 OR EXISTS "
            "(SELECT 1 FROM attendees a WHERE a.event_id = e.id AND a.user_id = $2))");
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, viewer);
    int rc = store_step(st);
    int64_t owner = 0;
    if (rc == STORE_ROW) owner = event_from_row(st, out);
    store_reset(st);
    if (rc != STORE_ROW) return rc == STORE_DONE ? CAL_NOT_FOUND : CAL_ERROR;
    *is_organizer = owner == viewer;
    if (attendees_load(db, out) != CAL_OK) {
        cal_event_free(out);
        return CAL_ERROR;
    }
    return CAL_OK;
}

int cal_event_load_any(store *db, int64_t id, cal_event *out, int64_t *owner)
{
    store_stmt *st = store_prepare(db, "SELECT " EVENT_COLS " FROM events e JOIN calendars c ON c.id = e.calendar_id "
                                       "JOIN users u ON u.id = c.owner_id WHERE e.id = $1");
    store_bind_int64(st, 1, id);
    int rc = store_step(st);
    if (rc == STORE_ROW) *owner = event_from_row(st, out);
    store_reset(st);
    if (rc != STORE_ROW) return rc == STORE_DONE ? CAL_NOT_FOUND : CAL_ERROR;
    if (attendees_load(db, out) != CAL_OK) {
        cal_event_free(out);
        return CAL_ERROR;
    }
    return CAL_OK;
}

static int bind_event(store_stmt *st, const cal_event *e)
{
    char start[16], end[16], rem[128];
    char *rd = dates_encode(e->rdates, e->nrdates, e->all_day);
    char *ex = dates_encode(e->exdates, e->nexdates, e->all_day);
    if (!rd || !ex) {
        free(rd);
        free(ex);
        return -1;
    }
    civil_format_basic(&e->start_local, e->all_day, start, sizeof start);
    civil_format_basic(&e->end_local, e->all_day, end, sizeof end);
    reminders_encode(e->reminders, e->nreminders, rem, sizeof rem);
    store_bind_int64(st, 1, e->id);
    store_bind_int64(st, 2, e->calendar_id);
    store_bind_int64(st, 3, e->created_by);
    store_bind_str(st, 4, e->ical_uid);
    store_bind_str(st, 5, e->summary ? e->summary : "");
    store_bind_str(st, 6, e->description ? e->description : "");
    store_bind_str(st, 7, e->location ? e->location : "");
    store_bind_str(st, 8, e->status);
    store_bind_int64(st, 9, e->all_day);
    store_bind_str(st, 10, e->time_zone[0] ? e->time_zone : NULL);
    store_bind_str(st, 11, start);
    store_bind_str(st, 12, end);
    store_bind_int64(st, 13, e->start_ms);
    store_bind_int64(st, 14, e->duration_s);
    store_bind_str(st, 15, e->rrule);
    store_bind_str(st, 16, rd);
    store_bind_str(st, 17, ex);
    if (e->has_series_end) store_bind_int64(st, 18, e->series_end_ms);
    else store_bind_null(st, 18);
    store_bind_str(st, 19, rem);
    store_bind_str(st, 20, e->etag);
    store_bind_int64(st, 21, e->created_ms);
    store_bind_int64(st, 22, e->updated_ms);
    free(rd);
    free(ex);
    return 0;
}

static int exec_id(store *db, const char *sql, int64_t a, int64_t b, bool two)
{
    store_stmt *st = store_prepare(db, sql);
    store_bind_int64(st, 1, a);
    if (two) store_bind_int64(st, 2, b);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

/* The event's attendee_spans rows (schema step 12) made again from its
 * attendee rows and its stored end, after either changed. */
static int spans_save(store *db, int64_t event_id)
{
    int rc = exec_id(db, "DELETE FROM attendee_spans WHERE event_id = $1", event_id, 0, false);
    if (rc != CAL_OK) return rc;
    return exec_id(db, "INSERT INTO attendee_spans (event_id, user_id, series_end_ms, recurring) SELECT a.event_id, "
                       "a.user_id, e.series_end_ms, CASE WHEN e.rrule IS NOT NULL OR e.rdates <> '' THEN 1 ELSE 0 END "
                       "FROM attendees a JOIN events e ON e.id = a.event_id WHERE a.event_id = $1",
                   event_id, 0, false);
}

static int attendees_save(store *db, const cal_event *e)
{
    /* Answers already given survive a new list that keeps the attendee. */
    store_stmt *keep = store_prepare(db, "SELECT user_id FROM attendees WHERE event_id = $1");
    store_bind_int64(keep, 1, e->id);
    int rc;
    while ((rc = store_step(keep)) == STORE_ROW) {
        int64_t uid = store_col_int64(keep, 0);
        bool wanted = false;
        for (int i = 0; i < e->nattendees && !wanted; i++) wanted = e->attendees[i].user_id == uid;
        if (wanted) continue;
        store_stmt *del = store_prepare(db, "DELETE FROM attendees WHERE event_id = $1 AND user_id = $2");
        store_bind_int64(del, 1, e->id);
        store_bind_int64(del, 2, uid);
        int d = store_step(del);
        store_reset(del);
        if (d != STORE_DONE) {
            store_reset(keep);
            return CAL_ERROR;
        }
    }
    store_reset(keep);
    if (rc != STORE_DONE) return CAL_ERROR;
    for (int i = 0; i < e->nattendees; i++) {
        store_stmt *ins = store_prepare(db, "INSERT INTO attendees (event_id, user_id, response_status) "
                                            "VALUES ($1, $2, 'needs_action') ON CONFLICT DO NOTHING");
        store_bind_int64(ins, 1, e->id);
        store_bind_int64(ins, 2, e->attendees[i].user_id);
        rc = store_step(ins);
        store_reset(ins);
        if (rc != STORE_DONE) return CAL_ERROR;
    }
    return spans_save(db, e->id);
}

static void new_etag(char etag[24])
{
    unsigned char raw[8];
    base_random(raw, sizeof raw);
    base_hex(raw, sizeof raw, etag);
}

int cal_event_save_tx(store *db, cal_event *e, bool insert)
{
    static const char *ins =
        "INSERT INTO events (id, calendar_id, created_by, ical_uid, summary, description, location, status, "
        "all_day, time_zone, start_local, end_local, start_ms, duration_s, rrule, rdates, exdates, "
        "series_end_ms, reminders, etag, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
        "$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)";
    static const char *upd =
        "UPDATE events SET calendar_id = $2, created_by = $3, ical_uid = $4, summary = $5, description = $6, "
        "location = $7, status = $8, all_day = $9, time_zone = $10, start_local = $11, end_local = $12, "
        "start_ms = $13, duration_s = $14, rrule = $15, rdates = $16, exdates = $17, series_end_ms = $18, "
        "reminders = $19, etag = $20, created_ms = $21, updated_ms = $22 WHERE id = $1";
    int64_t now = base_now_ms();
    if (insert) {
        if (!e->id) e->id = base_id_new();
        e->created_ms = now;
    }
    e->updated_ms = now;
    new_etag(e->etag);
    store_stmt *st = store_prepare(db, insert ? ins : upd);
    int rc = bind_event(st, e) == 0 ? store_step(st) : STORE_ERROR;
    store_reset(st);
    if (rc == STORE_CONSTRAINT) return CAL_CONFLICT;
    if (rc != STORE_DONE) return CAL_ERROR;
    return attendees_save(db, e);
}

int cal_event_save(store *db, cal_event *e, bool insert)
{
    if (store_begin(db) != STORE_OK) return CAL_ERROR;
    int rc = cal_event_save_tx(db, e, insert);
    if (rc != CAL_OK) {
        store_rollback(db);
        return rc;
    }
    return store_commit(db) == STORE_OK ? CAL_OK : CAL_ERROR;
}

int cal_overrides_move(store *db, int64_t from_event, int64_t to_event, int64_t original_ms)
{
    store_stmt *st = store_prepare(db, "UPDATE event_overrides SET event_id = $2 WHERE event_id = $1 AND "
                                       "original_ms >= $3");
    store_bind_int64(st, 1, from_event);
    store_bind_int64(st, 2, to_event);
    store_bind_int64(st, 3, original_ms);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

int cal_event_delete(store *db, int64_t id)
{
    return exec_id(db, "DELETE FROM events WHERE id = $1", id, 0, false);
}

int cal_overrides_clear(store *db, int64_t event_id)
{
    return exec_id(db, "DELETE FROM event_overrides WHERE event_id = $1", event_id, 0, false);
}

int cal_overrides_drop_from(store *db, int64_t event_id, int64_t original_ms)
{
    return exec_id(db, "DELETE FROM event_overrides WHERE event_id = $1 AND original_ms >= $2", event_id,
                   original_ms, true);
}

int cal_override_delete(store *db, int64_t event_id, int64_t original_ms)
{
    return exec_id(db, "DELETE FROM event_overrides WHERE event_id = $1 AND original_ms = $2", event_id,
                   original_ms, true);
}

int cal_event_touch(store *db, int64_t event_id)
{
    char etag[24];
    new_etag(etag);
    store_stmt *st = store_prepare(db, "UPDATE events SET etag = $2, updated_ms = $3 WHERE id = $1");
    store_bind_int64(st, 1, event_id);
    store_bind_str(st, 2, etag);
    store_bind_int64(st, 3, base_now_ms());
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

#define OVERRIDE_COLS                                                                                       \
    "o.event_id, o.original_ms, o.cancelled, o.summary, o.description, o.location, o.status, "              \
    "o.start_local, o.end_local, o.start_ms, o.end_ms"

static void override_from_row(store_stmt *st, cal_override *o)
{
    memset(o, 0, sizeof *o);
    o->event_id = store_col_int64(st, 0);
    o->original_ms = store_col_int64(st, 1);
    o->cancelled = store_col_int64(st, 2) != 0;
    o->summary = dup_col(st, 3);
    o->description = dup_col(st, 4);
    o->location = dup_col(st, 5);
    col_copy(st, 6, o->status, sizeof o->status);
    o->moved = !store_col_is_null(st, 7);
    if (o->moved) {
        civil_parse_basic(store_col_text(st, 7), store_col_len(st, 7), &o->start_local, NULL);
        civil_parse_basic(store_col_text(st, 8), store_col_len(st, 8), &o->end_local, NULL);
    }
    o->start_ms = store_col_int64(st, 9);
    o->end_ms = store_col_int64(st, 10);
}

int cal_override_load(store *db, int64_t event_id, int64_t original_ms, cal_override *out)
{
    store_stmt *st = store_prepare(db, "SELECT " OVERRIDE_COLS " FROM event_overrides o "
                                       "WHERE o.event_id = $1 AND o.original_ms = $2");
    store_bind_int64(st, 1, event_id);
    store_bind_int64(st, 2, original_ms);
    int rc = store_step(st);
    if (rc == STORE_ROW) override_from_row(st, out);
    store_reset(st);
    return rc == STORE_ROW ? CAL_OK : rc == STORE_DONE ? CAL_NOT_FOUND : CAL_ERROR;
}

int cal_overrides_load(store *db, int64_t event_id, cal_override **out, size_t *n)
{
    store_stmt *st = store_prepare(db, "SELECT " OVERRIDE_COLS " FROM event_overrides o "
                                       "WHERE o.event_id = $1 ORDER BY o.original_ms");
    store_bind_int64(st, 1, event_id);
    size_t cap = 0;
    int rc;
    *out = NULL;
    *n = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (*n == cap) {
            cal_override *grown = base_grow(*out, sizeof *grown, &cap);
            if (!grown) {
                rc = STORE_ERROR;
                break;
            }
            *out = grown;
        }
        override_from_row(st, &(*out)[(*n)++]);
    }
    store_reset(st);
    if (rc == STORE_DONE) return CAL_OK;
    for (size_t i = 0; i < *n; i++) cal_override_free(&(*out)[i]);
    free(*out);
    *out = NULL;
    *n = 0;
    return CAL_ERROR;
}

int cal_override_save(store *db, const cal_override *o, bool all_day)
{
    char start[16], end[16];
    store_stmt *st = store_prepare(
        db, "INSERT INTO event_overrides (event_id, original_ms, cancelled, summary, description, location, "
            "status, start_local, end_local, start_ms, end_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, "
            "$8, $9, $10, $11, $12) ON CONFLICT (event_id, original_ms) DO UPDATE SET cancelled = $3, "
            "summary = $4, description = $5, location = $6, status = $7, start_local = $8, end_local = $9, "
            "start_ms = $10, end_ms = $11, updated_ms = $12");
    store_bind_int64(st, 1, o->event_id);
    store_bind_int64(st, 2, o->original_ms);
    store_bind_int64(st, 3, o->cancelled);
    store_bind_str(st, 4, o->summary);
    store_bind_str(st, 5, o->description);
    store_bind_str(st, 6, o->location);
    store_bind_str(st, 7, o->status[0] ? o->status : NULL);
    if (o->moved) {
        civil_format_basic(&o->start_local, all_day, start, sizeof start);
        civil_format_basic(&o->end_local, all_day, end, sizeof end);
        store_bind_str(st, 8, start);
        store_bind_str(st, 9, end);
    } else {
        store_bind_null(st, 8);
        store_bind_null(st, 9);
    }
    store_bind_int64(st, 10, o->start_ms);
    store_bind_int64(st, 11, o->end_ms);
    store_bind_int64(st, 12, base_now_ms());
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

int cal_rsvp(store *db, int64_t event_id, int64_t user_id, cal_response r, const cal_reminder *rem, int nrem,
             bool set_reminders)
{
    char text[128];
    reminders_encode(rem, nrem, text, sizeof text);
    store_stmt *st = store_prepare(
        db, set_reminders ? "UPDATE attendees SET response_status = $3, reminders = $4 "
                            "WHERE event_id = $1 AND user_id = $2"
                          : "UPDATE attendees SET response_status = $3 WHERE event_id = $1 AND user_id = $2");
    store_bind_int64(st, 1, event_id);
    store_bind_int64(st, 2, user_id);
    store_bind_str(st, 3, cal_response_name(r));
    if (set_reminders) store_bind_str(st, 4, rem ? text : NULL); /* NULL: the event's own */
    int rc = store_step(st);
    int64_t changed = store_changes(st);
    store_reset(st);
    if (rc != STORE_DONE) return CAL_ERROR;
    return changed ? CAL_OK : CAL_NOT_FOUND;
}

/* ---- listing: the rows a range query starts from ------------------------- */

/* The events a listing may show: every visible event whose series
 * overlaps [$2, $3) or has an instance moved into it. The candidates come
 * by index: the viewer's series that end in or after the range
 * (events_calendar_end) or never (NULL), and its series with an instance
 * moved into the range (only series have moved instances: events_series
 * lists a calendar's); the same three for the events it is invited to
 * (attendee_spans). The conditions
 * after them are the whole test, so the candidates need only include every
 * event that passes; before them the test ran over every event of the
 * viewer's history (a month view with 5,000 past events read them all:
 * 34M instructions against 16M). ">=": an instant at the range's start
 * is in it (cal_expand.c decides exactly). */
#define LISTING_CANDIDATES                                                                                  \
    "e.id IN (SELECT e1.id FROM calendars c1 JOIN events e1 ON e1.calendar_id = c1.id WHERE c1.owner_id = $1 " \
    "AND ($4 = 0 OR c1.id = $4) AND e1.series_end_ms >= $2 "                                                 \
    "UNION SELECT e2.id FROM calendars c2 JOIN events e2 ON e2.calendar_id = c2.id WHERE c2.owner_id = $1 "  \
    "AND ($4 = 0 OR c2.id = $4) AND e2.series_end_ms IS NULL "                                               \
    "UNION SELECT s1.event_id FROM attendee_spans s1 WHERE s1.user_id = $1 AND s1.series_end_ms >= $2 "      \
    "UNION SELECT s2.event_id FROM attendee_spans s2 WHERE s2.user_id = $1 AND s2.series_end_ms IS NULL "    \
    "UNION SELECT s3.event_id FROM attendee_spans s3 WHERE s3.user_id = $1 AND s3.recurring = 1 AND EXISTS " \
    "(SELECT 1 FROM event_overrides o3 WHERE o3.event_id = s3.event_id AND o3.end_ms >= $2 AND "            \
    "o3.start_ms < $3) "                                                                                    \
    "UNION SELECT e3.id FROM calendars c3 JOIN events e3 ON e3.calendar_id = c3.id WHERE c3.owner_id = $1 "  \
    "AND ($4 = 0 OR c3.id = $4) AND (e3.rrule IS NOT NULL OR e3.rdates <> '') AND EXISTS (SELECT 1 FROM "    \
    "event_overrides o1 WHERE o1.event_id = e3.id AND o1.end_ms >= $2 AND o1.start_ms < $3)) "
#define VISIBLE_IN_RANGE                                                                                    \
    "FROM events e JOIN calendars c ON c.id = e.calendar_id JOIN users u ON u.id = c.owner_id "             \
    "WHERE " LISTING_CANDIDATES                                                                             \
    "AND (c.owner_id = $1 OR EXISTS (SELECT 1 FROM attendees a WHERE a.event_id = e.id AND a.user_id = $1)) " \
    "AND ($4 = 0 OR e.calendar_id = $4) AND ($5 = 0 OR e.id = $5) AND ((e.start_ms < $3 AND (e.series_end_ms IS NULL OR "              \
    "e.series_end_ms >= $2)) OR EXISTS (SELECT 1 FROM event_overrides o2 WHERE o2.event_id = e.id AND "       \
    "o2.start_ms < $3 AND o2.end_ms >= $2))"

/* The three row readers both loaders share. Each steps a prepared and
 * bound statement to the end and resets it. Events and the attendee and
 * override rows are all ordered by event id, so attendees are matched in
 * one pass. */
static int events_read(store_stmt *st, cal_listing *l)
{
    size_t cap = 0;
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (l->nevents == cap) {
            cal_event *grown = base_grow(l->events, sizeof *grown, &cap);
            if (!grown) {
                rc = STORE_ERROR;
                break;
            }
            l->events = grown;
        }
        event_from_row(st, &l->events[l->nevents++]);
    }
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

/* Rows of (event_id, user_id, email, response_status, reminders). */
static int attendees_read(store_stmt *st, cal_listing *l)
{
    size_t ei = 0;
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        int64_t id = store_col_int64(st, 0);
        while (ei < l->nevents && l->events[ei].id < id) ei++;
        if (ei < l->nevents && l->events[ei].id == id && attendee_append(st, 1, &l->events[ei]) != CAL_OK) {
            rc = STORE_ERROR;
            break;
        }
    }
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

static int overrides_read(store_stmt *st, cal_listing *l)
{
    size_t cap = 0;
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (l->noverrides == cap) {
            cal_override *grown = base_grow(l->overrides, sizeof *grown, &cap);
            if (!grown) {
                rc = STORE_ERROR;
                break;
            }
            l->overrides = grown;
        }
        override_from_row(st, &l->overrides[l->noverrides++]);
    }
    store_reset(st);
    return rc == STORE_DONE ? CAL_OK : CAL_ERROR;
}

static void bind_query(store_stmt *st, const cal_query *q)
{
    store_bind_int64(st, 1, q->viewer);
    store_bind_int64(st, 2, q->from_ms);
    store_bind_int64(st, 3, q->to_ms);
    store_bind_int64(st, 4, q->calendar_id);
    store_bind_int64(st, 5, q->event_id);
}

/* The loaded events' ids as a JSON array ($1 of the statements below),
 * NULL when out of memory. */
static char *listing_ids(const cal_listing *l)
{
    int64_t *ids = malloc(l->nevents * sizeof *ids);
    if (!ids) return NULL;
    for (size_t i = 0; i < l->nevents; i++) ids[i] = l->events[i].id;
    char *out = store_ids_json(ids, l->nevents);
    free(ids);
    return out;
}

#define LISTED_SQLITE STORE_IDS_SQLITE("$1")
#define LISTED_PG STORE_IDS_PG("$1")
#define LISTED_ATTENDEES(LISTED)                                                                           \
    "SELECT a.event_id, a.user_id, uu.email, a.response_status, a.reminders FROM attendees a JOIN users uu " \
    "ON uu.id = a.user_id WHERE a.event_id IN " LISTED " ORDER BY a.event_id, uu.email_lower"
#define LISTED_OVERRIDES(LISTED)                                                                           \
    "SELECT " OVERRIDE_COLS " FROM event_overrides o WHERE o.event_id IN " LISTED                          \
    " ORDER BY o.event_id, o.original_ms"

/* The events in range, then the attendees and overrides of those events
 * by their ids: asking again "which events are visible in range" for each
 * (as a subquery) scanned every event of the viewer three times, a fifth
 * of a month view's instructions (callgrind, bench/calendar). */
int cal_list_load_events(store *db, const cal_query *q, cal_listing *l)
{
    store_stmt *st = store_prepare(db, "SELECT " EVENT_COLS " " VISIBLE_IN_RANGE " ORDER BY e.id");
    bind_query(st, q);
    if (events_read(st, l) != CAL_OK) return CAL_ERROR;
    if (l->nevents == 0) return CAL_OK;
    char *ids = listing_ids(l);
    if (!ids) return CAL_ERROR;
    bool pg = store_backend_of(db) == STORE_PG;
    st = store_prepare(db, pg ? LISTED_ATTENDEES(LISTED_PG) : LISTED_ATTENDEES(LISTED_SQLITE));
    store_bind_str(st, 1, ids);
    int rc = attendees_read(st, l);
    if (rc == CAL_OK) {
        st = store_prepare(db, pg ? LISTED_OVERRIDES(LISTED_PG) : LISTED_OVERRIDES(LISTED_SQLITE));
        store_bind_str(st, 1, ids);
        rc = overrides_read(st, l);
    }
    free(ids);
    return rc;
}

int cal_event_find_uid(store *db, int64_t calendar_id, const char *uid, int64_t *id, int64_t *created_ms)
{
    store_stmt *st = store_prepare(db, "SELECT id, created_ms FROM events WHERE calendar_id = $1 AND ical_uid = $2");
    store_bind_int64(st, 1, calendar_id);
    store_bind_str(st, 2, uid);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        *id = store_col_int64(st, 0);
        *created_ms = store_col_int64(st, 1);
    }
    store_reset(st);
    return rc == STORE_ROW ? CAL_OK : rc == STORE_DONE ? CAL_NOT_FOUND : CAL_ERROR;
}

int cal_calendar_events(store *db, int64_t calendar_id, cal_listing *l)
{
    memset(l, 0, sizeof *l);
    store_stmt *st = store_prepare(db, "SELECT " EVENT_COLS " FROM events e JOIN calendars c ON c.id = e.calendar_id "
                                       "JOIN users u ON u.id = c.owner_id WHERE e.calendar_id = $1 ORDER BY e.id");
    store_bind_int64(st, 1, calendar_id);
    if (events_read(st, l) != CAL_OK) return CAL_ERROR;
    st = store_prepare(db, "SELECT a.event_id, a.user_id, uu.email, a.response_status, a.reminders FROM attendees a "
                           "JOIN users uu ON uu.id = a.user_id JOIN events e ON e.id = a.event_id "
                           "WHERE e.calendar_id = $1 ORDER BY a.event_id, uu.email_lower");
    store_bind_int64(st, 1, calendar_id);
    if (attendees_read(st, l) != CAL_OK) return CAL_ERROR;
    st = store_prepare(db, "SELECT " OVERRIDE_COLS " FROM event_overrides o JOIN events e ON e.id = o.event_id "
                           "WHERE e.calendar_id = $1 ORDER BY o.event_id, o.original_ms");
    store_bind_int64(st, 1, calendar_id);
    return overrides_read(st, l);
}

/* By email: the users' rule (normal form, any case; users_find_by_email),
 * so an attendee is the account its address looks like, never a
 * look-alike of it. */
int cal_user_lookup(store *db, const char *email, int64_t id, int64_t *out_id, char *email_out, size_t size)
{
    if (email) {
        users_account u;
        char hash[USERS_HASH_MAX];
        int urc = users_find_by_email(db, email, &u, hash);
        if (urc == USERS_OK) {
            *out_id = u.id;
            snprintf(email_out, size, "%s", u.email);
        }
        return urc == USERS_OK ? CAL_OK : urc == USERS_NOT_FOUND ? CAL_NOT_FOUND : CAL_ERROR;
    }
    store_stmt *st = store_prepare(db, "SELECT id, email FROM users WHERE id = $1");
    store_bind_int64(st, 1, id);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        *out_id = store_col_int64(st, 0);
        snprintf(email_out, size, "%s", store_col_text(st, 1));
    }
    store_reset(st);
    return rc == STORE_ROW ? CAL_OK : rc == STORE_DONE ? CAL_NOT_FOUND : CAL_ERROR;
}
