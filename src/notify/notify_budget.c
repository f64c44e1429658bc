/* notify_budget.c -- each recipient's budget of deliveries per hour and
 * per day, and the counters of what the flood bounds held back.
 *
 * A recipient has two: one for the reminders of events it organizes, one
 * for those of events it is invited to. With one, anyone could use up
 * another's budget by inviting it to a flood of events, and its own
 * reminders would then be dropped; now a flood of invitations only spends
 * the budget for invitations.
 *
 * One account could make chime send without limit (issue 25): a thousand
 * series with reminders, or ten webhook endpoints on each. A claim now
 * asks, for each recipient among its rows, for as many deliveries as it
 * has; the budget grants what is left of the recipient's clock hour and
 * UTC day, and the claim records the rest dropped_quota -- in the outbox,
 * where the user (GET /v1/me/deliveries) and the admin see them, never
 * sent. Only deliveries granted count against the budget.
 *
 * The claim is the engine's hot path, so this costs one statement per
 * recipient of the claim on SQLite (in-process, no round trip) and one set
 * statement for the whole claim on PostgreSQL, in the claim's own
 * transaction: an upsert that computes the grant from the stored counts
 * and returns it. Claims on several nodes for one recipient serialize on
 * the recipient's row. A claim's rows are due within a moment of each
 * other; a recipient's are charged to the hour and day of the latest. */
#include "notify/notify_int.h"

#include <jansson.h>
#include <stdlib.h>

#include "base/base.h"

const char *notify_reason_name(notify_reason r)
{
    static const char *const names[NOTIFY_SUPPRESS_N] = {"min_interval", "hour_quota", "day_quota", "inbox_cap"};
    return r < NOTIFY_SUPPRESS_N ? names[r] : "other";
}

void notify_count(notify_counters *c, notify_reason r, uint64_t n)
{
    if (c && r < NOTIFY_SUPPRESS_N && n) atomic_fetch_add_explicit(&c->suppressed[r], n, memory_order_relaxed);
}

/* The counts before this claim: none when the stored window is older. */
#define BUDGET_H0 "(CASE WHEN delivery_budget.hour_ms < excluded.hour_ms THEN 0 ELSE delivery_budget.hour_n END)"
#define BUDGET_D0 "(CASE WHEN delivery_budget.day_ms < excluded.day_ms THEN 0 ELSE delivery_budget.day_n END)"
/* The grant: what is asked, within what both windows have left. MIN/MAX
 * are the backend's scalar functions; H, D the budgets' parameters. */
#define BUDGET_GRANT(MIN, MAX, H, D) \
    MAX "(0, " MIN "(excluded.asked, " H " - " BUDGET_H0 ", " D " - " BUDGET_D0 "))"
#define BUDGET_UPSERT(MIN, MAX, H, D, SOURCE)                                                              \
    "INSERT INTO delivery_budget (user_id, invited, hour_ms, hour_n, day_ms, day_n, asked, kept) " SOURCE    \
    " ON CONFLICT (user_id, invited) DO UPDATE SET kept = " BUDGET_GRANT(MIN, MAX, H, D) ", hour_n = " BUDGET_H0    \
    " + " BUDGET_GRANT(MIN, MAX, H, D) ", day_n = " BUDGET_D0 " + " BUDGET_GRANT(MIN, MAX, H, D) ", "       \
    "asked = excluded.asked, hour_ms = " MAX "(delivery_budget.hour_ms, excluded.hour_ms), "                 \
    "day_ms = " MAX "(delivery_budget.day_ms, excluded.day_ms) RETURNING user_id, invited, kept, day_n"
/* SQLite: one budget, $1 user, $2 invited, $3 hour, $4 day, $5 asked, $6 H, $7 D. */
#define BUDGET_SQLITE                                                                                      \
    BUDGET_UPSERT("min", "max", "$6", "$7",                                                                \
                  "VALUES ($1, $2, $3, min($5, $6, $7), $4, min($5, $6, $7), $5, min($5, $6, $7))")
