/* notify_sync.c -- keeping reminder rows in step with their events.
 *
 * The floor of a row: only fire times after it count. A new row's floor is
 * now (no reminders for the past); firing an instance raises it to that
 * fire time. An edit raises it to now only when nothing was pending, so a
 * reminder already due (the scanner is behind or the node was down) keeps
 * its place and is handled by the late policy rather than dropped. */
#include "notify/notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

int notify_shard_of(int64_t user_id, int shards)
{
    uint64_t x = (uint64_t)user_id;
    /* splitmix64's finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (int)(x % (uint64_t)(shards > 0 ? shards : 1));
}

void notify_delivery_id(int64_t event_id, int64_t user_id, const char *method, int minutes_before,
                        int64_t occurrence_ms, const char *channel, int64_t endpoint_id,
                        char out[NOTIFY_ID_LEN + 1])
{
    char key[256], hex[65];
    int n = snprintf(key, sizeof key, "%lld|%lld|%s|%d|%lld|%s|%lld", (long long)event_id, (long long)user_id,
                     method, minutes_before, (long long)occurrence_ms, channel, (long long)endpoint_id);
    base_sha256_hex(key, (size_t)n < sizeof key ? (size_t)n : sizeof key - 1, hex);
    /* 12 hex digits of the nominal fire time first: ids made together sort
     * together, so the outbox's and the inbox's unique indexes grow at
     * their ends instead of dirtying pages all over (a function of the key
     * as well, so still stable). Then 20 digits of the hash. */
    uint64_t when = (uint64_t)(occurrence_ms - (int64_t)minutes_before * 60000) & 0xffffffffffffULL;
    snprintf(out, NOTIFY_ID_LEN + 1, "%012llx%.20s", (unsigned long long)when, hex);
}

bool notify_next_fire(cal_series *s, const cal_override *ovs, size_t novs, int minutes_before, int64_t floor_ms,
                      int64_t *fire_ms, int64_t *original_ms, int64_t *start_ms)
{
    int64_t lead = (int64_t)minutes_before * 60000;
    /* fire > floor  <=>  start >= floor + lead + 1 */
    if (!cal_next_instance(s, ovs, novs, floor_ms + lead + 1, original_ms, start_ms)) return false;
    *fire_ms = *start_ms - lead;
    return true;
}

/* One wanted row: a recipient's reminder. */
typedef struct sync_want {
    int64_t user_id;
    char method[8];
    int minutes;
    bool seen; /* matched an existing row */
} sync_want;

static int wants_add(sync_want *w, int n, int64_t user, const cal_reminder *r, int nr)
{
    for (int i = 0; i < nr; i++) {
        bool dup = false;
        for (int k = 0; k < n && !dup; k++)
            dup = w[k].user_id == user && w[k].minutes == r[i].minutes_before && strcmp(w[k].method, r[i].method) == 0;
        if (dup) continue;
        w[n].user_id = user;
        snprintf(w[n].method, sizeof w[n].method, "%s", r[i].method);
        w[n].minutes = r[i].minutes_before;
        w[n].seen = false;
        n++;
    }
    return n;
}

/* The organizer gets the event's reminders; every attendee who has not
 * declined gets their own list if they set one, else the event's. */
static sync_want *wants_of(const cal_event *e, int64_t owner, int *n)
{
    *n = 0;
    sync_want *w = malloc((size_t)(e->nattendees + 1) * CAL_MAX_REMINDERS * sizeof *w);
    if (!w) return NULL;
    if (strcmp(e->status, "cancelled") == 0) return w;
    *n = wants_add(w, *n, owner, e->reminders, e->nreminders);
    for (int i = 0; i < e->nattendees; i++) {
        const cal_attendee *a = &e->attendees[i];
        if (a->user_id == owner || a->response == CAL_DECLINED) continue;
        *n = a->has_reminders ? wants_add(w, *n, a->user_id, a->reminders, a->nreminders)
                              : wants_add(w, *n, a->user_id, e->reminders, e->nreminders);
    }
    return w;
}

typedef struct sync_ctx {
    store *db;
    cal_series series;
    bool have_series;
    const cal_override *ovs;
    size_t novs;
    int shard;
    bool single;
} sync_ctx;

void notify_bind_next(store_stmt *st, int at, bool has, int64_t fire_ms, int64_t original_ms, int64_t start_ms)
{
    if (has) {
        store_bind_int64(st, at, fire_ms);
        store_bind_int64(st, at + 1, original_ms);
        store_bind_int64(st, at + 2, start_ms);
    } else {
        store_bind_null(st, at);
        store_bind_null(st, at + 1);
        store_bind_null(st, at + 2);
    }
}

