/* notify.h -- reminders that fire on time and are never lost.
 *
 * Three stages, each durable in the database before the next begins:
 *
 *  1. Reminder rows (notify_sync.c). One row per (event, recipient, method,
 *     minutes_before) holding its NEXT fire time and the instance it is
 *     for. Calendar writes mark the event in reminder_dirty (triggers, in
 *     the writer's own transaction); the request then recomputes the rows
 *     (notify_sync_dirty) and the scanner drains any mark left behind, so a
 *     crash between the two loses nothing.
 *  2. Claims (the scanner: notify_scan.c, notify_claim.c). Rows are split
 *     into shards by the organizer's user id; shards into lease groups;
 *     each node holds some groups' leases and scans only their shards. A
 *     claim -- the delivery rows (outbox) plus the advance of next fire
 *     time to the following instance -- is one transaction fenced by the
 *     group lease's epoch.
 *  3. Delivery (the workers: notify_engine.c, notify_inapp.c,
 *     notify_send.c). Claimed rows wait in an in-memory timer heap
 *     (notify_queue.c) and are delivered at their due time by worker
 *     threads; rows a node claimed but never finished (crash, failure) are
 *     re-claimed from the outbox once their next_attempt_ms passes.
 *     Retries back off exponentially with jitter; after max_attempts a row
 *     is dead.
 *
 * Delivery is at least once; every delivery row has a stable id derived
 * from (event, recipient, method, minutes_before, occurrence, channel,
 * endpoint), so a redo inserts nothing new, and the in-app inbox never
 * shows one twice (SQLite: a unique index on it; PostgreSQL: an inbox row
 * is written only with the outbox row's change from pending, see
 * notify_inapp.c). */
#ifndef CHIME_NOTIFY_H
#define CHIME_NOTIFY_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "calendar/calendar.h"
#include "store/store.h"
#include "time/tz.h"

#define NOTIFY_ID_LEN 32 /* delivery ids: hex characters */

/* Shard of an organizer: a mix of the id (ids are random, but the mix also
 * spreads made-up ones such as benchmark ids), modulo shards. */
int notify_shard_of(int64_t user_id, int shards);

/* The stable delivery id (NOTIFY_ID_LEN hex digits + NUL). */
void notify_delivery_id(int64_t event_id, int64_t user_id, const char *method, int minutes_before,
                        int64_t occurrence_ms, const char *channel, int64_t endpoint_id,
                        char out[NOTIFY_ID_LEN + 1]);

/* Next fire of one reminder of a series: the first instance (overrides
 * applied) whose fire time, start - minutes_before, is after floor_ms.
 * Returns true with the fire time, the instance's original start and its
 * start; false when the series has no such instance (finished). */
bool notify_next_fire(cal_series *s, const cal_override *ovs, size_t novs, int minutes_before, int64_t floor_ms,
                      int64_t *fire_ms, int64_t *original_ms, int64_t *start_ms);

/* Binds a row's next fire, its instance's original start and its start to
 * parameters at, at+1, at+2 -- or three NULLs when it has none (has false:
 * the series is finished). */
void notify_bind_next(store_stmt *st, int at, bool has, int64_t fire_ms, int64_t original_ms, int64_t start_ms);

/* Recomputes one event's reminder rows in one transaction and clears its
 * dirty mark (if nobody marked it again meanwhile). A deleted or cancelled
 * event loses its rows. now_ms: rows new to the event fire only for
 * instances after now, or after the change that marked it if earlier (a
 * crash between a write and its recompute must not drop a due reminder). */
int notify_sync_event(store *db, tz_db *tz, int shards, int64_t event_id, int64_t now_ms);
/* Recomputes up to limit marked events; *done says how many. */
int notify_sync_dirty(store *db, tz_db *tz, int shards, int limit, int *done);

/* What the calendar's change listener needs (the wiring owns it). */
typedef struct notify_sync_opts {
    tz_db *tz;
    int shards;
} notify_sync_opts;
/* The listener the wiring subscribes to the calendar's writes
 * (cal_on_change; arg a notify_sync_opts): recomputes the events the
 * write marked at once -- the scanner would otherwise within a tick.
 * Failures are logged, never the request's. */
void notify_on_calendar_change(void *arg, store *db);

/* ---- the in-app inbox ---- */

/* One inbox row, as GET /v1/notifications shows it and as the WebSocket
 * "reminder" frame carries it. */
typedef struct notify_inbox_item {
    int64_t user_id, seq, event_id, original_ms, due_ms, fired_ms;
    int64_t id; /* what clients see: seq concealed by the inbox key (set by the reader) */
    int64_t xid; /* PostgreSQL: the writing transaction's id (0 on SQLite) */
    bool late, read;
    char delivery_id[NOTIFY_ID_LEN + 1];
    char method[8];
    char *summary; /* owned */
} notify_inbox_item;

/* Reads an item from columns at..at+11: user_id, seq, delivery_id,
 * event_id, summary, original_start_ms, due_ms, fired_ms, late, method,
 * read, and the writer's xid (0 on SQLite). false when out of memory. */
