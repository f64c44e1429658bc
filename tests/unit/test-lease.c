/* test-lease.c -- leases on SQLite and PostgreSQL: compare-and-set acquire,
 * renewals that bump the epoch, expiry and takeover, release, and fencing
 * of a stale owner's writes (also against a takeover racing the write). */
#include "testutil.h"
#include "testdb.h"

#include <pthread.h>
#include <time.h>

#include "base/base.h"
#include "cluster/lease.h"

static int64_t q(store *s, const char *sql)
{
    int64_t v = -1;
    if (store_query_int64(s, sql, &v) != STORE_ROW) fail_msg("%s: %s", sql, store_errmsg(s));
    return v;
}

static void test_acquire_is_compare_and_set(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t e = 0, exp = 0, now = 0;
    assert_int_equal(store_now_ms(s, &now), STORE_OK);
    assert_int_equal(lease_acquire(s, "a", "n1", 10000, &e, &exp), LEASE_OK);
    assert_int_equal(e, 1);
    assert_true(exp >= now + 10000 && exp < now + 12000); /* the database clock */
    /* held and not expired: nobody else may take it */
    assert_int_equal(lease_acquire(s, "a", "n2", 10000, &e, NULL), LEASE_TAKEN);
    assert_int_equal(q(s, "SELECT epoch FROM leases WHERE name = 'a'"), 1);
    /* another lease is independent */
    assert_int_equal(lease_acquire(s, "b", "n2", 10000, &e, NULL), LEASE_OK);
    assert_int_equal(e, 1);
}

/* A node restarted under its old id takes its dead self's lease back at
 * once, at a new epoch: the old incarnation's epoch can neither renew,
 * fence a write nor release any more (issue 24.1). */
static void test_owner_takes_its_lease_back(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t old = 0, e = 0, renewed = 0;
    assert_int_equal(lease_acquire(s, "a", "n1", 60000, &old, NULL), LEASE_OK);
    assert_int_equal(lease_renew(s, "a", "n1", old, 60000, &renewed, NULL), LEASE_OK);
    assert_int_equal(lease_acquire(s, "a", "n1", 60000, &e, NULL), LEASE_OK); /* the restart */
    assert_true(e > renewed);
    assert_int_equal(lease_renew(s, "a", "n1", renewed, 60000, NULL, NULL), LEASE_LOST);
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(lease_fence(s, "a", "n1", renewed), LEASE_LOST);
    assert_int_equal(lease_fence(s, "a", "n1", e), LEASE_OK);
    assert_int_equal(store_rollback(s), STORE_OK);
    assert_int_equal(lease_release(s, "a", "n1", renewed), LEASE_LOST);
    assert_int_equal(lease_acquire(s, "a", "n2", 60000, NULL, NULL), LEASE_TAKEN);
    /* A hold of the new incarnation: the same, through lease_hold. */
    lease_hold h;
    lease_hold_init(&h, "a", "n1");
    uint64_t t = 0;
    int64_t fe = 0;
    assert_int_equal(lease_hold_acquire(s, &h, 60000, &t), LEASE_OK);
    assert_true(lease_hold_epoch(&h) > e);
    assert_int_equal(lease_fence(s, "a", "n1", e), LEASE_LOST);
    assert_int_equal(lease_hold_fence_begin(s, &h, t, &fe), LEASE_OK);
    assert_int_equal(lease_hold_fence_end(s, &h, false), STORE_OK);
    lease_hold_destroy(&h);
}