/* Writes next fire for a row given its floor (insert when id is 0). */
static int row_write(sync_ctx *c, int64_t id, const sync_want *w, int64_t floor_ms, int64_t event_id)
{
    int64_t fire = 0, orig = 0, start = 0;
    bool has = c->have_series && notify_next_fire(&c->series, c->ovs, c->novs, w->minutes, floor_ms, &fire, &orig, &start);
    store_stmt *st;
    if (id) {
        st = store_prepare(c->db, "UPDATE reminders SET floor_ms = $2, next_fire_ms = $3, occurrence_ms = $4, "
                                  "start_ms = $5, shard = $6, single = $7 WHERE id = $1");
        store_bind_int64(st, 1, id);
    } else {
        st = store_prepare(c->db, "INSERT INTO reminders (id, floor_ms, next_fire_ms, occurrence_ms, start_ms, shard, "
                                  "single, event_id, user_id, method, minutes_before) "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)");
        store_bind_int64(st, 1, base_id_new());
        store_bind_int64(st, 8, event_id);
        store_bind_int64(st, 9, w->user_id);
        store_bind_str(st, 10, w->method);
        store_bind_int64(st, 11, w->minutes);
    }
    store_bind_int64(st, 2, floor_ms);
    notify_bind_next(st, 3, has, fire, orig, start);
    store_bind_int64(st, 6, c->shard);
    store_bind_int64(st, 7, c->single);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Inside the transaction: existing rows are updated or deleted, missing
 * ones inserted. */
static int sync_rows(sync_ctx *c, int64_t event_id, sync_want *w, int nw, int64_t now_ms)
{
    bool pg = store_backend_of(c->db) == STORE_PG;
    store_stmt *st = store_prepare(c->db, pg ? "SELECT id, user_id, method, minutes_before, floor_ms, next_fire_ms "
                                               "FROM reminders WHERE event_id = $1 ORDER BY id FOR UPDATE"
                                             : "SELECT id, user_id, method, minutes_before, floor_ms, next_fire_ms "
                                               "FROM reminders WHERE event_id = $1 ORDER BY id");
    store_bind_int64(st, 1, event_id);
    /* Read them all first: one statement at a time per connection. */
    typedef struct sync_have {
        int64_t id, user_id, floor_ms, next;
        bool has_next;
        char method[8];
        int minutes;
    } sync_have;
    sync_have *h = NULL;
    size_t nh = 0, cap = 0;
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (nh == cap) {
            sync_have *grown = base_grow(h, sizeof *grown, &cap);
            if (!grown) {
                rc = STORE_ERROR;
                break;
            }
            h = grown;
        }
        sync_have *x = &h[nh++];
        x->id = store_col_int64(st, 0);
        x->user_id = store_col_int64(st, 1);
        snprintf(x->method, sizeof x->method, "%s", store_col_text(st, 2));
        x->minutes = (int)store_col_int64(st, 3);
        x->floor_ms = store_col_int64(st, 4);
        x->has_next = !store_col_is_null(st, 5);
        x->next = store_col_int64(st, 5);
    }
    store_reset(st);
    if (rc != STORE_DONE) {
        free(h);
        return rc < 0 ? rc : STORE_ERROR;
    }
    rc = STORE_OK;
    for (size_t i = 0; i < nh && rc == STORE_OK; i++) {
        sync_want *match = NULL;
        for (int k = 0; k < nw && !match; k++)
            if (w[k].user_id == h[i].user_id && w[k].minutes == h[i].minutes && strcmp(w[k].method, h[i].method) == 0)
                match = &w[k];
        if (!match) {
            st = store_prepare(c->db, "DELETE FROM reminders WHERE id = $1");
            store_bind_int64(st, 1, h[i].id);
            rc = store_step(st) == STORE_DONE ? STORE_OK : STORE_ERROR;
            store_reset(st);
            continue;
        }
        match->seen = true;
        bool pending = h[i].has_next && h[i].next <= now_ms;
        rc = row_write(c, h[i].id, match, pending ? h[i].floor_ms : max64(h[i].floor_ms, now_ms), event_id);
    }
    for (int k = 0; k < nw && rc == STORE_OK; k++)
        if (!w[k].seen) rc = row_write(c, 0, &w[k], now_ms, event_id);
    free(h);
    return rc;
}

