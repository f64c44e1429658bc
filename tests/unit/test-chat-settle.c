/* test-chat-settle.c -- a change's two homes (chat_settle.c): on SQLite
 * a group message's changes go to chat_recent (a direct one's to
 * chat_changes), and a settle moves the next CHAT_SETTLE_ROWS of
 * chat_recent in (user, seq) order, and no others, to chat_changes,
 * walking on from where the last one stopped; the
 * pull (chat_sync) gives the same answer for every since whatever is
 * settled, page by page through both tables mixed; a retried send finds
 * its user_seq in either; the prune cuts old changes in either table up to
 * the first young one in both, and keeps the rest. On PostgreSQL every
 * change goes to chat_changes and a settle finds nothing; the answers
 * are the same. */
#include "testutil.h"
#include "testdb.h"
#include "chattest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "chat/chat.h"
#include "chat/chat_cleanup.h"
#include "chat/chat_settle.h"

#define NUSERS 40 /* all in one group; users 1..NUSERS */
#define SENDS 30
#define SINCES 5

static int setup_base(void **state)
{
    (void)state;
    return base_init();
}

static int64_t direct_at(store *s, int64_t a, int64_t b, int64_t now)
{
    chat_result r = {0};
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_create_direct(s, a, b, now, &r), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    int64_t conv = chattest_conv_id(&r);
    chat_result_free(&r);
    return conv;
}

/* A group of every user, made by user 1 at now. */
static int64_t group_of_all(store *s, int64_t now)
{
    int64_t members[NUSERS - 1];
    for (int i = 0; i < NUSERS - 1; i++) members[i] = i + 2;
    chat_limits lim = {.group_max_members = 500};
    chat_result r = {0};
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_create_group(s, 1, "all", NULL, members, NUSERS - 1, &lim, now, &r), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    assert_int_equal(r.status, 201);
    int64_t conv = chattest_conv_id(&r);
    chat_result_free(&r);
    return conv;
}

/* A send in its own transaction: its status, and the answer's user_seq. */
static int send_at(store *s, int64_t me, int64_t conv, const char *cid, int64_t now, int64_t *user_seq)
{
    chat_result r = {0};
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_send(s, me, conv, cid, "hello", base_id_new(), now, &r), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    json_t *v = json_object_get(r.body, "user_seq"); /* a repeat's; a new one's is self_seq */
    if (user_seq) *user_seq = r.status == 201 ? r.self_seq : json_is_integer(v) ? json_integer_value(v) : -1;
    int status = r.status;
    chat_result_free(&r);
    return status;
}

/* chat_sync's answer, as text (caller frees). */
static char *pull(store *s, int64_t user, int64_t since, int limit)
{
    jsonw w;
    int64_t seq, pruned;
    jw_init(&w, 256);
    assert_int_equal(chat_sync(s, user, since, limit, &seq, &pruned, &w), CHAT_OK);
    assert_false(jw_failed(&w));
    char *text = malloc(w.len + 1);
    assert_non_null(text);
    memcpy(text, w.buf, w.len);
    text[w.len] = '\0';
    jw_free(&w);
    return text;
}

static int64_t seq_of(store *s, int64_t user)
{
    return testdb_int64(s, "SELECT seq FROM chat_seqs WHERE user_id = $1", user);
}

/* Every user's answers for a few sinces, and their pages of 7 read to
 * the end: the numbers 1..seq, each once, in order. */
static void answers(store *s, char *out[NUSERS][SINCES])
{
    for (int64_t u = 1; u <= NUSERS; u++) {
        int64_t seq = seq_of(s, u), sinces[SINCES] = {0, 1, seq / 2, seq - 1, seq};
        for (int k = 0; k < SINCES; k++) out[u - 1][k] = pull(s, u, sinces[k], 1000);
        int64_t since = 0, expect = 1;
        for (bool more = true; more;) {
            char *page = pull(s, u, since, 7);
            json_t *j = json_loads(page, 0, NULL);
            assert_non_null(j);
            json_t *ch = json_object_get(j, "changes");
            for (size_t i = 0; i < json_array_size(ch); i++)
                assert_int_equal(json_integer_value(json_object_get(json_array_get(ch, i), "seq")), expect++);
            since = json_integer_value(json_object_get(j, "seq"));
            more = json_is_true(json_object_get(j, "has_more"));
            json_decref(j);
            free(page);
        }
        assert_int_equal(expect - 1, seq);
    }
}