static void test_renew_bumps_epoch_and_checks_it(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t e = 0, e2 = 0, exp1 = 0, exp2 = 0;
    assert_int_equal(lease_acquire(s, "a", "n1", 10000, &e, &exp1), LEASE_OK);
    nap_ms(5);
    assert_int_equal(lease_renew(s, "a", "n1", e, 10000, &e2, &exp2), LEASE_OK);
    assert_int_equal(e2, e + 1);
    assert_true(exp2 > exp1);
    /* the old epoch is no longer ours to renew with */
    assert_int_equal(lease_renew(s, "a", "n1", e, 10000, NULL, NULL), LEASE_LOST);
    /* nor can another node renew it */
    assert_int_equal(lease_renew(s, "a", "n2", e2, 10000, NULL, NULL), LEASE_LOST);
    assert_int_equal(lease_renew(s, "nope", "n1", 1, 10000, NULL, NULL), LEASE_LOST);
    assert_int_equal(q(s, "SELECT epoch FROM leases WHERE name = 'a'"), e2);
}

static void test_expiry_and_takeover(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t e1 = 0, e2 = 0;
    assert_int_equal(lease_acquire(s, "a", "n1", 150, &e1, NULL), LEASE_OK);
    assert_int_equal(lease_acquire(s, "a", "n2", 150, NULL, NULL), LEASE_TAKEN);
    nap_ms(250);
    /* expired: renewing is refused even though nobody took it yet */
    assert_int_equal(lease_renew(s, "a", "n1", e1, 150, NULL, NULL), LEASE_LOST);
    assert_int_equal(lease_acquire(s, "a", "n2", 10000, &e2, NULL), LEASE_OK);
    assert_true(e2 > e1);
    assert_int_equal(lease_fence(s, "a", "n1", e1), LEASE_LOST);
    assert_int_equal(lease_release(s, "a", "n1", e1), LEASE_LOST);
}

static void test_release(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t e1 = 0, e2 = 0;
    assert_int_equal(lease_acquire(s, "a", "n1", 60000, &e1, NULL), LEASE_OK);
    assert_int_equal(lease_release(s, "a", "n2", e1), LEASE_LOST); /* not n2's */
    assert_int_equal(lease_release(s, "a", "n1", e1), LEASE_OK);
    assert_int_equal(q(s, "SELECT count(*) FROM leases WHERE name = 'a' AND owner IS NULL"), 1);
    /* free at once, no waiting for expiry; epochs keep growing */
    assert_int_equal(lease_acquire(s, "a", "n2", 60000, &e2, NULL), LEASE_OK);
    assert_int_equal(e2, e1 + 1);
    assert_int_equal(lease_release(s, "a", "n1", e1), LEASE_LOST);
}

typedef struct name_list {
    char v[8][16];
    int n;
} name_list;

static void add_name(void *ctx, const char *name)
{
    name_list *ns = ctx;
    if (ns->n < 8) snprintf(ns->v[ns->n++], sizeof ns->v[0], "%s", name);
}

static bool has_name(const name_list *ns, const char *name)
{
    for (int i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0) return true;
    return false;
}

static void test_list_held(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t e = 0;
    assert_int_equal(lease_acquire(s, "g/1", "n1", 60000, NULL, NULL), LEASE_OK);
    assert_int_equal(lease_acquire(s, "g/2", "n2", 60000, NULL, NULL), LEASE_OK);
    assert_int_equal(lease_acquire(s, "g/3", "n1", 100, NULL, NULL), LEASE_OK); /* will expire */
    assert_int_equal(lease_acquire(s, "g/4", "n1", 60000, &e, NULL), LEASE_OK);
    assert_int_equal(lease_release(s, "g/4", "n1", e), LEASE_OK);
    assert_int_equal(lease_acquire(s, "h/1", "n1", 60000, NULL, NULL), LEASE_OK); /* another prefix */
    assert_int_equal(lease_acquire(s, "xg/1", "n1", 60000, NULL, NULL), LEASE_OK); /* contains it, later */
    nap_ms(200);
    name_list ns = {0};
    assert_int_equal(lease_list_held(s, "g/", "n3", add_name, &ns), STORE_OK);
    assert_int_equal(ns.n, 2);
    assert_true(has_name(&ns, "g/1") && has_name(&ns, "g/2"));
    ns.n = 0;
    assert_int_equal(lease_list_held(s, "none/", "n3", add_name, &ns), STORE_OK);
    assert_int_equal(ns.n, 0);
    /* The asker's own leases are not "held" for it: it may take them. */
    ns.n = 0;
    assert_int_equal(lease_list_held(s, "g/", "n1", add_name, &ns), STORE_OK);
    assert_int_equal(ns.n, 1);
    assert_true(has_name(&ns, "g/2"));
    /* What it lists is what acquire refuses; what it leaves out is free. */
    assert_int_equal(lease_acquire(s, "g/2", "n1", 60000, NULL, NULL), LEASE_TAKEN);
    assert_int_equal(lease_acquire(s, "g/3", "n2", 60000, NULL, NULL), LEASE_OK);
    assert_int_equal(lease_acquire(s, "g/4", "n2", 60000, NULL, NULL), LEASE_OK);
}