/* Inside the transaction: the mark's gen (0 when unmarked) and the time
 * of the first change it stands for. */
static int mark_read(store *db, int64_t event_id, int64_t *gen, int64_t *marked_ms)
{
    bool pg = store_backend_of(db) == STORE_PG;
    store_stmt *st = store_prepare(db, pg ? "SELECT gen, marked_ms FROM reminder_dirty WHERE event_id = $1 FOR UPDATE"
                                          : "SELECT gen, marked_ms FROM reminder_dirty WHERE event_id = $1");
    store_bind_int64(st, 1, event_id);
    int rc = store_step(st);
    *gen = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    if (rc == STORE_ROW) *marked_ms = store_col_int64(st, 1);
    store_reset(st);
    return rc < 0 ? rc : STORE_OK;
}

static int mark_clear(store *db, int64_t event_id, int64_t gen)
{
    store_stmt *st = store_prepare(db, "DELETE FROM reminder_dirty WHERE event_id = $1 AND gen = $2");
    store_bind_int64(st, 1, event_id);
    store_bind_int64(st, 2, gen);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc;
}

static int sync_locked(store *db, tz_db *tz, int shards, int64_t event_id, int64_t now_ms)
{
    int64_t gen, marked_ms = now_ms;
    int rc = mark_read(db, event_id, &gen, &marked_ms);
    if (rc != STORE_OK) return rc;
    /* The change happened when it was marked, not when we got to it. */
    if (gen && marked_ms < now_ms) now_ms = marked_ms;
    cal_event ev;
    int64_t owner = 0;
    int lrc = cal_event_load_any(db, event_id, &ev, &owner);
    if (lrc == CAL_ERROR) return STORE_ERROR;
    sync_ctx c = {.db = db};
    cal_override *ovs = NULL;
    size_t novs = 0;
    sync_want *w = NULL;
    int nw = 0;
    if (lrc == CAL_OK) {
        char err[160];
        if (cal_overrides_load(db, event_id, &ovs, &novs) != CAL_OK) {
            cal_event_free(&ev);
            return STORE_ERROR;
        }
        /* An unreadable series (cannot happen for rows the API wrote)
         * simply has no instances: its rows are kept with no next fire. */
        c.have_series = cal_series_init(&c.series, &ev, tz, err, sizeof err) == 0;
        c.single = !c.series.recurring && novs == 0;
        c.ovs = ovs;
        c.novs = novs;
        c.shard = notify_shard_of(owner, shards);
        w = wants_of(&ev, owner, &nw);
        if (!w) rc = STORE_ERROR;
    } else {
        w = malloc(sizeof *w); /* gone: every row goes */
        if (!w) rc = STORE_ERROR;
    }
    if (rc == STORE_OK) rc = sync_rows(&c, event_id, w, nw, now_ms);
    if (rc == STORE_OK && gen) rc = mark_clear(db, event_id, gen);
    free(w);
    for (size_t i = 0; i < novs; i++) cal_override_free(&ovs[i]);
    free(ovs);
    if (lrc == CAL_OK) cal_event_free(&ev);
    return rc;
}

int notify_sync_event(store *db, tz_db *tz, int shards, int64_t event_id, int64_t now_ms)
{
    int rc = store_begin(db);
    if (rc != STORE_OK) return rc;
    rc = sync_locked(db, tz, shards, event_id, now_ms);
    if (rc != STORE_OK) {
        store_rollback(db);
        return rc;
    }
    return store_commit(db);
}

int notify_sync_dirty(store *db, tz_db *tz, int shards, int limit, int *done)
{
    *done = 0;
    int64_t ids[256];
    int n = 0;
    if (limit > 256) limit = 256;
    store_stmt *st = store_prepare(db, "SELECT event_id FROM reminder_dirty ORDER BY event_id LIMIT $1");
    store_bind_int64(st, 1, limit);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW && n < limit) ids[n++] = store_col_int64(st, 0);
    store_reset(st);
    if (rc < 0) return rc;
    for (int i = 0; i < n; i++) {
        rc = notify_sync_event(db, tz, shards, ids[i], base_now_ms());
        if (rc != STORE_OK) return rc;
        (*done)++;
    }
    return STORE_OK;
}

void notify_on_calendar_change(void *arg, store *db)
{
    const notify_sync_opts *o = arg;
    int done = 0;
    if (notify_sync_dirty(db, o->tz, o->shards, 64, &done) != STORE_OK)
        log_warn("reminders not recomputed yet (the scanner will): %s", store_errmsg(db));
}