static void assert_same(char *a[NUSERS][SINCES], char *b[NUSERS][SINCES])
{
    for (int u = 0; u < NUSERS; u++)
        for (int k = 0; k < SINCES; k++) {
            if (strcmp(a[u][k], b[u][k]) != 0) fail_msg("user %d, since #%d:\n%s\n%s", u + 1, k, a[u][k], b[u][k]);
            free(b[u][k]);
        }
}

static int64_t count_of(store *s, const char *table)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE user_id > $1", table);
    return testdb_int64(s, sql, 0);
}

static void test_settle_moves_a_prefix_and_pulls_see_no_difference(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    bool lite = store_backend_of(s) == STORE_SQLITE;
    for (int64_t u = 1; u <= NUSERS; u++) testdb_user(s, u);
    int64_t conv = group_of_all(s, 1000), pair = direct_at(s, 1, NUSERS, 1000);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int64_t first_seq = 0, last_seq = 0;
    for (int i = 0; i < SENDS; i++) {
        char cid[16];
        snprintf(cid, sizeof cid, "m%d", i);
        int64_t me = i == 0 ? 1 : i == 1 ? NUSERS : 1 + chattest_pick(&rng, NUSERS);
        assert_int_equal(send_at(s, me, conv, cid, 2000 + i, i == 0 ? &first_seq : i == 1 ? &last_seq : NULL), 201);
        if (i % 3 == 0) assert_int_equal(send_at(s, i % 2 ? 1 : NUSERS, pair, cid, 2000 + i, NULL), 201);
    }
    /* the group's changes (its making, then the messages) and the pair's */
    int64_t total = NUSERS * (SENDS + 1), direct = 2 * (1 + (SENDS + 2) / 3);
    assert_int_equal(count_of(s, "chat_recent") + count_of(s, "chat_changes"), total + direct);
    if (lite) assert_int_equal(count_of(s, "chat_recent"), total);
    char *before[NUSERS][SINCES], *now[NUSERS][SINCES];
    answers(s, before);

    /* One settle: the first CHAT_SETTLE_ROWS in (user, seq) order. */
    bool more;
    chat_settle_at at = {0, 0};
    assert_int_equal(chat_settle(s, &at, &more), STORE_OK);
    assert_int_equal(more, lite);
    if (lite) {
        assert_int_equal(count_of(s, "chat_changes"), direct + CHAT_SETTLE_ROWS);
        assert_int_equal(testdb_int64(s, "SELECT count(*) FROM chat_changes c WHERE c.conversation_id = $1 AND "
                                         "(c.user_id, c.seq) > (SELECT r.user_id, r.seq FROM chat_recent r "
                                         "ORDER BY r.user_id, r.seq LIMIT 1)",
                                      conv),
                         0);
        /* a user cut in two by it */
        int64_t split = (CHAT_SETTLE_ROWS / (SENDS + 1)) + 1;
        assert_true(testdb_int64(s, "SELECT count(*) FROM chat_changes WHERE user_id = $1", split) > 0);
        assert_true(testdb_int64(s, "SELECT count(*) FROM chat_recent WHERE user_id = $1", split) > 0);
    }
    answers(s, now);
    assert_same(before, now);

    /* A retried send finds its number where it is: user 1's change is
     * settled, user NUSERS's not yet. */
    int64_t again;
    assert_int_equal(send_at(s, 1, conv, "m0", 9000, &again), 200);
    assert_int_equal(again, first_seq);
    assert_int_equal(send_at(s, NUSERS, conv, "m1", 9000, &again), 200);
    assert_int_equal(again, last_seq);
    if (lite) assert_int_equal(testdb_int64(s, "SELECT count(*) FROM chat_recent WHERE user_id = $1", NUSERS), SENDS + 1);

    /* The next settle goes on from where the last one stopped: user 1's
     * change of a new message waits until the walk comes round again (a
     * walk that started over each time would move the first users' one
     * new change each time, and a page of chat_changes for each). */
    assert_int_equal(send_at(s, 2, conv, "late", 9500, NULL), 201);
    total += NUSERS;
    for (int u = 0; u < NUSERS; u++)
        for (int k = 0; k < SINCES; k++) free(before[u][k]);
    answers(s, before);
    assert_int_equal(chat_settle(s, &at, &more), STORE_OK);
    assert_int_equal(more, lite);
    if (lite) {
        assert_int_equal(count_of(s, "chat_changes"), direct + 2 * CHAT_SETTLE_ROWS);
        assert_int_equal(testdb_int64(s, "SELECT count(*) FROM chat_recent WHERE user_id = $1", 1), 1);
    }
    answers(s, now);
    assert_same(before, now);

    /* To the end: the rest after where the walk is, then, from the start,
     * the first users' new changes. */
    int rounds = 0;
    for (more = true; more; rounds++) assert_int_equal(chat_settle(s, &at, &more), STORE_OK);
    assert_int_equal(rounds, lite ? 2 : 1);
    assert_int_equal(count_of(s, "chat_recent"), 0);
    assert_int_equal(count_of(s, "chat_changes"), total + direct);
    answers(s, now);
    assert_same(before, now);
    assert_int_equal(send_at(s, NUSERS, conv, "m1", 9000, &again), 200);
    assert_int_equal(again, last_seq);
    for (int u = 0; u < NUSERS; u++)
        for (int k = 0; k < SINCES; k++) free(before[u][k]);
    assert_int_equal(chat_settle(s, &at, &more), STORE_OK); /* nothing left: nothing to do */
    assert_false(more);
}

