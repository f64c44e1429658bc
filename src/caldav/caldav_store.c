/* caldav_store.c -- see caldav_store.h. The membership and change rows
 * are written by the triggers of caldav_schema.c; this file reads them,
 * and writes only what a client chose (names, colours). */
#include "caldav/caldav_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

void caldav_members_free(caldav_members *m)
{
    free(m->v);
    memset(m, 0, sizeof *m);
}

int caldav_collection_state(store *db, int64_t coll, int64_t *seq, int64_t *floor)
{
    store_stmt *st = store_prepare(db, "SELECT seq, floor FROM caldav_collections WHERE id = $1");
    store_bind_int64(st, 1, coll);
    int rc = store_step(st);
    *seq = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    *floor = rc == STORE_ROW ? store_col_int64(st, 1) : 0;
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? CALDAV_OK : CALDAV_ERROR;
}

/* Rows of (name, event_id, seq, deleted, etag, updated_ms) into out. */
static int members_read(store_stmt *st, caldav_members *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    while ((rc = store_step(st)) == STORE_ROW) {
        if (out->n == out->cap) {
            caldav_member *grown = base_grow(out->v, sizeof *grown, &out->cap);
            if (!grown) {
                rc = STORE_ERROR;
                break;
            }
            out->v = grown;
        }
        caldav_member *m = &out->v[out->n++];
        snprintf(m->name, sizeof m->name, "%s", store_col_text(st, 0));
        m->event_id = store_col_int64(st, 1);
        m->seq = store_col_int64(st, 2);
        m->deleted = store_col_int64(st, 3) != 0 || store_col_is_null(st, 4);
        snprintf(m->etag, sizeof m->etag, "%s", store_col_text(st, 4));
        m->updated_ms = store_col_int64(st, 5);
    }
    store_reset(st);
    if (rc == STORE_DONE) return CALDAV_OK;
    caldav_members_free(out);
    return CALDAV_ERROR;
}

#define MEMBER_COLS "r.name, r.event_id, r.seq, r.deleted, e.etag, e.updated_ms"

int caldav_members_list(store *db, int64_t coll, caldav_members *out)
{
    store_stmt *st = store_prepare(db, "SELECT " MEMBER_COLS " FROM caldav_resources r JOIN events e "
                                       "ON e.id = r.event_id WHERE r.collection_id = $1 AND r.deleted = 0 "
                                       "ORDER BY r.name");
    store_bind_int64(st, 1, coll);
    return members_read(st, out);
}

int caldav_changes(store *db, int64_t coll, int64_t since, int64_t upto, size_t limit, caldav_members *out)
{
    store_stmt *st = store_prepare(
        db, "SELECT " MEMBER_COLS " FROM caldav_resources r LEFT JOIN events e ON e.id = r.event_id "
            "AND r.deleted = 0 WHERE r.collection_id = $1 AND r.seq > $2 AND r.seq <= $3 "
            "AND ($2 > 0 OR r.deleted = 0) ORDER BY r.seq, r.name LIMIT $4");
    store_bind_int64(st, 1, coll);
    store_bind_int64(st, 2, since);
    store_bind_int64(st, 3, upto);
    store_bind_int64(st, 4, limit ? (int64_t)limit : INT64_MAX);
    return members_read(st, out);
}

/* The live resource of a collection with this name, or (name NULL) of
 * this event. */
static int member_by(store *db, int64_t coll, const char *name, int64_t event_id, caldav_member *out)
{
    store_stmt *st = store_prepare(db, name ? "SELECT " MEMBER_COLS " FROM caldav_resources r JOIN events e "
                                              "ON e.id = r.event_id WHERE r.collection_id = $1 AND r.name = $2 "
                                              "AND r.deleted = 0"
                                            : "SELECT " MEMBER_COLS " FROM caldav_resources r JOIN events e "
                                              "ON e.id = r.event_id WHERE r.collection_id = $1 AND r.event_id = $2 "
                                              "AND r.deleted = 0");
    store_bind_int64(st, 1, coll);
    if (name) store_bind_str(st, 2, name);
    else store_bind_int64(st, 2, event_id);
    caldav_members m;
    if (members_read(st, &m) != CALDAV_OK) return CALDAV_ERROR;
    int rc = m.n ? CALDAV_OK : CALDAV_NOT_FOUND;
    if (m.n) *out = m.v[0];
    caldav_members_free(&m);
    return rc;
}

int caldav_member_find(store *db, int64_t coll, const char *name, caldav_member *out)
{
    return member_by(db, coll, name, 0, out);
}

int caldav_member_of_event(store *db, int64_t coll, int64_t event_id, caldav_member *out)
{
    return member_by(db, coll, NULL, event_id, out);
}

void caldav_default_name(const char *uid, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = uid; *p && n + 8 < size; p++) {
        if (*p == '/') n += (size_t)snprintf(out + n, size - n, "%%2F");
        else out[n++] = *p;
    }
    snprintf(out + n, size - n, ".ics");
}

