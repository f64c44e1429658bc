/* cal_expand.c -- series into instances, and the range listing.
 *
 * A listing is a k-way merge: every series is an iterator over its instances
 * (rrule_set_iter, which jumps straight to the range), every moved or
 * retitled instance (override) and every single event is a one-item source.
 * A binary heap pops items in (start, event id, original start) order until
 * the page is full, so a series with no end costs only the instances that
 * land on the page, never the whole range. */
#include "calendar/calendar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "time/rrule.h"

int cal_rules_parse(const char *text, rrule *rs, int *n, char *err, size_t errlen)
{
    *n = 0;
    const char *rule;
    int len;
    while (cal_rules_next(&text, &rule, &len)) {
        if (*n == RRULE_SET_MAX_RULES) {
            snprintf(err, errlen, "at most %d RRULEs", RRULE_SET_MAX_RULES);
            return -1;
        }
        if (rrule_parse(rule, (size_t)len, &rs[(*n)++], err, errlen) != 0) return -1;
    }
    return 0;
}

int cal_rules_store(const rrule *rs, int n, char **text)
{
    size_t need = 1;
    for (int i = 0; i < n; i++) need += rrule_format(&rs[i], NULL, 0) + 1;
    char *t = n ? malloc(need) : NULL;
    if (n && !t) return -1;
    for (size_t at = 0, i = 0; i < (size_t)n; i++) {
        if (i) t[at++] = '\n';
        at += rrule_format(&rs[i], t + at, need - at);
    }
    free(*text);
    *text = t;
    return 0;
}

bool cal_rules_next(const char **cursor, const char **rule, int *len)
{
    const char *p = *cursor;
    if (!p || !*p) return false;
    size_t n = strcspn(p, "\n");
    *rule = p;
    *len = (int)n;
    *cursor = p + n + (p[n] == '\n');
    return true;
}

int cal_series_init(cal_series *s, const cal_event *e, tz_db *tz, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->ev = e;
    const char *zone = cal_event_zone_name(e);
    s->zone = zone[0] ? tz_db_get(tz, zone) : NULL;
    rrule rs[RRULE_SET_MAX_RULES];
    int n;
    if (cal_rules_parse(e->rrule, rs, &n, err, errlen) != 0) return -1;
    s->recurring = n > 0 || e->nrdates > 0;
    /* The set sorts its date arrays in place; ours are kept sorted already. */
    return rrule_set_init_rules(&s->set, rs, n, &e->start_local, s->zone, e->rdates, e->nrdates, e->exdates,
                                e->nexdates, err, errlen);
}

int64_t cal_series_utc_ms(const cal_series *s, int64_t local)
{
    return rrule_set_to_utc(&s->set, local) * 1000;
}

int64_t cal_series_end_ms(const cal_series *s, int64_t local_start)
{
    /* All-day events last whole days of wall time; timed ones an exact
     * duration, as RFC 5545 3.8.5.3 says for DTEND-defined events. */
    if (s->ev->all_day) return cal_series_utc_ms(s, local_start + s->ev->duration_s);
    return cal_series_utc_ms(s, local_start) + s->ev->duration_s * 1000;
}

bool cal_series_has_instance(cal_series *s, int64_t utc_ms, int64_t *local)
{
    if (utc_ms % 1000 != 0) return false;
    int64_t l = tz_utc_to_local(s->zone, utc_ms / 1000);
    if (cal_series_utc_ms(s, l) != utc_ms || !rrule_set_includes(&s->set, l)) return false;
    *local = l;
    return true;
}

static const cal_override *override_at(const cal_override *ovs, size_t novs, int64_t original_ms)
{
    size_t lo = 0, hi = novs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ovs[mid].original_ms < original_ms) lo = mid + 1;
        else hi = mid;
    }
    return lo < novs && ovs[lo].original_ms == original_ms ? &ovs[lo] : NULL;
}

