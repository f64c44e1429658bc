/* caldav_events.c -- the events behind a collection's resources: loading
 * them (a whole calendar at once, or one by one), rendering one as
 * iCalendar (as stored, or expanded), its instances over a range, and the
 * calendar-query filter.
 *
 * Instances come from the calendar's own engine (cal_next_instance: the
 * series' rule, RDATEs and EXDATEs, overrides moved or cancelled), so a
 * time-range match and an expand see exactly what the JSON API lists.
 * Unlike the JSON listings, a cancelled event is still a resource here: it
 * matches a time-range by its times and expands with STATUS:CANCELLED. */
#define _GNU_SOURCE /* strcasestr */
#include "caldav/caldav_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"

void caldav_events_free(caldav_events *ev)
{
    cal_listing_free(&ev->l);
    ev->all = false;
}

static int loaded(caldav_events *ev, int rc)
{
    if (rc != CAL_OK) {
        caldav_events_free(ev);
        return CALDAV_ERROR;
    }
    ev->all = true;
    return CALDAV_OK;
}

/* The events visible to t's owner in [from_ms, to_ms) (open ends as the
 * listings take them), of its calendar, or (invited) all the owner sees:
 * lookups go by the collection's ids. */
static int load_visible(caldav_ctx *c, const caldav_target *t, int64_t from_ms, int64_t to_ms, caldav_events *ev)
{
    cal_query q = {.viewer = t->invited ? c->me : t->cal.owner_id,
                   .calendar_id = t->invited ? 0 : t->cal.id,
                   .from_ms = from_ms < INT64_MIN / 2 ? INT64_MIN / 2 : from_ms,
                   .to_ms = to_ms > INT64_MAX / 2 ? INT64_MAX / 2 : to_ms};
    return loaded(ev, cal_list_load_events(c->db, &q, &ev->l));
}

int caldav_events_load_all(caldav_ctx *c, const caldav_target *t, caldav_events *ev)
{
    memset(ev, 0, sizeof *ev);
    if (t->invited) return load_visible(c, t, INT64_MIN, INT64_MAX, ev);
    return loaded(ev, cal_calendar_events(c->db, t->cal.id, &ev->l));
}

int caldav_events_load_range(caldav_ctx *c, const caldav_target *t, int64_t from_ms, int64_t to_ms,
                             caldav_events *ev)
{
    memset(ev, 0, sizeof *ev);
    return load_visible(c, t, from_ms, to_ms, ev);
}

static int cmp_event_id(const void *key, const void *elem)
{
    int64_t a = *(const int64_t *)key, b = ((const cal_event *)elem)->id;
    return (a > b) - (a < b);
}

/* Listings hold their events sorted by id. */
static const cal_event *find_event(const cal_listing *l, int64_t id)
{
    return l->nevents ? bsearch(&id, l->events, l->nevents, sizeof *l->events, cmp_event_id) : NULL;
}

/* The overrides of one event in a listing (sorted by event id). */
static const cal_override *find_overrides(const cal_listing *l, int64_t id, size_t *n)
{
    size_t lo = 0, hi = l->noverrides;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l->overrides[mid].event_id < id) lo = mid + 1;
        else hi = mid;
    }
    size_t end = lo;
    while (end < l->noverrides && l->overrides[end].event_id == id) end++;
    *n = end - lo;
    return l->overrides + lo;
}

int caldav_event_get(caldav_ctx *c, caldav_events *ev, int64_t id, caldav_event_ref *out)
{
    memset(out, 0, sizeof *out);
    if (ev && ev->all) {
        out->e = find_event(&ev->l, id);
        out->ovs = find_overrides(&ev->l, id, &out->novs);
        return out->e ? CALDAV_OK : CALDAV_NOT_FOUND;
    }
    bool org;
    int rc = cal_event_load(c->db, c->me, id, &out->own, &org);
    if (rc != CAL_OK) return rc == CAL_NOT_FOUND ? CALDAV_NOT_FOUND : CALDAV_ERROR;
    out->owned = true;
    out->e = &out->own;
    cal_override *ovs;
    if (cal_overrides_load(c->db, id, &ovs, &out->novs) != CAL_OK) {
        caldav_event_ref_free(out);
        return CALDAV_ERROR;
    }
    out->own_ovs = ovs;
    out->ovs = ovs;
    return CALDAV_OK;
}