int caldav_name_set(store *db, int64_t calendar_id, const char *uid, const char *name)
{
    char def[CALDAV_NAME_MAX + 1];
    caldav_default_name(uid, def, sizeof def);
    bool is_default = strcmp(def, name) == 0;
    store_stmt *st = store_prepare(db, is_default ? "DELETE FROM caldav_names WHERE calendar_id = $1 AND uid = $2"
                                                  : "INSERT INTO caldav_names (calendar_id, uid, name) "
                                                    "VALUES ($1, $2, $3) ON CONFLICT (calendar_id, uid) "
                                                    "DO UPDATE SET name = excluded.name");
    store_bind_int64(st, 1, calendar_id);
    store_bind_str(st, 2, uid);
    if (!is_default) store_bind_str(st, 3, name);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? CALDAV_OK : CALDAV_ERROR;
}

/* ---- calendars ----------------------------------------------------------- */

void caldav_calprops_free(caldav_calprops *p)
{
    free(p->description);
    memset(p, 0, sizeof *p);
}

int caldav_calprops_get(store *db, int64_t calendar_id, caldav_calprops *out)
{
    memset(out, 0, sizeof *out);
    store_stmt *st = store_prepare(db, "SELECT name, color, description, sort_order FROM caldav_calendars "
                                       "WHERE calendar_id = $1");
    store_bind_int64(st, 1, calendar_id);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        snprintf(out->segment, sizeof out->segment, "%s", store_col_text(st, 0));
        snprintf(out->color, sizeof out->color, "%s", store_col_text(st, 1));
        if (!store_col_is_null(st, 2)) out->description = strdup(store_col_text(st, 2));
        snprintf(out->order, sizeof out->order, "%s", store_col_text(st, 3));
    }
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? CALDAV_OK : CALDAV_ERROR;
}

int caldav_calendar_find(store *db, int64_t owner, const char *segment, cal_calendar *cal, caldav_calprops *props)
{
    store_stmt *st = store_prepare(db, "SELECT calendar_id FROM caldav_calendars WHERE owner_id = $1 AND name = $2");
    store_bind_int64(st, 1, owner);
    store_bind_str(st, 2, segment);
    int rc = store_step(st);
    int64_t id = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    if (rc != STORE_ROW && rc != STORE_DONE) return CALDAV_ERROR;
    if (!id && base_id_parse(segment, strlen(segment), &id) != 0) return CALDAV_NOT_FOUND;
    rc = cal_calendar_get(db, owner, id, cal);
    if (rc != CAL_OK) return rc == CAL_NOT_FOUND ? CALDAV_NOT_FOUND : CALDAV_ERROR;
    return caldav_calprops_get(db, id, props);
}

int caldav_calprops_save(store *db, int64_t calendar_id, int64_t owner, const caldav_calprops *p)
{
    store_stmt *st = store_prepare(
        db, "INSERT INTO caldav_calendars (calendar_id, owner_id, name, color, description, sort_order) "
            "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (calendar_id) DO UPDATE SET name = excluded.name, "
            "color = excluded.color, description = excluded.description, sort_order = excluded.sort_order");
    store_bind_int64(st, 1, calendar_id);
    store_bind_int64(st, 2, owner);
    store_bind_str(st, 3, p->segment[0] ? p->segment : NULL);
    store_bind_str(st, 4, p->color[0] ? p->color : NULL);
    store_bind_str(st, 5, p->description);
    store_bind_str(st, 6, p->order[0] ? p->order : NULL);
    int rc = store_step(st);
    store_reset(st);
    if (rc == STORE_CONSTRAINT) return CALDAV_NOT_FOUND; /* the segment is taken */
    return rc == STORE_DONE ? CALDAV_OK : CALDAV_ERROR;
}

/* ---- pruning ------------------------------------------------------------- */

int caldav_prune(store *db, int64_t before_ms, int64_t *n)
{
    bool pg = store_backend_of(db) == STORE_PG;
    store_stmt *st = store_prepare(
        db, pg ? "UPDATE caldav_collections SET floor = GREATEST(floor, (SELECT MAX(r.seq) FROM caldav_resources r "
                 "WHERE r.collection_id = caldav_collections.id AND r.deleted = 1 AND r.changed_ms < $1)) "
                 "WHERE id IN (SELECT collection_id FROM caldav_resources WHERE deleted = 1 AND changed_ms < $1)"
               : "UPDATE caldav_collections SET floor = max(floor, (SELECT MAX(r.seq) FROM caldav_resources r "
                 "WHERE r.collection_id = caldav_collections.id AND r.deleted = 1 AND r.changed_ms < $1)) "
                 "WHERE id IN (SELECT collection_id FROM caldav_resources WHERE deleted = 1 AND changed_ms < $1)");
    store_bind_int64(st, 1, before_ms);
    int rc = store_step(st);
    store_reset(st);
    if (rc != STORE_DONE) return CALDAV_ERROR;
    st = store_prepare(db, "DELETE FROM caldav_resources WHERE deleted = 1 AND changed_ms < $1");
    store_bind_int64(st, 1, before_ms);
    rc = store_step(st);
    *n = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    return rc == STORE_DONE ? CALDAV_OK : CALDAV_ERROR;
}