/* A lapsed lease's holder is gone without releasing it: expired, or the
 * asker's own (a dead incarnation of it). Released or live ones are not. */
static void test_list_lapsed(void **state)
{
    store *s = ((testdb *)*state)->s;
    int64_t e = 0;
    assert_int_equal(lease_acquire(s, "g/1", "n1", 60000, NULL, NULL), LEASE_OK); /* the asker's */
    assert_int_equal(lease_acquire(s, "g/2", "n2", 60000, NULL, NULL), LEASE_OK); /* live */
    assert_int_equal(lease_acquire(s, "g/3", "n2", 100, NULL, NULL), LEASE_OK);   /* will expire */
    assert_int_equal(lease_acquire(s, "g/4", "n2", 60000, &e, NULL), LEASE_OK);
    assert_int_equal(lease_release(s, "g/4", "n2", e), LEASE_OK);                 /* released */
    assert_int_equal(lease_acquire(s, "h/1", "n2", 100, NULL, NULL), LEASE_OK);   /* another prefix */
    nap_ms(200);
    name_list ns = {0};
    assert_int_equal(lease_list_lapsed(s, "g/", "n1", add_name, &ns), STORE_OK);
    assert_int_equal(ns.n, 2);
    assert_true(has_name(&ns, "g/1") && has_name(&ns, "g/3"));
    ns.n = 0;
    assert_int_equal(lease_list_lapsed(s, "g/", "n3", add_name, &ns), STORE_OK);
    assert_int_equal(ns.n, 1);
    assert_true(has_name(&ns, "g/3"));
}

static void test_fence(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    assert_int_equal(store_exec(s, "CREATE TABLE guarded (v BIGINT)"), STORE_OK);
    int64_t e1 = 0, e2 = 0;
    assert_int_equal(lease_acquire(s, "a", "n1", 200, &e1, NULL), LEASE_OK);
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(lease_fence(s, "a", "n1", e1), LEASE_OK);
    assert_int_equal(store_exec(s, "INSERT INTO guarded VALUES (1)"), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);

    /* n1 stalls past expiry; n2 takes over on its own connection */
    store *other = testdb_open(db);
    assert_non_null(other);
    nap_ms(300);
    assert_int_equal(lease_acquire(other, "a", "n2", 60000, &e2, NULL), LEASE_OK);
    /* n1's late write is rejected at the database */
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(lease_fence(s, "a", "n1", e1), LEASE_LOST);
    assert_int_equal(store_rollback(s), STORE_OK);
    /* n2's current epoch is accepted, an older one of n2's is not */
    assert_int_equal(store_begin(other), STORE_OK);
    assert_int_equal(lease_fence(other, "a", "n2", e2 - 1), LEASE_LOST);
    assert_int_equal(store_rollback(other), STORE_OK);
    assert_int_equal(store_begin(other), STORE_OK);
    assert_int_equal(lease_fence(other, "a", "n2", e2), LEASE_OK);
    assert_int_equal(store_exec(other, "INSERT INTO guarded VALUES (2)"), STORE_OK);
    assert_int_equal(store_commit(other), STORE_OK);
    assert_int_equal(q(s, "SELECT count(*) FROM guarded"), 2);
    store_close(other);
}

