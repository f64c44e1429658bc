/* notify_scan.c -- the scanner thread: each tick it renews and rebalances
 * the lease groups, drains the events marked dirty, takes over outbox rows
 * whose next attempt is due (retries, and the claims of a node that died),
 * and claims what is due (notify_claim.c). On a clean stop it claims no
 * more, keeps its groups while the workers deliver what it claimed, then
 * releases them so other nodes take the shards at once. */
#include "notify/notify_int.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/base.h"
#include "cluster/nodes.h"

/* ---- the outbox poll ---------------------------------------------------- */

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
        it.channel = notify_chan_of(store_col_text(st, 1));
        if (!notify_item_buf_add(&buf, &it)) break;
    }
    store_reset(st);
    int n = (int)buf.n;
    if (rc == STORE_DONE && store_commit(db) == STORE_OK) {
        notify_enqueue(e, buf.v, buf.n);
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
    } while (n == NOTIFY_POLL_BATCH && notify_queued(e) < NOTIFY_HEAP_MAX);
    if (total) log_info("reminders: took over %d outbox rows", total);
}

/* ---- adoption: what a lapsed holder of a group had claimed --------------- */

/* The pending rows of the lease groups in $4 (a JSON list of group
 * numbers) that a claim or a takeover made private to a holder now gone
 * (see adopt_groups): held past $1 (earlier ones are the poll's), and no
 * further than any such hold can reach ($2); never attempted (a row
 * backing off after a failed send is nobody's until its retry time, when
 * the poll takes it). A row's group is its reminder's shard's ($3 shards a
 * group), as the claim chose it; a row whose reminder is gone is left to
 * the poll, which cancels it. The walk is the pending index's range of
 * held rows -- about a window and a hold of claims, all groups' -- with
 * a primary key look-up per row: one statement for every group a
 * rebalance takes. A shard column on deliveries (and an index on it)
 * would make it a seek per group, but every delivery would write one
 * index entry more on the hot path, for a read made only at takeovers. */
#define ADOPT_SQL(GROUPS)                                                                                  \
    "SELECT d.id, d.channel, d.due_ms, d.next_attempt_ms FROM deliveries d JOIN reminders r "              \
    "ON r.id = d.reminder_id WHERE d.state = 'pending' AND d.next_attempt_ms > $1 AND "                    \
    "d.next_attempt_ms <= $2 AND d.attempts = 0 AND r.shard / CAST($3 AS INTEGER) IN (" GROUPS ")"
#define ADOPT_SQLITE ADOPT_SQL("SELECT value FROM json_each($4)")
#define ADOPT_PG ADOPT_SQL("SELECT CAST(g AS INTEGER) FROM json_array_elements_text(CAST($4 AS json)) g")

/* Under the gate, right after the groups in gis were acquired from a
 * holder that is gone (lease_list_lapsed): its claimed, undelivered rows
 * go into this node's timer, to fire at their due time (at once if it
 * has passed) instead of when their holds end (NOTIFY_HOLD_MS past due;
 * a send's hold is a minute). Each keeps its row's hold as its own: the
 * rows need no write, and the holds are pushed back as for this node's
 * own claims (notify_extend_holds). Could the old holder still send
 * them? A dead process cannot, and a stopped one that wakes finds its
 * leases' time run out and sends nothing (flights_begin in notify_send.c). In-app rows
 * delivered twice give one inbox row (notify_inapp.c). */
static void adopt_groups(notify_engine *e, store *db, const int *gis, int n)
{
    if (n == 0) return;
    json_t *groups = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(groups, json_integer(gis[i]));
    char *list = json_dumps(groups, JSON_COMPACT);
    json_decref(groups);
    if (!list) return; /* their holds end as before */
    int64_t now = base_now_ms();
    store_stmt *st = store_prepare(db, store_backend_of(db) == STORE_PG ? ADOPT_PG : ADOPT_SQLITE);
    store_bind_int64(st, 1, now);
    store_bind_int64(st, 2, now + e->o.window_ms + NOTIFY_SEND_HOLD_MS);
    store_bind_int64(st, 3, e->per_group);
    store_bind_str(st, 4, list);
    notify_item_buf buf = {0};
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        notify_item it = {.due_ms = store_col_int64(st, 2), .hold_ms = store_col_int64(st, 3)};
        snprintf(it.id, sizeof it.id, "%s", store_col_text(st, 0));
        it.channel = notify_chan_of(store_col_text(st, 1));
        if (!notify_item_buf_add(&buf, &it)) break;
    }
    store_reset(st);
    if (rc == STORE_DONE) notify_enqueue(e, buf.v, buf.n);
    else log_warn("reminders: adopting the claims of %d lease groups failed: %s", n, store_errmsg(db));
    if (rc == STORE_DONE && buf.n)
        log_info("reminders: adopted %zu claimed deliveries of %d lease groups", buf.n, n);
    free(buf.v);
    free(list);
}

