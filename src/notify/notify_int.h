/* notify_int.h -- the reminder engine's insides, shared by its files
 * (and by nothing else): its tuning constants, the engine struct and its
 * parts, the SQL fragments more than one file uses, and the functions one
 * file offers the others, listed by the file that defines them. Why the
 * engine is cut the way it is: see notify_engine.c. */
#ifndef CHIME_NOTIFY_INT_H
#define CHIME_NOTIFY_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/lease.h"
#include "notify/notify.h"
#include "notify/notify_queue.h"
#include "store/store.h"
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
/* A send whose hold ends sooner than this gets it pushed back (to
 * NOTIFY_SEND_HOLD_MS from now), at the send or by notify_extend_holds,
 * which looks every NOTIFY_EXTEND_TICK_MS. */
#define NOTIFY_EXTEND_MARGIN_MS 1500
/* An item still waiting in the heap near its hold (the node is behind)
 * gets this much more: long enough that a node far behind extends each
 * row about once, short enough that after a crash its rows are taken
 * over soon. At most NOTIFY_BEHIND_BATCH a look. */
#define NOTIFY_BEHIND_HOLD_MS 10000
#define NOTIFY_BEHIND_BATCH 5000
#define NOTIFY_EXTEND_TICK_MS 250
/* A clean stop waits for what was claimed at most the window and this
 * (see drain in notify_engine.c). */
#define NOTIFY_DRAIN_SLACK_MS 1000

/* A channel's answer, and what the attempt's row records: when the send
 * went out and whether it was late (as its payload said). */
typedef struct notify_result {
    struct notify_result *next;
    char id[NOTIFY_ID_LEN + 1];
    bool ok, late;
    int64_t fired_ms;
    char error[200];
} notify_result;

typedef struct notify_visible notify_visible; /* notify_visible.c */

/* A lease group (a range of shards) as this node sees it. */
typedef struct notify_group {
    lease_hold hold;
    uint64_t tenure;
    bool held; /* as the scanner last saw it */
} notify_group;

struct notify_engine {
    notify_opts o;
    char owner[LEASE_OWNER_MAX + 1];
    unsigned char inbox_key[BASE_ID_KEY_LEN]; /* read at start when someone listens */
    bool has_inbox_key;
    notify_group *groups;
    int per_group;
    /* The scanner's: everything due up to here in the groups it held then
     * is claimed (INT64_MIN: not known yet), but for rows committed behind
     * a group's select (or, on PostgreSQL, the pass's look) and groups
     * taken in the middle of the pass: the next pass has those (its
     * selects have no lower bound). See notify_claim_all. */
    int64_t claimed_to;
    bool pass_found; /* the scanner's: its last pass claimed something (see groups_due) */
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
    /* PostgreSQL with a listener: holds its rows until listable. */
    notify_visible *visible;
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cv;  /* workers: heap or results changed, or stopping */
    pthread_cond_t idle;/* free: no send in flight; drain: drained */
    bool stopping;
    /* A clean stop (drain in notify_engine.c): the scanner claims nothing
     * more, and says when it has made its last claim; the workers deliver
     * what is claimed. busy counts the workers delivering a batch or
     * recording answers outside mu. */
    bool draining, claims_over;
    int busy;
    notify_heap heap;   /* claimed deliveries by due time */
    notify_result *results; /* channel answers not yet recorded (notify_take_results) */
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
    /* base_mono_ns past which a group held may have run out unrenewed
     * (INT64_MAX: none held), set by the scanner after each heartbeat:
     * from then on this node sends nothing (see flights_begin). */
    int64_t groups_valid_ns;
};

/* A webhook or email ready to go: read from the outbox inside the batch's
 * transaction; its payload is made and it is handed to the channel after
 * the commit (the write lock is the engine's bottleneck: nothing that can
 * wait is done under it). */
typedef struct notify_send_job {
    notify_item it; /* first: a job sorts and searches as its item */
    bool webhook, late;
    int64_t fired_ms, user_id, event_id, occurrence_ms;
    char *body, *target, *secret, *summary;
} notify_send_job;

/* The batch's pending rows: $1 is the ids as a JSON array. The state test
 * is written so that no planner can answer it from deliveries_queue (the
 * index of pending rows): without fresh statistics both would rather walk
 * every pending row through it than look the batch's ids up. SQLite's
 * "+state" and PostgreSQL's "state || ''" hide the column from index
 * matching. (Measured on PostgreSQL at 1M/min: a batch of 5 ids read
 * 22,000 pending rows, twice, 30-50 ms a statement.) */
#define NOTIFY_BATCH_SQLITE_OF(t) t "id IN (SELECT value FROM json_each($1)) AND +" t "state = 'pending'"
#define NOTIFY_BATCH_PG_OF(t)                                                                              \
    t "id IN (SELECT json_array_elements_text(CAST($1 AS json))) AND (" t "state || '') = 'pending'"
#define NOTIFY_BATCH_SQLITE NOTIFY_BATCH_SQLITE_OF("")
#define NOTIFY_BATCH_PG NOTIFY_BATCH_PG_OF("")
/* Under the skip policy, the late ones of a batch are missed (both paths).
 * The in-app path's statements are this one and those of notify_inapp.c.
 * Over either backend's BATCH; $2 now, $3 grace. */
