/* notify_engine.c -- one node's scanner and delivery workers.
 *
 * The scanner thread renews and rebalances the group leases, drains dirty
 * marks, re-claims outbox rows whose next attempt is due, and claims what
 * is due within the window in the shards of the groups it holds (in-app
 * ones already due are delivered by the claim itself). Claimed deliveries
 * go into a timer heap; worker threads pop them at their exact due time,
 * write in-app ones to the inbox in batches and hand webhook and email
 * ones to the channels, whose answers come back through a result list.
 * On PostgreSQL each thread has its own connection; on SQLite they share
 * one through a store_gate, and a store_checkpoint thread keeps the WAL
 * short.
 *
 * A claimed delivery row carries next_attempt_ms = due + NOTIFY_HOLD_MS
 * (claimed late: now + NOTIFY_HOLD_MS):
 * if this node dies holding it, any node's outbox poll takes it over then.
 * Every state change of a delivery row is guarded by state = 'pending', so
 * a row delivered twice (a takeover racing a slow node) is recorded once,
 * and the inbox gets a row only with that change (on SQLite also under a
 * unique delivery id), so the user never sees it twice. */
#include "notify/notify.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "jobs/lease.h"
#include "jobs/nodes.h"
#include "notify/channels.h"
#include "notify/notify_queue.h"
#include "store/store_checkpoint.h"
#include "store/store_gate.h"

#define NOTIFY_GROUP_PREFIX "reminders/g" /* + the group's number: its lease's name */
#define NOTIFY_HOLD_MS 3000      /* a claim is private to its node this long past due */
#define NOTIFY_SEND_HOLD_MS 60000 /* an in-flight webhook/email send, likewise */
#define NOTIFY_CLAIM_BATCH 500   /* reminder rows per claim transaction */
#define NOTIFY_DELIVER_BATCH 512 /* in-app deliveries per transaction */
#define NOTIFY_LINGER_MS 10       /* PostgreSQL: a due item waits this long for others... */
#define NOTIFY_LINGER_BATCH 128   /* ... unless this many are due (see linger_until) */
#define NOTIFY_POLL_BATCH 1000   /* outbox rows re-claimed per poll transaction */
#define NOTIFY_HEAP_MAX 400000   /* claims held in memory; beyond, the scanner waits */
/* Channel answers are recorded in batches: an answer has no deadline (its
 * row is held for NOTIFY_SEND_HOLD_MS), and a transaction per answer -- a
 * worker woken per answer -- was what capped webhooks. */
#define NOTIFY_RESULT_BATCH 512  /* answers recorded at once */
#define NOTIFY_RESULT_WAIT_MS 20 /* ... or when the oldest has waited this long */

/* Anything but in-app and webhook is taken as email, as the send path
 * did before items carried an enum (the schema allows only the three). */
static notify_chan chan_of(const char *name)
{
    return strcmp(name, "inapp") == 0     ? NOTIFY_CHAN_INAPP
           : strcmp(name, "webhook") == 0 ? NOTIFY_CHAN_WEBHOOK
                                          : NOTIFY_CHAN_EMAIL;
}

/* A channel's answer, and what the attempt's row records: when the send
 * went out and whether it was late (as its payload said). */
typedef struct result {
    struct result *next;
    char id[NOTIFY_ID_LEN + 1];
    bool ok, late;
    int64_t fired_ms;
    char error[200];
} result;

typedef struct send_ctx {
    notify_engine *e;
    char id[NOTIFY_ID_LEN + 1];
    bool late;
    int64_t fired_ms;
} send_ctx;

typedef struct group {
    lease_hold hold;
    uint64_t tenure;
    bool held; /* as the scanner last saw it */
} group;

struct notify_engine {
    notify_opts o;
    char owner[LEASE_OWNER_MAX + 1];
    group *groups;
    int per_group;
    /* The scanner's: everything due up to here in the groups it held then
     * is claimed (INT64_MIN: not known yet). See claim_all. */
    int64_t claimed_to;
    pthread_t scanner;
    store_checkpoint *checkpoint; /* SQLite: keeps the WAL short */
    pthread_t *workers;
    int nworkers_started;
    bool scanner_started;
    bool has_webhooks;
    /* SQLite: the engine's threads take turns on the shared connection
     * through this gate (see store_gate.h); PostgreSQL: it does nothing. */
    store_gate gate;
    /* SQLite: the one connection all the engine's threads use, under
     * the gate. Separate connections would each find their page cache
     * stale after every commit of another and re-read the pages. */
    store *shared;
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cv;  /* workers: heap or results changed, or stopping */
    pthread_cond_t idle;/* free: no send in flight */
    bool stopping;
    notify_heap heap;   /* claimed deliveries by due time */
    result *results;    /* channel answers not yet recorded (take_results) */
    int nresults;
    int64_t results_since; /* when the oldest of them came */
    bool send_waiting;  /* a worker waits for room in the channels */
    int in_flight;      /* channel sends whose done has not come */
    int sending;        /* webhook/email items taken from the heap, not yet handed on */
    int send_cap;       /* in_flight + sending stays below: the channels' capacity */
    int send_room;      /* ... and a waiting worker is woken when this much is free */
    notify_flights flights; /* sends being made */
    int64_t next_extend_ms; /* when a worker next looks for holds to push back */
    int groups_held;
};

static void enqueue(notify_engine *e, const notify_item *items, size_t n)
{
    if (n == 0) return;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < n; i++)
        if (!notify_heap_push(&e->heap, &items[i])) break; /* the outbox keeps it; a poll finds it */
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* ---- claiming ----------------------------------------------------------- */

typedef struct due_row {
    int64_t id, event_id, user_id, next_fire, occurrence;
    int minutes;
    bool single;
    char method[8];
    char *summary;
} due_row;

/* The reminder's following fire time after `fired` (the periodic case). */
static int advance_of(notify_engine *e, store *db, const due_row *r, bool *has, int64_t *fire, int64_t *orig,
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
        *has = notify_next_fire(&s, ovs, novs, r->minutes, r->next_fire, fire, orig, start);
    for (size_t i = 0; i < novs; i++) cal_override_free(&ovs[i]);
    free(ovs);
    cal_event_free(&ev);
    return STORE_OK;
}

/* What a claim does with a delivery row: holds it for the timer (pending),
 * records it missed (late, skip policy), or -- in-app, already due --
 * delivers it on the spot (done). */
typedef enum claim_fate { FATE_PENDING, FATE_MISSED, FATE_DONE } claim_fate;

/* A list parameter ($1): a JSON array, the one list both backends can take
 * apart. LIST's elements are arrays read by position (AT); LIST_TEXT's are
 * scalars read as j.value. On PostgreSQL LIST is jsonb: `->>` on a json
 * value parses its text again at every use, fourteen times a delivery row. */
#define LIST_SQLITE "json_each($1) j"
#define LIST_PG "jsonb_array_elements(CAST($1 AS jsonb)) j"
#define LIST_TEXT_PG "json_array_elements_text(CAST($1 AS json)) j"
#define AT(i) "CAST(j.value ->> " #i " AS BIGINT)"
#define AT_TEXT(i) "(j.value ->> " #i ")"

/* Advances the claimed reminders: [id, fire, next, occurrence, start] per
 * row; the compare on next_fire_ms leaves a row recomputed meanwhile to
 * the next scan. Returns the ids that moved. */
#define CLAIM_ADVANCE_PG                                                                                   \
    "UPDATE reminders SET floor_ms = v.fire, next_fire_ms = v.next, occurrence_ms = v.occ, "               \
    "start_ms = v.start FROM (SELECT " AT(0) " AS id, " AT(1) " AS fire, " AT(2) " AS next, " AT(3)        \
    " AS occ, " AT(4) " AS start FROM " LIST_PG ") v "                                                     \
    "WHERE reminders.id = v.id AND reminders.next_fire_ms = v.fire RETURNING reminders.id"
#define CLAIM_ENDPOINTS(LIST_TEXT)                                                                         \
    "SELECT user_id, id FROM webhooks WHERE user_id IN (SELECT CAST(j.value AS BIGINT) FROM " LIST_TEXT    \
    ") ORDER BY user_id, id"
/* The delivery rows, one array each (see claim_deliveries); $2 is now.
 * RETURNING names the rows actually inserted. */
#define CLAIM_DELIVERIES_PG                                                                                \
    "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, endpoint_id, summary, "          \
    "occurrence_ms, due_ms, late, state, attempts, next_attempt_ms, fired_ms, created_ms, updated_ms) "     \
    "SELECT " AT_TEXT(0) ", " AT(1) ", " AT(2) ", " AT(3) ", " AT_TEXT(4) ", " AT(5) ", " AT_TEXT(6) ", "   \
    AT(7) ", " AT(8) ", " AT(9) ", " AT_TEXT(10) ", " AT(11) ", " AT(12) ", " AT(13)                       \
    ", CAST($2 AS BIGINT), CAST($2 AS BIGINT) FROM " LIST_PG " WHERE true "                                \
    "ON CONFLICT (id) DO NOTHING RETURNING id, channel, due_ms, state"
/* The inbox rows of in-app deliveries the claim made done: the rows its
 * INSERT returned, so rows no other transaction can have (see
 * INAPP_DELIVER_PG for why PostgreSQL's inbox has no unique index). */
#define CLAIM_INBOX(LIST_TEXT, TAIL)                                                                       \
    "INSERT INTO notifications (user_id, delivery_id, event_id, summary, original_start_ms, due_ms, "      \
    "fired_ms, late, method, read, created_ms) SELECT user_id, id, event_id, summary, occurrence_ms, "     \
    "due_ms, fired_ms, late, 'push', 0, fired_ms FROM deliveries WHERE id IN (SELECT j.value FROM "        \
    LIST_TEXT ") ORDER BY due_ms" TAIL
#define CLAIM_INBOX_SQLITE CLAIM_INBOX(LIST_SQLITE, " ON CONFLICT (delivery_id) DO NOTHING")
#define CLAIM_INBOX_PG CLAIM_INBOX(LIST_TEXT_PG, "")

/* SQLite runs the same two writes a row at a time, bound straight from
 * the C structs: in-process a statement costs no round trip, and building
 * and taking apart the JSON cost more than the statements (measured on
 * bench/reminders: the scanner's CPU +30%, 16,700/s -> 10,000/s). */
#define CLAIM_ADVANCE_ONE                                                                                  \
    "UPDATE reminders SET floor_ms = $2, next_fire_ms = $3, occurrence_ms = $4, start_ms = $5 "            \
    "WHERE id = $1 AND next_fire_ms = $2"