/* ---- the lease groups --------------------------------------------------- */

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
        /* renew_many reorders hs: back from each hold to its group */
        notify_group *g = (notify_group *)((char *)hs[k] - offsetof(notify_group, hold));
        if (res[k] == LEASE_LOST || !lease_hold_valid(&g->hold, g->tenure)) {
            log_warn("reminders: lost lease group %d", (int)(g - e->groups));
            lease_hold_drop(&g->hold); /* so a later acquire asks the database again */
            g->held = false;
        }
    }
    free(hs);
    free(res);
}

/* Which groups another node holds, a flag per group, as lease_list_held
 * names them. Groups held under this node's id by a dead incarnation of it
 * (a restart) are not taken: acquire takes them back at once. */
typedef struct notify_taken_set {
    bool *v;
    int n;
} notify_taken_set;

static void mark_taken(void *ctx, const char *name)
{
    notify_taken_set *t = ctx;
    int gi;
    if (sscanf(name, NOTIFY_GROUP_PREFIX "%d", &gi) == 1 && gi >= 0 && gi < t->n) t->v[gi] = true;
}

typedef int (*lease_lister)(store *db, const char *prefix, const char *owner,
                            void (*fn)(void *ctx, const char *name), void *ctx);

/* The groups a lease lister names, as flags owned by the caller; NULL
 * when they cannot be read. */
static bool *groups_listed(notify_engine *e, store *db, lease_lister list)
{
    notify_taken_set t = {calloc((size_t)e->o.groups, sizeof *t.v), e->o.groups};
    if (t.v && list(db, NOTIFY_GROUP_PREFIX, e->owner, mark_taken, &t) != STORE_OK) {
        free(t.v);
        return NULL;
    }
    return t.v;
}

/* Which groups another live node holds; NULL: every group is worth a try. */
static bool *groups_taken(notify_engine *e, store *db)
{
    return groups_listed(e, db, lease_list_held);
}

/* Which groups' holders are gone (lease_list_lapsed): taking one, this
 * node adopts what its holder had claimed. NULL when they cannot be read:
 * then nothing is adopted, and those claims wait for their holds to end,
 * as before adoption. */
static bool *groups_lapsed(notify_engine *e, store *db)
{
    return groups_listed(e, db, lease_list_lapsed);
}

/* The earliest time, on base_mono_ns's clock, at which one of the groups
 * held may have run out unrenewed: past it another node may hold that
 * group and have adopted its rows, so sends stop (flights_begin in notify_send.c).
 * INT64_MAX when none is held. */
static int64_t groups_valid_until(notify_engine *e)
{
    int64_t until = INT64_MAX;
    for (int i = 0; i < e->o.groups; i++) {
        notify_group *g = &e->groups[i];
        if (!g->held) continue;
        int64_t t = lease_hold_valid_until_ns(&g->hold, g->tenure);
        if (t < until) until = t;
    }
    return until;
}

/* Tells the workers what the scanner holds (and so how long they may send). */
static void publish_held(notify_engine *e, int held)
{
    int64_t valid_until = groups_valid_until(e);
    pthread_mutex_lock(&e->mu);
    e->groups_held = held;
    e->groups_valid_ns = valid_until;
    pthread_mutex_unlock(&e->mu);
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
    bool *lapsed = held < target ? groups_lapsed(e, db) : NULL;
    int *adopt = lapsed ? malloc((size_t)e->o.groups * sizeof *adopt) : NULL, nadopt = 0;
    for (int k = 0; k < e->o.groups && held < target && base_now_ms() < stop_at; k++) {
        int gi = (start + k) % e->o.groups;
        notify_group *g = &e->groups[gi];
        if (g->held || (taken && taken[gi])) continue;
        if (lease_hold_acquire(db, &g->hold, e->o.lease_ttl_ms, &g->tenure) == LEASE_OK) {
            g->held = true;
            held++;
            if (adopt && lapsed[gi]) adopt[nadopt++] = gi;
        }
    }
    free(taken);
    free(lapsed);
    adopt_groups(e, db, adopt, nadopt);
    free(adopt);
    for (int i = e->o.groups - 1; i >= 0 && held > target; i--) {
        notify_group *g = &e->groups[i];
        if (!g->held) continue;
        lease_hold_release(db, &g->hold);
        g->held = false;
        held--;
    }
    if (held != was) log_info("reminders: holding %d of %d lease groups (%lld live nodes)", held, e->o.groups,
                              (long long)live);
    publish_held(e, held);
}