#define NOTIFY_LATE_MISSED(BATCH)                                                                          \
    "UPDATE deliveries SET state = 'missed', late = 1, updated_ms = $2 WHERE " BATCH " AND $2 - due_ms > $3"

/* ---- notify_engine.c: the queue under mu, and the connections ------------ */

/* Adds claimed items to the heap and wakes the workers. */
void notify_enqueue(notify_engine *e, const notify_item *items, size_t n);
/* How many items wait in the heap (takes mu). */
size_t notify_queued(notify_engine *e);
/* False once a clean stop began: claim nothing more (takes mu). */
bool notify_claiming(notify_engine *e);
/* The scanner's word that it has made its last claim (takes mu). */
void notify_claims_over(notify_engine *e);
/* A thread's connection: the shared one on SQLite, else one of its own
 * (NULL when it cannot be opened, logged). */
store *notify_thread_db(notify_engine *e, const char *who);
void notify_thread_db_close(notify_engine *e, store *db);

/* ---- notify_claim.c: claiming due reminder rows -------------------------- */

notify_chan notify_chan_of(const char *name);
/* Claims what is due within the window (see the comment above it): true
 * when cut short, to be called again at once. */
bool notify_claim_all(notify_engine *e, store *db, int64_t *next_beat);

/* ---- notify_budget.c: each recipient's deliveries per hour and day ------- */

/* A claim's ask for one recipient: want deliveries, the latest due at
 * due_ms; the answer: kept of them granted, and whether the daily budget
 * (else the hourly) is what ran out. */
typedef struct notify_budget_req {
    int64_t user_id, due_ms;
    bool invited; /* the budget for others' events, not the user's own */
    int want, kept;
    bool by_day;
} notify_budget_req;
bool notify_budget_on(const notify_engine *e);
/* Inside the claim's transaction; sorts reqs by user. */
int notify_budget_take(notify_engine *e, store *db, notify_budget_req *reqs, size_t n);

/* ---- notify_scan.c: the scanner thread and the group leases -------------- */

void notify_heartbeat_if_due(notify_engine *e, store *db, int64_t *next_beat);
void *notify_scanner_main(void *p);

/* ---- notify_inapp.c: in-app delivery, and set statements over ids -------- */

char *notify_ids_json(const notify_item *its, size_t n);
int notify_batch_exec(store *db, const char *sql, const char *ids, int64_t now, const int64_t *arg3);
void notify_deliver_inapp_batch(notify_engine *e, store *db, const notify_item *its, size_t n);

/* ---- notify_send.c: webhook and email sends, their answers, the holds ---- */

void notify_deliver_async_batch(notify_engine *e, store *db, store *ro, notify_item *its, size_t n);
/* Under e->mu: the answers, when it is time to record them. */
notify_result *notify_take_results(notify_engine *e, int64_t now);
void notify_apply_results(notify_engine *e, store *db, notify_result *res);
bool notify_holds_to_watch(const notify_engine *e, int64_t now);
void notify_extend_holds(notify_engine *e, store *db, int64_t now);

/* ---- notify_payload.c: what a send says ---------------------------------- */

char *notify_payload_of(const notify_send_job *j);

/* An email's parts (fixed sizes: the summary is cut to fit). */
typedef struct notify_email_text {
    char subject[300], text[1400], html[1600];
} notify_email_text;
void notify_email_text_of(const notify_send_job *j, notify_email_text *m);

/* Frees n items and the array (notify_inapp.c). */
void notify_inbox_items_free(notify_inbox_item *items, size_t n);
/* Tells the listener (on_inbox) of rows just written, their ids set; on
 * PostgreSQL once the inbox lists them (notify_visible.c). Moves the
 * items' summaries: the caller still frees the items. */
void notify_inbox_announce(notify_engine *e, notify_inbox_item *items, size_t n);
/* What the delivering INSERTs return when someone listens: the rows they
 * wrote, in notify_inbox_item_read's order, the writer's xid last. */
#define NOTIFY_INBOX_RETURNING_COLS                                                                        \
    " RETURNING user_id, seq, delivery_id, event_id, summary, original_start_ms, due_ms, fired_ms, late, "  \
    "method, read, "
#define NOTIFY_INBOX_RETURNING_PG NOTIFY_INBOX_RETURNING_COLS "CAST(CAST(xid AS text) AS BIGINT)"
#define NOTIFY_INBOX_RETURNING_SQLITE NOTIFY_INBOX_RETURNING_COLS "0"

/* ---- notify_visible.c: PostgreSQL's rows held until listable ------------- */

/* Starts the thread that tells fn of rows once they are listable. NULL
 * when it cannot start. */
notify_visible *notify_visible_start(const char *db_url, notify_inbox_fn fn, void *arg);
/* Queues n items (their xid set), moving their summaries. false when out
 * of memory (nothing moved). */
bool notify_visible_put(notify_visible *v, notify_inbox_item *items, size_t n);
/* Stops the thread; what still waits goes to the listener at once. */
void notify_visible_stop(notify_visible *v);

#endif
