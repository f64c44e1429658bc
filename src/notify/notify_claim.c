/* notify_claim.c -- the scanner's claims: reminder rows due within the
 * window become delivery rows (the outbox) and advance to their next fire
 * time, in one transaction fenced by the lease of each group they are in.
 *
 * Both backends run the same claim, written differently: PostgreSQL as a
 * few set statements over JSON lists (a round trip per row was the cost),
 * SQLite as a statement per row bound from the C structs (in-process a
 * statement costs no round trip, and the JSON did). notify_claim_all
 * paces the passes over the groups so that a node behind catches up
 * evenly. */
#include "notify/notify_int.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "calendar/calendar.h"

/* Anything but in-app and webhook is taken as email, as the send path
 * did before items carried an enum (the schema allows only the three). */
notify_chan notify_chan_of(const char *name)
{
    return strcmp(name, "inapp") == 0     ? NOTIFY_CHAN_INAPP
           : strcmp(name, "webhook") == 0 ? NOTIFY_CHAN_WEBHOOK
                                          : NOTIFY_CHAN_EMAIL;
}

/* A reminder row due, as the claim reads it (DUE_COLS). */
typedef struct notify_due_row {
    int64_t id, event_id, user_id, next_fire, occurrence;
    int minutes;
    bool single;
    char method[8];
    char *summary;
    int64_t organizer; /* the event's creator: the calendar's owner */
} notify_due_row;

/* A reminder of an event someone else organizes (an invitation): it
 * draws on the recipient's budget for invitations (notify_budget.c). */
static bool due_row_invited(const notify_due_row *r)
{
    return r->user_id != r->organizer;
}

/* The floor a row keeps after firing at fire: only fire times after it
 * count, so the next is at least the minimum interval later -- stored,
 * so a recompute after an edit keeps to it too (notify_sync.c). */
static int64_t floor_after(const notify_engine *e, int64_t fire)
{
    return e->o.min_interval_ms > 0 ? fire + e->o.min_interval_ms - 1 : fire;
}

/* The next fire after the row's, no sooner than the minimum interval: a
 * series more frequent than that (FREQ=SECONDLY, say) keeps its instances,
 * its reminder skips those that come too soon. The common case, a series
 * no more frequent, costs no second look. */
static bool next_fire_thinned(notify_engine *e, cal_series *s, const cal_override *ovs, size_t novs,
                              const notify_due_row *r, int64_t *fire, int64_t *orig, int64_t *start)
{
    bool has = notify_next_fire(s, ovs, novs, r->minutes, r->next_fire, fire, orig, start);
    int64_t floor = floor_after(e, r->next_fire);
    if (!has || *fire > floor) return has;
    notify_count(e->o.counters, NOTIFY_SUPPRESS_MIN_INTERVAL, 1);
    return notify_next_fire(s, ovs, novs, r->minutes, floor, fire, orig, start);
}

/* The reminder's following fire time after `fired` (the periodic case). */
static int advance_of(notify_engine *e, store *db, const notify_due_row *r, bool *has, int64_t *fire, int64_t *orig,
                      int64_t *start)
{
    *has = false;
    if (r->single) return STORE_OK;
    cal_event ev;
    int64_t owner;
    int rc = cal_event_load_any(db, r->event_id, &ev, &owner);
    if (rc == CAL_NOT_FOUND) return STORE_OK;
    if (rc != CAL_OK) return STORE_ERROR;
    cal_override *ovs = NULL;
    size_t novs = 0;
    if (cal_overrides_load(db, r->event_id, &ovs, &novs) != CAL_OK) {
        cal_event_free(&ev);
        return STORE_ERROR;
    }
    cal_series s;
    char err[160];
    if (cal_series_init(&s, &ev, e->o.tz, err, sizeof err) == 0)
        *has = next_fire_thinned(e, &s, ovs, novs, r, fire, orig, start);
    for (size_t i = 0; i < novs; i++) cal_override_free(&ovs[i]);
    free(ovs);
    cal_event_free(&ev);
    return STORE_OK;
}

/* What a claim does with a delivery row: holds it for the timer (pending),
 * records it missed (late, skip policy), or -- in-app, already due --
 * delivers it on the spot (done). */
typedef enum notify_claim_fate { FATE_PENDING, FATE_MISSED, FATE_DONE, FATE_DROPPED } notify_claim_fate;

/* A list parameter ($1): a JSON array, the one list both backends can take
 * apart. LIST's elements are arrays read by position (AT); LIST_TEXT's are
 * scalars read as j.value. On PostgreSQL LIST is jsonb: `->>` on a json
 * value parses its text again at every use, fourteen times a delivery row. */
#define LIST_SQLITE "json_each($1) j"
#define LIST_PG "jsonb_array_elements(CAST($1 AS jsonb)) j"
#define LIST_TEXT_PG "json_array_elements_text(CAST($1 AS json)) j"
#define AT(i) "CAST(j.value ->> " #i " AS BIGINT)"
#define AT_TEXT(i) "(j.value ->> " #i ")"

/* Advances the claimed reminders: [id, fire, next, occurrence, start,
 * floor] per row; the compare on next_fire_ms leaves a row recomputed
 * meanwhile to the next scan. Returns the ids that moved. */
#define CLAIM_ADVANCE_PG                                                                                   \
    "UPDATE reminders SET floor_ms = v.floor, next_fire_ms = v.next, occurrence_ms = v.occ, "              \
    "start_ms = v.start FROM (SELECT " AT(0) " AS id, " AT(1) " AS fire, " AT(2) " AS next, " AT(3)        \
    " AS occ, " AT(4) " AS start, " AT(5) " AS floor FROM " LIST_PG ") v "                                 \
    "WHERE reminders.id = v.id AND reminders.next_fire_ms = v.fire RETURNING reminders.id"
