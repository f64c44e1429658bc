/* lease.c -- leases as compare-and-set statements on the `leases` row.
 *
 * Each decision is one statement that reads the database clock itself, so
 * no node's clock and no gap between "what time is it" and "decide" enters
 * into it. The SQL differs between backends only in that clock expression
 * and in FOR UPDATE. */
#include "cluster/lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define NOW_PG LEASE_SQL_NOW_PG
#define NOW_SQ LEASE_SQL_NOW_SQLITE

#define ACQUIRE_SQL(NOW)                                                                           \
    "INSERT INTO leases (name, owner, epoch, expires_ms) VALUES ($1, $2, 1, " NOW                  \
    " + CAST($3 AS BIGINT)) ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,"              \
    " epoch = leases.epoch + 1, expires_ms = excluded.expires_ms"                                  \
    " WHERE leases.owner IS NULL OR leases.expires_ms <= " NOW " OR leases.owner = excluded.owner"          \
    " RETURNING epoch, expires_ms"

#define RENEW_SQL(NOW)                                                                             \
    "UPDATE leases SET epoch = epoch + 1, expires_ms = " NOW " + CAST($4 AS BIGINT)"              \
    " WHERE name = $1 AND owner = $2 AND epoch = $3 AND expires_ms > " NOW                         \
    " RETURNING epoch, expires_ms"

#define FENCE_SQL(NOW)                                                                             \
    "SELECT epoch FROM leases WHERE name = $1 AND owner = $2 AND epoch = $3 AND expires_ms > " NOW

#define HELD_SQL(NOW)                                                                              \
    "SELECT name FROM leases WHERE substr(name, 1, length(CAST($1 AS TEXT))) = CAST($1 AS TEXT)"   \
    " AND owner IS NOT NULL AND owner <> $2 AND expires_ms > " NOW

/* Owner set, and either expired or the asker's own (its dead incarnation's,
 * or a tenure it lost): see lease_list_lapsed. */
#define LAPSED_SQL(NOW)                                                                            \
    "SELECT name FROM leases WHERE substr(name, 1, length(CAST($1 AS TEXT))) = CAST($1 AS TEXT)"   \
    " AND owner IS NOT NULL AND (owner = $2 OR expires_ms <= " NOW ")"

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

/* Calls fn with the name of each row the statement returns. */
static int list_names(store *db, const char *sql, const char *prefix, const char *owner,
                      void (*fn)(void *ctx, const char *name), void *ctx)
{
    store_stmt *st = store_prepare(db, sql);
    store_bind_str(st, 1, prefix);
    store_bind_str(st, 2, owner);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) fn(ctx, store_col_text(st, 0));
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

int lease_list_held(store *db, const char *prefix, const char *except_owner,
                    void (*fn)(void *ctx, const char *name), void *ctx)
{
    return list_names(db, is_pg(db) ? HELD_SQL(NOW_PG) : HELD_SQL(NOW_SQ), prefix, except_owner, fn, ctx);
}