bool cal_next_instance(cal_series *s, const cal_override *ovs, size_t novs, int64_t t_ms, int64_t *original_ms,
                       int64_t *start_ms)
{
    if (strcmp(s->ev->status, "cancelled") == 0) return false;
    bool found = false;
    /* Moved instances may land anywhere, so each override is a candidate
     * of its own; the series below skips every overridden instance. */
    for (size_t i = 0; i < novs; i++) {
        const cal_override *o = &ovs[i];
        if (o->cancelled || strcmp(o->status, "cancelled") == 0 || o->start_ms < t_ms) continue;
        if (found && o->start_ms >= *start_ms) continue;
        *original_ms = o->original_ms;
        *start_ms = o->start_ms;
        found = true;
    }
    rrule_set_iter it;
    int64_t local;
    /* Two days of margin cover any UTC offset. */
    int64_t floor_s = t_ms / 1000 - (t_ms % 1000 < 0);
    rrule_set_iter_init(&it, &s->set, tz_utc_to_local(s->zone, floor_s) - 2 * 86400);
    /* Bounded: a sub-daily rule may have many instances in the margin. */
    for (int n = 0; n < 1000000 && rrule_set_iter_next(&it, &local); n++) {
        int64_t start = cal_series_utc_ms(s, local);
        if (found && start >= *start_ms) break;
        if (start < t_ms || override_at(ovs, novs, start)) continue;
        *original_ms = *start_ms = start;
        found = true;
        break;
    }
    return found;
}

int64_t cal_parse_instance_key(const cal_series *s, const char *text, size_t len)
{
    civil_time t;
    bool is_date;
    if (s->ev->all_day) {
        if (len != 8 || civil_parse_basic(text, 8, &t, &is_date) != 0) return -1;
        return cal_series_utc_ms(s, civil_to_seconds(&t));
    }
    if (len != 16 || text[15] != 'Z' || civil_parse_basic(text, 15, &t, &is_date) != 0) return -1;
    return civil_to_seconds(&t) * 1000;
}

void cal_item_id(const cal_item *it, char *buf, size_t size)
{
    char out[48], *p = out;
    base_id_format(it->ev->id, p);
    p += 16;
    if (it->recurring) {
        civil_time t;
        *p++ = '_';
        if (it->ev->all_day) {
            civil_from_seconds(it->original_local, &t);
            p += civil_format_basic(&t, true, p, 16);
        } else {
            civil_from_seconds(it->original_ms / 1000, &t);
            p += civil_format_basic(&t, false, p, 16);
            *p++ = 'Z';
        }
    }
    size_t n = (size_t)(p - out);
    if (size == 0) return;
    if (n >= size) n = size - 1;
    memcpy(buf, out, n);
    buf[n] = '\0';
}

/* ---- the merge ---------------------------------------------------------- */

/* A recurring series being walked: big (a plan with its day masks, an
 * iterator with a period of occurrences), so only series get one. */
typedef struct cal_walker {
    cal_series series;
    rrule_set_iter it;
    const cal_override *ovs;  /* this event's overrides, sorted by original */
    size_t novs;
} cal_walker;

typedef struct cal_source {
    cal_walker *w;                /* NULL: a single item (event or override) */
    bool live;
    cal_item cur;
} cal_source;

typedef struct cal_merge {
    const cal_query *q;
    cal_source *src;
    size_t nsrc;
    cal_walker *walkers;
    size_t nwalkers;
    size_t *heap;
    size_t nheap;
} cal_merge;

static int item_cmp(const cal_item *a, const cal_item *b)
{
    if (a->start_ms != b->start_ms) return a->start_ms < b->start_ms ? -1 : 1;
    if (a->ev->id != b->ev->id) return a->ev->id < b->ev->id ? -1 : 1;
    return (a->original_ms > b->original_ms) - (a->original_ms < b->original_ms);
}

static bool after_cursor(const cal_query *q, const cal_item *it)
{
    if (!q->has_cursor) return true;
    if (it->start_ms != q->cursor_ms) return it->start_ms > q->cursor_ms;
    if (it->ev->id != q->cursor_event) return it->ev->id > q->cursor_event;
    return it->original_ms > q->cursor_orig;
}

static const cal_override *find_override(const cal_walker *w, int64_t original_ms)
{
    size_t lo = 0, hi = w->novs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->ovs[mid].original_ms < original_ms) lo = mid + 1;
        else hi = mid;
    }
    return lo < w->novs && w->ovs[lo].original_ms == original_ms ? &w->ovs[lo] : NULL;
}

/* The viewer's answer to an event, if they are an attendee. */
static bool declined_by(const cal_event *e, int64_t viewer)
{
    for (int i = 0; i < e->nattendees; i++)
        if (e->attendees[i].user_id == viewer) return e->attendees[i].response == CAL_DECLINED;
    return false;
}