#define CLAIM_ENDPOINTS(LIST_TEXT)                                                                         \
    "SELECT user_id, id FROM webhooks WHERE user_id IN (SELECT CAST(j.value AS BIGINT) FROM " LIST_TEXT    \
    ") ORDER BY user_id, id"
/* The delivery rows, one array each (see claim_deliveries); $2 is now.
 * RETURNING names the rows actually inserted. */
#define CLAIM_DELIVERIES_PG                                                                                \
    "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, endpoint_id, summary, "          \
    "occurrence_ms, due_ms, late, state, attempts, next_attempt_ms, fired_ms, last_error, created_ms, "     \
    "updated_ms) SELECT " AT_TEXT(0) ", " AT(1) ", " AT(2) ", " AT(3) ", " AT_TEXT(4) ", " AT(5) ", "       \
    AT_TEXT(6) ", " AT(7) ", " AT(8) ", " AT(9) ", " AT_TEXT(10) ", " AT(11) ", " AT(12) ", " AT(13) ", "   \
    AT_TEXT(14) ", CAST($2 AS BIGINT), CAST($2 AS BIGINT) FROM " LIST_PG " WHERE true "                    \
    "ON CONFLICT (id) DO NOTHING RETURNING id, channel, due_ms, state"
/* The inbox rows of in-app deliveries the claim made done: the rows its
 * INSERT returned, so rows no other transaction can have (see
 * INAPP_DELIVER_PG in notify_inapp.c for why PostgreSQL's inbox has no
 * unique index). */
#define CLAIM_INBOX(LIST_TEXT, TAIL)                                                                       \
    "INSERT INTO notifications (user_id, delivery_id, event_id, summary, original_start_ms, due_ms, "      \
    "fired_ms, late, method, read, created_ms) SELECT user_id, id, event_id, summary, occurrence_ms, "     \
    "due_ms, fired_ms, late, 'push', 0, fired_ms FROM deliveries WHERE id IN (SELECT j.value FROM "        \
    LIST_TEXT ") ORDER BY due_ms" TAIL
#define CLAIM_INBOX_SQLITE CLAIM_INBOX(LIST_SQLITE, " ON CONFLICT (delivery_id) DO NOTHING")
#define CLAIM_INBOX_PG CLAIM_INBOX(LIST_TEXT_PG, "")
/* The same reading the rows back, when someone listens (on_inbox). */
#define CLAIM_INBOX_SQLITE_R                                                                               \
    CLAIM_INBOX(LIST_SQLITE, " ON CONFLICT (delivery_id) DO NOTHING" NOTIFY_INBOX_RETURNING_SQLITE)
#define CLAIM_INBOX_PG_R CLAIM_INBOX(LIST_TEXT_PG, NOTIFY_INBOX_RETURNING_PG)

/* SQLite runs the same two writes a row at a time, bound straight from
 * the C structs: in-process a statement costs no round trip, and building
 * and taking apart the JSON cost more than the statements (measured on
 * bench/reminders: the scanner's CPU +30%, 16,700/s -> 10,000/s). */
#define CLAIM_ADVANCE_ONE                                                                                  \
    "UPDATE reminders SET floor_ms = $6, next_fire_ms = $3, occurrence_ms = $4, start_ms = $5 "            \
    "WHERE id = $1 AND next_fire_ms = $2"
#define CLAIM_DELIVERY_ONE                                                                                 \
    "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, endpoint_id, summary, "          \
    "occurrence_ms, due_ms, late, state, attempts, next_attempt_ms, fired_ms, created_ms, updated_ms, "     \
    "last_error) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16) "      \
    "ON CONFLICT (id) DO NOTHING"

#define BACKEND_SQL(db, MACRO, SQLITE_ARG, PG_ARG)                                                         \
    (store_backend_of(db) == STORE_PG ? MACRO(PG_ARG) : MACRO(SQLITE_ARG))

/* Runs a statement whose $1 is a JSON list (and $2, when given, now),
 * calling row() for each row it returns. */
typedef int (*notify_row_fn)(void *ctx, store_stmt *st);
static int list_exec(store *db, const char *sql, json_t *list, const int64_t *now, notify_row_fn row, void *ctx)
{
    char *text = json_dumps(list, JSON_COMPACT);
    if (!text) return STORE_ERROR;
    store_stmt *st = store_prepare(db, sql);
    store_bind_str(st, 1, text);
    if (now) store_bind_int64(st, 2, *now);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW)
        if (row && row(ctx, st) != STORE_OK) {
            rc = STORE_ERROR;
            break;
        }
    store_reset(st);
    free(text);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A growing list of int64s (or of pairs, two at a time). */
typedef struct notify_i64_buf {
    int64_t *v;
    size_t n, cap;
} notify_i64_buf;

static int i64_add(notify_i64_buf *b, int64_t x)
{
    if (b->n == b->cap) {
        int64_t *v = base_grow(b->v, sizeof *v, &b->cap);
        if (!v) return STORE_ERROR;
        b->v = v;
    }
    b->v[b->n++] = x;
    return STORE_OK;
}

static int i64_row0(void *ctx, store_stmt *st)
{
    return i64_add(ctx, store_col_int64(st, 0));
}

static int i64_row01(void *ctx, store_stmt *st)
{
    int rc = i64_add(ctx, store_col_int64(st, 0));
    return rc == STORE_OK ? i64_add(ctx, store_col_int64(st, 1)) : rc;
}

static json_t *json_opt(bool has, int64_t v)
{
    return has ? json_integer(v) : json_null();
}

