/* test-identity.c -- node ids held by locks that only a live process holds
 * (issue 24.1), on SQLite and PostgreSQL: slots "<host>-N" taken in turn
 * and free again once given up, an explicit id refused while a live node
 * has it, and on PostgreSQL a lock lost with its connection taken again --
 * unless another process claimed the id meanwhile. */
#include "testutil.h"
#include "testdb.h"

#include "cluster/identity.h"

static void host_slot(char *buf, size_t n, int slot)
{
    char host[40] = "node";
    gethostname(host, sizeof host);
    host[32] = '\0';
    snprintf(buf, n, "%s-%d", host, slot);
}

static void test_slots(void **state)
{
    testdb *db = *state;
    char err[300], one[80], two[80];
    host_slot(one, sizeof one, 1);
    host_slot(two, sizeof two, 2);
    node_identity *a = node_identity_claim(db->url, NULL, err, sizeof err);
    assert_non_null(a);
    assert_string_equal(node_identity_id(a), one);
    node_identity *b = node_identity_claim(db->url, "", err, sizeof err);
    assert_non_null(b);
    assert_string_equal(node_identity_id(b), two);
    /* The first dies: a process starting now is it again. */
    node_identity_release(a);
    a = node_identity_claim(db->url, NULL, err, sizeof err);
    assert_non_null(a);
    assert_string_equal(node_identity_id(a), one);
    assert_int_equal(node_identity_keep(a, err, sizeof err), 0);
    node_identity_release(a);
    node_identity_release(b);
}

static void test_requested_id_is_unique(void **state)
{
    testdb *db = *state;
    char err[300] = "", two[80];
    node_identity *a = node_identity_claim(db->url, "web-a", err, sizeof err);
    assert_non_null(a);
    assert_string_equal(node_identity_id(a), "web-a");
    assert_null(node_identity_claim(db->url, "web-a", err, sizeof err));
    assert_non_null(strstr(err, "web-a"));
    /* A slot another node holds cannot be asked for by name either. */
    node_identity *b = node_identity_claim(db->url, NULL, err, sizeof err);
    assert_non_null(b);
    snprintf(two, sizeof two, "%s", node_identity_id(b));
    assert_null(node_identity_claim(db->url, two, err, sizeof err));
    node_identity_release(a);
    a = node_identity_claim(db->url, "web-a", err, sizeof err);
    assert_non_null(a);
    node_identity_release(a);
    node_identity_release(b);
}

/* PostgreSQL: the lock lives on a connection; if that connection dies,
 * keep takes the lock again, and fails if someone else has the id now. */
static void test_lost_lock_is_taken_again(void **state)
{
    testdb *db = *state;
    char err[300];
    node_identity *a = node_identity_claim(db->url, "n-lost", err, sizeof err);
    assert_non_null(a);
    /* This database's advisory locks only: pg_locks shows the whole
     * cluster's, and other tests run beside this one. */
    const char *kill = "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory'"
                       " AND pid <> pg_backend_pid() AND database = (SELECT oid FROM pg_database"
                       " WHERE datname = current_database())";
    int64_t n = 0;
    assert_int_equal(store_query_int64(db->s, kill, &n), STORE_ROW);
    assert_int_equal(n, 1);
    usleep(100 * 1000);
    assert_int_equal(node_identity_keep(a, err, sizeof err), 0);
    assert_null(node_identity_claim(db->url, "n-lost", err, sizeof err)); /* ours again */
    assert_int_equal(store_query_int64(db->s, kill, &n), STORE_ROW);
    usleep(100 * 1000);
    node_identity *b = node_identity_claim(db->url, "n-lost", err, sizeof err);
    assert_non_null(b); /* claimed while a's lock was gone */
    assert_int_equal(node_identity_keep(a, err, sizeof err), -1);
    assert_non_null(strstr(err, "claimed by another process"));
    node_identity_release(b);
    node_identity_release(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST(test_slots),
        TESTDB_TEST(test_requested_id_is_unique),
        TESTDB_TEST_PG(test_lost_lock_is_taken_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