bool notify_inbox_item_read(store_stmt *st, int at, notify_inbox_item *it);
void notify_inbox_item_free(notify_inbox_item *it);
/* The API's JSON object of an item (its id as set by the reader). */
json_t *notify_inbox_item_json(const notify_inbox_item *it);
/* The key that conceals inbox seqs as ids (base_id_conceal), made by
 * migration 20 and the same on every node. */
int notify_inbox_key(store *db, unsigned char key[BASE_ID_KEY_LEN]);

/* Told of inbox rows once the transaction that wrote them committed and
 * GET /v1/notifications lists them (on an engine thread): a reminder
 * fired for someone. */
typedef void (*notify_inbox_fn)(void *arg, const notify_inbox_item *items, size_t n);

/* ---- the engine: scanner and delivery workers of one node ---- */

typedef enum notify_late_policy { NOTIFY_LATE_DELIVER, NOTIFY_LATE_SKIP } notify_late_policy;

/* What the flood bounds held back, by reason (this process's counts, for
 * /metrics): instances a series' reminder skipped for the minimum interval
 * (counted once per fire that skipped some), deliveries recorded
 * dropped_quota for the hourly and for the daily budget, read inbox rows
 * the cleanup pruned for the cap. */
typedef enum notify_reason {
    NOTIFY_SUPPRESS_MIN_INTERVAL,
    NOTIFY_SUPPRESS_HOUR_QUOTA,
    NOTIFY_SUPPRESS_DAY_QUOTA,
    NOTIFY_SUPPRESS_INBOX_CAP,
    NOTIFY_SUPPRESS_N
} notify_reason;
typedef struct notify_counters {
    _Atomic uint64_t suppressed[NOTIFY_SUPPRESS_N];
} notify_counters;
/* The reason's label on /metrics ("min_interval", "hour_quota", ...). */
const char *notify_reason_name(notify_reason r);
void notify_count(notify_counters *c, notify_reason r, uint64_t n);

typedef struct notify_opts {
    const char *db_url;
    const char *node_id;     /* the lease owner name (the jobs scheduler's node id) */
    tz_db *tz;
    int shards;              /* micro-shards (default 1024) */
    int groups;              /* lease groups (default 64, at most shards) */
    int64_t window_ms;       /* claim what is due within this (default 2000) */
    int64_t grace_ms;        /* later than this is "late" (default 60000) */
    notify_late_policy late_policy;
    int workers;             /* delivery threads (default 2) */
    int max_attempts;        /* then dead (default 8) */
    int64_t backoff_ms;      /* first retry delay; doubles each attempt (default 1000) */
    int64_t lease_ttl_ms;    /* group lease length (default 15000) */
    int64_t heartbeat_ms;    /* renew/rebalance period (default 5000) */
    struct channels *channels; /* webhook and email senders (borrowed) */
    notify_inbox_fn on_inbox;  /* NULL: nobody listens (and no rows are read back) */
    void *on_inbox_arg;
    /* Flood bounds (issue 25): a series' reminder fires at most once per
     * min_interval_ms (0: off); a recipient gets at most budget_hour
     * deliveries per clock hour and budget_day per UTC day (0: no
     * limit), the rest recorded dropped_quota (notify_budget.c). */
    int64_t min_interval_ms;
    int64_t budget_hour, budget_day;
    notify_counters *counters; /* borrowed; NULL: not counted */
} notify_opts;

typedef struct notify_engine notify_engine;

notify_engine *notify_engine_new(const notify_opts *o);
/* Starts the scanner and the workers. Returns 0 or -1 (logged). */
int notify_engine_start(notify_engine *e);
/* Stops every thread and releases this node's group leases (so other
 * nodes take the shards at once). Undelivered claims stay in the outbox. */
void notify_engine_free(notify_engine *e);

/* Delivers in-app outbox rows (ids: a JSON array of delivery ids), inside
 * the caller's transaction: each row still pending gets its inbox row and
 * becomes done -- or cancelled, when its reminder is gone; under the skip
 * policy, one later than grace_ms becomes missed. Rows no longer pending
 * are left alone, so two transactions delivering the same row (a takeover
 * racing a slow node) give the user one inbox row. The engine's workers
 * call it; it is public for the test of that race. */
int notify_deliver_inapp(store *db, const char *ids, int64_t now_ms, notify_late_policy policy, int64_t grace_ms);
/* The same, handing the inbox rows it wrote to out (grown as needed;
 * *n counts them, the caller frees each and the array). */
int notify_deliver_inapp_items(store *db, const char *ids, int64_t now_ms, notify_late_policy policy,
                               int64_t grace_ms, notify_inbox_item **out, size_t *n, size_t *cap);

/* Lease groups this node holds now (for tests and /metrics). */
int notify_engine_groups_held(notify_engine *e);

/* Adds the reminders' schema steps (notify_schema.c) to the one list. */
int notify_schema_add(store_schema *s);

#endif
