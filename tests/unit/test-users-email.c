/* test-users-email.c -- e-mail addresses in normal form (users_email.c):
 * the forms one address is kept in, the characters refused, look-alikes;
 * and migration 21 on a database of before, with accounts that collide
 * once normalized, on SQLite and on PostgreSQL. */
#include "testutil.h"
#include "testdb.h"

#include <string.h>

#include "base/base.h"
#include "users/users.h"

static char hash[USERS_HASH_MAX];

static int setup_hash(void **state)
{
    (void)state;
    if (base_init() != 0) return -1;
    return users_hash_password("correct horse", 1, 8192, hash) == USERS_OK ? 0 : -1;
}

static void norm(const char *in, users_email *em)
{
    char why[160];
    assert_int_equal(users_email_normalize(in, em, why, sizeof why), USERS_OK);
}

static void test_forms(void **state)
{
    (void)state;
    users_email a, b;
    norm("\xc3\x89""COLE@X.com", &a); /* ÉCOLE */
    norm("e\xcc\x81""cole@x.COM", &b); /* e + combining acute */
    assert_string_equal(a.nfc, "\xc3\x89""COLE@X.com");
    assert_string_equal(b.nfc, "\xc3\xa9""cole@x.COM");
    assert_string_equal(a.key, "\xc3\xa9""cole@x.com");
    assert_string_equal(a.key, b.key);
    assert_string_equal(a.skeleton, b.skeleton);
    assert_string_equal(a.legacy, "\xc3\x89""cole@x.com");
    norm("known@x.com", &a);
    const char *alike[] = {"kn\xd0\xbewn@x.com",     /* Cyrillic o */
                           "\xef\xbd\x8bnown@x.com", /* fullwidth k */
                           "\xe2\x84\xaanown@x.com", /* Kelvin sign */
                           "KNOWN@X.COM"};
    for (size_t i = 0; i < sizeof alike / sizeof *alike; i++) {
        norm(alike[i], &b);
        assert_string_equal(a.skeleton, b.skeleton);
    }
    norm("unknown@x.com", &b);
    assert_string_not_equal(a.skeleton, b.skeleton);
}

static void test_hidden_characters(void **state)
{
    (void)state;
    const char *bad[] = {"known@x.com\xe2\x80\x8b", /* zero-width space */
                         "\xef\xbb\xbfknown@x.com", /* BOM */
                         "kn\xe2\x80\xaeown@x.com", /* right-to-left override */
                         "kno\xc2\xadwn@x.com",     /* soft hyphen */
                         "kno\xc2\x85wn@x.com",     /* NEL (C1) */
                         "kno\xe3\x85\xa4wn@x.com", /* Hangul filler */
                         "kno\xee\x80\x80wn@x.com", /* private use */
                         "kno\xe2\x80\x83wn@x.com", /* em space */
                         "no-at-sign"};
    users_email em;
    char why[160];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        why[0] = '\0';
        assert_int_equal(users_email_normalize(bad[i], &em, why, sizeof why), USERS_INVALID);
        assert_true(why[0] != '\0');
    }
}

static void test_create_refuses(void **state)
{
    testdb *db = *state;
    users_account u;
    assert_int_equal(users_create(db->s, "known@x.com", "K", hash, &u), USERS_OK);
    assert_int_equal(users_create(db->s, "KNOWN@x.com", "K", hash, &u), USERS_DUPLICATE);
    assert_int_equal(users_create(db->s, "kn\xd0\xbewn@x.com", "K", hash, &u), USERS_CONFUSABLE);
    assert_int_equal(users_create(db->s, "known@x.com\xe2\x80\x8b", "K", hash, &u), USERS_INVALID);
    assert_int_equal(users_create(db->s, "known@y.com", "K", hash, &u), USERS_OK);
}

/* A database at version 20 (before the rule), its rows as the old code
 * wrote them (email_lower: the address ASCII-lowered), then migrated. */