/* The changes of user in both tables. */
static int64_t kept_of(store *s, int64_t user)
{
    return testdb_int64(s, "SELECT count(*) FROM (SELECT seq FROM chat_changes WHERE user_id = $1 UNION ALL "
                           "SELECT seq FROM chat_recent WHERE user_id = $1) x",
                        user);
}

static void test_prune_cuts_in_both_tables(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    bool lite = store_backend_of(s) == STORE_SQLITE;
    for (int64_t u = 1; u <= NUSERS + 3; u++) testdb_user(s, u);
    int64_t conv = group_of_all(s, 1000);
    for (int i = 0; i < 10; i++) { /* old, and settled */
        char cid[16];
        snprintf(cid, sizeof cid, "a%d", i);
        assert_int_equal(send_at(s, 1, conv, cid, 1000 + i, NULL), 201);
    }
    chat_settle_at at = {0, 0};
    for (bool more = true; more;) assert_int_equal(chat_settle(s, &at, &more), STORE_OK);
    for (int i = 0; i < 15; i++) { /* ten old, five young, in chat_recent */
        char cid[16];
        snprintf(cid, sizeof cid, "b%d", i);
        assert_int_equal(send_at(s, 2, conv, cid, i < 10 ? 2000 + i : 5000 + i, NULL), 201);
    }
    /* Two more users with old changes only. */
    int64_t pair = direct_at(s, NUSERS + 1, NUSERS + 2, 1500);
    assert_int_equal(send_at(s, NUSERS + 1, pair, "p", 1600, NULL), 201);
    /* User 3 also has an old change, then a young one, in chat_changes,
     * after the young ones in chat_recent: they stay. */
    int64_t three = direct_at(s, 3, NUSERS + 3, 1500);
    assert_int_equal(send_at(s, 3, three, "t", 6000, NULL), 201);
    if (lite) assert_int_equal(testdb_int64(s, "SELECT count(*) FROM chat_changes WHERE user_id = $1", 7), 11);

    chat_prune_cut cuts[NUSERS + 3];
    size_t n;
    int64_t from = 0;
    assert_int_equal(chat_prune_read(s, &from, 3000, NUSERS + 3, cuts, &n), STORE_OK);
    assert_int_equal((int)n, NUSERS + 3);
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_prune_cut_apply(s, cuts, n), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    for (int64_t u = 1; u <= NUSERS; u++) {
        int64_t kept = u == 3 ? 7 : 5;
        assert_int_equal(testdb_int64(s, "SELECT pruned_to FROM chat_seqs WHERE user_id = $1", u), 21);
        assert_int_equal(kept_of(s, u), kept);
        if (lite) assert_int_equal(testdb_int64(s, "SELECT count(*) FROM chat_changes WHERE user_id = $1", u), kept - 5);
        char *page = pull(s, u, 21, 100);
        json_t *j = json_loads(page, 0, NULL);
        assert_int_equal(json_array_size(json_object_get(j, "changes")), kept);
        json_decref(j);
        free(page);
    }
    for (int64_t u = NUSERS + 1; u <= NUSERS + 2; u++) {
        assert_int_equal(testdb_int64(s, "SELECT pruned_to FROM chat_seqs WHERE user_id = $1", u), 2);
        assert_int_equal(kept_of(s, u), 0);
    }
    assert_int_equal(testdb_int64(s, "SELECT pruned_to FROM chat_seqs WHERE user_id = $1", NUSERS + 3), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST(test_settle_moves_a_prefix_and_pulls_see_no_difference),
        TESTDB_TEST(test_prune_cuts_in_both_tables),
    };
    return cmocka_run_group_tests(tests, setup_base, NULL);
}
