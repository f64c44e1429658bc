/* lease.h -- named leases in the database, with epochs and fencing.
 *
 * A lease is one row of `leases`: name, owner (a node id, NULL when free),
 * epoch, expires_ms. Every time in these calls is the database's clock,
 * read inside the very statement that decides (never a node's clock), so
 * clock skew between nodes cannot give a lease two owners.
 *
 *   acquire  compare-and-set: succeeds only when the lease is free or
 *            expired, or is already the caller's: a node restarted under
 *            its old id (identity.h) takes back at once what its dead self
 *            held, and a node whose tenure ended on its side (renewals
 *            failed) may take the lease back while the database still
 *            names it. Sets owner and expiry and bumps the epoch, so the
 *            earlier tenure's writes are fenced off either way.
 *   renew    succeeds only while the caller still owns it at the epoch it
 *            knows and it has not expired; bumps the epoch again.
 *   release  frees it (owner NULL) if still owned at that epoch. The epoch
 *            is kept, so epochs of one lease only ever grow.
 *   fence    inside a transaction: locks the lease row (SELECT ... FOR
 *            UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE already holds
 *            the database's write lock) and checks owner, epoch and expiry.
 *            Writes made in the same transaction after a successful fence
 *            commit only if the lease was still ours at that epoch: a
 *            takeover needs the row lock, so it cannot slip in between the
 *            check and the write.
 *
 * Renewals and long work. Every renewal bumps the epoch, so a unit of work
 * that began at epoch 7 may, three heartbeats later, be running while the
 * lease is at epoch 10 -- still ours. We do NOT fence that work with the
 * epoch it started under (that would reject every long run of a healthy
 * owner). A lease_hold is one tenure: from one acquire until the lease is
 * released or lost. A fenced write carries the hold's *current* epoch, read
 * under the hold's mutex, which a renewal also holds while it updates the
 * database and the hold together; so the epoch a write carries is the one
 * in the database unless the lease moved on. A unit of work remembers the
 * tenure it started in; once the hold is lost (renewal refused, too many
 * failed renewals, or released) that tenure is over for good and its
 * writes are refused locally, and in the database too, because whoever
 * took the lease over bumped the epoch. A later re-acquire by the same
 * node starts a new tenure, so a stale run from the old one stays fenced.
 * Keep fenced transactions short: a renewal waits for them.
 */
#ifndef CHIME_CLUSTER_LEASE_H
#define CHIME_CLUSTER_LEASE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* The database clock in ms, as an SQL expression evaluated by the
 * statement itself, per backend. */
#define LEASE_SQL_NOW_PG "(CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT))"
#define LEASE_SQL_NOW_SQLITE "(CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER))"

#define LEASE_NAME_MAX 200
#define LEASE_OWNER_MAX 64

/* Results; errors below 0 are the store's (STORE_BUSY, STORE_CONN, ...). */
enum {
    LEASE_OK = 0,
    LEASE_TAKEN = 1, /* acquire: someone else holds it and it has not expired */
    LEASE_LOST = 2,  /* renew/fence/release: not ours at that epoch, or expired */
};

/* The row-level operations. Each is one statement (fence: inside the
 * caller's transaction). epoch_out/expires_out may be NULL. */
int lease_acquire(store *db, const char *name, const char *owner, int64_t ttl_ms, int64_t *epoch_out,
                  int64_t *expires_out);
int lease_renew(store *db, const char *name, const char *owner, int64_t epoch, int64_t ttl_ms,
                int64_t *epoch_out, int64_t *expires_out);
int lease_release(store *db, const char *name, const char *owner, int64_t epoch);
int lease_fence(store *db, const char *name, const char *owner, int64_t epoch);

/* Calls fn for every lease whose name begins with prefix and that someone
 * other than except_owner holds right now (owner set, not expired by the
 * database's clock; a lease of except_owner's is free to it). A
 * plain read that locks nothing: a node rebalancing asks it first so as
 * not to try leases it cannot get -- on PostgreSQL such an acquire waits
 * (up to its 200 ms lock timeout) for the holder's fenced transaction to
 * end. The answer may be stale by the time it is used; acquire still
 * decides. STORE_OK or an error. */
int lease_list_held(store *db, const char *prefix, const char *except_owner,
                    void (*fn)(void *ctx, const char *name), void *ctx);

/* Calls fn for every lease whose name begins with prefix whose holder is
 * gone without releasing it: owner set, and either expired by the
 * database's clock or owner itself (a dead incarnation of the asker, or a
 * tenure of its own that ended). Work such a holder had taken and not
 * finished is nobody's now, whereas a released lease (owner NULL) may
 * have been given up by a live node still finishing what it took. A
 * plain read, like lease_list_held; the answer may be stale by the time
 * it is used. STORE_OK or an error. */