static void old_user(store *s, int64_t id, const char *email, int64_t created)
{
    char lower[300];
    size_t i = 0;
    for (; email[i]; i++) lower[i] = (char)(email[i] >= 'A' && email[i] <= 'Z' ? email[i] + 32 : email[i]);
    lower[i] = '\0';
    store_stmt *st = store_prepare(s, "INSERT INTO users (id, email, email_lower, name, password_hash, created_ms) "
                                      "VALUES ($1, $2, $3, 'n', $4, $5)");
    store_bind_int64(st, 1, id);
    store_bind_str(st, 2, email);
    store_bind_str(st, 3, lower);
    store_bind_str(st, 4, hash);
    store_bind_int64(st, 5, created);
    assert_int_equal(store_step(st), STORE_DONE);
    store_reset(st);
}

static int64_t found(store *s, const char *email)
{
    users_account u;
    char h[USERS_HASH_MAX];
    return users_find_by_email(s, email, &u, h) == USERS_OK ? u.id : 0;
}

static void test_migration(void **state)
{
    testdb *db = *state;
    store_schema all, before = {0};
    assert_int_equal(chime_schema(&all), 0);
    for (int i = 0; i < all.n && all.steps[i]->version < 21; i++)
        assert_int_equal(store_schema_add(&before, all.steps[i], 1), 0);
    assert_int_equal(store_migrate(db->s, &before), STORE_OK);
    old_user(db->s, 1, "\xc3\x89""COLE@x.com", 100);        /* ÉCOLE, oldest */
    old_user(db->s, 2, "\xc3\xa9""cole@x.com", 200);        /* école: already the key */
    old_user(db->s, 3, "Known@x.com", 300);
    old_user(db->s, 4, "kn\xd0\xbewn@x.com", 400);          /* a look-alike of 3 */
    old_user(db->s, 5, "e\xcc\x81t\xc3\xa9@x.com", 500);    /* NFD, alone */
    old_user(db->s, 6, "zw\xe2\x80\x8bsp@x.com", 600);      /* breaks the rule: left alone */
    assert_int_equal(store_migrate(db->s, &all), STORE_OK);
    /* The one in normal form holds the key; the other keeps its old key
     * and is still found by the address it signed up with. */
    assert_int_equal(found(db->s, "\xc3\xa9""cole@x.com"), 2);
    assert_int_equal(found(db->s, "\xc3\x89""COLE@x.com"), 1);
    assert_int_equal(found(db->s, "\xc3\x89""cole@X.COM"), 1);
    assert_int_equal(found(db->s, "KNOWN@x.com"), 3);
    assert_int_equal(found(db->s, "kn\xd0\xbewn@x.com"), 4);
    assert_int_equal(found(db->s, "\xc3\xa9t\xc3\xa9@x.com"), 5);
    users_account u;
    assert_int_equal(users_get(db->s, 5, &u), USERS_OK);
    assert_string_equal(u.email, "\xc3\xa9t\xc3\xa9@x.com"); /* shown in NFC now */
    assert_int_equal(users_get(db->s, 6, &u), USERS_OK);
    assert_string_equal(u.email, "zw\xe2\x80\x8bsp@x.com");
    /* From now on neither form nor look-alike can sign up again. */
    assert_int_equal(users_create(db->s, "E\xcc\x81""COLE@x.com", "n", hash, &u), USERS_DUPLICATE);
    assert_int_equal(users_create(db->s, "KN\xd0\x9eWN@x.com", "n", hash, &u), USERS_DUPLICATE); /* of 4 */
    assert_int_equal(users_create(db->s, "\xef\xbd\x8bnown@x.com", "n", hash, &u), USERS_CONFUSABLE);
    assert_int_equal(users_create(db->s, "\xc3\x89T\xc3\x89@x.com", "n", hash, &u), USERS_DUPLICATE);
    int64_t skeletons = 0;
    assert_int_equal(store_query_int64(db->s, "SELECT count(email_skeleton) FROM users", &skeletons), STORE_ROW);
    assert_int_equal(skeletons, 3); /* école (one of 1, 2), known (one of 3, 4), été */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_hidden_characters),
        TESTDB_TEST(test_create_refuses),
        TESTDB_TEST_RAW(test_migration),
    };
    return cmocka_run_group_tests(tests, setup_hash, NULL);
}