/* A takeover racing a fenced write: the write holds the lease row from its
 * fence to its commit, so the takeover waits and the write stands (it was
 * valid when checked), and a renewal with the pre-takeover epoch fails. */
typedef struct racer {
    const testdb *db;
    int64_t epoch;
    int rc;
} racer;

static void *take_over(void *p)
{
    racer *r = p;
    store *s = testdb_open(r->db);
    r->rc = s ? lease_acquire(s, "a", "n2", 60000, &r->epoch, NULL) : -99;
    store_close(s);
    return NULL;
}

static void test_fence_blocks_takeover(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    assert_int_equal(store_exec(s, "CREATE TABLE guarded (v BIGINT)"), STORE_OK);
    int64_t e1 = 0;
    assert_int_equal(lease_acquire(s, "a", "n1", 300, &e1, NULL), LEASE_OK);
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(lease_fence(s, "a", "n1", e1), LEASE_OK);
    nap_ms(400); /* expires while we hold the row */
    if (db->backend == STORE_PG) {
        /* a hold's acquire does not wait long on a stopped holder's lock */
        store *other = testdb_open(db);
        lease_hold h;
        lease_hold_init(&h, "a", "n3");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(lease_hold_acquire(other, &h, 60000, NULL), STORE_BUSY);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_true(t1.tv_sec - t0.tv_sec < 2);
        assert_int_equal(lease_hold_epoch(&h), -1);
        lease_hold_destroy(&h);
        store_close(other);
    }
    racer r = {db, 0, -100};
    pthread_t t;
    pthread_create(&t, NULL, take_over, &r);
    nap_ms(200);
    assert_int_equal(r.rc, -100); /* still waiting for our row lock */
    assert_int_equal(store_exec(s, "INSERT INTO guarded VALUES (1)"), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    pthread_join(t, NULL);
    assert_int_equal(r.rc, LEASE_OK);
    assert_true(r.epoch > e1);
    assert_int_equal(lease_renew(s, "a", "n1", e1, 300, NULL, NULL), LEASE_LOST);
}

/* Holds: one tenure from acquire to loss; renewals keep a long unit of work
 * valid; a re-acquire starts a new tenure that an old run cannot use. */
static void test_hold_tenure(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    lease_hold h;
    lease_hold_init(&h, "a", "n1");
    uint64_t t1 = 0, t2 = 0;
    int64_t fe = 0;
    /* 1.5 s: the renewals and the fence must all land inside it, and a
     * sanitized build on a busy machine once took longer than 300 ms. */
    assert_int_equal(lease_hold_acquire(s, &h, 1500, &t1), LEASE_OK);
    int64_t e_start = lease_hold_epoch(&h);
    for (int i = 0; i < 3; i++) assert_int_equal(lease_hold_renew(s, &h, 1500), LEASE_OK);
    /* a run that began at e_start writes at the current epoch, accepted */
    assert_int_equal(lease_hold_fence_begin(s, &h, t1, &fe), LEASE_OK);
    assert_int_equal(fe, e_start + 3);
    assert_int_equal(lease_hold_fence_end(s, &h, true), STORE_OK);
    assert_true(lease_hold_valid(&h, t1));

    /* lost: expired and taken by n2 */
    nap_ms(1600);
    store *other = testdb_open(db);
    assert_int_equal(lease_acquire(other, "a", "n2", 200, NULL, NULL), LEASE_OK);
    assert_int_equal(lease_hold_renew(s, &h, 300), LEASE_LOST);
    assert_false(lease_hold_valid(&h, t1));
    assert_int_equal(lease_hold_fence_begin(s, &h, t1, &fe), LEASE_LOST);
    assert_int_equal(lease_hold_epoch(&h), -1);

    /* n1 gets it back later: a new tenure; the old one stays fenced */
    nap_ms(300);
    assert_int_equal(lease_hold_acquire(s, &h, 60000, &t2), LEASE_OK);
    assert_true(t2 != t1);
    assert_int_equal(lease_hold_fence_begin(s, &h, t1, &fe), LEASE_LOST);
    assert_int_equal(lease_hold_fence_begin(s, &h, t2, &fe), LEASE_OK);
    assert_int_equal(lease_hold_fence_end(s, &h, false), STORE_OK);

    /* the database has the last word: a fence that finds the lease moved
     * on ends the tenure even if no renewal noticed yet */
    assert_int_equal(store_exec(other, "UPDATE leases SET owner = 'n3', epoch = epoch + 1"), STORE_OK);
    assert_int_equal(lease_hold_fence_begin(s, &h, t2, &fe), LEASE_LOST);
    assert_false(lease_hold_valid(&h, t2));

    /* release frees the row for others at once */
    assert_int_equal(store_exec(other, "UPDATE leases SET owner = NULL"), STORE_OK);
    assert_int_equal(lease_hold_acquire(s, &h, 60000, &t2), LEASE_OK);
    assert_int_equal(lease_hold_release(s, &h), LEASE_OK);
    assert_int_equal(lease_acquire(other, "a", "n2", 60000, NULL, NULL), LEASE_OK);
    store_close(other);
    lease_hold_destroy(&h);
}

/* A tenure whose time ran out on this node's clock, with no renewal to
 * notice, is over once a fence finds it so: refused and ended, so the lease can be
 * acquired again once the row expires. (The reminder engine lost groups
 * for good this way: its fence said LEASE_LOST, but the hold stayed
 * "held" and every later acquire answered LEASE_TAKEN without asking.) */
static void test_lapsed_tenure_ends(void **state)
{
    store *s = ((testdb *)*state)->s;
    lease_hold h;
    lease_hold_init(&h, "a", "n1");
    uint64_t t1 = 0, t2 = 0;
    int64_t fe = 0;
    assert_int_equal(lease_hold_acquire(s, &h, 200, &t1), LEASE_OK);
    nap_ms(300);
    assert_int_equal(lease_hold_fence_begin(s, &h, t1, &fe), LEASE_LOST);
    assert_int_equal(lease_hold_epoch(&h), -1);
    assert_int_equal(lease_hold_acquire(s, &h, 60000, &t2), LEASE_OK);
    assert_true(t2 != t1);
    assert_int_equal(lease_hold_fence_begin(s, &h, t2, &fe), LEASE_OK);
    assert_int_equal(lease_hold_fence_end(s, &h, false), STORE_OK);
    lease_hold_destroy(&h);
}

/* Several leases fenced inside one transaction: a lease found lost is left
 * out (its tenure ends) while the transaction carries on with the rest. */
static void test_fence_in_shares_a_transaction(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    lease_hold a, b;
    lease_hold_init(&a, "a", "n1");
    lease_hold_init(&b, "b", "n1");
    uint64_t ta = 0, tb = 0;
    int64_t ea = 0, eb = 0;
    assert_int_equal(lease_hold_acquire(s, &a, 60000, &ta), LEASE_OK);
    assert_int_equal(lease_hold_acquire(s, &b, 60000, &tb), LEASE_OK);
    store *other = testdb_open(db);
    assert_int_equal(store_exec(other, "UPDATE leases SET owner = 'n3', epoch = epoch + 1 WHERE name = 'b'"),
                     STORE_OK);

    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(lease_hold_fence_in(s, &a, ta, &ea), LEASE_OK);
    assert_true(ea > 0);
    assert_int_equal(lease_hold_fence_in(s, &b, tb, &eb), LEASE_LOST);
    assert_false(lease_hold_valid(&b, tb)); /* b's mutex is free again, its tenure over */
    assert_int_equal(store_exec(s, "INSERT INTO reminder_dirty (event_id, gen, marked_ms) VALUES (7, 1, 1)"),
                     STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    lease_hold_unfence(&a);
    assert_true(lease_hold_valid(&a, ta));
    int64_t n = 0;
    assert_int_equal(store_query_int64(other, "SELECT count(*) FROM reminder_dirty WHERE event_id = 7", &n),
                     STORE_ROW);
    assert_int_equal(n, 1);

    /* a tenure already over is refused before the database is asked */
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(lease_hold_fence_in(s, &b, tb, &eb), LEASE_LOST);
    assert_int_equal(store_rollback(s), STORE_OK);
    store_close(other);
    lease_hold_destroy(&a);
    lease_hold_destroy(&b);
}

typedef struct renewal {
    store *db;
    lease_hold *h;
    int rc;
} renewal;

static void *renew_on_thread(void *p)
{
    renewal *r = p;
    r->rc = lease_hold_renew(r->db, r->h, 60000);
    return NULL;
}

/* A renewal on another thread while a fenced transaction is being begun:
 * the fence must not wait for the renewal. Both take the database's write
 * lock (SQLite: the file's, at BEGIN) and the hold's mutex; a renewal that
 * took the mutex first and then waited for the lock, while the fencing
 * writer held the lock and waited for the mutex, stalled both until
 * SQLite's busy timeout -- a job's run or a heartbeat every so often, and
 * the chat writer's sends once ids came from a lease. */
static void test_fence_does_not_wait_for_a_renewal(void **state)
{
    testdb *db = *state;
    store *s = db->s, *other = testdb_open(db);
    lease_hold h;
    lease_hold_init(&h, "a", "n1");
    uint64_t t = 0;
    assert_int_equal(lease_hold_acquire(s, &h, 60000, &t), LEASE_OK);
    assert_int_equal(store_begin(s), STORE_OK);
    renewal r = {.db = other, .h = &h};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, renew_on_thread, &r), 0);
    usleep(150 * 1000); /* the renewal is waiting for the file's lock (SQLite) */
    int64_t t0 = base_mono_ns(), epoch = 0;
    int rc = lease_hold_fence_in(s, &h, t, &epoch);
    int64_t waited_ms = (base_mono_ns() - t0) / 1000000;
    assert_int_equal(rc, LEASE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    lease_hold_unfence(&h);
    pthread_join(th, NULL);
    if (waited_ms >= 1000) fail_msg("the fence waited %lld ms for the renewal", (long long)waited_ms);
    assert_int_equal(r.rc, LEASE_OK);
    assert_true(lease_hold_valid(&h, t));
    store_close(other);
    lease_hold_destroy(&h);
}

/* Renewing many holds in one statement: each at its own epoch; one taken
 * over meanwhile is lost, the rest renewed; odd names survive the JSON. */
static void test_renew_many(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    const char *names[] = {"job:b", "job:a", "we\"ird\\name", "job:c"};
    lease_hold h[4];
    lease_hold *hs[4];
    int res[4];
    for (int i = 0; i < 4; i++) {
        lease_hold_init(&h[i], names[i], "n1");
        hs[i] = &h[i];
    }
    for (int i = 0; i < 3; i++) assert_int_equal(lease_hold_acquire(s, &h[i], 200, NULL), LEASE_OK);
    /* job:a is lost to n2 behind n1's back; job:c was never held */
    nap_ms(300);
    store *other = testdb_open(db);
    assert_int_equal(lease_acquire(other, "job:a", "n2", 60000, NULL, NULL), LEASE_OK);
    /* the others expired too but nobody took them: renewal refuses */
    assert_int_equal(lease_hold_renew_many(s, hs, 4, 60000, res), STORE_OK);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(res[i], LEASE_LOST);
        assert_int_equal(lease_hold_epoch(hs[i]), -1);
    }
    /* fresh tenures; renew twice in a batch: epochs +1 each time */
    assert_int_equal(lease_hold_acquire(s, &h[0], 60000, NULL), LEASE_OK);
    assert_int_equal(lease_hold_acquire(s, &h[2], 60000, NULL), LEASE_OK);
    int64_t e0 = lease_hold_epoch(&h[0]), e2 = lease_hold_epoch(&h[2]);
    for (int round = 1; round <= 2; round++) {
        for (int i = 0; i < 4; i++) hs[i] = &h[i];
        assert_int_equal(lease_hold_renew_many(s, hs, 4, 60000, res), STORE_OK);
        for (int i = 0; i < 4; i++) {
            /* hs is sorted now; match answers through the pointers */
            if (hs[i] == &h[0] || hs[i] == &h[2]) assert_int_equal(res[i], LEASE_OK);
            else assert_int_equal(res[i], LEASE_LOST);
        }
        assert_int_equal(lease_hold_epoch(&h[0]), e0 + round);
        assert_int_equal(lease_hold_epoch(&h[2]), e2 + round);
    }
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT epoch FROM leases WHERE name = 'job:b' AND owner = 'n1'");
    assert_int_equal(q(s, sql), e0 + 2);
    /* a stale epoch in the hold is refused for that lease only */
    assert_int_equal(store_exec(other, "UPDATE leases SET epoch = epoch + 5 WHERE name = 'job:b'"), STORE_OK);
    for (int i = 0; i < 4; i++) hs[i] = &h[i];
    assert_int_equal(lease_hold_renew_many(s, hs, 4, 60000, res), STORE_OK);
    assert_int_equal(lease_hold_epoch(&h[0]), -1);
    assert_int_equal(lease_hold_epoch(&h[2]), e2 + 3);
    store_close(other);
    for (int i = 0; i < 4; i++) lease_hold_destroy(&h[i]);
}

