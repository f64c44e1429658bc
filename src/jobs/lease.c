/* lease.c -- leases as compare-and-set statements on the `leases` row.
 *
 * Each decision is one statement that reads the database clock itself, so
 * no node's clock and no gap between "what time is it" and "decide" enters
 * into it. The SQL differs between backends only in that clock expression
 * and in FOR UPDATE. */
#include "jobs/lease.h"

#include <stdio.h>
#include <string.h>

#include "base/base.h"

#define NOW_PG LEASE_SQL_NOW_PG
#define NOW_SQ LEASE_SQL_NOW_SQLITE

#define ACQUIRE_SQL(NOW)                                                                           \
    "INSERT INTO leases (name, owner, epoch, expires_ms) VALUES ($1, $2, 1, " NOW                  \
    " + CAST($3 AS BIGINT)) ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,"              \
    " epoch = leases.epoch + 1, expires_ms = excluded.expires_ms"                                  \
    " WHERE leases.owner IS NULL OR leases.expires_ms <= " NOW " RETURNING epoch, expires_ms"

#define RENEW_SQL(NOW)                                                                             \
    "UPDATE leases SET epoch = epoch + 1, expires_ms = " NOW " + CAST($4 AS BIGINT)"              \
    " WHERE name = $1 AND owner = $2 AND epoch = $3 AND expires_ms > " NOW                         \
    " RETURNING epoch, expires_ms"

#define FENCE_SQL(NOW)                                                                             \
    "SELECT epoch FROM leases WHERE name = $1 AND owner = $2 AND epoch = $3 AND expires_ms > " NOW

static bool is_pg(store *db)
{
    return store_backend_of(db) == STORE_PG;
}

/* Steps a statement returning (epoch, expires_ms) at most once. */
static int step_epoch(store_stmt *st, int64_t *epoch_out, int64_t *expires_out)
{
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        if (epoch_out) *epoch_out = store_col_int64(st, 0);
        if (expires_out) *expires_out = store_col_int64(st, 1);
        rc = store_step(st); /* finish the statement so the change is complete */
        if (rc == STORE_DONE) rc = STORE_ROW;
    }
    store_reset(st);
    return rc;
}

int lease_acquire(store *db, const char *name, const char *owner, int64_t ttl_ms, int64_t *epoch_out,
                  int64_t *expires_out)
{
    store_stmt *st = store_prepare(db, is_pg(db) ? ACQUIRE_SQL(NOW_PG) : ACQUIRE_SQL(NOW_SQ));
    store_bind_str(st, 1, name);
    store_bind_str(st, 2, owner);
    store_bind_int64(st, 3, ttl_ms);
    int rc = step_epoch(st, epoch_out, expires_out);
    if (rc < 0) return rc;
    return rc == STORE_ROW ? LEASE_OK : LEASE_TAKEN;
}

int lease_renew(store *db, const char *name, const char *owner, int64_t epoch, int64_t ttl_ms,
                int64_t *epoch_out, int64_t *expires_out)
{
    store_stmt *st = store_prepare(db, is_pg(db) ? RENEW_SQL(NOW_PG) : RENEW_SQL(NOW_SQ));
    store_bind_str(st, 1, name);
    store_bind_str(st, 2, owner);
    store_bind_int64(st, 3, epoch);
    store_bind_int64(st, 4, ttl_ms);
    int rc = step_epoch(st, epoch_out, expires_out);
    if (rc < 0) return rc;
    return rc == STORE_ROW ? LEASE_OK : LEASE_LOST;
}

int lease_release(store *db, const char *name, const char *owner, int64_t epoch)
{
    store_stmt *st = store_prepare(db, "UPDATE leases SET owner = NULL, expires_ms = 0"
                                       " WHERE name = $1 AND owner = $2 AND epoch = $3");
    store_bind_str(st, 1, name);
    store_bind_str(st, 2, owner);
    store_bind_int64(st, 3, epoch);
    int rc = store_step(st);
    int64_t n = rc == STORE_DONE ? store_changes(st) : 0;
    store_reset(st);
    if (rc < 0) return rc;
    return n == 1 ? LEASE_OK : LEASE_LOST;
}

int lease_fence(store *db, const char *name, const char *owner, int64_t epoch)
{
    store_stmt *st = store_prepare(db, is_pg(db) ? FENCE_SQL(NOW_PG) " FOR UPDATE" : FENCE_SQL(NOW_SQ));
    store_bind_str(st, 1, name);
    store_bind_str(st, 2, owner);
    store_bind_int64(st, 3, epoch);
    int rc = store_step(st);
    store_reset(st);
    if (rc < 0) return rc;
    return rc == STORE_ROW ? LEASE_OK : LEASE_LOST;
}