#define CLAIM_DELIVERY_ONE                                                                                 \
    "INSERT INTO deliveries (id, reminder_id, event_id, user_id, channel, endpoint_id, summary, "          \
    "occurrence_ms, due_ms, late, state, attempts, next_attempt_ms, fired_ms, created_ms, updated_ms) "     \
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15) "                       \
    "ON CONFLICT (id) DO NOTHING"

#define BACKEND_SQL(db, MACRO, SQLITE_ARG, PG_ARG)                                                         \
    (store_backend_of(db) == STORE_PG ? MACRO(PG_ARG) : MACRO(SQLITE_ARG))

/* Runs a statement whose $1 is a JSON list (and $2, when given, now),
 * calling row() for each row it returns. */
typedef int (*row_fn)(void *ctx, store_stmt *st);
static int list_exec(store *db, const char *sql, json_t *list, const int64_t *now, row_fn row, void *ctx)
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
typedef struct i64_buf {
    int64_t *v;
    size_t n, cap;
} i64_buf;

static int i64_add(i64_buf *b, int64_t x)
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

/* A reminder's advance: from fire to next (none when !has). */
typedef struct claim_adv {
    int64_t id, fire, next, occ, start;
    bool has;
} claim_adv;

static int advance_pg(store *db, const claim_adv *a, int n, bool *won)
{
    json_t *list = json_array();
    int rc = list ? STORE_OK : STORE_ERROR;
    for (int i = 0; i < n && rc == STORE_OK; i++)
        if (json_array_append_new(list, json_pack("[I,I,o,o,o]", (json_int_t)a[i].id, (json_int_t)a[i].fire,
                                                  json_opt(a[i].has, a[i].next), json_opt(a[i].has, a[i].occ),
                                                  json_opt(a[i].has, a[i].start))))
            rc = STORE_ERROR;
    i64_buf moved = {0};
    if (rc == STORE_OK) rc = list_exec(db, CLAIM_ADVANCE_PG, list, NULL, i64_row0, &moved);
    json_decref(list);
    if (moved.n) qsort(moved.v, moved.n, sizeof *moved.v, cmp_i64);
    for (int i = 0; i < n; i++)
        won[i] = rc == STORE_OK && moved.n && bsearch(&a[i].id, moved.v, moved.n, sizeof *moved.v, cmp_i64);
    free(moved.v);
    return rc;
}

static int advance_sqlite(store *db, const claim_adv *a, int n, bool *won)
{
    for (int i = 0; i < n; i++) {
        store_stmt *st = store_prepare(db, CLAIM_ADVANCE_ONE);
        store_bind_int64(st, 1, a[i].id);
        store_bind_int64(st, 2, a[i].fire);
        notify_bind_next(st, 3, a[i].has, a[i].next, a[i].occ, a[i].start);
        int rc = store_step(st);
        won[i] = rc == STORE_DONE && store_changes(st) == 1;
        store_reset(st);
        if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    }
    return STORE_OK;
}

/* Advances every row; sets won[i] for the rows that moved (the others
 * were recomputed meanwhile: the next scan sees their new time). */
static int claim_advance(notify_engine *e, store *db, const due_row *rows, int n, bool *won)
{
    claim_adv *a = malloc((size_t)n * sizeof *a);
    int rc = a ? STORE_OK : STORE_ERROR;
    for (int i = 0; i < n && rc == STORE_OK; i++) {
        a[i] = (claim_adv){.id = rows[i].id, .fire = rows[i].next_fire};
        rc = advance_of(e, db, &rows[i], &a[i].has, &a[i].next, &a[i].occ, &a[i].start);
    }
    if (rc == STORE_OK)
        rc = store_backend_of(db) == STORE_PG ? advance_pg(db, a, n, won) : advance_sqlite(db, a, n, won);
    free(a);
    return rc;
}

/* The webhook endpoints of the won webhook rows' users, as sorted (user,
 * endpoint) pairs. */
static int claim_endpoints(notify_engine *e, store *db, const due_row *rows, int n, const bool *won, i64_buf *pairs)
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
typedef struct claim_del {
    char id[NOTIFY_ID_LEN + 1];
    const due_row *r;
    const char *channel;
    int64_t endpoint;
    claim_fate fate;
    bool late;
} claim_del;

typedef struct del_buf {
    claim_del *v;
    size_t n, cap;
} del_buf;

static int claim_delivery_add(del_buf *b, const due_row *r, const char *channel, int64_t endpoint, claim_fate fate,
                              bool late)
{
    if (b->n == b->cap) {
        claim_del *v = base_grow(b->v, sizeof *v, &b->cap);
        if (!v) return STORE_ERROR;
        b->v = v;
    }
    claim_del *d = &b->v[b->n++];
    *d = (claim_del){.r = r, .channel = channel, .endpoint = endpoint, .fate = fate, .late = late};
    notify_delivery_id(r->event_id, r->user_id, r->method, r->minutes, r->occurrence, channel, endpoint, d->id);
    return STORE_OK;
}

static const char *const claim_states[] = {"pending", "missed", "done"};

/* A claimed row's hold: NOTIFY_HOLD_MS past its due time, or past now
 * when it is claimed late (a node behind, a backlog): held from a time
 * already past, it would be free for any poll to take over at once. */
static int64_t claim_hold(int64_t due_ms, int64_t now)
{
    return (due_ms > now ? due_ms : now) + NOTIFY_HOLD_MS;
}

/* PostgreSQL: the rows as one list, one array each in CLAIM_DELIVERIES_PG'
 * column order. */
