/* test-users.c -- accounts, password hashes, sessions and the sign-in
 * limiter, on SQLite and on PostgreSQL. */
#include "testutil.h"
#include "testdb.h"

#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "users/users.h"

static char hash[USERS_HASH_MAX];

static int setup_hash(void **state)
{
    (void)state;
    if (base_init() != 0) return -1;
    return users_hash_password("correct horse", 1, 8192, hash) == USERS_OK ? 0 : -1;
}

static void test_email_rules(void **state)
{
    (void)state;
    assert_true(users_email_valid("ada@example.com"));
    assert_true(users_email_valid("a.b+c@sub.example.co"));
    const char *bad[] = {"", "ada", "@example.com", "ada@", "ada@example", "a@b@c.com", "a b@example.com",
                         "ada@.com", "ada@example.", "tab\t@example.com"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_false(users_email_valid(bad[i]));
    char longest[300];
    memset(longest, 'a', sizeof longest);
    strcpy(longest + 250, "@x.io");
    assert_false(users_email_valid(longest));
}

static void test_passwords(void **state)
{
    (void)state;
    assert_true(strncmp(hash, "$argon2id$", 10) == 0);
    assert_true(users_verify_password(hash, "correct horse"));
    assert_false(users_verify_password(hash, "correct horsE"));
    assert_false(users_verify_password(hash, ""));
    char again[USERS_HASH_MAX];
    assert_int_equal(users_hash_password("correct horse", 1, 8192, again), USERS_OK);
    assert_string_not_equal(hash, again); /* salted */
}

static void test_create_and_find(void **state)
{
    testdb *db = *state;
    users_account a, b, found;
    char h[USERS_HASH_MAX];
    assert_int_equal(users_create(db->s, "Ada@Example.com", "Ada", hash, &a), USERS_OK);
    assert_true(a.is_admin); /* the first account */
    assert_int_equal(users_create(db->s, "bob@example.com", "Bob", hash, &b), USERS_OK);
    assert_false(b.is_admin);
    assert_int_not_equal(a.id, b.id);
    assert_int_equal(users_create(db->s, "ADA@example.COM", "Imposter", hash, &found), USERS_DUPLICATE);
    assert_int_equal(users_find_by_email(db->s, "ada@EXAMPLE.com", &found, h), USERS_OK);
    assert_int_equal(found.id, a.id);
    assert_string_equal(found.email, "Ada@Example.com");
    assert_true(users_verify_password(h, "correct horse"));
    assert_int_equal(users_find_by_email(db->s, "nobody@example.com", &found, h), USERS_NOT_FOUND);
    assert_int_equal(users_get(db->s, b.id, &found), USERS_OK);
    assert_string_equal(found.name, "Bob");
    assert_int_equal(users_get(db->s, 12345, &found), USERS_NOT_FOUND);
    int64_t n;
    assert_int_equal(users_count(db->s, &n), USERS_OK);
    assert_int_equal(n, 2);
}

static void test_sessions(void **state)
{
    testdb *db = *state;
    users_account u;
    char t1[USERS_TOKEN_MAX], t2[USERS_TOKEN_MAX];
    int64_t uid = 0;
    assert_int_equal(users_create(db->s, "s@example.com", "S", hash, &u), USERS_OK);
    assert_int_equal(users_session_create(db->s, u.id, 3600, t1), USERS_OK);
    assert_int_equal(users_session_create(db->s, u.id, 1, t2), USERS_OK);
    assert_true(strlen(t1) >= 4 + 43);
    assert_string_not_equal(t1, t2);
    assert_int_equal(users_session_check(db->s, t1, strlen(t1), &uid), USERS_OK);
    assert_int_equal(uid, u.id);
    /* Only the hash is stored: the token text appears nowhere. */
    store_stmt *st = store_prepare(db->s, "SELECT COUNT(*) FROM sessions WHERE token_hash = $1");
    store_bind_str(st, 1, t1);
    assert_int_equal(store_step(st), STORE_ROW);
    assert_int_equal(store_col_int64(st, 0), 0);
    store_reset(st);
    t1[10] ^= 1;
    assert_int_equal(users_session_check(db->s, t1, strlen(t1), &uid), USERS_NOT_FOUND);
    t1[10] ^= 1;
    assert_int_equal(users_session_check(db->s, "", 0, &uid), USERS_NOT_FOUND);
    sleep(2);
    assert_int_equal(users_session_check(db->s, t2, strlen(t2), &uid), USERS_EXPIRED);
    assert_int_equal(users_session_check(db->s, t2, strlen(t2), &uid), USERS_NOT_FOUND); /* deleted */
    assert_int_equal(users_session_delete(db->s, t1, strlen(t1)), USERS_OK);
    assert_int_equal(users_session_check(db->s, t1, strlen(t1), &uid), USERS_NOT_FOUND);
}

static void test_limiter(void **state)
{
    testdb *db = *state;
    users_limit lim = {.max_failures = 3, .window_ms = 1000};
    int64_t retry = 0, t = 1000000;
    assert_int_equal(users_limit_check(db->s, "account:x", t, &retry), USERS_OK);
    assert_int_equal(users_limit_fail(db->s, "account:x", t, &lim), USERS_OK);
    assert_int_equal(users_limit_fail(db->s, "account:x", t + 10, &lim), USERS_OK);
    assert_int_equal(users_limit_check(db->s, "account:x", t + 20, &retry), USERS_OK);
    assert_int_equal(users_limit_fail(db->s, "account:x", t + 30, &lim), USERS_OK);
    assert_int_equal(users_limit_check(db->s, "account:x", t + 40, &retry), 1);
    assert_int_equal(retry, 1); /* locked until t + 30 + 1000 */
    assert_int_equal(users_limit_check(db->s, "account:y", t + 40, &retry), USERS_OK); /* keys are separate */
    assert_int_equal(users_limit_check(db->s, "account:x", t + 1031, &retry), USERS_OK);
    /* A failure after the window starts a new one. */
    assert_int_equal(users_limit_fail(db->s, "account:z", t, &lim), USERS_OK);
    assert_int_equal(users_limit_fail(db->s, "account:z", t + 5000, &lim), USERS_OK);
    assert_int_equal(users_limit_fail(db->s, "account:z", t + 5001, &lim), USERS_OK);
    assert_int_equal(users_limit_check(db->s, "account:z", t + 5002, &retry), USERS_OK);
    assert_int_equal(users_limit_reset(db->s, "account:x"), USERS_OK);
    assert_int_equal(users_limit_check(db->s, "account:x", t + 50, &retry), USERS_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_email_rules),
        cmocka_unit_test(test_passwords),
        TESTDB_TEST(test_create_and_find),
        TESTDB_TEST(test_sessions),
        TESTDB_TEST(test_limiter),
    };
    return cmocka_run_group_tests(tests, setup_hash, NULL);
}
