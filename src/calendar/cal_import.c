/* cal_import.c -- saving what ical_read made of a file, shared by the
 * import (POST /v1/calendars/{id}/import) and CalDAV's PUT of one
 * resource, so the two store the same thing from the same text. */
#include <stdio.h>

#include "base/base.h"
#include "calendar/cal_ical.h"

/* Attendees as registered users (by email); others are dropped and
 * counted. Their answers stay theirs: new invitees start at needs_action,
 * answers already given are kept. */
static int map_attendees(store *db, cal_event *e, size_t *ignored)
{
    int k = 0;
    for (int i = 0; i < e->nattendees; i++) {
        cal_attendee a = e->attendees[i];
        int rc = cal_user_lookup(db, a.email, 0, &a.user_id, a.email, sizeof a.email);
        if (rc == CAL_ERROR) return -1;
        bool dup = rc != CAL_OK || a.user_id == e->created_by;
        for (int j = 0; j < k && !dup; j++) dup = e->attendees[j].user_id == a.user_id;
        if (rc != CAL_OK) (*ignored)++;
        if (!dup) e->attendees[k++] = a;
    }
    e->nattendees = k;
    return 0;
}

int cal_import_save(store *db, int64_t me, const cal_calendar *cal, ical_import *im, cal_import_counts *n)
{
    for (size_t i = 0; i < im->nseries; i++) {
        ical_series_in *s = &im->series[i];
        cal_event *e = &s->ev;
        e->calendar_id = cal->id;
        e->created_by = me;
        int64_t id, created;
        int rc = cal_event_find_uid(db, cal->id, e->ical_uid, &id, &created);
        if (rc == CAL_ERROR) return CAL_ERROR;
        bool insert = rc == CAL_NOT_FOUND;
        if (!insert && s->lone_instance) {
            /* One instance must not replace a whole series stored here. */
            ical_import_skip(im, s->line, e->ical_uid,
                             "an instance of a series already in this calendar (import the whole series)");
            continue;
        }
        if (insert) {
            e->id = base_id_new();
            n->imported++;
        } else {
            e->id = id;
            e->created_ms = created;
            n->updated++;
            /* The file says what the instances are now. */
            if (cal_overrides_clear(db, id) != CAL_OK) return CAL_ERROR;
        }
        if (map_attendees(db, e, &n->ignored_attendees) != 0) return CAL_ERROR;
        if ((rc = cal_event_save_tx(db, e, insert)) != CAL_OK) return rc;
        for (size_t k = 0; k < s->novs; k++) {
            s->ovs[k].event_id = e->id;
            if (cal_override_save(db, &s->ovs[k], e->all_day) != CAL_OK) return CAL_ERROR;
        }
    }
    return CAL_OK;
}