/* [start, end) overlaps [from, to); an instant (start == end) is in it
 * when from <= start < to. Free/busy wants busy time: instants have none. */
static bool overlaps(const cal_query *q, int64_t start_ms, int64_t end_ms)
{
    if (q->busy_only && end_ms <= start_ms) return false;
    return start_ms < q->to_ms && (end_ms > q->from_ms || start_ms >= q->from_ms);
}

static bool in_range(const cal_query *q, const cal_item *it)
{
    return overlaps(q, it->start_ms, it->end_ms);
}

/* Advances a series source to its next instance that belongs on the page. */
static void series_advance(cal_merge *m, cal_source *s)
{
    cal_walker *w = s->w;
    int64_t local;
    while (rrule_set_iter_next(&w->it, &local)) {
        cal_item it = {.ev = w->series.ev, .recurring = true, .original_local = local};
        it.original_ms = it.start_ms = cal_series_utc_ms(&w->series, local);
        it.end_ms = cal_series_end_ms(&w->series, local);
        if (it.start_ms >= m->q->to_ms) break;
        if (!in_range(m->q, &it)) continue;
        /* An overridden instance is its override's to show (or hide). */
        if (find_override(w, it.original_ms)) continue;
        if (!after_cursor(m->q, &it)) continue;
        s->cur = it;
        s->live = true;
        return;
    }
    s->live = false;
}

static bool heap_less(const cal_merge *m, size_t a, size_t b)
{
    return item_cmp(&m->src[m->heap[a]].cur, &m->src[m->heap[b]].cur) < 0;
}

static void heap_swap(cal_merge *m, size_t a, size_t b)
{
    size_t t = m->heap[a];
    m->heap[a] = m->heap[b];
    m->heap[b] = t;
}

static void heap_down(cal_merge *m, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < m->nheap && heap_less(m, l, best)) best = l;
        if (r < m->nheap && heap_less(m, r, best)) best = r;
        if (best == i) return;
        heap_swap(m, i, best);
        i = best;
    }
}

static bool override_wanted(const cal_query *q, const cal_override *o)
{
    if (o->cancelled || strcmp(o->status, "cancelled") == 0) return false;
    return overlaps(q, o->start_ms, o->end_ms);
}

static bool event_wanted(const cal_query *q, const cal_event *e)
{
    if (strcmp(e->status, "cancelled") == 0) return false;
    if (q->busy_only && (e->all_day || declined_by(e, q->viewer))) return false;
    return true;
}

static bool is_recurring(const cal_event *e)
{
    return e->rrule != NULL || e->nrdates > 0;
}

static void push_single(cal_merge *m, const cal_item *it)
{
    if (!after_cursor(m->q, it)) return;
    cal_source *s = &m->src[m->nsrc];
    s->w = NULL;
    s->live = true;
    s->cur = *it;
    m->heap[m->nheap++] = m->nsrc++;
}

/* A single event: one item, no iterator. */
static void add_single(cal_merge *m, tz_db *tz, const cal_event *e)
{
    const char *zname = cal_event_zone_name(e);
    const tz_zone *z = zname[0] ? tz_db_get(tz, zname) : NULL;
    int64_t local = civil_to_seconds(&e->start_local);
    cal_item it = {.ev = e, .original_local = local};
    it.original_ms = it.start_ms = tz_local_to_utc(z, local) * 1000;
    it.end_ms = e->all_day ? tz_local_to_utc(z, local + e->duration_s) * 1000 : it.start_ms + e->duration_s * 1000;
    if (in_range(m->q, &it)) push_single(m, &it);
}

/* A series: an iterator from where the page starts, and its overrides that
 * land in the range as single items. */