/* A reminder's advance: from fire to next (none when !has), keeping floor. */
typedef struct notify_claim_adv {
    int64_t id, fire, next, occ, start, floor;
    bool has;
} notify_claim_adv;

static int advance_pg(store *db, const notify_claim_adv *a, int n, bool *won)
{
    json_t *list = json_array();
    int rc = list ? STORE_OK : STORE_ERROR;
    for (int i = 0; i < n && rc == STORE_OK; i++)
        if (json_array_append_new(list, json_pack("[I,I,o,o,o,I]", (json_int_t)a[i].id, (json_int_t)a[i].fire,
                                                  json_opt(a[i].has, a[i].next), json_opt(a[i].has, a[i].occ),
                                                  json_opt(a[i].has, a[i].start), (json_int_t)a[i].floor)))
            rc = STORE_ERROR;
    notify_i64_buf moved = {0};
    if (rc == STORE_OK) rc = list_exec(db, CLAIM_ADVANCE_PG, list, NULL, i64_row0, &moved);
    json_decref(list);
    if (moved.n) qsort(moved.v, moved.n, sizeof *moved.v, cmp_i64);
    for (int i = 0; i < n; i++)
        won[i] = rc == STORE_OK && moved.n && bsearch(&a[i].id, moved.v, moved.n, sizeof *moved.v, cmp_i64);
    free(moved.v);
    return rc;
}

static int advance_sqlite(store *db, const notify_claim_adv *a, int n, bool *won)
{
    for (int i = 0; i < n; i++) {
        store_stmt *st = store_prepare(db, CLAIM_ADVANCE_ONE);
        store_bind_int64(st, 1, a[i].id);
        store_bind_int64(st, 2, a[i].fire);
        notify_bind_next(st, 3, a[i].has, a[i].next, a[i].occ, a[i].start);
        store_bind_int64(st, 6, a[i].floor);
        int rc = store_step(st);
        won[i] = rc == STORE_DONE && store_changes(st) == 1;
        store_reset(st);
        if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    }
    return STORE_OK;
}

/* Advances every row; sets won[i] for the rows that moved (the others
 * were recomputed meanwhile: the next scan sees their new time). */
static int claim_advance(notify_engine *e, store *db, const notify_due_row *rows, int n, bool *won)
{
    notify_claim_adv *a = malloc((size_t)n * sizeof *a);
    int rc = a ? STORE_OK : STORE_ERROR;
    for (int i = 0; i < n && rc == STORE_OK; i++) {
        a[i] = (notify_claim_adv){.id = rows[i].id, .fire = rows[i].next_fire,
                                  .floor = rows[i].single ? rows[i].next_fire : floor_after(e, rows[i].next_fire)};
        rc = advance_of(e, db, &rows[i], &a[i].has, &a[i].next, &a[i].occ, &a[i].start);
    }
    if (rc == STORE_OK)
        rc = store_backend_of(db) == STORE_PG ? advance_pg(db, a, n, won) : advance_sqlite(db, a, n, won);
    free(a);
    return rc;
}

/* The webhook endpoints of the won webhook rows' users, as sorted (user,
 * endpoint) pairs. */
static int claim_endpoints(notify_engine *e, store *db, const notify_due_row *rows, int n, const bool *won,
                           notify_i64_buf *pairs)
{
    if (!e->has_webhooks) return STORE_OK;
    json_t *users = json_array();
    if (!users) return STORE_ERROR;
    for (int i = 0; i < n; i++)
        if (won[i] && strcmp(rows[i].method, "webhook") == 0)
            json_array_append_new(users, json_integer((json_int_t)rows[i].user_id));
    int rc = json_array_size(users) == 0 ? STORE_OK
             : list_exec(db, BACKEND_SQL(db, CLAIM_ENDPOINTS, LIST_SQLITE, LIST_TEXT_PG), users, NULL, i64_row01, pairs);
    json_decref(users);
    return rc;
}

/* A delivery row the claim writes. */
typedef struct notify_claim_del {
    char id[NOTIFY_ID_LEN + 1];
    const notify_due_row *r;
    const char *channel;
    int64_t endpoint;
    notify_claim_fate fate;
    bool late;
    notify_reason dropped; /* FATE_DROPPED: which budget */
} notify_claim_del;

typedef struct notify_claim_dels {
    notify_claim_del *v;
    size_t n, cap;
} notify_claim_dels;

static int claim_delivery_add(notify_claim_dels *b, const notify_due_row *r, const char *channel, int64_t endpoint,
                              notify_claim_fate fate, bool late)
{
    if (b->n == b->cap) {
        notify_claim_del *v = base_grow(b->v, sizeof *v, &b->cap);
        if (!v) return STORE_ERROR;
        b->v = v;
    }
    notify_claim_del *d = &b->v[b->n++];
    *d = (notify_claim_del){.r = r, .channel = channel, .endpoint = endpoint, .fate = fate, .late = late};
    notify_delivery_id(r->event_id, r->user_id, r->method, r->minutes, r->occurrence, channel, endpoint, d->id);
    return STORE_OK;
}

static const char *const claim_states[] = {"pending", "missed", "done", "dropped_quota"};

/* What a dropped_quota row says (its last_error). */
static const char *claim_dropped_why(const notify_claim_del *d)
{
    bool day = d->dropped == NOTIFY_SUPPRESS_DAY_QUOTA;
    if (due_row_invited(d->r))
        return day ? "over the recipient's delivery budget for invitations for the day"
                   : "over the recipient's delivery budget for invitations for the hour";
    return day ? "over the recipient's delivery budget for the day" : "over the recipient's delivery budget for the hour";
}