/* Many nodes race for one free lease: exactly one wins each round. */
typedef struct contender {
    const testdb *db;
    char owner[16];
    int wins;
} contender;

static void *contend(void *p)
{
    contender *c = p;
    store *s = testdb_open(c->db);
    if (!s) return NULL;
    for (int round = 0; round < 20; round++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", round);
        int rc;
        do rc = lease_acquire(s, name, c->owner, 60000, NULL, NULL);
        while (rc == STORE_BUSY);
        if (rc == LEASE_OK) c->wins++;
    }
    store_close(s);
    return NULL;
}

static void test_one_winner(void **state)
{
    testdb *db = *state;
    contender c[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (contender){db, "", 0};
        snprintf(c[i].owner, sizeof c[i].owner, "n%d", i);
        pthread_create(&t[i], NULL, contend, &c[i]);
    }
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        total += c[i].wins;
    }
    assert_int_equal(total, 20);
    assert_int_equal(q(db->s, "SELECT count(*) FROM leases WHERE epoch = 1"), 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST(test_acquire_is_compare_and_set),
        TESTDB_TEST(test_owner_takes_its_lease_back),
        TESTDB_TEST(test_renew_bumps_epoch_and_checks_it),
        TESTDB_TEST(test_expiry_and_takeover),
        TESTDB_TEST(test_release),
        TESTDB_TEST(test_list_held),
        TESTDB_TEST(test_list_lapsed),
        TESTDB_TEST(test_fence),
        TESTDB_TEST(test_fence_blocks_takeover),
        TESTDB_TEST(test_hold_tenure),
        TESTDB_TEST(test_lapsed_tenure_ends),
        TESTDB_TEST(test_fence_in_shares_a_transaction),
        TESTDB_TEST(test_fence_does_not_wait_for_a_renewal),
        TESTDB_TEST(test_renew_many),
        TESTDB_TEST(test_one_winner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
