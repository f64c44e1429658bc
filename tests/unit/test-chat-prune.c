/* test-chat-prune.c -- the retention's prune (chat_cleanup.c), which walks
 * the users rather than an index of changes by age: a user's changes go
 * up to the first one younger than the bound, all of them when all are
 * old, none when the first is young (an older one after a younger one, as
 * skewed clocks write them, stays); pruned_to moves with them; a second
 * read finds nothing more; a walk in batches smaller than the users
 * covers every user once and says when the round is over; schema 44
 * dropped the index by age. On SQLite and on PostgreSQL. */
#include "testutil.h"
#include "testdb.h"

#include "base/base.h"
#include "chat/chat_cleanup.h"

#define BOUND 1000 /* ms: changes before it are old */

static int setup_base(void **state)
{
    (void)state;
    return base_init();
}

/* A user whose changes 1.. were written at the times given (ms). */
static void user_with(store *s, int64_t id, const int64_t *created, int n)
{
    testdb_user(s, id);
    store_stmt *st = store_prepare(s, "INSERT INTO chat_seqs (user_id, seq) VALUES ($1, $2)");
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, n);
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);
    for (int i = 0; i < n; i++) {
        st = store_prepare(s, "INSERT INTO chat_changes (user_id, seq, kind, conversation_id, ref, created_ms) "
                              "VALUES ($1, $2, 'message', 1, $2, $3)");
        store_bind_int64(st, 1, id);
        store_bind_int64(st, 2, i + 1);
        store_bind_int64(st, 3, created[i]);
        assert_int_equal(store_step(st), STORE_DONE);
        store_reset(st);
    }
}

static void assert_user(store *s, int64_t user, int64_t pruned_to, int64_t kept, int64_t first_kept)
{
    assert_int_equal(testdb_int64(s, "SELECT pruned_to FROM chat_seqs WHERE user_id = $1", user), pruned_to);
    assert_int_equal(testdb_int64(s, "SELECT count(*) FROM chat_changes WHERE user_id = $1", user), kept);
    if (kept) assert_int_equal(testdb_int64(s, "SELECT min(seq) FROM chat_changes WHERE user_id = $1", user), first_kept);
}

static void test_prefix_before_the_first_young(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    user_with(s, 10, (int64_t[]){1, 2, 3, BOUND, BOUND + 1}, 5); /* 1-3 go */
    user_with(s, 20, (int64_t[]){1, 2, 3}, 3);                   /* all go */
    user_with(s, 30, (int64_t[]){BOUND, 5, 6}, 3);               /* young first: none */
    user_with(s, 40, (int64_t[]){4, BOUND + 5, 6}, 3);           /* 1 goes; 3 stays behind 2 */
    user_with(s, 50, NULL, 0);                                   /* nothing at all */
    chat_prune_cut cuts[8];
    size_t n;
    int64_t from = 0;
    assert_int_equal(chat_prune_read(s, &from, BOUND, 8, cuts, &n), STORE_OK);
    assert_int_equal(from, 0); /* five users, fewer than 8: the round is over */
    assert_int_equal(n, 3);
    assert_int_equal(cuts[0].user, 10);
    assert_int_equal(cuts[0].to, 3);
    assert_int_equal(cuts[1].user, 20);
    assert_int_equal(cuts[1].to, 3);
    assert_int_equal(cuts[2].user, 40);
    assert_int_equal(cuts[2].to, 1);
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_prune_cut_apply(s, cuts, n), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    assert_user(s, 10, 3, 2, 4);
    assert_user(s, 20, 3, 0, 0);
    assert_user(s, 30, 0, 3, 1);
    assert_user(s, 40, 1, 2, 2);
    assert_user(s, 50, 0, 0, 0);
    /* Nothing more to cut until the bound moves on. */
    assert_int_equal(chat_prune_read(s, &from, BOUND, 8, cuts, &n), STORE_OK);
    assert_int_equal(n, 0);
    assert_int_equal(chat_prune_read(s, &from, BOUND + 2, 8, cuts, &n), STORE_OK);
    assert_int_equal(n, 2); /* 10's 4 and 5, and all of 30's; 40's next is young */
    assert_int_equal(cuts[0].from, 3);
    assert_int_equal(cuts[0].to, 5);
    assert_int_equal(cuts[1].user, 30);
    assert_int_equal(cuts[1].to, 3);
}

static void test_walk_in_batches(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    for (int64_t u = 1; u <= 7; u++) user_with(s, u * 100, (int64_t[]){1, BOUND}, 2);
    chat_prune_cut cuts[3];
    size_t n, total = 0;
    int64_t from = 0, seen[7];
    int calls = 0;
    do {
        assert_int_equal(chat_prune_read(s, &from, BOUND, 3, cuts, &n), STORE_OK);
        for (size_t i = 0; i < n; i++) seen[total++] = cuts[i].user;
        calls++;
    } while (from != 0 && calls < 10);
    assert_int_equal(calls, 3); /* 3 + 3 + 1 */
    assert_int_equal(total, 7);
    for (int i = 0; i < 7; i++) assert_int_equal(seen[i], (i + 1) * 100);
}

/* Schema 44 dropped the index of changes by age that step 40 made. */
static void test_no_age_index(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    const char *sql = db->backend == STORE_SQLITE
                          ? "SELECT count(*) FROM sqlite_master WHERE name = 'chat_changes_age' AND $1 = $1"
                          : "SELECT count(*) FROM pg_indexes WHERE indexname = 'chat_changes_age' AND $1 = $1";
    assert_int_equal(testdb_int64(s, sql, 0), 0);
    assert_int_equal(testdb_int64(s, "SELECT count(*) FROM schema_migrations WHERE version = $1", 44), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST(test_prefix_before_the_first_young),
        TESTDB_TEST(test_walk_in_batches),
        TESTDB_TEST(test_no_age_index),
    };
    return cmocka_run_group_tests(tests, setup_base, NULL);
}