/* A claimed row's hold: NOTIFY_HOLD_MS past its due time, or past now
 * when it is claimed late (a node behind, a backlog): held from a time
 * already past, it would be free for any poll to take over at once. */
static int64_t claim_hold(int64_t due_ms, int64_t now)
{
    return (due_ms > now ? due_ms : now) + NOTIFY_HOLD_MS;
}

/* PostgreSQL: the rows as one list, one array each in CLAIM_DELIVERIES_PG'
 * column order. */
static json_t *claim_deliveries_json(const notify_claim_dels *b, int64_t now)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < b->n; i++) {
        const notify_claim_del *d = &b->v[i];
        const notify_due_row *r = d->r;
        json_t *row = json_pack("[s,I,I,I,s,I,s,I,I,I,s,I,I,o,o]", d->id, (json_int_t)r->id, (json_int_t)r->event_id,
                                (json_int_t)r->user_id, d->channel, (json_int_t)d->endpoint, r->summary ? r->summary : "",
                                (json_int_t)r->occurrence, (json_int_t)r->next_fire, (json_int_t)d->late,
                                claim_states[d->fate], (json_int_t)(d->fate == FATE_DONE),
                                (json_int_t)claim_hold(r->next_fire, now), json_opt(d->fate == FATE_DONE, now),
                                d->fate == FATE_DROPPED ? json_string(claim_dropped_why(d)) : json_null());
        if (json_array_append_new(list, row) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* SQLite: one row, bound in CLAIM_DELIVERY_ONE's order. */
static void claim_delivery_bind(store_stmt *st, const notify_claim_del *d, int64_t now)
{
    const notify_due_row *r = d->r;
    store_bind_str(st, 1, d->id);
    store_bind_int64(st, 2, r->id);
    store_bind_int64(st, 3, r->event_id);
    store_bind_int64(st, 4, r->user_id);
    store_bind_str(st, 5, d->channel);
    store_bind_int64(st, 6, d->endpoint);
    store_bind_str(st, 7, r->summary ? r->summary : "");
    store_bind_int64(st, 8, r->occurrence);
    store_bind_int64(st, 9, r->next_fire);
    store_bind_int64(st, 10, d->late);
    store_bind_str(st, 11, claim_states[d->fate]);
    store_bind_int64(st, 12, d->fate == FATE_DONE);
    store_bind_int64(st, 13, claim_hold(r->next_fire, now));
    if (d->fate == FATE_DONE) store_bind_int64(st, 14, now);
    else store_bind_null(st, 14);
    store_bind_int64(st, 15, now);
    store_bind_str(st, 16, d->fate == FATE_DROPPED ? claim_dropped_why(d) : NULL);
}

/* The delivery rows of one won reminder: one per channel and endpoint. */
static int claim_row_deliveries(notify_engine *e, notify_claim_dels *list, const notify_due_row *r,
                                const notify_i64_buf *pairs, int64_t now)
{
    bool late = now - r->next_fire > e->o.grace_ms;
    const char *channel = strcmp(r->method, "email") == 0 ? "email" : strcmp(r->method, "webhook") == 0 ? "webhook" : "inapp";
    /* An in-app reminder already due when claimed (the backlog after
     * downtime, a scanner running behind) is delivered right here: the
     * inbox row is one more insert in this transaction, where the timer
     * path would cost a second transaction that rewrites the row. */
    notify_claim_fate fate = late && e->o.late_policy == NOTIFY_LATE_SKIP                 ? FATE_MISSED
                      : r->next_fire <= now && strcmp(channel, "inapp") == 0 ? FATE_DONE
                                                                             : FATE_PENDING;
    bool flag = late && fate != FATE_PENDING;
    if (strcmp(channel, "webhook") != 0) return claim_delivery_add(list, r, channel, 0, fate, flag);
    size_t lo = 0, hi = pairs->n / 2; /* the first pair of this user */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pairs->v[2 * mid] < r->user_id) lo = mid + 1;
        else hi = mid;
    }
    for (size_t k = lo; k < pairs->n / 2 && pairs->v[2 * k] == r->user_id; k++)
        if (claim_delivery_add(list, r, channel, pairs->v[2 * k + 1], fate, flag) != STORE_OK) return STORE_ERROR;
    return STORE_OK;
}

/* A delivery row by recipient and budget (its own events', then
 * invitations'), then claim order: a budget's run. */
typedef struct claim_key {
    int64_t user;
    bool invited;
    size_t pos;
} claim_key;