static json_t *claim_deliveries_json(const del_buf *b, int64_t now)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < b->n; i++) {
        const claim_del *d = &b->v[i];
        const due_row *r = d->r;
        json_t *row = json_pack("[s,I,I,I,s,I,s,I,I,I,s,I,I,o]", d->id, (json_int_t)r->id, (json_int_t)r->event_id,
                                (json_int_t)r->user_id, d->channel, (json_int_t)d->endpoint, r->summary ? r->summary : "",
                                (json_int_t)r->occurrence, (json_int_t)r->next_fire, (json_int_t)d->late,
                                claim_states[d->fate], (json_int_t)(d->fate == FATE_DONE),
                                (json_int_t)claim_hold(r->next_fire, now), json_opt(d->fate == FATE_DONE, now));
        if (json_array_append_new(list, row) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* SQLite: one row, bound in CLAIM_DELIVERY_ONE's order. */
static void claim_delivery_bind(store_stmt *st, const claim_del *d, int64_t now)
{
    const due_row *r = d->r;
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
}

/* The delivery rows of one won reminder: one per channel and endpoint. */
static int claim_row_deliveries(notify_engine *e, del_buf *list, const due_row *r, const i64_buf *pairs, int64_t now)
{
    bool late = now - r->next_fire > e->o.grace_ms;
    const char *channel = strcmp(r->method, "email") == 0 ? "email" : strcmp(r->method, "webhook") == 0 ? "webhook" : "inapp";
    /* An in-app reminder already due when claimed (the backlog after
     * downtime, a scanner running behind) is delivered right here: the
     * inbox row is one more insert in this transaction, where the timer
     * path would cost a second transaction that rewrites the row. */
    claim_fate fate = late && e->o.late_policy == NOTIFY_LATE_SKIP                 ? FATE_MISSED
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

/* What the INSERT returns: pending rows go to the timer, done ones need
 * their inbox row. */
typedef struct claim_out {
    notify_item_buf *timer;
    json_t *done;
    int64_t now; /* the claim's time (see claim_hold) */
} claim_out;

/* A delivery row the claim inserted. */
static int claim_took(claim_out *o, const char *id, const char *channel, int64_t due_ms, const char *state)
{
    if (strcmp(state, "done") == 0)
        return json_array_append_new(o->done, json_string(id)) == 0 ? STORE_OK : STORE_ERROR;
    if (strcmp(state, "pending") != 0) return STORE_OK;
    notify_item it = {.due_ms = due_ms, .hold_ms = claim_hold(due_ms, o->now)};
    snprintf(it.id, sizeof it.id, "%s", id);
    it.channel = chan_of(channel);
    return notify_item_buf_add(o->timer, &it) ? STORE_OK : STORE_ERROR;
}

static int claim_inserted(void *ctx, store_stmt *st)
{
    return claim_took(ctx, store_col_text(st, 0), store_col_text(st, 1), store_col_int64(st, 2),
                      store_col_text(st, 3));
}

/* Writes the delivery rows: one set statement on PostgreSQL, a statement
 * a row on SQLite (see CLAIM_DELIVERY_ONE). */
static int claim_deliveries(store *db, const del_buf *b, int64_t now, claim_out *o)
{
    if (b->n == 0) return STORE_OK;
    if (store_backend_of(db) == STORE_PG) {
        json_t *list = claim_deliveries_json(b, now);
        int rc = list ? list_exec(db, CLAIM_DELIVERIES_PG, list, &now, claim_inserted, o) : STORE_ERROR;
        json_decref(list);
        return rc;
    }
    for (size_t i = 0; i < b->n; i++) {
        const claim_del *d = &b->v[i];
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
static int claim_rows(notify_engine *e, store *db, const due_row *rows, int n, int64_t now, notify_item_buf *out)
{
    if (n == 0) return STORE_OK;
    bool *won = calloc((size_t)n, sizeof *won);
    i64_buf pairs = {0};
    del_buf dels = {0};
    claim_out o = {.timer = out, .done = json_array(), .now = now};
    int rc = won && o.done ? STORE_OK : STORE_ERROR;
    if (rc == STORE_OK) rc = claim_advance(e, db, rows, n, won);
    if (rc == STORE_OK) rc = claim_endpoints(e, db, rows, n, won, &pairs);
    for (int i = 0; i < n && rc == STORE_OK; i++)
        if (won[i]) rc = claim_row_deliveries(e, &dels, &rows[i], &pairs, now);
    if (rc == STORE_OK) rc = claim_deliveries(db, &dels, now, &o);
    if (rc == STORE_OK && json_array_size(o.done))
        rc = list_exec(db, store_backend_of(db) == STORE_PG ? CLAIM_INBOX_PG : CLAIM_INBOX_SQLITE, o.done, NULL,
                       NULL, NULL);
    json_decref(o.done);
    free(dels.v);
    free(pairs.v);
    free(won);
    return rc;
}

static void rows_free(due_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) free(rows[i].summary);
}

/* Reads a due row from st's columns at..at+8. */
static void due_row_read(store_stmt *st, int at, due_row *r)
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
}

#define DUE_COLS                                                                                           \
    "r.id, r.event_id, r.user_id, r.method, r.minutes_before, r.single, r.next_fire_ms, r.occurrence_ms, " \
    "e.summary FROM reminders r JOIN events e ON e.id = r.event_id "

/* SQLite: one shard at a time, each a seek on (shard, next_fire_ms) -- a
 * range of shards would scan every row of the group; in-process, the
 * statements cost no round trip. */
static int select_due_sqlite(store *db, int64_t lo, int64_t hi, int64_t upto, int limit, due_row *rows, int *n)
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
static int select_due_pg(store *db, int64_t lo, int64_t hi, int64_t upto, int limit, due_row *rows, int *n)
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
static int claim_group(notify_engine *e, store *db, int gi, int64_t upto, int limit, due_row *rows, int *n)
{
    int64_t lo = (int64_t)gi * e->per_group, hi = lo + e->per_group;
    if (hi > e->o.shards) hi = e->o.shards;
    return store_backend_of(db) == STORE_PG ? select_due_pg(db, lo, hi, upto, limit, rows, n)
                                            : select_due_sqlite(db, lo, hi, upto, limit, rows, n);
}

/* One claim transaction: starting at group *gi, fences each held group and
 * selects its due rows, until NOTIFY_CLAIM_BATCH rows or the last group,
 * then claims them all together (claim_rows). Many small groups share one
 * commit (on SQLite the commit is the cost: every page it dirtied is
 * written again). *gi moves past the groups done; a group cut short by a
 * full batch stays next. Returns rows claimed, or < 0. */
static int claim_tx(notify_engine *e, store *db, int *gi, int64_t upto, notify_item_buf *out)
{
    static __thread due_row rows[NOTIFY_CLAIM_BATCH];
    lease_hold *fenced[NOTIFY_CLAIM_BATCH];
    int nfenced = 0, n = 0, rc = store_begin(db);
    size_t before = out->n;
    int64_t now = base_now_ms();
    while (rc == STORE_OK && *gi < e->o.groups && n < NOTIFY_CLAIM_BATCH && nfenced < NOTIFY_CLAIM_BATCH) {
        group *g = &e->groups[*gi];
        if (!g->held) {
            ++*gi;
            continue;
        }
        rc = lease_hold_fence_in(db, &g->hold, g->tenure, NULL);
        if (rc == LEASE_LOST) {
            log_warn("reminders: lease group %d lapsed before its claim", *gi);
            g->held = false;
            rc = STORE_OK;
            ++*gi;
            continue;
        }
        if (rc != LEASE_OK) break;
        fenced[nfenced++] = &g->hold;
        rc = claim_group(e, db, *gi, upto, NOTIFY_CLAIM_BATCH, rows, &n);
        if (rc == STORE_OK && n < NOTIFY_CLAIM_BATCH) ++*gi; /* else it may have shards left */
    }
    if (rc == STORE_OK) rc = claim_rows(e, db, rows, n, now, out);
    if (rc == STORE_OK) rc = store_commit(db);
    rows_free(rows, (size_t)n);
    if (rc != STORE_OK) {
        log_warn("reminders: claim at group %d failed: %s", *gi, store_errmsg(db));
        store_rollback(db);
        out->n = before;
        n = -1;
    }
    for (int i = 0; i < nfenced; i++) lease_hold_unfence(fenced[i]);
    return n;
}

static size_t heap_size(notify_engine *e)
{
    pthread_mutex_lock(&e->mu);
    size_t n = notify_heap_size(&e->heap);
    pthread_mutex_unlock(&e->mu);
    return n;
}

static void rebalance(notify_engine *e, store *db);

/* Renews the leases when a heartbeat is due: also between claims, since a
 * busy pass over the groups may take longer than a heartbeat. */
static void heartbeat_if_due(notify_engine *e, store *db, int64_t *next_beat)
{
    int64_t now = base_now_ms();
    if (now < *next_beat) return;
    store_gate_lock(&e->gate);
    rebalance(e, db);
    store_gate_unlock(&e->gate);
    *next_beat = now + e->o.heartbeat_ms;
}

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
        if (e->stopping || now >= give_up || !top || top->due_ms > now - NOTIFY_BEHIND_MS) break;
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

/* One pass over the groups held: claims every row due by horizon, adding
 * their count to *claimed. False when cut short (the heap full, a claim
 * failed): the pass must be done again. */
static bool claim_pass(notify_engine *e, store *db, int64_t horizon, int64_t *next_beat, int64_t *claimed)
{
    notify_item_buf buf = {0};
    bool whole = true;
    for (int gi = 0; gi < e->o.groups;) {
        if (heap_size(e) >= NOTIFY_HEAP_MAX) {
            whole = false;
            break;
        }
        heartbeat_if_due(e, db, next_beat);
        scanner_yield(e);
        store_gate_lock(&e->gate);
        int n = claim_tx(e, db, &gi, horizon, &buf);
        store_gate_unlock(&e->gate);
        enqueue(e, buf.v, buf.n);
        buf.n = 0;
        if (n < 0) {
            gi++; /* skip the group that failed; the pass is done again later */
            whole = false;
        }
        *claimed += n > 0 ? n : 0;
    }
    free(buf.v);
    return whole;
}

static bool claim_all(notify_engine *e, store *db, int64_t *next_beat)
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

/* Outbox rows whose next attempt is due: retries, and claims of a node
 * that died. Taken with SKIP LOCKED so nodes split them. */
static int poll_outbox(notify_engine *e, store *db)
{
    bool pg = store_backend_of(db) == STORE_PG;
    int64_t now = base_now_ms();
    if (store_begin(db) != STORE_OK) return -1;
    store_stmt *st = store_prepare(
        db, pg ? "UPDATE deliveries SET next_attempt_ms = $2 WHERE id IN (SELECT id FROM deliveries "
                 "WHERE state = 'pending' AND next_attempt_ms <= $1 ORDER BY next_attempt_ms LIMIT $3 "
                 "FOR UPDATE SKIP LOCKED) RETURNING id, channel, due_ms"
               : "UPDATE deliveries SET next_attempt_ms = $2 WHERE id IN (SELECT id FROM deliveries "
                 "WHERE state = 'pending' AND next_attempt_ms <= $1 ORDER BY next_attempt_ms LIMIT $3) "
                 "RETURNING id, channel, due_ms");
    store_bind_int64(st, 1, now);
    /* Short, like a fresh claim's: if this node dies too, the next taker
     * should not wait long. A webhook/email send extends it when it starts. */
    store_bind_int64(st, 2, now + NOTIFY_HOLD_MS);
    store_bind_int64(st, 3, NOTIFY_POLL_BATCH);
    notify_item_buf buf = {0};
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        notify_item it = {.due_ms = store_col_int64(st, 2), .hold_ms = now + NOTIFY_HOLD_MS};
        snprintf(it.id, sizeof it.id, "%s", store_col_text(st, 0));
        it.channel = chan_of(store_col_text(st, 1));
        if (!notify_item_buf_add(&buf, &it)) break;
    }
    store_reset(st);
    int n = (int)buf.n;
    if (rc == STORE_DONE && store_commit(db) == STORE_OK) {
        enqueue(e, buf.v, buf.n);
    } else {
        store_rollback(db);
        n = -1;
    }
    free(buf.v);
    return n;
}

/* Takes every outbox row whose attempt is due, batch after batch (after
 * downtime these are the oldest of the backlog). */
static void poll_outbox_all(notify_engine *e, store *db)
{
    int n, total = 0;
    do {
        store_gate_lock(&e->gate);
        n = poll_outbox(e, db);
        store_gate_unlock(&e->gate);
        if (n > 0) total += n;
    } while (n == NOTIFY_POLL_BATCH && heap_size(e) < NOTIFY_HEAP_MAX);
    if (total) log_info("reminders: took over %d outbox rows", total);
}

/* ---- leases ------------------------------------------------------------- */

static int count_held(notify_engine *e)
{
    int n = 0;
    for (int i = 0; i < e->o.groups; i++) n += e->groups[i].held;
    return n;
}

/* Renews every group we hold in one statement (one round trip, one
 * commit). Should it fail, the holds stay as they were and lapse unless
 * the next heartbeat does better. */
static void renew_held(notify_engine *e, store *db)
{
    lease_hold **hs = malloc((size_t)e->o.groups * sizeof *hs);
    int *res = malloc((size_t)e->o.groups * sizeof *res);
    if (!hs || !res) abort();
    size_t n = 0;
    for (int i = 0; i < e->o.groups; i++)
        if (e->groups[i].held) hs[n++] = &e->groups[i].hold;
    if (lease_hold_renew_many(db, hs, n, e->o.lease_ttl_ms, res) != STORE_OK)
        log_warn("reminders: lease renewals failed: %s", store_errmsg(db));
    for (size_t k = 0; k < n; k++) {
        group *g = (group *)((char *)hs[k] - offsetof(group, hold)); /* renew_many reorders hs */
        if (res[k] == LEASE_LOST || !lease_hold_valid(&g->hold, g->tenure)) {
            log_warn("reminders: lost lease group %d", (int)(g - e->groups));
            lease_hold_drop(&g->hold); /* so a later acquire asks the database again */
            g->held = false;
        }
    }
    free(hs);
    free(res);
}

/* Which groups someone holds (this node included), a flag per group, as
 * lease_list_held names them. */
typedef struct taken_set {
    bool *v;
    int n;
} taken_set;

static void mark_taken(void *ctx, const char *name)
{
    taken_set *t = ctx;
    int gi;
    if (sscanf(name, NOTIFY_GROUP_PREFIX "%d", &gi) == 1 && gi >= 0 && gi < t->n) t->v[gi] = true;
}

/* The flags, owned by the caller; NULL when they cannot be read (then
 * every group is worth a try). */
static bool *groups_taken(notify_engine *e, store *db)
{
    taken_set t = {calloc((size_t)e->o.groups, sizeof *t.v), e->o.groups};
    if (t.v && lease_list_held(db, NOTIFY_GROUP_PREFIX, mark_taken, &t) != STORE_OK) {
        free(t.v);
        return NULL;
    }
    return t.v;
}

/* Renews what we hold, then moves toward an equal share: ceil(groups /
 * live nodes). Surplus is released at once, so a joining node finds free
 * groups at its next heartbeat; a dead node's expire after the lease TTL.
 * Only groups nobody holds are tried: the shares add up to more than the
 * groups (64 over 3 nodes: 22 each), so one node is always short, and on
 * PostgreSQL its every try at a held group waited up to 200 ms for the
 * holder's claim to commit -- a second of its scanner's time a heartbeat. */
static void rebalance(notify_engine *e, store *db)
{
    int was = count_held(e);
    renew_held(e, db);
    int64_t live = 1;
    if (nodes_live_count(db, e->o.lease_ttl_ms, &live) < 0 || live < 1) live = 1;
    int target = (int)((e->o.groups + live - 1) / live);
    int held = count_held(e);
    unsigned char r[2];
    base_random(r, sizeof r);
    int start = (r[0] | r[1] << 8) % e->o.groups;
    /* Acquiring takes a transaction per group: on a slow database, the
     * first of a long run would lapse before the claims got to it. So at
     * most a heartbeat's worth of acquiring here; the rest next time. */
    int64_t stop_at = base_now_ms() + e->o.heartbeat_ms;
    bool *taken = held < target ? groups_taken(e, db) : NULL;
    for (int k = 0; k < e->o.groups && held < target && base_now_ms() < stop_at; k++) {
        int gi = (start + k) % e->o.groups;
        group *g = &e->groups[gi];
        if (g->held || (taken && taken[gi])) continue;
        if (lease_hold_acquire(db, &g->hold, e->o.lease_ttl_ms, &g->tenure) == LEASE_OK) {
            g->held = true;
            held++;
        }
    }
    free(taken);
    for (int i = e->o.groups - 1; i >= 0 && held > target; i--) {
        group *g = &e->groups[i];
        if (!g->held) continue;
        lease_hold_release(db, &g->hold);
        g->held = false;
        held--;
    }
    if (held != was) log_info("reminders: holding %d of %d lease groups (%lld live nodes)", held, e->o.groups,
                              (long long)live);
    pthread_mutex_lock(&e->mu);
    e->groups_held = held;
    pthread_mutex_unlock(&e->mu);
}

static void release_all(notify_engine *e, store *db)
{
    for (int i = 0; i < e->o.groups; i++)
        if (e->groups[i].held) {
            lease_hold_release(db, &e->groups[i].hold);
            e->groups[i].held = false;
        }
}

/* ---- the scanner thread ------------------------------------------------- */

static bool sleep_until(notify_engine *e, int64_t wake_ms)
{
    struct timespec ts = {.tv_sec = wake_ms / 1000, .tv_nsec = (wake_ms % 1000) * 1000000};
    pthread_mutex_lock(&e->mu);
    while (!e->stopping && base_now_ms() < wake_ms)
        if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) == ETIMEDOUT) break;
    bool stop = e->stopping;
    pthread_mutex_unlock(&e->mu);
    return !stop;
}