/* ---- holds ---------------------------------------------------------------- */

void lease_hold_init(lease_hold *h, const char *name, const char *owner)
{
    memset(h, 0, sizeof *h);
    snprintf(h->name, sizeof h->name, "%s", name);
    snprintf(h->owner, sizeof h->owner, "%s", owner);
    pthread_mutex_init(&h->mu, NULL);
}

void lease_hold_destroy(lease_hold *h)
{
    pthread_mutex_destroy(&h->mu);
}

/* A node stopped inside a fenced transaction keeps the lease row locked;
 * waiting the session's full lock timeout for it would stall our own
 * heartbeat, so an acquire gives up quickly and tries again next pass. */
static int acquire_briefly(store *db, lease_hold *h, int64_t ttl_ms, int64_t *epoch, int64_t *expires)
{
    if (store_backend_of(db) != STORE_PG) return lease_acquire(db, h->name, h->owner, ttl_ms, epoch, expires);
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = store_exec(db, "SET LOCAL lock_timeout = '200ms'");
    if (rc == STORE_OK) rc = lease_acquire(db, h->name, h->owner, ttl_ms, epoch, expires);
    if (rc < 0) {
        store_rollback(db);
        return rc;
    }
    int crc = store_commit(db);
    return crc < 0 ? crc : rc;
}

int lease_hold_acquire(store *db, lease_hold *h, int64_t ttl_ms, uint64_t *tenure)
{
    pthread_mutex_lock(&h->mu);
    int rc = LEASE_TAKEN;
    if (!h->held) {
        int64_t epoch = 0, expires = 0;
        rc = acquire_briefly(db, h, ttl_ms, &epoch, &expires);
        if (rc == LEASE_OK) {
            h->held = true;
            h->tenure++;
            h->epoch = epoch;
            h->expires_ms = expires;
            h->renewed_ns = base_mono_ns();
            h->ttl_ms = ttl_ms;
            if (tenure) *tenure = h->tenure;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int lease_hold_renew(store *db, lease_hold *h, int64_t ttl_ms)
{
    pthread_mutex_lock(&h->mu);
    int rc = LEASE_LOST;
    if (h->held) {
        int64_t epoch = 0, expires = 0;
        rc = lease_renew(db, h->name, h->owner, h->epoch, ttl_ms, &epoch, &expires);
        if (rc == LEASE_OK) {
            h->epoch = epoch;
            h->expires_ms = expires;
            h->renewed_ns = base_mono_ns();
            h->ttl_ms = ttl_ms;
        } else if (rc == LEASE_LOST) {
            h->held = false;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

void lease_hold_drop(lease_hold *h)
{
    pthread_mutex_lock(&h->mu);
    h->held = false;
    pthread_mutex_unlock(&h->mu);
}

int lease_hold_release(store *db, lease_hold *h)
{
    pthread_mutex_lock(&h->mu);
    int rc = LEASE_LOST;
    if (h->held) {
        rc = lease_release(db, h->name, h->owner, h->epoch);
        h->held = false;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* mu held. */
static bool current(const lease_hold *h, uint64_t tenure)
{
    return h->held && h->tenure == tenure && base_mono_ns() - h->renewed_ns < h->ttl_ms * 1000000;
}

bool lease_hold_valid(lease_hold *h, uint64_t tenure)
{
    pthread_mutex_lock(&h->mu);
    bool ok = current(h, tenure);
    pthread_mutex_unlock(&h->mu);
    return ok;
}

int64_t lease_hold_epoch(lease_hold *h)
{
    pthread_mutex_lock(&h->mu);
    int64_t e = h->held ? h->epoch : -1;
    pthread_mutex_unlock(&h->mu);
    return e;
}

int lease_hold_fence_begin(store *db, lease_hold *h, uint64_t tenure, int64_t *epoch)
{
    pthread_mutex_lock(&h->mu);
    if (!current(h, tenure)) {
        pthread_mutex_unlock(&h->mu);
        return LEASE_LOST;
    }
    int rc = store_begin(db);
    if (rc == STORE_OK) rc = lease_fence(db, h->name, h->owner, h->epoch);
    if (rc != LEASE_OK) {
        store_rollback(db);
        /* The database has the last word: the lease moved on. */
        if (rc == LEASE_LOST) h->held = false;
        pthread_mutex_unlock(&h->mu);
        return rc;
    }
    if (epoch) *epoch = h->epoch;
    return LEASE_OK;
}

int lease_hold_fence_end(store *db, lease_hold *h, bool commit)
{
    int rc = commit ? store_commit(db) : store_rollback(db);
    pthread_mutex_unlock(&h->mu);
    return rc;
}
