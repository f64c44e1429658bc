/* cal_edit.c -- the rules of editing part of a series: deleting one
 * instance (an EXDATE), "this and following" (the series ends before the
 * instance, or splits there into two), and the split's transaction. The
 * handlers (calendar_http.c) parse the request and answer; what a series
 * becomes is decided here, where unit tests prove it (test-cal-edit.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "calendar/calendar.h"
#include "time/rrule.h"

int cal_event_add_exdate(cal_event *ev, int64_t local)
{
    for (size_t i = 0; i < ev->nexdates; i++)
        if (ev->exdates[i] == local) return CAL_OK;
    if (ev->nexdates >= CAL_MAX_DATES) return CAL_CONFLICT;
    int64_t *grown = realloc(ev->exdates, (ev->nexdates + 1) * sizeof *grown);
    if (!grown) return CAL_ERROR;
    ev->exdates = grown;
    size_t i = ev->nexdates++;
    while (i > 0 && grown[i - 1] > local) grown[i] = grown[i - 1], i--;
    grown[i] = local;
    return CAL_OK;
}

/* How many instances of the rule come before `before` (local seconds). */
static int count_before(const rrule *r, const civil_time *start, int64_t before, uint32_t *n)
{
    char msg[160];
    rrule_plan plan;
    if (rrule_plan_init(&plan, r, start, msg, sizeof msg) != 0) return -1;
    int64_t buf[64], at = civil_to_seconds(start);
    size_t got;
    *n = 0;
    while ((got = rrule_expand(&plan, at, before, buf, 64)) > 0) {
        *n += (uint32_t)got;
        at = buf[got - 1] + 1;
    }
    return 0;
}

/* Keeps the dates before the cut (keep_before) or after it. */
static void dates_filter(int64_t *v, size_t *n, int64_t cut, bool keep_before)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (keep_before ? v[i] < cut : v[i] > cut) v[k++] = v[i];
    *n = k;
}

/* Ends one rule before the cut: COUNT keeps its meaning (those before
 * the cut), else an UNTIL just before it. */
static int rule_truncate(rrule *r, const cal_event *ev, const cal_series *s, int64_t original_local,
                         int64_t original_ms)
{
    if (r->has & RRULE_HAS_COUNT) {
        uint32_t before;
        if (count_before(r, &ev->start_local, original_local, &before) != 0) return -1;
        r->count = before ? before : 1;
        return 0;
    }
    r->has |= RRULE_HAS_UNTIL;
    int64_t cut = ev->all_day ? original_local - 86400 : original_ms / 1000 - 1;
    civil_from_seconds(cut, &r->until);
    r->until_kind = ev->all_day ? RRULE_UNTIL_DATE : s->zone ? RRULE_UNTIL_UTC : RRULE_UNTIL_LOCAL;
    if (!ev->all_day && !s->zone) civil_from_seconds(original_local - 1, &r->until);
    return 0;
}

int cal_series_truncate(cal_event *ev, const cal_series *s, int64_t original_local, int64_t original_ms)
{
    char msg[160];
    rrule rs[RRULE_SET_MAX_RULES];
    int n;
    if (!ev->rrule || cal_rules_parse(ev->rrule, rs, &n, msg, sizeof msg) != 0 || n == 0) return -1;
    for (int i = 0; i < n; i++)
        if (rule_truncate(&rs[i], ev, s, original_local, original_ms) != 0) return -1;
    if (cal_rules_store(rs, n, &ev->rrule) != 0) return -1;
    /* RDATEs and EXDATEs from the cut on go with the cut. */
    dates_filter(ev->rdates, &ev->nrdates, original_local, true);
    dates_filter(ev->exdates, &ev->nexdates, original_local, true);
    return 0;
}

/* *dst = a copy of src (NULL stays NULL); false when out of memory. */
static bool copy_str(char **dst, const char *src, bool empty_for_null)
{
    if (!src && !empty_for_null) return (*dst = NULL, true);
    return (*dst = strdup(src ? src : "")) != NULL;
}