/* Settings of the engine's connections.
 *  - SQLite: a page cache that holds the hot ends of the big tables'
 *    indexes rather than the 2 MB default, and the file mapped rather than
 *    copied.
 *  - SQLite synchronous=NORMAL, PostgreSQL synchronous_commit=off: the
 *    engine's commits do not each wait for a flush (SQLite's checkpointer
 *    and PostgreSQL's WAL writer make them durable soon after). Every effect of the engine
 *    can be redone from the reminder rows: should power fail, the last
 *    claims and deliveries roll back and are claimed and delivered again
 *    under the same delivery ids -- at least once, as promised. The API's
 *    connections keep the durable defaults: a user's write is durable when
 *    answered.
 *  - PostgreSQL plan_cache_mode=force_generic_plan: the engine runs a
 *    dozen fixed statements thousands of times a second. Left to choose,
 *    PostgreSQL planned the claim's SELECT afresh at every call (its
 *    generic plan looked dearer than the custom ones), and the custom
 *    plans hashed the whole events table for each group's few due rows;
 *    the generic plan seeks the due index and looks each event up. On
 *    bench/reminders (webhooks, three nodes) the SELECT went from 42 us a
 *    row to 12, p99 lateness from 3.9-8.2 s to 1.2 s. */
static store *engine_db_open(notify_engine *e, const char *who)
{
    char err[256];
    store *db = store_open(e->o.db_url, err, sizeof err);
    if (!db) {
        log_error("reminders: %s cannot open the database: %s", who, err);
        return NULL;
    }
    if (store_backend_of(db) == STORE_PG && (store_exec(db, "SET synchronous_commit = off") != STORE_OK ||
                                             store_exec(db, "SET plan_cache_mode = force_generic_plan") != STORE_OK))
        log_warn("reminders: %s: cannot set up the connection: %s", who, store_errmsg(db));
    if (store_backend_of(db) == STORE_SQLITE &&
        (store_exec(db, "PRAGMA cache_size = -131072") != STORE_OK ||
         store_exec(db, "PRAGMA synchronous = NORMAL") != STORE_OK ||
         store_exec(db, "PRAGMA mmap_size = 1073741824") != STORE_OK))
        log_warn("reminders: %s: cannot set up the connection: %s", who, store_errmsg(db));
    return db;
}

static store *thread_db(notify_engine *e, const char *who)
{
    return e->shared ? e->shared : engine_db_open(e, who);
}

static void thread_db_close(notify_engine *e, store *db)
{
    if (db != e->shared) store_close(db);
}

static void *scanner_main(void *p)
{
    notify_engine *e = p;
    base_thread_name("rem-scanner");
    store *db = thread_db(e, "scanner");
    if (!db) return NULL;
    int64_t tick = e->o.window_ms / 4 < 200 ? e->o.window_ms / 4 : 200;
    if (tick < 10) tick = 10;
    int64_t next_beat = 0;
    bool more = false; /* the last claim_all was cut short: no sleep */
    do {
        int64_t t0 = base_now_ms();
        heartbeat_if_due(e, db, &next_beat);
        store_gate_lock(&e->gate);
        int done;
        if (notify_sync_dirty(db, e->o.tz, e->o.shards, 256, &done) != STORE_OK)
            log_warn("reminders: recomputing marked events failed: %s", store_errmsg(db));
        store_gate_unlock(&e->gate);
        poll_outbox_all(e, db);
        more = claim_all(e, db, &next_beat);
        /* Leases lapse when a pass outlasts them between heartbeats: worth
         * knowing when they are lost. */
        int64_t took = base_now_ms() - t0;
        if (took > e->o.lease_ttl_ms / 2) log_warn("reminders: a scanner pass took %lld ms", (long long)took);
    } while (sleep_until(e, base_now_ms() + (more ? 0 : tick)));
    store_gate_lock(&e->gate);
    release_all(e, db);
    store_gate_unlock(&e->gate);
    thread_db_close(e, db);
    return NULL;
}

/* ---- delivery ----------------------------------------------------------- */

static bool is_late(notify_engine *e, const notify_item *it, int64_t now)
{
    return now - it->due_ms > e->o.grace_ms;
}

/* The ids of a batch as a JSON array, the one list parameter both
 * backends can take apart (json_each / json_array_elements_text). Ids are
 * hex digits: nothing to escape. Caller frees. */
static char *ids_json(const notify_item *its, size_t n)
{
    char *out = malloc(n * (NOTIFY_ID_LEN + 3) + 3);
    if (!out) return NULL;
    size_t k = 0;
    out[k++] = '[';
    for (size_t i = 0; i < n; i++) {
        if (i) out[k++] = ',';
        out[k++] = '"';
        size_t len = strlen(its[i].id);
        memcpy(out + k, its[i].id, len);
        k += len;
        out[k++] = '"';
    }
    out[k++] = ']';
    out[k] = '\0';
    return out;
}

/* Runs one set statement over the batch: $1 the ids, $2 now (or another
 * time), $3 when arg3 is given (PostgreSQL refuses a parameter the
 * statement does not use). */