/* PostgreSQL: every budget, $1 [[user, invited, hour, day, asked], ...], $2 H, $3 D. */
#define BUDGET_PG                                                                                          \
    BUDGET_UPSERT("LEAST", "GREATEST", "CAST($2 AS BIGINT)", "CAST($3 AS BIGINT)",                         \
                  "SELECT u, i, h, LEAST(w, CAST($2 AS BIGINT), CAST($3 AS BIGINT)), d, LEAST(w, CAST($2 "   \
                  "AS BIGINT), CAST($3 AS BIGINT)), w, LEAST(w, CAST($2 AS BIGINT), CAST($3 AS BIGINT)) "    \
                  "FROM (SELECT CAST(j.value ->> 0 AS BIGINT) AS u, CAST(j.value ->> 1 AS INTEGER) AS i, "   \
                  "CAST(j.value ->> 2 AS BIGINT) AS h, CAST(j.value ->> 3 AS BIGINT) AS d, "                 \
                  "CAST(j.value ->> 4 AS BIGINT) AS w FROM jsonb_array_elements(CAST($1 AS jsonb)) j) v "    \
                  "WHERE true")

#define BUDGET_NONE ((int64_t)1 << 60) /* a budget of 0 means none */

static int64_t budget_of(int64_t b)
{
    return b > 0 ? b : BUDGET_NONE;
}

static int64_t floor_to(int64_t t, int64_t unit)
{
    return t - ((t % unit) + unit) % unit;
}

/* The answer for one recipient: its grant, and whether the day ran out. */
static void budget_answer(notify_engine *e, notify_budget_req *q, store_stmt *st)
{
    q->kept = (int)store_col_int64(st, 2);
    q->by_day = store_col_int64(st, 3) >= budget_of(e->o.budget_day);
}

static int budget_sqlite(notify_engine *e, store *db, notify_budget_req *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        store_stmt *st = store_prepare(db, BUDGET_SQLITE);
        store_bind_int64(st, 1, reqs[i].user_id);
        store_bind_int64(st, 2, reqs[i].invited);
        store_bind_int64(st, 3, floor_to(reqs[i].due_ms, 3600000));
        store_bind_int64(st, 4, floor_to(reqs[i].due_ms, 86400000));
        store_bind_int64(st, 5, reqs[i].want);
        store_bind_int64(st, 6, budget_of(e->o.budget_hour));
        store_bind_int64(st, 7, budget_of(e->o.budget_day));
        int rc = store_step(st);
        if (rc == STORE_ROW) budget_answer(e, &reqs[i], st);
        store_reset(st);
        if (rc != STORE_ROW) return rc < 0 ? rc : STORE_ERROR;
    }
    return STORE_OK;
}

/* By recipient, its own budget before the one for invitations. */
static int by_user(const void *a, const void *b)
{
    const notify_budget_req *x = a, *y = b;
    if (x->user_id != y->user_id) return x->user_id < y->user_id ? -1 : 1;
    return (int)x->invited - (int)y->invited;
}

static int budget_pg(notify_engine *e, store *db, notify_budget_req *reqs, size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        if (json_array_append_new(list, json_pack("[I,i,I,I,i]", (json_int_t)reqs[i].user_id, (int)reqs[i].invited,
                                                  (json_int_t)floor_to(reqs[i].due_ms, 3600000),
                                                  (json_int_t)floor_to(reqs[i].due_ms, 86400000), reqs[i].want)))
            break;
    char *text = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    if (!text) return STORE_ERROR;
    store_stmt *st = store_prepare(db, BUDGET_PG);
    store_bind_str(st, 1, text);
    store_bind_int64(st, 2, budget_of(e->o.budget_hour));
    store_bind_int64(st, 3, budget_of(e->o.budget_day));
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        notify_budget_req key = {.user_id = store_col_int64(st, 0), .invited = store_col_int64(st, 1) != 0};
        notify_budget_req *q = bsearch(&key, reqs, n, sizeof *reqs, by_user);
        if (q) budget_answer(e, q, st);
    }
    store_reset(st);
    free(text);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

bool notify_budget_on(const notify_engine *e)
{
    return e->o.budget_hour > 0 || e->o.budget_day > 0;
}

int notify_budget_take(notify_engine *e, store *db, notify_budget_req *reqs, size_t n)
{
    if (n == 0) return STORE_OK;
    /* In user order, so concurrent claims on several nodes lock the
     * recipients' rows in one order (no deadlock); the only rows two
     * claims share are these, their reminder rows being in disjoint
     * shards. */
    qsort(reqs, n, sizeof *reqs, by_user);
    for (size_t i = 0; i < n; i++) reqs[i].kept = 0; /* a row the answer lacks gets nothing */
    return store_backend_of(db) == STORE_PG ? budget_pg(e, db, reqs, n) : budget_sqlite(e, db, reqs, n);
}