/* The dates of src after the cut, as next's own array. */
static bool copy_dates_after(const int64_t *src, size_t n, int64_t cut, int64_t **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (n == 0) return true;
    if (!(*out = malloc(n * sizeof **out))) return false;
    memcpy(*out, src, n * sizeof **out);
    *nout = n;
    dates_filter(*out, nout, cut, false);
    return true;
}

/* next: old's fields, starting at the instance. */
static int split_copy(const cal_event *old, int64_t original_local, int64_t next_id, cal_event *next)
{
    char id[17], uid[300];
    next->calendar_id = old->calendar_id;
    next->created_by = old->created_by;
    next->id = next_id;
    base_id_format(next_id, id);
    snprintf(uid, sizeof uid, "%.200s_R%s", old->ical_uid, id);
    snprintf(next->status, sizeof next->status, "%s", old->status);
    next->all_day = old->all_day;
    snprintf(next->time_zone, sizeof next->time_zone, "%s", old->time_zone);
    snprintf(next->calendar_zone, sizeof next->calendar_zone, "%s", old->calendar_zone);
    civil_from_seconds(original_local, &next->start_local);
    civil_from_seconds(civil_to_seconds(&old->end_local) - civil_to_seconds(&old->start_local) + original_local,
                       &next->end_local);
    next->nreminders = old->nreminders;
    memcpy(next->reminders, old->reminders, sizeof next->reminders);
    if (!copy_str(&next->ical_uid, uid, false) || !copy_str(&next->summary, old->summary, true) ||
        !copy_str(&next->description, old->description, true) || !copy_str(&next->location, old->location, true) ||
        !copy_str(&next->rrule, old->rrule, false))
        return -1;
    if (!(next->attendees = calloc((size_t)old->nattendees + 1, sizeof *next->attendees))) return -1;
    if (old->nattendees) memcpy(next->attendees, old->attendees, (size_t)old->nattendees * sizeof *next->attendees);
    next->nattendees = old->nattendees;
    if (!copy_dates_after(old->rdates, old->nrdates, original_local, &next->rdates, &next->nrdates) ||
        !copy_dates_after(old->exdates, old->nexdates, original_local, &next->exdates, &next->nexdates))
        return -1;
    return 0;
}

int cal_series_split(cal_event *old, const cal_series *s, int64_t original_local, int64_t original_ms,
                     int64_t next_id, cal_event *next)
{
    char msg[160];
    rrule total[RRULE_SET_MAX_RULES], kept[RRULE_SET_MAX_RULES];
    int n = 0, nkept = 0;
    memset(next, 0, sizeof *next);
    if (split_copy(old, original_local, next_id, next) != 0) return -1;
    if (next->rrule && cal_rules_parse(next->rrule, total, &n, msg, sizeof msg) != 0) return -1;
    if (cal_series_truncate(old, s, original_local, original_ms) != 0) return -1;
    if (cal_rules_parse(old->rrule, kept, &nkept, msg, sizeof msg) != 0 || nkept != n) return -1;
    /* COUNT is split, rule by rule: the old series keeps those before the
     * cut, the new one the rest. */
    for (int i = 0; i < n; i++)
        if (total[i].has & RRULE_HAS_COUNT) total[i].count = total[i].count > kept[i].count ? total[i].count - kept[i].count : 1;
    return cal_rules_store(total, n, &next->rrule);
}

int cal_series_split_save(store *db, cal_event *old, cal_event *next, int64_t original_ms, bool moved_times)
{
    if (store_begin(db) != STORE_OK) return CAL_ERROR;
    /* New times or a new rule make the later overrides meaningless (as in
     * Google Calendar); otherwise they follow their instances. */
    if (cal_event_save_tx(db, old, false) != CAL_OK || cal_event_save_tx(db, next, true) != CAL_OK ||
        (moved_times ? cal_overrides_drop_from(db, old->id, original_ms)
                     : cal_overrides_move(db, old->id, next->id, original_ms)) != CAL_OK) {
        store_rollback(db);
        return CAL_ERROR;
    }
    return store_commit(db) == STORE_OK ? CAL_OK : CAL_ERROR;
}