static int batch_exec(store *db, const char *sql, const char *ids, int64_t now, const int64_t *arg3)
{
    store_stmt *st = store_prepare(db, sql);
    store_bind_str(st, 1, ids);
    store_bind_int64(st, 2, now);
    if (arg3) store_bind_int64(st, 3, *arg3);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* The batch's pending rows: $1 is the ids as a JSON array. The state test
 * is written so that no planner can answer it from deliveries_queue (the
 * index of pending rows): without fresh statistics both would rather walk
 * every pending row through it than look the batch's ids up. SQLite's
 * "+state" and PostgreSQL's "state || ''" hide the column from index
 * matching. (Measured on PostgreSQL at 1M/min: a batch of 5 ids read
 * 22,000 pending rows, twice, 30-50 ms a statement.) */
#define BATCH_SQLITE_OF(t) t "id IN (SELECT value FROM json_each($1)) AND +" t "state = 'pending'"
#define BATCH_PG_OF(t)                                                                                     \
    t "id IN (SELECT json_array_elements_text(CAST($1 AS json))) AND (" t "state || '') = 'pending'"
#define BATCH_SQLITE BATCH_SQLITE_OF("")
#define BATCH_PG BATCH_PG_OF("")
#define LATE_SQL "CASE WHEN $2 - due_ms > $3 THEN 1 ELSE 0 END"
#define REMINDER_LIVE "EXISTS (SELECT 1 FROM reminders r WHERE r.id = deliveries.reminder_id)"
/* Under the skip policy, the late ones of a batch are missed (both paths).
 * The in-app path's statements are this one and those below.
 * Over either backend's BATCH; $2 now, $3 grace. */
#define LATE_MISSED(BATCH)                                                                                 \
    "UPDATE deliveries SET state = 'missed', late = 1, updated_ms = $2 WHERE " BATCH " AND $2 - due_ms > $3"
#define INAPP_INBOX(BATCH)                                                                                 \
    "INSERT INTO notifications (user_id, delivery_id, event_id, summary, original_start_ms, due_ms, "      \
    "fired_ms, late, method, read, created_ms) SELECT user_id, id, event_id, summary, occurrence_ms, "     \
    "due_ms, $2, " LATE_SQL ", 'push', 0, $2 FROM deliveries WHERE " BATCH " AND " REMINDER_LIVE            \
    " ORDER BY due_ms ON CONFLICT (delivery_id) DO NOTHING"
#define INAPP_FINISH(BATCH)                                                                                \
    "UPDATE deliveries SET state = CASE WHEN " REMINDER_LIVE " THEN 'done' ELSE 'cancelled' END, "         \
    "fired_ms = $2, late = " LATE_SQL ", attempts = attempts + 1, updated_ms = $2 WHERE " BATCH
/* PostgreSQL does both in one statement: the outbox rows' update returns
 * the ones it made done, and only those get an inbox row. The update is
 * what keeps the inbox free of duplicates there, not a unique index on
 * notifications.delivery_id (dropped by migration 7: it was a third of
 * the inbox INSERT's cost): a row changes from pending once, since a
 * second transaction updating it waits for the first's row lock and then
 * finds it no longer pending (and a claim inserts a row done only when
 * its INSERT won). SQLite runs one writer at a time and keeps the index. */
#define INAPP_DELIVER_PG                                                                                   \
    "WITH d AS (" INAPP_FINISH(BATCH_PG) " RETURNING user_id, id, event_id, summary, occurrence_ms, "     \
    "due_ms, late, state) INSERT INTO notifications (user_id, delivery_id, event_id, summary, "            \
    "original_start_ms, due_ms, fired_ms, late, method, read, created_ms) SELECT user_id, id, event_id, "  \
    "summary, occurrence_ms, due_ms, $2, late, 'push', 0, $2 FROM d WHERE state = 'done' ORDER BY due_ms"

/* In-app, a whole batch in set statements: under the skip policy late
 * ones become missed; the rest get their inbox row (unless their
 * reminder is gone: event deleted, attendee declined) and leave the
 * outbox as done, or cancelled. Only rows still pending are touched, so a
 * batch that overlaps another node's takeover changes nothing twice. */
int notify_deliver_inapp(store *db, const char *ids, int64_t now_ms, notify_late_policy policy, int64_t grace_ms)
{
    bool pg = store_backend_of(db) == STORE_PG;
    int rc;
    if (policy == NOTIFY_LATE_SKIP &&
        (rc = batch_exec(db, pg ? LATE_MISSED(BATCH_PG) : LATE_MISSED(BATCH_SQLITE), ids, now_ms, &grace_ms)) !=
            STORE_OK)
        return rc;
    if (pg) return batch_exec(db, INAPP_DELIVER_PG, ids, now_ms, &grace_ms);
    rc = batch_exec(db, INAPP_INBOX(BATCH_SQLITE), ids, now_ms, &grace_ms);
    if (rc != STORE_OK) return rc;
    return batch_exec(db, INAPP_FINISH(BATCH_SQLITE), ids, now_ms, &grace_ms);
}

static void deliver_inapp_batch(notify_engine *e, store *db, const notify_item *its, size_t n)
{
    if (n == 0) return;
    char *ids = ids_json(its, n);
    if (!ids) return; /* left pending: the outbox poll retries them after the hold */
    store_gate_lock(&e->gate);
    for (int attempt = 0; attempt < 3; attempt++) {
        int rc = store_begin(db);
        if (rc == STORE_OK) rc = notify_deliver_inapp(db, ids, base_now_ms(), e->o.late_policy, e->o.grace_ms);
        if (rc == STORE_OK && store_commit(db) == STORE_OK) break;
        store_rollback(db);
        log_warn("reminders: in-app delivery batch failed: %s", store_errmsg(db));
    }
    store_gate_unlock(&e->gate);
    free(ids);
    /* Left pending on failure: the outbox poll retries them after the hold. */
}

static void send_done(void *ctx, bool ok, int http_status, const char *error)
{
    send_ctx *sc = ctx;
    notify_engine *e = sc->e;
    result *r = calloc(1, sizeof *r);
    pthread_mutex_lock(&e->mu);
    if (r) {
        snprintf(r->id, sizeof r->id, "%s", sc->id);
        r->ok = ok;
        r->late = sc->late;
        r->fired_ms = sc->fired_ms;
        if (!ok) snprintf(r->error, sizeof r->error, "%s (status %d)", error ? error : "failed", http_status);
        r->next = e->results;
        if (!e->results) e->results_since = base_now_ms();
        e->results = r;
        e->nresults++;
    }
    if (--e->in_flight == 0) pthread_cond_broadcast(&e->idle);
    /* A worker is woken for the first answer (to time the batch), a full
     * batch, or room for a batch of the sends it waits to make -- not for
     * every answer: woken per answer, it sent one at a time, a
     * transaction each, and a backlog at the cap never drained (the
     * write lock, busy 90% of the time, went to batches of seven). */
    bool room = e->send_waiting && e->in_flight + e->sending <= e->send_cap - e->send_room;
    if (room) e->send_waiting = false;
    if (room || e->nresults == 1 || e->nresults == NOTIFY_RESULT_BATCH) pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    free(sc);
}

/* Records a failed attempt: back off (doubling, with up to half again of
 * jitter so failing receivers are not hit in lockstep) or dead-letter. */
/* permanent: no retry can succeed (say, email is not configured), so the
 * delivery goes to the dead letters at once, visibly, with the reason.
 * sent: the attempt's answer, whose send time and lateness the row
 * records; NULL when nothing went out. */
static int record_failure_ex(notify_engine *e, store *db, const char *id, const char *error, bool permanent,
                             const result *sent)
{
    int64_t attempts = 0;
    store_stmt *st = store_prepare(db, "SELECT attempts FROM deliveries WHERE id = $1 AND state = 'pending'");
    store_bind_str(st, 1, id);
    int rc = store_step(st);
    if (rc == STORE_ROW) attempts = store_col_int64(st, 0) + 1;
    store_reset(st);
    if (rc != STORE_ROW) return rc == STORE_DONE ? STORE_OK : rc;
    int64_t now = base_now_ms();
    int shift = attempts - 1 < 20 ? (int)attempts - 1 : 20;
    int64_t delay = e->o.backoff_ms << shift;
    if (delay > 3600000) delay = 3600000;
    unsigned char j[4];
    base_random(j, sizeof j);
    uint32_t jr = (uint32_t)j[0] | (uint32_t)j[1] << 8 | (uint32_t)j[2] << 16 | (uint32_t)j[3] << 24;
    delay += (int64_t)(jr % (uint32_t)(delay / 2 + 1));
    bool dead = permanent || attempts >= e->o.max_attempts;
    st = store_prepare(db, "UPDATE deliveries SET attempts = $2, state = $3, next_attempt_ms = $4, last_error = $5, "
                           "updated_ms = $6, fired_ms = COALESCE($7, fired_ms), late = COALESCE($8, late) "
                           "WHERE id = $1 AND state = 'pending'");
    store_bind_str(st, 1, id);
    store_bind_int64(st, 2, attempts);
    store_bind_str(st, 3, dead ? "dead" : "pending");
    store_bind_int64(st, 4, now + delay);
    store_bind_str(st, 5, error);
    store_bind_int64(st, 6, now);
    if (sent) {
        store_bind_int64(st, 7, sent->fired_ms);
        store_bind_int64(st, 8, sent->late);
    } else {
        store_bind_null(st, 7);
        store_bind_null(st, 8);
    }
    rc = store_step(st);
    store_reset(st);
    if (dead) log_warn("reminders: delivery %s dead after %lld attempts: %s", id, (long long)attempts, error);
    return rc == STORE_DONE ? STORE_OK : rc;
}

static int record_failure(notify_engine *e, store *db, const char *id, const char *error)
{
    return record_failure_ex(e, db, id, error, false, NULL);
}

/* The summary as HTML text. */
static void html_escape(const char *in, char *out, size_t size)
{
    size_t n = 0;
    for (; *in && n + 7 < size; in++) {
        const char *rep = *in == '<' ? "&lt;" : *in == '>' ? "&gt;" : *in == '&' ? "&amp;" : *in == '"' ? "&quot;" : NULL;
        if (rep) {
            size_t k = strlen(rep);
            memcpy(out + n, rep, k);
            n += k;
        } else {
            out[n++] = *in;
        }
    }
    out[n] = '\0';
}

/* A webhook or email ready to go: read from the outbox inside the batch's
 * transaction; its payload is made and it is handed to the channel after
 * the commit (the write lock is the engine's bottleneck: nothing that can
 * wait is done under it). */
typedef struct send_job {
    notify_item it; /* first: a job sorts and searches as its item */
    bool webhook, late;
    int64_t fired_ms, user_id, event_id, occurrence_ms;
    char *body, *target, *secret, *summary;
} send_job;

/* s as the inside of a JSON string, when it is plain ASCII (false
 * otherwise: jansson then checks and writes the UTF-8). out needs 6 bytes
 * a character and one more. */
static bool json_ascii(const char *s, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x80) return false;
        if (ch == '"' || ch == '\\') {
            *out++ = '\\';
            *out++ = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            memcpy(out, "\\u00", 4);
            out[4] = hex[ch >> 4];
            out[5] = hex[ch & 15];
            out += 6;
        } else {
            *out++ = (char)ch;
        }
    }
    *out = '\0';
    return true;
}

/* The webhook's JSON body (README: "A webhook's JSON body"). Written
 * straight out: through jansson it was a tenth of the engine's CPU on
 * bench/reminders. */
static char *payload_of(const send_job *j)
{
    char ev[17], user[17], orig[32], due[32], fired[32];
    base_id_format(j->event_id, ev);
    base_id_format(j->user_id, user);
    base_format_rfc3339_ms(j->occurrence_ms, orig, sizeof orig);
    base_format_rfc3339_ms(j->it.due_ms, due, sizeof due);
    base_format_rfc3339_ms(j->fired_ms, fired, sizeof fired);
    const char *method = j->webhook ? "webhook" : "email";
    size_t cap = 6 * strlen(j->summary) + 400;
    char *text = malloc(cap), *summary = malloc(cap);
    if (text && summary && json_ascii(j->summary, summary)) {
        snprintf(text, cap,
                 "{\"delivery_id\":\"%s\",\"event_id\":\"%s\",\"summary\":\"%s\",\"original_start\":\"%s\","
                 "\"due\":\"%s\",\"fired\":\"%s\",\"user_id\":\"%s\",\"method\":\"%s\"%s}",
                 j->it.id, ev, summary, orig, due, fired, user, method, j->late ? ",\"late\":true" : "");
        free(summary);
        return text;
    }
    free(text);
    free(summary);
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "delivery_id", j->it.id, "event_id", ev, "summary",
                          j->summary, "original_start", orig, "due", due, "fired", fired, "user_id", user, "method",
                          method);
    if (o && j->late) json_object_set_new(o, "late", json_true());
    text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

static void send_job_free(send_job *j)
{
    free(j->body);
    free(j->target);
    free(j->secret);
    free(j->summary);
}

/* Inside the transaction: reads what to send -- set statements for the
 * whole batch. A claim has already made each row private to this node
 * until due + NOTIFY_HOLD_MS, time enough for an on-time send to be
 * answered; so only sends that go out near or past their hold (a
 * backlog) push it back here, and extend_holds sees to sends still out
 * when it nears. (A hold written for every send cost each row a rewrite
 * and two index changes.) */