static void release_all(notify_engine *e, store *db)
{
    for (int i = 0; i < e->o.groups; i++)
        if (e->groups[i].held) {
            lease_hold_release(db, &e->groups[i].hold);
            e->groups[i].held = false;
        }
}

/* Renews the leases when a heartbeat is due: also between claims, since a
 * busy pass over the groups may take longer than a heartbeat. */
void notify_heartbeat_if_due(notify_engine *e, store *db, int64_t *next_beat)
{
    int64_t now = base_now_ms();
    if (now < *next_beat) return;
    store_gate_lock(&e->gate);
    rebalance(e, db);
    store_gate_unlock(&e->gate);
    *next_beat = now + e->o.heartbeat_ms;
}

/* ---- the thread --------------------------------------------------------- */

/* Sleeps until wake_ms, or until the engine stops (or, with
 * draining_too, begins a clean stop): false then. */
static bool sleep_until(notify_engine *e, int64_t wake_ms, bool draining_too)
{
    struct timespec ts = {.tv_sec = wake_ms / 1000, .tv_nsec = (wake_ms % 1000) * 1000000};
    pthread_mutex_lock(&e->mu);
    while (!e->stopping && !(draining_too && e->draining) && base_now_ms() < wake_ms)
        if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) == ETIMEDOUT) break;
    bool stop = e->stopping || (draining_too && e->draining);
    pthread_mutex_unlock(&e->mu);
    return !stop;
}

/* A clean stop, once the last claim is made: until the engine stops, the
 * groups held are renewed and nothing else -- no group taken (nor any
 * claims adopted) or given up -- so that this node's claims stay its own
 * while its workers deliver them (see drain in notify_engine.c). */
static void hold_while_draining(notify_engine *e, store *db, int64_t next_beat)
{
    notify_claims_over(e);
    while (sleep_until(e, next_beat, false)) {
        store_gate_lock(&e->gate);
        renew_held(e, db);
        publish_held(e, count_held(e));
        store_gate_unlock(&e->gate);
        next_beat = base_now_ms() + e->o.heartbeat_ms;
    }
}

void *notify_scanner_main(void *p)
{
    notify_engine *e = p;
    base_thread_name("rem-scanner");
    store *db = notify_thread_db(e, "scanner");
    if (!db) {
        notify_claims_over(e);
        return NULL;
    }
    int64_t tick = e->o.window_ms / 4 < 200 ? e->o.window_ms / 4 : 200;
    if (tick < 10) tick = 10;
    int64_t next_beat = 0;
    bool more = false; /* the last notify_claim_all was cut short: no sleep */
    while (notify_claiming(e)) {
        int64_t t0 = base_now_ms();
        notify_heartbeat_if_due(e, db, &next_beat);
        store_gate_lock(&e->gate);
        int done;
        if (notify_sync_dirty(db, e->o.tz, e->o.shards, 256, &done) != STORE_OK)
            log_warn("reminders: recomputing marked events failed: %s", store_errmsg(db));
        store_gate_unlock(&e->gate);
        poll_outbox_all(e, db);
        more = notify_claim_all(e, db, &next_beat);
        /* Leases lapse when a pass outlasts them between heartbeats: worth
         * knowing when they are lost. */
        int64_t took = base_now_ms() - t0;
        if (took > e->o.lease_ttl_ms / 2) log_warn("reminders: a scanner pass took %lld ms", (long long)took);
        if (!sleep_until(e, base_now_ms() + (more ? 0 : tick), true)) break;
    }
    hold_while_draining(e, db, next_beat);
    store_gate_lock(&e->gate);
    release_all(e, db);
    store_gate_unlock(&e->gate);
    notify_thread_db_close(e, db);
    return NULL;
}