static int by_recipient(const void *a, const void *b)
{
    const claim_key *x = a, *y = b;
    if (x->user != y->user) return x->user < y->user ? -1 : 1;
    if (x->invited != y->invited) return x->invited ? 1 : -1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static bool same_budget(const claim_key *x, const claim_key *y)
{
    return x->user == y->user && x->invited == y->invited;
}

/* Asks each recipient's budget for its deliveries (notify_budget.c); those
 * beyond the grant become dropped_quota. Missed ones (late, skip policy)
 * go out to nobody and ask for nothing. */
static int claim_budget(notify_engine *e, store *db, notify_claim_dels *b)
{
    claim_key *keys = malloc((b->n ? b->n : 1) * sizeof *keys);
    notify_budget_req *reqs = malloc((b->n ? b->n : 1) * sizeof *reqs);
    size_t m = 0, nreq = 0;
    int rc = keys && reqs ? STORE_OK : STORE_ERROR;
    for (size_t i = 0; rc == STORE_OK && i < b->n; i++)
        if (b->v[i].fate != FATE_MISSED)
            keys[m++] = (claim_key){b->v[i].r->user_id, due_row_invited(b->v[i].r), i};
    if (rc == STORE_OK) qsort(keys, m, sizeof *keys, by_recipient);
    for (size_t k = 0; rc == STORE_OK && k < m; k++) {
        const notify_due_row *r = b->v[keys[k].pos].r;
        if (k == 0 || !same_budget(&keys[k - 1], &keys[k]))
            reqs[nreq++] = (notify_budget_req){
                .user_id = r->user_id, .invited = keys[k].invited, .due_ms = r->next_fire};
        notify_budget_req *q = &reqs[nreq - 1];
        q->want++;
        if (r->next_fire > q->due_ms) q->due_ms = r->next_fire;
    }
    if (rc == STORE_OK) rc = notify_budget_take(e, db, reqs, nreq);
    /* Both lists are in recipient order: walk them together. */
    for (size_t k = 0, q = 0, used = 0; rc == STORE_OK && k < m; k++, used++) {
        notify_claim_del *d = &b->v[keys[k].pos];
        if (k > 0 && !same_budget(&keys[k - 1], &keys[k])) q++, used = 0;
        if ((int)used < reqs[q].kept) continue;
        d->fate = FATE_DROPPED;
        d->late = false;
        d->dropped = reqs[q].by_day ? NOTIFY_SUPPRESS_DAY_QUOTA : NOTIFY_SUPPRESS_HOUR_QUOTA;
        notify_count(e->o.counters, d->dropped, 1);
    }
    free(keys);
    free(reqs);
    return rc;
}

/* What the INSERT returns: pending rows go to the timer, done ones need
 * their inbox row. */
typedef struct notify_claim_out {
    notify_item_buf *timer;
    json_t *done;
    int64_t now; /* the claim's time (see claim_hold) */
} notify_claim_out;

/* Inbox rows a claim wrote, for the engine's listener (on_inbox). */
typedef struct notify_claim_inbox {
    notify_inbox_item *v;
    size_t n, cap;
} notify_claim_inbox;

static int inbox_row(void *ctx, store_stmt *st)
{
    notify_claim_inbox *b = ctx;
    if (b->n == b->cap) {
        notify_inbox_item *grown = base_grow(b->v, sizeof *grown, &b->cap);
        if (!grown) return STORE_ERROR;
        b->v = grown;
    }
    if (notify_inbox_item_read(st, 0, &b->v[b->n])) b->n++;
    return STORE_OK;
}

/* A delivery row the claim inserted. */
static int claim_took(notify_claim_out *o, const char *id, const char *channel, int64_t due_ms, const char *state)
{
    if (strcmp(state, "done") == 0)
        return json_array_append_new(o->done, json_string(id)) == 0 ? STORE_OK : STORE_ERROR;
    if (strcmp(state, "pending") != 0) return STORE_OK;
    notify_item it = {.due_ms = due_ms, .hold_ms = claim_hold(due_ms, o->now)};
    snprintf(it.id, sizeof it.id, "%s", id);
    it.channel = notify_chan_of(channel);
    return notify_item_buf_add(o->timer, &it) ? STORE_OK : STORE_ERROR;
}

static int claim_inserted(void *ctx, store_stmt *st)
{
    return claim_took(ctx, store_col_text(st, 0), store_col_text(st, 1), store_col_int64(st, 2),
                      store_col_text(st, 3));
}

/* Writes the delivery rows: one set statement on PostgreSQL, a statement
 * a row on SQLite (see CLAIM_DELIVERY_ONE). */
static int claim_deliveries(store *db, const notify_claim_dels *b, int64_t now, notify_claim_out *o)
{
    if (b->n == 0) return STORE_OK;
    if (store_backend_of(db) == STORE_PG) {
        json_t *list = claim_deliveries_json(b, now);
        int rc = list ? list_exec(db, CLAIM_DELIVERIES_PG, list, &now, claim_inserted, o) : STORE_ERROR;
        json_decref(list);
        return rc;
    }
    for (size_t i = 0; i < b->n; i++) {
        const notify_claim_del *d = &b->v[i];
        store_stmt *st = store_prepare(db, CLAIM_DELIVERY_ONE);
        claim_delivery_bind(st, d, now);
        int rc = store_step(st);
        bool inserted = rc == STORE_DONE && store_changes(st) == 1;
        store_reset(st);
        if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
        if (inserted && claim_took(o, d->id, d->channel, d->r->next_fire, claim_states[d->fate]) != STORE_OK)
            return STORE_ERROR;
    }
    return STORE_OK;
}

/* Inside the fenced transaction: advances the n due rows and writes their
 * delivery rows (and the inbox rows of those delivered on the spot). On
 * PostgreSQL each step is one set statement for the lot: a round trip
 * per row was the cost. Rows already claimed (a restart, a takeover)
 * insert nothing: the delivery id is stable. */
static int claim_rows(notify_engine *e, store *db, const notify_due_row *rows, int n, int64_t now, notify_item_buf *out,
                      notify_claim_inbox *inbox)
{
    if (n == 0) return STORE_OK;
    bool *won = calloc((size_t)n, sizeof *won);
    notify_i64_buf pairs = {0};
    notify_claim_dels dels = {0};
    notify_claim_out o = {.timer = out, .done = json_array(), .now = now};
    int rc = won && o.done ? STORE_OK : STORE_ERROR;
    if (rc == STORE_OK) rc = claim_advance(e, db, rows, n, won);
    if (rc == STORE_OK) rc = claim_endpoints(e, db, rows, n, won, &pairs);
    for (int i = 0; i < n && rc == STORE_OK; i++)
        if (won[i]) rc = claim_row_deliveries(e, &dels, &rows[i], &pairs, now);
    if (rc == STORE_OK && notify_budget_on(e)) rc = claim_budget(e, db, &dels);
    if (rc == STORE_OK) rc = claim_deliveries(db, &dels, now, &o);
    bool pg = store_backend_of(db) == STORE_PG;
    if (rc == STORE_OK && json_array_size(o.done) && !e->o.on_inbox)
        rc = list_exec(db, pg ? CLAIM_INBOX_PG : CLAIM_INBOX_SQLITE, o.done, NULL, NULL, NULL);
    else if (rc == STORE_OK && json_array_size(o.done))
        rc = list_exec(db, pg ? CLAIM_INBOX_PG_R : CLAIM_INBOX_SQLITE_R, o.done, NULL, inbox_row, inbox);
    json_decref(o.done);
    free(dels.v);
    free(pairs.v);
    free(won);
    return rc;
}

static void rows_free(notify_due_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) free(rows[i].summary);
}