#define ASYNC_CANCEL(BATCH) "UPDATE deliveries SET state = 'cancelled', updated_ms = $2 WHERE " BATCH
#define ASYNC_HOLD(BATCH) "UPDATE deliveries SET next_attempt_ms = $2 WHERE " BATCH
/* The 2xx answers to sends that went out at $3: done, recording when the
 * attempt went out and whether it was late ($4 the grace) -- what its
 * payload said, and what the admin view shows. $2 is now. (Answers are
 * recorded grouped by their send time, which a batch of sends shares: an
 * UPDATE ... FROM a list of per-row values cost SQLite a third more.) */
#define ASYNC_DONE(BATCH)                                                                                  \
    "UPDATE deliveries SET state = 'done', attempts = attempts + 1, updated_ms = $2, fired_ms = $3, "       \
    "late = CASE WHEN $3 - due_ms > $4 THEN 1 ELSE 0 END WHERE " BATCH
/* What to send, for the batch's pending rows: user, event, summary and
 * occurrence for the payload, then target, secret, id; live = its reminder
 * and endpoint (webhook, or the user for email) still exist. One pass
 * over the ids: a UNION of a webhook and an email part looked every id
 * up twice. */
#define ASYNC_READ(BATCH_D)                                                                                \
    "SELECT d.user_id, d.event_id, d.summary, d.occurrence_ms, "                                           \
    "CASE WHEN d.channel = 'webhook' THEN w.url ELSE u.email END, "                                        \
    "CASE WHEN d.channel = 'webhook' THEN w.secret ELSE '' END, d.id, "                                    \
    "CASE WHEN COALESCE(w.id, u.id) IS NOT NULL AND " ASYNC_LIVE " THEN 1 ELSE 0 END FROM deliveries d "   \
    "LEFT JOIN webhooks w ON d.channel = 'webhook' AND w.id = d.endpoint_id "                             \
    "LEFT JOIN users u ON d.channel = 'email' AND u.id = d.user_id "                                      \
    "WHERE d.channel IN ('webhook', 'email') AND " BATCH_D
#define ASYNC_LIVE "EXISTS (SELECT 1 FROM reminders r WHERE r.id = d.reminder_id)"
/* A send whose hold ends sooner than this gets it pushed back (to
 * NOTIFY_SEND_HOLD_MS from now), at the send or by extend_holds, which
 * looks every NOTIFY_EXTEND_TICK_MS. */
#define NOTIFY_EXTEND_MARGIN_MS 1500
/* An item still waiting in the heap near its hold (the node is behind)
 * gets this much more: long enough that a node far behind extends each
 * row about once, short enough that after a crash its rows are taken
 * over soon. At most NOTIFY_BEHIND_BATCH a look. */
#define NOTIFY_BEHIND_HOLD_MS 10000
#define NOTIFY_BEHIND_BATCH 5000
#define NOTIFY_EXTEND_TICK_MS 250

static int item_cmp_id(const void *a, const void *b)
{
    return strcmp(((const notify_item *)a)->id, ((const notify_item *)b)->id);
}

/* One set statement over a subset of items (nothing to do when empty). */
static int items_exec(store *db, const char *sql, const notify_item *its, size_t n, int64_t at, const int64_t *arg3)
{
    if (n == 0) return STORE_OK;
    char *ids = ids_json(its, n);
    if (!ids) return STORE_ERROR;
    int rc = batch_exec(db, sql, ids, at, arg3);
    free(ids);
    return rc;
}

/* A send read by ASYNC_READ: what its payload says and where it goes. */
static bool send_job_fill(notify_engine *e, store_stmt *st, const notify_item *it, int64_t now, send_job *j)
{
    memset(j, 0, sizeof *j);
    j->it = *it;
    j->late = is_late(e, it, now);
    j->fired_ms = now;
    j->webhook = it->channel == NOTIFY_CHAN_WEBHOOK;
    j->user_id = store_col_int64(st, 0);
    j->event_id = store_col_int64(st, 1);
    j->occurrence_ms = store_col_int64(st, 3);
    j->target = strdup(store_col_text(st, 4));
    j->secret = strdup(store_col_text(st, 5));
    j->summary = strdup(store_col_text(st, 2));
    if (j->target && j->secret && j->summary) return true;
    send_job_free(j);
    return false; /* stays pending: retried after the hold */
}

/* A batch of sends as it is worked out: what each item comes to, first
 * without the database (late under the skip policy: missed; no channel
 * for it: a failed attempt), then from a read of the rest (still pending
 * and live: a job; its reminder or endpoint gone: cancelled; else nothing
 * to do), then the writes that follow, if any. */
typedef struct send_plan {
    notify_engine *e;
    int64_t now;
    notify_item *missed, *unavailable, *no_email, *cands, *cancel, *hold;
    size_t nmissed, nunavailable, nno_email, ncands, ncancel, nhold;
    char *fate; /* SEND_* per candidate (sorted by id) */
    send_job *jobs;
    size_t k;
} send_plan;

enum { SEND_UNSEEN, SEND_GONE, SEND_TAKEN };

static void plan_free(send_plan *p)
{
    free(p->missed);
    free(p->unavailable);
    free(p->no_email);
    free(p->cands);
    free(p->cancel);
    free(p->hold);
    free(p->fate);
}

/* Sorts the items by what needs no database. */
static bool plan_sort(send_plan *p, const notify_item *its, size_t n)
{
    notify_engine *e = p->e;
    p->missed = malloc(n * sizeof *p->missed);
    p->unavailable = malloc(n * sizeof *p->unavailable);
    p->no_email = malloc(n * sizeof *p->no_email);
    p->cands = malloc(n * sizeof *p->cands);
    p->cancel = malloc(n * sizeof *p->cancel);
    p->hold = malloc(n * sizeof *p->hold);
    p->fate = calloc(n, 1);
    if (!p->missed || !p->unavailable || !p->no_email || !p->cands || !p->cancel || !p->hold || !p->fate)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool webhook = its[i].channel == NOTIFY_CHAN_WEBHOOK;
        if (is_late(e, &its[i], p->now) && e->o.late_policy == NOTIFY_LATE_SKIP) p->missed[p->nmissed++] = its[i];
        else if (!e->o.channels || (webhook && !e->has_webhooks)) p->unavailable[p->nunavailable++] = its[i];
        else if (!webhook && !channels_email_enabled(e->o.channels)) p->no_email[p->nno_email++] = its[i];
        else p->cands[p->ncands++] = its[i];
    }
    qsort(p->cands, p->ncands, sizeof *p->cands, item_cmp_id);
    return true;
}

static void plan_read_row(send_plan *p, store_stmt *st)
{
    notify_item key;
    snprintf(key.id, sizeof key.id, "%s", store_col_text(st, 6));
    notify_item *it = bsearch(&key, p->cands, p->ncands, sizeof key, item_cmp_id);
    if (!it || p->fate[it - p->cands] != SEND_UNSEEN) return;
    char *fate = &p->fate[it - p->cands];
    if (!store_col_int64(st, 7)) *fate = SEND_GONE;
    else if (send_job_fill(p->e, st, it, p->now, &p->jobs[p->k])) {
        *fate = SEND_TAKEN;
        p->k++;
    }
    /* else left UNSEEN: stays pending, retried after its hold */
}

/* Reads the candidates' sends -- on SQLite through a connection of the
 * worker's own, outside the write lock (readers do not wait for the
 * writer in WAL mode; the lock is the engine's bottleneck). Then lists
 * the rows to cancel and the sends going out near or past their hold. */
static int plan_read(send_plan *p, store *ro)
{
    if (p->ncands == 0) return STORE_OK;
    bool pg = store_backend_of(ro) == STORE_PG;
    char *ids = ids_json(p->cands, p->ncands);
    if (!ids) return STORE_ERROR;
    store_stmt *st = store_prepare(ro, pg ? ASYNC_READ(BATCH_PG_OF("d.")) : ASYNC_READ(BATCH_SQLITE_OF("d.")));
    store_bind_str(st, 1, ids);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) plan_read_row(p, st);
    store_reset(st);
    free(ids);
    if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    for (size_t i = 0; i < p->ncands; i++)
        if (p->fate[i] == SEND_GONE) p->cancel[p->ncancel++] = p->cands[i];
    int64_t held_to = p->now + NOTIFY_SEND_HOLD_MS;
    for (size_t i = 0; i < p->k; i++)
        if (p->jobs[i].it.hold_ms < p->now + NOTIFY_EXTEND_MARGIN_MS) {
            p->jobs[i].it.hold_ms = held_to;
            p->hold[p->nhold++] = p->jobs[i].it;
        }
    return STORE_OK;
}

/* Inside the transaction: the writes the plan calls for. */
static int plan_write(send_plan *p, store *db)
{
    notify_engine *e = p->e;
    bool pg = store_backend_of(db) == STORE_PG;
    int rc = items_exec(db, pg ? LATE_MISSED(BATCH_PG) : LATE_MISSED(BATCH_SQLITE), p->missed, p->nmissed, p->now,
                        &e->o.grace_ms);
    /* A misconfiguration, so one by one. */
    for (size_t i = 0; i < p->nunavailable && rc == STORE_OK; i++)
        rc = record_failure(e, db, p->unavailable[i].id, "channel not available");
    for (size_t i = 0; i < p->nno_email && rc == STORE_OK; i++)
        rc = record_failure_ex(e, db, p->no_email[i].id, "email is not configured on this server (--smtp-url)", true,
                               NULL);
    if (rc == STORE_OK)
        rc = items_exec(db, pg ? ASYNC_HOLD(BATCH_PG) : ASYNC_HOLD(BATCH_SQLITE), p->hold, p->nhold,
                        p->now + NOTIFY_SEND_HOLD_MS, NULL);
    if (rc == STORE_OK)
        rc = items_exec(db, pg ? ASYNC_CANCEL(BATCH_PG) : ASYNC_CANCEL(BATCH_SQLITE), p->cancel, p->ncancel, p->now,
                        NULL);
    return rc;
}

static bool plan_writes(const send_plan *p)
{
    return p->nmissed || p->nunavailable || p->nno_email || p->nhold || p->ncancel;
}

/* Works the batch out into jobs (*k of them), writing what it must in
 * one transaction -- for an on-time batch, nothing. On failure no job is
 * left: the rows stay pending and are retried after their hold. */