int lease_list_lapsed(store *db, const char *prefix, const char *owner, void (*fn)(void *ctx, const char *name),
                      void *ctx)
{
    return list_names(db, is_pg(db) ? LAPSED_SQL(NOW_PG) : LAPSED_SQL(NOW_SQ), prefix, owner, fn, ctx);
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

/* A hold's own database work (acquire, renew, release) takes SQLite's
 * write lock before the hold's mutex, in the order a fenced transaction
 * takes them (store_begin, then lease_hold_fence_in). The other way round,
 * a renewal waiting for the lock under the mutex and a fenced writer
 * waiting for the mutex under the lock stalled each other until the busy
 * timeout (test-lease). PostgreSQL has no such file-wide lock: nothing to
 * take. True when a transaction was begun (end it with hold_tx_end);
 * *rc is a failure to begin one. */
static bool hold_tx_begin(store *db, int *rc)
{
    *rc = STORE_OK;
    if (is_pg(db)) return false;
    *rc = store_begin(db);
    return *rc == STORE_OK;
}

/* Commits (rc: the work's outcome, LEASE_* or a store error) or rolls back
 * after a failure; returns rc, or the commit's failure. */
static int hold_tx_end(store *db, bool tx, int rc)
{
    if (!tx) return rc;
    if (rc < 0) {
        store_rollback(db);
        return rc;
    }
    int crc = store_commit(db);
    return crc < 0 ? crc : rc;
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
    int rc;
    bool tx = hold_tx_begin(db, &rc);
    if (rc != STORE_OK) return rc;
    pthread_mutex_lock(&h->mu);
    int64_t epoch = 0, expires = 0, before = base_mono_ns();
    rc = h->held ? LEASE_TAKEN : acquire_briefly(db, h, ttl_ms, &epoch, &expires);
    rc = hold_tx_end(db, tx, rc); /* committed before the hold believes it */
    if (rc == LEASE_OK) {
        h->held = true;
        h->tenure++;
        h->epoch = epoch;
        h->expires_ms = expires;
        h->renewed_ns = before;
        h->ttl_ms = ttl_ms;
        if (tenure) *tenure = h->tenure;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int lease_hold_renew(store *db, lease_hold *h, int64_t ttl_ms)
{
    int rc;
    bool tx = hold_tx_begin(db, &rc);
    if (rc != STORE_OK) return rc;
    pthread_mutex_lock(&h->mu);
    int64_t epoch = 0, expires = 0, before = base_mono_ns();
    rc = h->held ? lease_renew(db, h->name, h->owner, h->epoch, ttl_ms, &epoch, &expires) : LEASE_LOST;
    rc = hold_tx_end(db, tx, rc); /* committed before the hold believes it */
    if (rc == LEASE_OK) {
        h->epoch = epoch;
        h->expires_ms = expires;
        h->renewed_ns = before;
        h->ttl_ms = ttl_ms;
    } else if (rc == LEASE_LOST) {
        h->held = false;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* One statement renews a batch: the holds travel as a JSON object of
 * name -> epoch, joined against the rows, so each row still renews only at
 * its own epoch, still ours and unexpired. */
#define RENEW_MANY_PG                                                                              \
    "UPDATE leases l SET epoch = l.epoch + 1, expires_ms = " NOW_PG " + CAST($3 AS BIGINT)"       \
    " FROM jsonb_each_text(CAST($2 AS jsonb)) AS h(name, epoch) WHERE l.name = h.name"             \
    " AND l.epoch = CAST(h.epoch AS BIGINT) AND l.owner = $1 AND l.expires_ms > " NOW_PG          \
    " RETURNING l.name, l.epoch, l.expires_ms"
#define RENEW_MANY_SQ                                                                              \
    "UPDATE leases SET epoch = epoch + 1, expires_ms = " NOW_SQ " + CAST($3 AS BIGINT)"           \
    " WHERE owner = $1 AND expires_ms > " NOW_SQ " AND EXISTS (SELECT 1 FROM json_each($2) h"     \
    " WHERE h.key = leases.name AND h.value = leases.epoch) RETURNING name, epoch, expires_ms"

static int cmp_hold_name(const void *a, const void *b)
{
    return strcmp((*(lease_hold *const *)a)->name, (*(lease_hold *const *)b)->name);
}

/* Appends "name":epoch to buf; names are escaped for JSON. */
static void json_add(char **buf, size_t *len, size_t *cap, const lease_hold *h)
{
    size_t need = *len + 2 * strlen(h->name) * 3 + 40;
    if (need > *cap) {
        size_t ncap = need * 2;
        char *nb = realloc(*buf, ncap);
        if (!nb) abort();
        *buf = nb;
        *cap = ncap;
    }
    char *o = *buf + *len;
    *o++ = *len > 1 ? ',' : ' ';
    *o++ = '"';
    for (const unsigned char *c = (const unsigned char *)h->name; *c; c++) {
        if (*c == '"' || *c == '\\') *o++ = '\\';
        if (*c < 0x20) o += sprintf(o, "\\u%04x", *c);
        else *o++ = (char)*c;
    }
    o += sprintf(o, "\":%lld", (long long)h->epoch);
    *len = (size_t)(o - *buf);
}

int lease_hold_renew_many(store *db, lease_hold **hs, size_t n, int64_t ttl_ms, int *res)
{
    if (n == 0) return STORE_OK;
    /* One order for every multi-hold lock, so two callers cannot deadlock. */
    qsort(hs, n, sizeof *hs, cmp_hold_name);
    size_t len = 1, cap = 256;
    char *json = malloc(cap);
    int64_t *got = calloc(2 * n, sizeof *got); /* epoch, expires of each renewed (epoch 0: not) */
    if (!json || !got) abort();
    json[0] = '{';
    const char *owner = hs[0]->owner;
    int rc;
    bool tx = hold_tx_begin(db, &rc);
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&hs[i]->mu);
        res[i] = hs[i]->held ? LEASE_LOST : -100; /* -100: not held, not asked */
        if (hs[i]->held) json_add(&json, &len, &cap, hs[i]);
    }
    json[len++] = '}';
    json[len] = '\0';
    int64_t now_ns = base_mono_ns();
    if (rc == STORE_OK) {
        store_stmt *st = store_prepare(db, store_backend_of(db) == STORE_PG ? RENEW_MANY_PG : RENEW_MANY_SQ);
        store_bind_str(st, 1, owner);
        store_bind_str(st, 2, json);
        store_bind_int64(st, 3, ttl_ms);
        while ((rc = store_step(st)) == STORE_ROW) {
            lease_hold key, *kp = &key;
            snprintf(key.name, sizeof key.name, "%s", store_col_text(st, 0));
            lease_hold **hit = bsearch(&kp, hs, n, sizeof *hs, cmp_hold_name);
            if (!hit) continue;
            size_t i = (size_t)(hit - hs);
            got[2 * i] = store_col_int64(st, 1);
            got[2 * i + 1] = store_col_int64(st, 2);
        }
        store_reset(st);
        rc = hold_tx_end(db, tx, rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR);
    }
    /* Applied once committed: a renewal rolled back renewed nothing. */
    for (size_t i = 0; i < n; i++) {
        if (rc != STORE_OK) {
            /* Nothing is known: the statement (and its changes) failed. */
            if (res[i] != -100) res[i] = rc;
        } else if (res[i] == LEASE_LOST && got[2 * i]) {
            res[i] = LEASE_OK;
            hs[i]->epoch = got[2 * i];
            hs[i]->expires_ms = got[2 * i + 1];
            hs[i]->renewed_ns = now_ns;
            hs[i]->ttl_ms = ttl_ms;
        } else if (res[i] == LEASE_LOST) {
            hs[i]->held = false;
        }
        if (res[i] == -100) res[i] = LEASE_LOST;
        pthread_mutex_unlock(&hs[i]->mu);
    }
    free(got);
    free(json);
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
    int rc;
    bool tx = hold_tx_begin(db, &rc);
    pthread_mutex_lock(&h->mu);
    if (rc == STORE_OK) rc = h->held ? lease_release(db, h->name, h->owner, h->epoch) : LEASE_LOST;
    h->held = false; /* released, or left to run out */
    rc = hold_tx_end(db, tx, rc);
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

int64_t lease_hold_valid_until_ns(lease_hold *h, uint64_t tenure)
{
    pthread_mutex_lock(&h->mu);
    int64_t until = h->held && h->tenure == tenure ? h->renewed_ns + h->ttl_ms * 1000000 : 0;
    pthread_mutex_unlock(&h->mu);
    return until;
}

int64_t lease_hold_epoch(lease_hold *h)
{
    pthread_mutex_lock(&h->mu);
    int64_t e = h->held ? h->epoch : -1;
    pthread_mutex_unlock(&h->mu);
    return e;
}

int lease_hold_fence_in(store *db, lease_hold *h, uint64_t tenure, int64_t *epoch)
{
    pthread_mutex_lock(&h->mu);
    if (!current(h, tenure)) {
        /* A tenure whose time ran out is over, and ended here: left
         * "held", no later acquire would ask the database again and the
         * lease would be lost to this node for good. */
        if (h->held && h->tenure == tenure) h->held = false;
        pthread_mutex_unlock(&h->mu);
        return LEASE_LOST;
    }
    int rc = lease_fence(db, h->name, h->owner, h->epoch);
    if (rc != LEASE_OK) {
        /* The database has the last word: the lease moved on. */
        if (rc == LEASE_LOST) h->held = false;
        pthread_mutex_unlock(&h->mu);
        return rc;
    }
    if (epoch) *epoch = h->epoch;
    return LEASE_OK;
}

void lease_hold_unfence(lease_hold *h)
{
    pthread_mutex_unlock(&h->mu);
}

int lease_hold_fence_begin(store *db, lease_hold *h, uint64_t tenure, int64_t *epoch)
{
    int rc = store_begin(db);
    if (rc != STORE_OK) return rc;
    rc = lease_hold_fence_in(db, h, tenure, epoch);
    if (rc != LEASE_OK) store_rollback(db);
    return rc;
}

int lease_hold_fence_end(store *db, lease_hold *h, bool commit)
{
    int rc = commit ? store_commit(db) : store_rollback(db);
    pthread_mutex_unlock(&h->mu);
    return rc;
}