/* Reads a due row from st's columns at..at+9. */
static void due_row_read(store_stmt *st, int at, notify_due_row *r)
{
    r->id = store_col_int64(st, at);
    r->event_id = store_col_int64(st, at + 1);
    r->user_id = store_col_int64(st, at + 2);
    snprintf(r->method, sizeof r->method, "%s", store_col_text(st, at + 3));
    r->minutes = (int)store_col_int64(st, at + 4);
    r->single = store_col_int64(st, at + 5) != 0;
    r->next_fire = store_col_int64(st, at + 6);
    r->occurrence = store_col_int64(st, at + 7);
    r->summary = strdup(store_col_text(st, at + 8));
    r->organizer = store_col_int64(st, at + 9);
}

#define DUE_COLS                                                                                           \
    "r.id, r.event_id, r.user_id, r.method, r.minutes_before, r.single, r.next_fire_ms, r.occurrence_ms, " \
    "e.summary, e.created_by FROM reminders r JOIN events e ON e.id = r.event_id "

/* SQLite: one shard at a time, each a seek on (shard, next_fire_ms) -- a
 * range of shards would scan every row of the group; in-process, the
 * statements cost no round trip. */
static int select_due_sqlite(store *db, int64_t lo, int64_t hi, int64_t upto, int limit, notify_due_row *rows, int *n)
{
    int rc = STORE_DONE;
    for (int64_t shard = lo; shard < hi && *n < limit && rc == STORE_DONE; shard++) {
        int want = limit - *n;
        store_stmt *st = store_prepare(db, "SELECT " DUE_COLS "WHERE r.shard = $1 AND r.next_fire_ms <= $2 "
                                           "ORDER BY r.next_fire_ms LIMIT $3");
        store_bind_int64(st, 1, shard);
        store_bind_int64(st, 2, upto);
        store_bind_int64(st, 3, want);
        int got = 0;
        while (got < want && (rc = store_step(st)) == STORE_ROW) due_row_read(st, 0, &rows[*n + got++]);
        if (rc == STORE_ROW) rc = STORE_DONE; /* want reached */
        store_reset(st);
        *n += got;
    }
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* PostgreSQL: the group's shards in one statement (a LATERAL seek per
 * shard), one round trip instead of one per shard. */