static void send_prepare(notify_engine *e, store *db, store *ro, const notify_item *its, size_t n, send_job *jobs,
                         size_t *k)
{
    send_plan p = {.e = e, .now = base_now_ms(), .jobs = jobs};
    int rc = plan_sort(&p, its, n) ? plan_read(&p, ro) : STORE_ERROR;
    if (rc != STORE_OK) log_warn("reminders: reading a send batch failed: %s", store_errmsg(ro));
    if (rc == STORE_OK && plan_writes(&p)) {
        store_gate_lock(&e->gate);
        rc = store_begin(db);
        if (rc == STORE_OK) rc = plan_write(&p, db);
        if (rc == STORE_OK) rc = store_commit(db);
        if (rc != STORE_OK) {
            log_warn("reminders: send batch failed: %s", store_errmsg(db));
            store_rollback(db);
        }
        store_gate_unlock(&e->gate);
    }
    if (rc != STORE_OK) {
        for (size_t i = 0; i < p.k; i++) send_job_free(&jobs[i]);
        p.k = 0;
    }
    *k = p.k;
    plan_free(&p);
}

/* After the commit: hands the send to its channel. False when the channel
 * would not take it (its queue is full). */
static bool send_dispatch(notify_engine *e, send_job *j)
{
    send_ctx *sc = calloc(1, sizeof *sc);
    if (!sc) return false;
    sc->e = e;
    snprintf(sc->id, sizeof sc->id, "%s", j->it.id);
    sc->late = j->late;
    sc->fired_ms = j->fired_ms;
    pthread_mutex_lock(&e->mu);
    e->in_flight++;
    notify_flights_slot(&e->flights, j->it.id)->hold_ms = j->it.hold_ms;
    pthread_mutex_unlock(&e->mu);
    int sent;
    if (j->webhook) {
        sent = (j->body = payload_of(j)) ? channels_webhook(e->o.channels, j->target, j->secret, j->it.id, j->body,
                                                            strlen(j->body), send_done, sc)
                                         : -1;
    } else {
        char subject[300], text[1400], html[1600], safe[1200];
        snprintf(subject, sizeof subject, "Reminder: %.200s%s", j->summary, j->late ? " (late)" : "");
        snprintf(text, sizeof text, "Reminder: %.1000s\nDelivery %s\n", j->summary, j->it.id);
        html_escape(j->summary, safe, sizeof safe);
        snprintf(html, sizeof html, "<p>Reminder: <b>%s</b></p>", safe);
        sent = channels_email(e->o.channels, j->target, subject, text, html, j->it.id, send_done, sc);
    }
    if (sent == 0) return true; /* sc is the channel's now */
    pthread_mutex_lock(&e->mu);
    if (--e->in_flight == 0) pthread_cond_broadcast(&e->idle);
    pthread_mutex_unlock(&e->mu);
    free(sc);
    return false;
}

/* Marks the batch's rows as being sent by this node, dropping (in place)
 * the items whose row a send of this node already has. Returns how many
 * are left. */
static size_t flights_begin(notify_engine *e, notify_item *its, size_t n)
{
    size_t k = 0;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < n; i++)
        if (notify_flights_take(&e->flights, its[i].id, its[i].hold_ms)) its[k++] = its[i];
    pthread_mutex_unlock(&e->mu);
    return k;
}

/* Webhook and email items of a batch: one transaction reads them all,
 * then each goes to its channel; the few a full channel refuses are
 * recorded as failed attempts together. An item handed to a channel
 * stays this node's send until its answer is recorded (apply_results);
 * any other stops being one here (left pending, it is retried after its
 * hold). */
static void deliver_async_batch(notify_engine *e, store *db, store *ro, notify_item *its, size_t n)
{
    n = flights_begin(e, its, n);
    if (n == 0) return;
    send_job *jobs = calloc(n, sizeof *jobs);
    size_t k = 0, refused = 0;
    if (jobs) send_prepare(e, db, ro, its, n, jobs, &k);
    for (size_t i = 0; i < k; i++)
        if (!send_dispatch(e, &jobs[i])) {
            notify_item it = jobs[i].it; /* keep the item only, at the front */
            send_job_free(&jobs[i]);
            jobs[i] = jobs[refused];
            jobs[refused++] = (send_job){.it = it};
        }
    if (refused) {
        store_gate_lock(&e->gate);
        bool tx = store_begin(db) == STORE_OK;
        for (size_t i = 0; i < refused; i++) record_failure(e, db, jobs[i].it.id, "channel queue full");
        if (tx && store_commit(db) != STORE_OK) store_rollback(db);
        store_gate_unlock(&e->gate);
    }
    /* (A job starts with its item: the jobs sort and search as items.) */
    if (k > refused) qsort(jobs + refused, k - refused, sizeof *jobs, item_cmp_id);
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < n; i++)
        if (k == refused || !bsearch(&its[i], jobs + refused, k - refused, sizeof *jobs, item_cmp_id))
            notify_flights_drop(&e->flights, its[i].id);
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; i < k; i++) send_job_free(&jobs[i]);
    free(jobs);
}

static int result_cmp_fired(const void *a, const void *b)
{
    int64_t x = (*(const result *const *)a)->fired_ms, y = (*(const result *const *)b)->fired_ms;
    return x < y ? -1 : x > y;
}