int lease_list_lapsed(store *db, const char *prefix, const char *owner, void (*fn)(void *ctx, const char *name),
                      void *ctx);

/* One tenure of one lease as a node sees it; shared between the thread that
 * renews it and the threads whose work it guards. */
typedef struct lease_hold {
    char name[LEASE_NAME_MAX + 1];
    char owner[LEASE_OWNER_MAX + 1];
    pthread_mutex_t mu; /* guards everything below */
    bool held;
    uint64_t tenure;    /* bumped by every successful acquire */
    int64_t epoch;
    int64_t expires_ms; /* database clock */
    int64_t renewed_ns; /* base_mono_ns just before the last acquire/renewal was sent */
    int64_t ttl_ms;     /* of that acquire/renewal */
} lease_hold;

void lease_hold_init(lease_hold *h, const char *name, const char *owner);
void lease_hold_destroy(lease_hold *h);

/* Acquires into h (which must not be held); on LEASE_OK *tenure is the new
 * tenure, which guarded work passes to lease_hold_fence_begin. Not inside
 * a transaction: on PostgreSQL it runs in its own, waiting at most 200 ms
 * for a row lock (STORE_BUSY then), since the holder of that lock may be a
 * stopped process. */
int lease_hold_acquire(store *db, lease_hold *h, int64_t ttl_ms, uint64_t *tenure);
/* Renews a held lease. LEASE_LOST ends the tenure; an error (< 0) leaves it
 * held, for the caller's retry policy to decide. LEASE_LOST when not held. */
int lease_hold_renew(store *db, lease_hold *h, int64_t ttl_ms);
/* Renews n holds of one owner in one statement (sorting hs by name). res[i]
 * gets hs[i]'s answer as lease_hold_renew would give it; a database error
 * leaves every hold as it was (res = the error). Returns STORE_OK or the
 * error. While the statement runs it holds every hold's mutex, so keep
 * batches to a few thousand. */
int lease_hold_renew_many(store *db, lease_hold **hs, size_t n, int64_t ttl_ms, int *res);
/* Ends the tenure without touching the database (after failed renewals:
 * the work must stop at once even though the database cannot be told). */
void lease_hold_drop(lease_hold *h);
/* Releases in the database and ends the tenure. */
int lease_hold_release(store *db, lease_hold *h);
/* Is this tenure still current, as far as this node knows? Also false
 * once a lease length has passed on this node's monotonic clock since the
 * last successful renewal was *sent*: the database computed the expiry
 * after that, so by then the lease may have expired (errs on the safe
 * side), even if the renewing thread has not run yet -- a process resumed
 * after SIGSTOP notices before doing any work. (Only a question: a renewal
 * may still find the lease ours; a fence that finds it run out ends it.) */
bool lease_hold_valid(lease_hold *h, uint64_t tenure);
/* When, on base_mono_ns's clock, lease_hold_valid stops being true for
 * this tenure unless it is renewed first (0 when it is already over): for
 * threads that must check validity often without taking the mutex, which
 * a renewal or a fenced transaction holds for a round trip. */
int64_t lease_hold_valid_until_ns(lease_hold *h, uint64_t tenure);
/* Current epoch, or -1 when not held. */
int64_t lease_hold_epoch(lease_hold *h);

/* Begins a transaction on db and fences it with the hold's current epoch.
 * LEASE_OK: the transaction is open, *epoch says which epoch it is fenced
 * at, and the hold's mutex is held until lease_hold_fence_end. LEASE_LOST
 * (tenure over, or the database says the lease moved on; the latter also
 * ends the tenure) or an error: nothing is open, nothing held. */
int lease_hold_fence_begin(store *db, lease_hold *h, uint64_t tenure, int64_t *epoch);
/* Commits (commit=true) or rolls back, then unlocks the hold. Returns the
 * commit's result. */
int lease_hold_fence_end(store *db, lease_hold *h, bool commit);
/* The same fence inside a transaction the caller has open, so that one
 * transaction can carry the work of several leases (each fenced). On
 * LEASE_OK the hold's mutex stays locked: after the commit or rollback,
 * call lease_hold_unfence. LEASE_LOST leaves the transaction open and
 * usable (only this lease's work must be left out); an error (< 0) means
 * the transaction must be rolled back. */
int lease_hold_fence_in(store *db, lease_hold *h, uint64_t tenure, int64_t *epoch);
void lease_hold_unfence(lease_hold *h);

#endif