static int select_due_pg(store *db, int64_t lo, int64_t hi, int64_t upto, int limit, notify_due_row *rows, int *n)
{
    if (*n >= limit || lo >= hi) return STORE_OK;
    store_stmt *st = store_prepare(
        db, "SELECT r.* FROM generate_series(CAST($1 AS integer), CAST($2 AS integer)) s(shard) CROSS JOIN LATERAL "
            "(SELECT " DUE_COLS "WHERE r.shard = s.shard AND r.next_fire_ms <= $3 ORDER BY r.next_fire_ms "
            "LIMIT $4) r LIMIT $4");
    store_bind_int64(st, 1, lo);
    store_bind_int64(st, 2, hi - 1);
    store_bind_int64(st, 3, upto);
    store_bind_int64(st, 4, limit - *n);
    int rc = STORE_DONE;
    while (*n < limit && (rc = store_step(st)) == STORE_ROW) due_row_read(st, 0, &rows[(*n)++]);
    store_reset(st);
    return rc == STORE_DONE || rc == STORE_ROW ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* Inside the open, fenced transaction: selects up to limit rows of group
 * gi due by upto into rows[*n...]. */
static int claim_group(notify_engine *e, store *db, int gi, int64_t upto, int limit, notify_due_row *rows, int *n)
{
    int64_t lo = (int64_t)gi * e->per_group, hi = lo + e->per_group;
    if (hi > e->o.shards) hi = e->o.shards;
    return store_backend_of(db) == STORE_PG ? select_due_pg(db, lo, hi, upto, limit, rows, n)
                                            : select_due_sqlite(db, lo, hi, upto, limit, rows, n);
}

/* One claim transaction: starting at group *gi, selects each held group's
 * due rows and fences the groups that have some, until
 * NOTIFY_CLAIM_BATCH rows or the last group, then claims them all
 * together (claim_rows). Many small groups share one commit (on SQLite
 * the commit is the cost: every page it dirtied is written again). The
 * fence follows the select: it holds the lease (its epoch still this
 * tenure's) until the commit, so no other node can have claimed what was
 * selected; and a group with nothing due, nearly every group of an idle
 * node on every pass, costs one statement, not two. *gi moves past the
 * groups done; a group cut short by a full batch stays next. Returns
 * rows claimed, or < 0. */
static int claim_tx(notify_engine *e, store *db, int *gi, int64_t upto, const bool *due, notify_item_buf *out,
                    notify_claim_inbox *inbox)
{
    static __thread notify_due_row rows[NOTIFY_CLAIM_BATCH];
    lease_hold *fenced[NOTIFY_CLAIM_BATCH];
    int nfenced = 0, n = 0, rc = store_begin(db);
    size_t before = out->n;
    int64_t now = base_now_ms();
    while (rc == STORE_OK && *gi < e->o.groups && n < NOTIFY_CLAIM_BATCH && nfenced < NOTIFY_CLAIM_BATCH) {
        notify_group *g = &e->groups[*gi];
        if (!g->held || !due[*gi]) {
            ++*gi;
            continue;
        }
        int had = n;
        rc = claim_group(e, db, *gi, upto, NOTIFY_CLAIM_BATCH, rows, &n);
        if (rc != STORE_OK) break;
        if (n > had) {
            rc = lease_hold_fence_in(db, &g->hold, g->tenure, NULL);
            if (rc == LEASE_LOST) {
                log_warn("reminders: lease group %d lapsed before its claim", *gi);
                g->held = false;
                rows_free(rows + had, (size_t)(n - had));
                n = had;
                rc = STORE_OK;
                ++*gi;
                continue;
            }
            if (rc != LEASE_OK) break;
            fenced[nfenced++] = &g->hold;
        }
        if (n < NOTIFY_CLAIM_BATCH) ++*gi; /* else it may have shards left */
    }
    if (rc == STORE_OK) rc = claim_rows(e, db, rows, n, now, out, inbox);
    if (rc == STORE_OK) rc = store_commit(db);
    rows_free(rows, (size_t)n);
    if (rc != STORE_OK) {
        log_warn("reminders: claim at group %d failed: %s", *gi, store_errmsg(db));
        store_rollback(db);
        out->n = before;
        n = -1;
        notify_inbox_items_free(inbox->v, inbox->n);
        *inbox = (notify_claim_inbox){0};
    }
    for (int i = 0; i < nfenced; i++) lease_hold_unfence(fenced[i]);
    return n;
}

/* ---- pacing: passes over the groups ------------------------------------- */

/* Before a claim transaction: while deliveries are behind (an item has
 * waited NOTIFY_BEHIND_MS past its time), the scanner stands back so the
 * workers get the database -- claims run a window ahead, deliveries are
 * due now. Without this, the scanner, relocking the moment it unlocks,
 * claimed a whole backlog before any of it went out. Bounded, so leases
 * are still renewed should the workers be stuck. */
#define NOTIFY_BEHIND_MS 20
static void scanner_yield(notify_engine *e)
{
    int64_t give_up = base_now_ms() + 200;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        int64_t now = base_now_ms();
        const notify_item *top = notify_heap_peek(&e->heap);
        if (e->draining || now >= give_up || !top || top->due_ms > now - NOTIFY_BEHIND_MS) break;
        /* Behind on sends the channels have no room for: waiting would
         * not let the workers catch up, only starve the claims. */
        if (top->channel != NOTIFY_CHAN_INAPP && e->in_flight + e->sending >= e->send_cap) break;
        int64_t wake = now + 2;
        struct timespec ts = {.tv_sec = wake / 1000, .tv_nsec = (wake % 1000) * 1000000};
        pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    pthread_mutex_unlock(&e->mu);
}

/* The oldest next fire time in the groups held, into *t (INT64_MAX when
 * none): one index seek a shard (the IS NOT NULL lets it use the partial
 * reminders_due). Under the gate. */
static int oldest_due(notify_engine *e, store *db, int64_t *t)
{
    *t = INT64_MAX;
    for (int gi = 0; gi < e->o.groups; gi++) {
        if (!e->groups[gi].held) continue;
        int64_t lo = (int64_t)gi * e->per_group, hi = lo + e->per_group;
        for (int64_t shard = lo; shard < hi && shard < e->o.shards; shard++) {
            store_stmt *st = store_prepare(db, "SELECT min(next_fire_ms) FROM reminders WHERE shard = $1 "
                                               "AND next_fire_ms IS NOT NULL");
            store_bind_int64(st, 1, shard);
            int rc = store_step(st);
            if (rc == STORE_ROW && !store_col_is_null(st, 0) && store_col_int64(st, 0) < *t)
                *t = store_col_int64(st, 0);
            store_reset(st);
            if (rc != STORE_ROW) return rc < 0 ? rc : STORE_ERROR;
        }
    }
    return STORE_OK;
}

/* Claims what is due within the window, oldest first across the node: in
 * passes, each taking every row due up to a horizon that moves
 * NOTIFY_PASS_STEP_MS a pass, from where the last complete pass ended
 * (after a start, from the oldest row) to now + the window. In the steady
 * state (all that is due by now claimed) that is one pass; a node behind
 * (after downtime, or just too slow) walks all its shards forward through
 * the backlog together, so lateness is shared out evenly. A pass that
 * finds under a quarter of NOTIFY_PASS_ROWS doubles the step (a sparse
 * backlog of hours is crossed in a few passes); one that finds more than
 * NOTIFY_PASS_ROWS sets it back, so a pass is a few thousand rows: within
 * one, rows go out in shard order. (Before, each pass took a fixed number
 * of rows a shard: a node behind starved its busiest shards, whose rows
 * came out a minute late while the quiet ones' were on time.) A call
 * returns after NOTIFY_CLAIM_SPAN_MS (true: cut short, call again at
 * once), so the dirty marks and the outbox poll get their turn. */
#define NOTIFY_PASS_STEP_MS 250
#define NOTIFY_PASS_ROWS 4096
#define NOTIFY_CLAIM_SPAN_MS 500

/* PostgreSQL: which groups held have rows due by horizon, in one
 * statement (a seek a shard) before the pass, so that a pass over an
 * idle node's groups is one statement and no transaction, not a select a
 * group in a transaction (320 statements a second on an idle node). Rows
 * due that commit after this look wait for the next pass, as rows that
 * commit behind a group's select always have. Only after a pass that
 * found nothing: on a busy node the look would only repeat the selects'
 * seeks. SQLite's selects are in-process: every held group is looked at,
 * as before. On a failure, every group is. */
static void groups_due(notify_engine *e, store *db, int64_t horizon, bool *due)
{
    for (int gi = 0; gi < e->o.groups; gi++) due[gi] = true;
    if (store_backend_of(db) != STORE_PG || e->pass_found) return;
    /* The held groups' shards, listed: a LATERAL ... LIMIT 1 a shard is a
     * seek a shard whatever the planner thinks of the table's size. */
    char *held = malloc((size_t)e->o.shards * 12 + 3), *p = held;
    bool *found = calloc((size_t)e->o.groups, sizeof *found);
    if (!held || !found) {
        free(held);
        free(found);
        return;
    }
    *p++ = '{';
    for (int gi = 0; gi < e->o.groups; gi++)
        if (e->groups[gi].held)
            for (int64_t s = (int64_t)gi * e->per_group; s < (int64_t)(gi + 1) * e->per_group && s < e->o.shards; s++)
                p += sprintf(p, "%s%lld", p[-1] == '{' ? "" : ",", (long long)s);
    *p++ = '}';
    *p = '\0';
    store_gate_lock(&e->gate);
    store_stmt *st = store_prepare(
        db, "SELECT DISTINCT s.shard / CAST($2 AS integer) FROM unnest(CAST($1 AS integer[])) s(shard) CROSS JOIN "
            "LATERAL (SELECT 1 FROM reminders r WHERE r.shard = s.shard AND r.next_fire_ms <= $3 LIMIT 1) r");
    store_bind_str(st, 1, held);
    store_bind_int64(st, 2, e->per_group);
    store_bind_int64(st, 3, horizon);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        int64_t gi = store_col_int64(st, 0);
        if (gi >= 0 && gi < e->o.groups) found[gi] = true;
    }
    store_reset(st);
    store_gate_unlock(&e->gate);
    if (rc == STORE_DONE) memcpy(due, found, (size_t)e->o.groups * sizeof *due);
    free(found);
    free(held);
}