static void add_series(cal_merge *m, tz_db *tz, const cal_event *e, const cal_override *ovs, size_t novs)
{
    const cal_query *q = m->q;
    cal_walker *w = &m->walkers[m->nwalkers];
    char err[160];
    if (cal_series_init(&w->series, e, tz, err, sizeof err) != 0) return; /* unreadable row: nothing to show */
    m->nwalkers++;
    w->ovs = ovs;
    w->novs = novs;
    /* Start early enough for an instance that began before `from` (or the
     * cursor) and is still running; two days of margin cover any offset. */
    int64_t start_utc = q->from_ms / 1000 - e->duration_s;
    if (q->has_cursor && q->cursor_ms / 1000 > start_utc) start_utc = q->cursor_ms / 1000;
    rrule_set_iter_init(&w->it, &w->series.set, tz_utc_to_local(w->series.zone, start_utc) - 2 * 86400);
    cal_source *s = &m->src[m->nsrc];
    s->w = w;
    series_advance(m, s);
    if (s->live) m->heap[m->nheap++] = m->nsrc++;
    for (size_t i = 0; i < novs; i++) {
        const cal_override *o = &ovs[i];
        if (!override_wanted(q, o)) continue;
        cal_item it = {.ev = e, .ov = o, .recurring = true, .original_ms = o->original_ms,
                       .start_ms = o->start_ms, .end_ms = o->end_ms};
        it.original_local = tz_utc_to_local(w->series.zone, o->original_ms / 1000);
        push_single(m, &it);
    }
}

int cal_list(store *db, tz_db *tz, const cal_query *q, cal_listing *out)
{
    memset(out, 0, sizeof *out);
    if (cal_list_load_events(db, q, out) != CAL_OK) return CAL_ERROR;
    size_t nseries = 0;
    for (size_t i = 0; i < out->nevents; i++) nseries += is_recurring(&out->events[i]);
    cal_merge m = {.q = q};
    size_t nsrc = out->nevents + out->noverrides + 1;
    m.src = malloc(nsrc * sizeof *m.src);
    m.heap = malloc(nsrc * sizeof *m.heap);
    m.walkers = malloc((nseries + 1) * sizeof *m.walkers);
    out->items = malloc((q->limit + 1) * sizeof *out->items);
    int rc = CAL_ERROR;
    if (!m.src || !m.heap || !m.walkers || !out->items) goto done;
    size_t oi = 0;
    for (size_t i = 0; i < out->nevents; i++) {
        const cal_event *e = &out->events[i];
        while (oi < out->noverrides && out->overrides[oi].event_id < e->id) oi++;
        size_t first = oi;
        while (oi < out->noverrides && out->overrides[oi].event_id == e->id) oi++;
        if (!event_wanted(q, e)) continue;
        if (is_recurring(e)) add_series(&m, tz, e, out->overrides + first, oi - first);
        else add_single(&m, tz, e);
    }
    for (size_t i = m.nheap / 2 + 1; i-- > 0;) heap_down(&m, i);
    while (m.nheap > 0) {
        cal_source *s = &m.src[m.heap[0]];
        if (out->nitems == q->limit) {
            out->more = true;
            break;
        }
        out->items[out->nitems++] = s->cur;
        if (s->w) series_advance(&m, s);
        else s->live = false;
        if (!s->live) m.heap[0] = m.heap[--m.nheap];
        heap_down(&m, 0);
    }
    rc = CAL_OK;
done:
    free(m.src);
    free(m.heap);
    free(m.walkers);
    return rc;
}

void cal_listing_free(cal_listing *l)
{
    for (size_t i = 0; i < l->nevents; i++) cal_event_free(&l->events[i]);
    for (size_t i = 0; i < l->noverrides; i++) cal_override_free(&l->overrides[i]);
    free(l->events);
    free(l->overrides);
    free(l->items);
    memset(l, 0, sizeof *l);
}

int cal_busy(store *db, tz_db *tz, const cal_query *q, cal_interval **out, size_t *n)
{
    cal_listing l;
    *out = NULL;
    *n = 0;
    if (cal_list(db, tz, q, &l) != CAL_OK) {
        cal_listing_free(&l);
        return CAL_ERROR;
    }
    cal_interval *iv = malloc((l.nitems + 1) * sizeof *iv);
    if (!iv) {
        cal_listing_free(&l);
        return CAL_ERROR;
    }
    /* Items come sorted by start: merge overlapping or touching ones. */
    for (size_t i = 0; i < l.nitems;) {
        int64_t s = l.items[i].start_ms, e = l.items[i].end_ms;
        for (i++; i < l.nitems && l.items[i].start_ms <= e; i++)
            if (l.items[i].end_ms > e) e = l.items[i].end_ms;
        iv[*n].start_ms = s < q->from_ms ? q->from_ms : s;
        iv[(*n)++].end_ms = e > q->to_ms ? q->to_ms : e;
    }
    cal_listing_free(&l);
    *out = iv;
    return CAL_OK;
}