void caldav_event_ref_free(caldav_event_ref *ref)
{
    if (!ref->owned) return;
    cal_event_free(&ref->own);
    for (size_t i = 0; i < ref->novs; i++) cal_override_free(&ref->own_ovs[i]);
    free(ref->own_ovs);
    memset(ref, 0, sizeof *ref);
}

/* ---- instances ----------------------------------------------------------- */

static const cal_override *override_of(const caldav_event_ref *ref, int64_t original_ms)
{
    for (size_t i = 0; i < ref->novs; i++)
        if (ref->ovs[i].original_ms == original_ms) return &ref->ovs[i];
    return NULL;
}

static bool overlaps(int64_t start, int64_t end, int64_t from, int64_t to)
{
    return start < to && (end > from || (start == end && start >= from));
}

/* A single event: one item, if it overlaps. */
static int single_instance(caldav_ctx *c, const caldav_event_ref *ref, int64_t from, int64_t to, cal_item *it)
{
    const cal_event *e = ref->e;
    const char *zname = cal_event_zone_name(e);
    const tz_zone *z = zname[0] ? tz_db_get(c->tz, zname) : NULL;
    int64_t local = civil_to_seconds(&e->start_local);
    *it = (cal_item){.ev = e, .original_local = local};
    it->original_ms = it->start_ms = tz_local_to_utc(z, local) * 1000;
    it->end_ms = e->all_day ? tz_local_to_utc(z, local + e->duration_s) * 1000 : it->start_ms + e->duration_s * 1000;
    return overlaps(it->start_ms, it->end_ms, from, to) ? 1 : 0;
}

/* Where to start looking: an instance starting that early may still run
 * into the range (a moved one may be longer than the series' length). */
static int64_t search_from(const caldav_event_ref *ref, int64_t from)
{
    int64_t t = from - ref->e->duration_s * 1000;
    for (size_t i = 0; i < ref->novs; i++)
        if (ref->ovs[i].moved && ref->ovs[i].end_ms > from && ref->ovs[i].start_ms < t) t = ref->ovs[i].start_ms;
    return t;
}

static int add_item(cal_item **items, size_t *n, size_t *cap, const cal_item *it)
{
    if (*n == *cap) {
        cal_item *grown = base_grow(*items, sizeof *grown, cap);
        if (!grown) return -1;
        *items = grown;
    }
    (*items)[(*n)++] = *it;
    return 0;
}

/* The series' instances, walked with the calendar's own engine. */
static int series_instances(caldav_ctx *c, const caldav_event_ref *ref, int64_t from, int64_t to, size_t max,
                            cal_item **items, size_t *n)
{
    /* Walk a confirmed copy: the engine gives a cancelled series no
     * instances, and a cancelled event is still a resource here. */
    cal_event walk = *ref->e;
    snprintf(walk.status, sizeof walk.status, "confirmed");
    cal_series s;
    char err[160];
    size_t cap = 0;
    if (cal_series_init(&s, &walk, c->tz, err, sizeof err) != 0) return 0; /* an unreadable row: no instances */
    int64_t orig, start;
    for (int64_t t = search_from(ref, from); cal_next_instance(&s, ref->ovs, ref->novs, t, &orig, &start) && start < to;
         t = start + 1) {
        cal_item it = {.ev = ref->e, .ov = override_of(ref, orig), .recurring = true, .original_ms = orig,
                       .start_ms = start};
        it.original_local = tz_utc_to_local(s.zone, orig / 1000);
        it.end_ms = it.ov && it.ov->moved ? it.ov->end_ms : cal_series_end_ms(&s, it.original_local);
        if (!overlaps(it.start_ms, it.end_ms, from, to)) continue;
        if (*n == max || add_item(items, n, &cap, &it) != 0) return -1;
    }
    return 0;
}