/* One pass over the groups held: claims every row due by horizon, adding
 * their count to *claimed. False when cut short (the heap full, a claim
 * failed): the pass must be done again. */
static bool claim_pass(notify_engine *e, store *db, int64_t horizon, int64_t *next_beat, int64_t *claimed)
{
    notify_item_buf buf = {0};
    bool whole = true;
    /* Nothing can be claimed once the disk failed (store.h), and every
     * group would fail and say so, a pass after another. */
    if (store_disk_failed(db)) return false;
    bool *due = malloc((size_t)e->o.groups * sizeof *due);
    if (!due) return false;
    groups_due(e, db, horizon, due);
    for (int gi = 0; gi < e->o.groups;) {
        if (notify_queued(e) >= NOTIFY_HEAP_MAX || !notify_claiming(e)) {
            whole = false;
            break;
        }
        notify_heartbeat_if_due(e, db, next_beat);
        while (gi < e->o.groups && (!e->groups[gi].held || !due[gi])) gi++;
        if (gi >= e->o.groups) break; /* nothing (more) to claim: no empty transaction */
        scanner_yield(e);
        notify_claim_inbox inbox = {0};
        store_gate_lock(&e->gate);
        int n = claim_tx(e, db, &gi, horizon, due, &buf, &inbox);
        store_gate_unlock(&e->gate);
        notify_enqueue(e, buf.v, buf.n);
        buf.n = 0;
        notify_inbox_announce(e, inbox.v, inbox.n);
        notify_inbox_items_free(inbox.v, inbox.n);
        if (n < 0) {
            gi++; /* skip the group that failed; the pass is done again later */
            whole = false;
        }
        *claimed += n > 0 ? n : 0;
    }
    free(buf.v);
    free(due);
    e->pass_found = *claimed > 0;
    return whole;
}

bool notify_claim_all(notify_engine *e, store *db, int64_t *next_beat)
{
    int64_t now = base_now_ms(), until = now + NOTIFY_CLAIM_SPAN_MS, horizon;
    if (e->claimed_to >= now) {
        horizon = INT64_MAX; /* not behind: one pass to the window's end */
    } else if (e->claimed_to != INT64_MIN) {
        horizon = e->claimed_to + NOTIFY_PASS_STEP_MS;
    } else {
        int64_t oldest;
        store_gate_lock(&e->gate); /* the connection may be the workers' too */
        int rc = oldest_due(e, db, &oldest);
        store_gate_unlock(&e->gate);
        if (rc != STORE_OK) return false; /* the next tick tries again */
        horizon = oldest < INT64_MAX - NOTIFY_PASS_STEP_MS ? oldest + NOTIFY_PASS_STEP_MS : INT64_MAX;
    }
    int64_t step = NOTIFY_PASS_STEP_MS;
    for (;;) {
        int64_t end = base_now_ms() + e->o.window_ms, claimed = 0;
        if (horizon > end) horizon = end;
        if (!claim_pass(e, db, horizon, next_beat, &claimed)) return false; /* redone after a tick */
        e->claimed_to = horizon;
        if (horizon >= end) return false;
        if (base_now_ms() >= until) return true;
        if (claimed < NOTIFY_PASS_ROWS / 4 && step < INT64_MAX / 4) step *= 2;
        else if (claimed > NOTIFY_PASS_ROWS) step = NOTIFY_PASS_STEP_MS;
        horizon = horizon < end - step ? horizon + step : end;
    }
}