/* ---- resolving an edited event ------------------------------------------ */

static void fail(char *err, size_t errlen, char *field, size_t fieldlen, const char *f, const char *msg)
{
    snprintf(field, fieldlen, "%s", f);
    snprintf(err, errlen, "%s", msg);
}

/* The last end (UTC ms) of a COUNT rule's instances: walked, COUNT being
 * capped (CAL_MAX_COUNT); a set of its own so another rule of the event
 * (UNTIL far away) is not walked with it. */
static int64_t count_rule_end(const cal_series *s, const rrule *r)
{
    const cal_event *e = s->ev;
    int64_t last = INT64_MIN, local;
    rrule_set *one = malloc(sizeof *one);
    rrule_set_iter *it = malloc(sizeof *it);
    char msg[160];
    if (one && it && rrule_set_init(one, r, &e->start_local, s->zone, NULL, 0, NULL, 0, msg, sizeof msg) == 0) {
        rrule_set_iter_init(it, one, civil_to_seconds(&e->start_local));
        while (rrule_set_iter_next(it, &local)) {
            int64_t end = cal_series_end_ms(s, local);
            if (end > last) last = end;
        }
    }
    free(one);
    free(it);
    return last;
}

/* Upper bound of the series' last end (UTC ms), or false when unbounded:
 * the latest of DTSTART's, the RDATEs' and each rule's. */
static bool series_bound(cal_series *s, const rrule *rs, int nrules, int64_t *bound)
{
    const cal_event *e = s->ev;
    int64_t last = cal_series_end_ms(s, civil_to_seconds(&e->start_local));
    for (size_t i = 0; i < e->nrdates; i++) {
        int64_t end = cal_series_end_ms(s, e->rdates[i]);
        if (end > last) last = end;
    }
    for (int i = 0; i < nrules; i++) {
        const rrule *r = &rs[i];
        int64_t end;
        if (r->has & RRULE_HAS_COUNT) {
            end = count_rule_end(s, r);
        } else if (r->has & RRULE_HAS_UNTIL) {
            int64_t until = civil_to_seconds(&r->until);
            if (r->until_kind != RRULE_UNTIL_UTC) until = tz_local_to_utc(s->zone, until);
            /* A day of margin: an UNTIL date covers its whole day. */
            end = (until + 86400) * 1000 + e->duration_s * 1000;
        } else {
            return false;
        }
        if (end > last) last = end;
    }
    *bound = last;
    return true;
}

int cal_event_resolve(cal_event *e, tz_db *tz, char *err, size_t errlen, char *field, size_t fieldlen)
{
    const char *zname = cal_event_zone_name(e);
    const tz_zone *z = zname[0] ? tz_db_get(tz, zname) : NULL;
    if (zname[0] && !z) {
        fail(err, errlen, field, fieldlen, "start.time_zone", "unknown time zone");
        return -1;
    }
    int64_t s = civil_to_seconds(&e->start_local), en = civil_to_seconds(&e->end_local);
    if (e->all_day) {
        e->duration_s = en - s;
    } else {
        e->duration_s = tz_local_to_utc(z, en) - tz_local_to_utc(z, s);
    }
    /* A timed event may last no time at all (RFC 5545 3.6.1: DTSTART with
     * neither DTEND nor DURATION): a deadline, a start signal. A day has a
     * length. */
    if (e->duration_s < 0 || (e->all_day && e->duration_s == 0)) {
        fail(err, errlen, field, fieldlen, "end", e->all_day ? "end must be after start" : "end must not be before start");
        return -1;
    }
    cal_series series;
    char msg[200];
    if (cal_series_init(&series, e, tz, msg, sizeof msg) != 0) {
        fail(err, errlen, field, fieldlen, "recurrence", msg);
        return -1;
    }
    int64_t first = cal_series_utc_ms(&series, s);
    for (size_t i = 0; i < e->nrdates; i++) {
        int64_t r = cal_series_utc_ms(&series, e->rdates[i]);
        if (r < first) first = r;
    }
    e->start_ms = first;
    rrule rs[RRULE_SET_MAX_RULES];
    int nrules = 0;
    if (cal_rules_parse(e->rrule, rs, &nrules, msg, sizeof msg) != 0) nrules = 0;
    e->has_series_end = series_bound(&series, rs, nrules, &e->series_end_ms);
    return 0;
}