int caldav_instances(caldav_ctx *c, const caldav_event_ref *ref, int64_t from, int64_t to, size_t max,
                     cal_item **items)
{
    size_t n = 0;
    *items = NULL;
    const cal_event *e = ref->e;
    if (!e->rrule && e->nrdates == 0) {
        cal_item it;
        if (single_instance(c, ref, from, to, &it) == 0 || max == 0) return 0;
        if (!(*items = malloc(sizeof **items))) return -1;
        **items = it;
        return 1;
    }
    if (series_instances(c, ref, from, to, max, items, &n) != 0) {
        free(*items);
        *items = NULL;
        return -1;
    }
    return (int)n;
}

/* ---- rendering ----------------------------------------------------------- */

char *caldav_render(caldav_ctx *c, const caldav_event_ref *ref, bool expand, int64_t from, int64_t to, size_t *len)
{
    if (!expand) return ical_write_resource(ref->e, ref->ovs, ref->novs, c->tz, len);
    cal_item *items;
    int n = caldav_instances(c, ref, from, to, CALDAV_MAX_INSTANCES, &items);
    if (n < 0) return NULL;
    char *text = ical_write_expanded(items, (size_t)n, len);
    free(items);
    return text;
}

/* ---- the calendar-query filter ------------------------------------------- */

/* One component's properties against every prop-filter. */
static bool comp_props_match(const ical_comp *comp, const caldav_filter *f)
{
    for (size_t i = 0; i < f->nprops; i++) {
        const caldav_prop_filter *pf = &f->props[i];
        bool defined = false, text_hit = false;
        for (const ical_prop *p = comp->props; p; p = p->next) {
            if (strcasecmp(p->name, pf->name) != 0) continue;
            defined = true;
            if (!pf->text) continue;
            char *v = ical_text_unescape(p->value);
            if (v && (pf->octet ? strstr(v, pf->text) : strcasestr(v, pf->text))) text_hit = true;
            free(v);
        }
        if (pf->is_not_defined ? defined : !defined) return false;
        if (pf->text && text_hit == pf->negate) return false;
    }
    return true;
}

/* Prop-filters look at the text clients see: any VEVENT of the resource
 * (the master or an override) that passes them all is a match. */
static int props_match(caldav_ctx *c, const caldav_filter *f, const caldav_event_ref *ref)
{
    size_t len;
    char *text = ical_write_resource(ref->e, ref->ovs, ref->novs, c->tz, &len);
    ical_doc doc;
    ical_err err;
    if (!text || ical_parse(text, len, &doc, &err) != 0) {
        free(text);
        return -1;
    }
    int hit = 0;
    for (const ical_comp *cal = doc.roots; cal && !hit; cal = cal->next)
        for (const ical_comp *s = cal->subs; s && !hit; s = s->next)
            hit = strcmp(s->name, "VEVENT") == 0 && comp_props_match(s, f);
    ical_doc_free(&doc);
    free(text);
    return hit;
}

int caldav_matches(caldav_ctx *c, const caldav_filter *f, const caldav_event_ref *ref)
{
    bool has_comp = f->comp == 0 || f->comp == CALDAV_COMP_VEVENT;
    if (f->comp_not_defined) return !has_comp && f->comp != 0;
    if (!has_comp) return 0;
    if ((f->alarm > 0 && ref->e->nreminders == 0) || (f->alarm < 0 && ref->e->nreminders > 0)) return 0;
    if (f->has_range) {
        cal_item *items;
        int n = caldav_instances(c, ref, f->from_ms, f->to_ms, 1, &items);
        free(items);
        if (n == 0) return 0;
        /* n < 0: more than one instance overlaps, which is a match too. */
    }
    return f->nprops ? props_match(c, f, ref) : 1;
}