/* The successes sent at one time, as one ASYNC_DONE. */
static int done_group(notify_engine *e, store *db, result **ok, size_t n, int64_t now)
{
    notify_item *its = malloc(n * sizeof *its);
    if (!its) return STORE_ERROR;
    for (size_t i = 0; i < n; i++) snprintf(its[i].id, sizeof its->id, "%s", ok[i]->id);
    char *ids = ids_json(its, n);
    free(its);
    if (!ids) return STORE_ERROR;
    bool pg = store_backend_of(db) == STORE_PG;
    store_stmt *st = store_prepare(db, pg ? ASYNC_DONE(BATCH_PG) : ASYNC_DONE(BATCH_SQLITE));
    store_bind_str(st, 1, ids);
    store_bind_int64(st, 2, now);
    store_bind_int64(st, 3, ok[0]->fired_ms);
    store_bind_int64(st, 4, e->o.grace_ms);
    int rc = store_step(st);
    store_reset(st);
    free(ids);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* The channels' answers, recorded in one transaction: the successes in a
 * set statement per send time, each failure with its own backoff. */
static int apply_results_in(notify_engine *e, store *db, result *res)
{
    size_t n = 0, nok = 0;
    for (result *r = res; r; r = r->next) n++;
    result **ok = malloc(n * sizeof *ok);
    if (!ok) return STORE_ERROR;
    int rc = STORE_OK;
    for (result *r = res; r && rc == STORE_OK; r = r->next) {
        if (r->ok) ok[nok++] = r;
        else rc = record_failure_ex(e, db, r->id, r->error, false, r);
    }
    qsort(ok, nok, sizeof *ok, result_cmp_fired);
    int64_t now = base_now_ms();
    for (size_t i = 0, j; i < nok && rc == STORE_OK; i = j) {
        for (j = i + 1; j < nok && ok[j]->fired_ms == ok[i]->fired_ms; j++) continue;
        rc = done_group(e, db, ok + i, j - i, now);
    }
    free(ok);
    return rc;
}

/* Records the answers; then their rows stop being this node's sends (on
 * failure to record they stay pending, and are retried after the hold). */
static void apply_results(notify_engine *e, store *db, result *res)
{
    if (!res) return;
    store_gate_lock(&e->gate);
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = apply_results_in(e, db, res);
    if (rc == STORE_OK) rc = store_commit(db);
    if (rc != STORE_OK) {
        log_warn("reminders: cannot record delivery results: %s", store_errmsg(db));
        store_rollback(db);
    }
    store_gate_unlock(&e->gate);
    pthread_mutex_lock(&e->mu);
    for (result *r = res; r; r = r->next) notify_flights_drop(&e->flights, r->id);
    pthread_mutex_unlock(&e->mu);
    while (res) {
        result *next = res->next;
        free(res);
        res = next;
    }
}

/* Under e->mu: may extend_holds have work -- sends out, or heap items
 * whose hold nears its end? (The heap's first item is the one due first.) */
static bool holds_to_watch(const notify_engine *e, int64_t now)
{
    const notify_item *top = notify_heap_peek(&e->heap);
    return notify_flights_count(&e->flights) > 0 ||
           (top && top->due_ms < now + NOTIFY_EXTEND_MARGIN_MS - NOTIFY_HOLD_MS);
}

/* Pushes back the holds that near their end of this node's rows, so no
 * node's outbox poll takes them meanwhile: sends still out (a slow
 * receiver), and items still waiting in the heap (this node is behind:
 * taken over, each would be delivered again by a poll -- more work for a
 * node already behind, and on another node a second send). */
static void extend_holds(notify_engine *e, store *db, int64_t now)
{
    notify_item_buf sends = {0}, waiting = {0};
    int64_t send_to = now + NOTIFY_SEND_HOLD_MS, wait_to = now + NOTIFY_BEHIND_HOLD_MS;
    pthread_mutex_lock(&e->mu);
    notify_flights_holds_near(&e->flights, now + NOTIFY_EXTEND_MARGIN_MS, send_to, &sends);
    notify_heap_holds_near(&e->heap, now + NOTIFY_EXTEND_MARGIN_MS - NOTIFY_HOLD_MS, now + NOTIFY_EXTEND_MARGIN_MS,
                           wait_to, NOTIFY_BEHIND_BATCH, &waiting);
    pthread_mutex_unlock(&e->mu);
    if (sends.n + waiting.n > 0) {
        bool pg = store_backend_of(db) == STORE_PG;
        const char *sql = pg ? ASYNC_HOLD(BATCH_PG) : ASYNC_HOLD(BATCH_SQLITE);
        store_gate_lock(&e->gate);
        int rc = store_begin(db);
        if (rc == STORE_OK) rc = items_exec(db, sql, sends.v, sends.n, send_to, NULL);
        if (rc == STORE_OK) rc = items_exec(db, sql, waiting.v, waiting.n, wait_to, NULL);
        if (rc == STORE_OK) rc = store_commit(db);
        if (rc != STORE_OK) {
            /* Another node may then take some over after their hold: sent
             * twice, under one delivery id (at least once). */
            log_warn("reminders: cannot extend the holds of %zu rows: %s", sends.n + waiting.n, store_errmsg(db));
            store_rollback(db);
        }
        store_gate_unlock(&e->gate);
    }
    free(sends.v);
    free(waiting.v);
}

/* Under e->mu: the answers, when it is time to record them. */
static result *take_results(notify_engine *e, int64_t now)
{
    if (!e->results) return NULL;
    if (e->nresults < NOTIFY_RESULT_BATCH && now < e->results_since + NOTIFY_RESULT_WAIT_MS && !e->stopping)
        return NULL;
    result *res = e->results;
    e->results = NULL;
    e->nresults = 0;
    return res;
}

/* Under e->mu: when the first due item may wait for company, the time
 * to wake up and take them, else 0. PostgreSQL only: there each batch is
 * a transaction and round trips of its own, and at 1M reminders a minute
 * on three nodes batches of six rows cost more in commits than in rows
 * (on SQLite the write lock already gathers them). */
static int64_t linger_until(notify_engine *e, int64_t now)
{
    const notify_item *top = notify_heap_peek(&e->heap);
    if (store_gate_serializes(&e->gate) || !top || top->due_ms > now) return 0;
    int64_t until = top->due_ms + NOTIFY_LINGER_MS;
    if (now >= until || notify_heap_due_count(&e->heap, now, NOTIFY_LINGER_BATCH) >= NOTIFY_LINGER_BATCH) return 0;
    return until;
}

/* Under e->mu: pops the due items into batch, webhook and email ones only
 * while the channels have room (the rest wait in the heap: a send the
 * channel refuses would be a failed attempt). Returns how many; *async
 * counts the channel ones, *full says the channels stopped it. */
static size_t take_due(notify_engine *e, notify_item *batch, int64_t now, int *async, bool *full)
{
    size_t n = 0;
    *async = 0;
    *full = false;
    /* Once full, nothing until a batch's worth is free (see send_done). */
    int room = e->send_cap - e->in_flight - e->sending;
    if (e->send_waiting && room < e->send_room) room = 0;
    while (n < NOTIFY_DELIVER_BATCH) {
        const notify_item *top = notify_heap_peek(&e->heap);
        if (!top || top->due_ms > now) break;
        if (top->channel != NOTIFY_CHAN_INAPP) {
            if (*async >= room) {
                *full = e->send_waiting = true;
                break;
            }
            ++*async;
        }
        batch[n++] = notify_heap_pop(&e->heap);
    }
    e->sending += *async;
    return n;
}

/* Outside e->mu: in-app items at the front, the channels' behind; each
 * kind goes as one batch. */
static void deliver_batch(notify_engine *e, store *db, store *ro, notify_item *batch, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (batch[i].channel == NOTIFY_CHAN_INAPP) {
            notify_item t = batch[k];
            batch[k++] = batch[i];
            batch[i] = t;
        }
    deliver_inapp_batch(e, db, batch, k);
    deliver_async_batch(e, db, ro, batch + k, n - k);
}

/* SQLite: the worker's own connection for the reads of its sends, which
 * need not wait for the write lock (the engine's shared connection is
 * the writers'). PostgreSQL: the worker's connection does both. */
static store *reader_open(notify_engine *e, store *db)
{
    if (!store_gate_serializes(&e->gate)) return db;
    store *ro = engine_db_open(e, "delivery reader");
    if (ro && store_exec(ro, "PRAGMA query_only = 1") != STORE_OK) {
        store_close(ro);
        ro = NULL;
    }
    return ro;
}

static void *worker_main(void *p)
{
    notify_engine *e = p;
    base_thread_name("rem-worker");
    store *db = thread_db(e, "delivery worker");
    if (!db) return NULL;
    store *ro = reader_open(e, db);
    notify_item *batch = malloc(NOTIFY_DELIVER_BATCH * sizeof *batch);
    if (!batch || !ro) {
        free(batch);
        if (ro && ro != db) store_close(ro);
        thread_db_close(e, db);
        return NULL;
    }
    pthread_mutex_lock(&e->mu);
    while (!e->stopping) {
        int64_t now = base_now_ms();
        if (holds_to_watch(e, now) && now >= e->next_extend_ms) {
            e->next_extend_ms = now + NOTIFY_EXTEND_TICK_MS;
            pthread_mutex_unlock(&e->mu);
            extend_holds(e, db, now);
            pthread_mutex_lock(&e->mu);
            continue;
        }
        /* Answers waiting do not cut a linger short: woken for the first
         * of them, workers took whatever was due, and webhook batches
         * (each a read, and a statement per send time when recorded)
         * were nine rows. While the due items linger, answers that are
         * ready are recorded alone. */
        int64_t linger = linger_until(e, now);
        result *res = take_results(e, now);
        int async = 0;
        bool full = false;
        size_t n = linger ? 0 : take_due(e, batch, now, &async, &full);
        if (!res && n == 0) {
            const notify_item *top = notify_heap_peek(&e->heap);
            int64_t wake = linger ? linger : top && !full ? top->due_ms : now + 1000;
            if (e->results && e->results_since + NOTIFY_RESULT_WAIT_MS < wake)
                wake = e->results_since + NOTIFY_RESULT_WAIT_MS;
            if (holds_to_watch(e, now) && e->next_extend_ms < wake) wake = e->next_extend_ms;
            struct timespec ts = {.tv_sec = wake / 1000, .tv_nsec = (wake % 1000) * 1000000};
            pthread_cond_timedwait(&e->cv, &e->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&e->mu);
        apply_results(e, db, res);
        deliver_batch(e, db, ro, batch, n);
        pthread_mutex_lock(&e->mu);
        e->sending -= async;
        if (async) pthread_cond_broadcast(&e->cv); /* room for another worker's sends */
    }
    /* Answers already in are recorded: dropped, their rows would be sent
     * again after the hold. */
    result *res = take_results(e, base_now_ms());
    pthread_mutex_unlock(&e->mu);
    apply_results(e, db, res);
    free(batch);
    if (ro != db) store_close(ro);
    thread_db_close(e, db);
    return NULL;
}

/* ---- lifecycle ---------------------------------------------------------- */

notify_engine *notify_engine_new(const notify_opts *o)
{
    notify_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->o = *o;
    if (e->o.shards < 1) e->o.shards = 1024;
    if (e->o.groups < 1) e->o.groups = 64;
    if (e->o.groups > e->o.shards) e->o.groups = e->o.shards;
    if (e->o.window_ms < 1) e->o.window_ms = 2000;
    if (e->o.workers < 1) e->o.workers = 2;
    if (e->o.max_attempts < 1) e->o.max_attempts = 8;
    if (e->o.backoff_ms < 1) e->o.backoff_ms = 1000;
    if (e->o.lease_ttl_ms < 30) e->o.lease_ttl_ms = 15000;
    if (e->o.heartbeat_ms < 10 || e->o.heartbeat_ms >= e->o.lease_ttl_ms) e->o.heartbeat_ms = e->o.lease_ttl_ms / 3;
    e->per_group = (e->o.shards + e->o.groups - 1) / e->o.groups;
    snprintf(e->owner, sizeof e->owner, "%s", o->node_id);
    e->groups = calloc((size_t)e->o.groups, sizeof *e->groups);
    e->claimed_to = INT64_MIN;
    e->workers = calloc((size_t)e->o.workers, sizeof *e->workers);
    if (!e->groups || !e->workers) {
        free(e->groups);
        free(e->workers);
        free(e);
        return NULL;
    }
    for (int i = 0; i < e->o.groups; i++) {
        char name[64];
        snprintf(name, sizeof name, NOTIFY_GROUP_PREFIX "%03d", i);
        lease_hold_init(&e->groups[i].hold, name, e->owner);
    }
    store_gate_init(&e->gate, strncmp(o->db_url, "sqlite:", 7) == 0);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_cond_init(&e->idle, NULL);
    return e;
}

/* Webhook endpoints live in the channels branch's migration (version 5);
 * until it is applied there is nothing to read. */
static bool webhooks_present(const char *url)
{
    char err[256];
    store *db = store_open(url, err, sizeof err);
    if (!db) return false;
    int64_t n = 0;
    int rc = store_query_int64(db, "SELECT count(*) FROM schema_migrations WHERE name = 'webhooks'", &n);
    store_close(db);
    return rc == STORE_ROW && n > 0;
}

int notify_engine_start(notify_engine *e)
{
    e->has_webhooks = webhooks_present(e->o.db_url);
    e->send_cap = e->o.channels ? channels_capacity(e->o.channels) : INT_MAX;
    e->send_room = e->send_cap / 4 < 1 ? 1 : e->send_cap / 4 > 256 ? 256 : e->send_cap / 4;
    /* Sends being made: at most the channels' capacity (without channels,
     * the batches the workers hold), each until its answer is recorded. */
    size_t bound = (size_t)(e->o.channels ? e->send_cap : NOTIFY_DELIVER_BATCH * e->o.workers);
    if (!notify_flights_init(&e->flights, bound)) return -1;
    if (store_gate_serializes(&e->gate)) {
        if (!(e->shared = engine_db_open(e, "engine"))) return -1;
        if (store_exec(e->shared, "PRAGMA wal_autocheckpoint = 0") != STORE_OK ||
            !(e->checkpoint = store_checkpoint_start(e->o.db_url, &e->gate, "reminders", "rem-checkpoint"))) {
            log_error("reminders: cannot start the checkpointer");
            return -1;
        }
        store_set_guard(e->shared, store_gate_held, &e->gate);
    }
    if (pthread_create(&e->scanner, NULL, scanner_main, e) != 0) {
        log_error("reminders: cannot start the scanner");
        return -1;
    }
    e->scanner_started = true;
    for (int i = 0; i < e->o.workers; i++) {
        if (pthread_create(&e->workers[i], NULL, worker_main, e) != 0) {
            log_error("reminders: cannot start delivery worker %d", i);
            return -1;
        }
        e->nworkers_started++;
    }
    log_info("reminders: %d shards in %d lease groups, window %lld ms, %d delivery workers", e->o.shards,
             e->o.groups, (long long)e->o.window_ms, e->o.workers);
    return 0;
}

int notify_engine_groups_held(notify_engine *e)
{
    pthread_mutex_lock(&e->mu);
    int n = e->groups_held;
    pthread_mutex_unlock(&e->mu);
    return n;
}

void notify_engine_free(notify_engine *e)
{
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->stopping = true;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    store_checkpoint_stop(e->checkpoint);
    if (e->scanner_started) pthread_join(e->scanner, NULL);
    for (int i = 0; i < e->nworkers_started; i++) pthread_join(e->workers[i], NULL);
    /* Sends still out will call send_done; wait for them (channel
     * timeouts bound this). Their results are dropped: the rows stay
     * pending and are retried after the hold. */
    pthread_mutex_lock(&e->mu);
    while (e->in_flight > 0) pthread_cond_wait(&e->idle, &e->mu);
    pthread_mutex_unlock(&e->mu);
    while (e->results) {
        result *next = e->results->next;
        free(e->results);
        e->results = next;
    }
    for (int i = 0; i < e->o.groups; i++) lease_hold_destroy(&e->groups[i].hold);
    store_close(e->shared);
    store_gate_destroy(&e->gate);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_cond_destroy(&e->idle);
    notify_heap_free(&e->heap);
    notify_flights_free(&e->flights);
    free(e->groups);
    free(e->workers);
    free(e);
}
