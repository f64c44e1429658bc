/* test-chat-unread.c -- the unread total kept beside each user's number
 * (chat_seqs.unread, schema 41): after every kind of write -- sends,
 * read marks forward, backward and past the end, members removed, leaving,
 * re-added and added -- it equals the sum GET /v1/unread computes, and
 * the news each write signals carries the numbers the database has;
 * and migration 41 fills it in for a database of before (and 42 and 43
 * keep the rows when they make SQLite's tables one b-tree each); the check that
 * sets a wrong total right (chat.cleanup) leaves one whose number moved
 * since it read the sum, and walks the users round in turn. On SQLite
 * (the row-at-a-time fan-out) and on PostgreSQL (the set statements). */
#include "testutil.h"
#include "testdb.h"
#include "chattest.h"

#include <string.h>

#include "base/base.h"
#include "chat/chat.h"
#include "chat/chat_cleanup.h"

#define NUSERS 6

static int setup_base(void **state)
{
    (void)state;
    return base_init();
}

/* Every user's kept total equals the computed one. */
static void assert_kept(store *s)
{
    for (int64_t u = 1; u <= NUSERS; u++) {
        int64_t seq, kept, total, convs;
        assert_int_equal(chat_seq_unread(s, &u, 1, &seq, &kept), CHAT_OK);
        assert_int_equal(chat_unread(s, u, &total, &convs), CHAT_OK);
        if (kept != total) fail_msg("user %lld: kept %lld, computed %lld", (long long)u, (long long)kept, (long long)total);
    }
}

/* Each user's last news in r is what the database has now. */
static void assert_news(store *s, const chat_result *r)
{
    for (size_t i = 0; i < r->nsignal; i++) {
        bool last = true;
        for (size_t k = i + 1; k < r->nsignal; k++) last = last && r->signal[k].user != r->signal[i].user;
        if (!last) continue;
        int64_t seq, unread;
        assert_int_equal(chat_seq_unread(s, &r->signal[i].user, 1, &seq, &unread), CHAT_OK);
        assert_int_equal(r->signal[i].seq, seq);
        assert_int_equal(r->signal[i].unread, unread);
    }
}

static uint64_t rng = 88172645463325252ull;

/* A removed member's frozen share of unread in conv (0: none, or not
 * removed). */
static int64_t frozen_share(store *s, int64_t conv, int64_t user)
{
    store_stmt *st = store_prepare(s, "SELECT left_seq - read_up_to FROM conv_members WHERE conversation_id = $1 "
                                      "AND user_id = $2 AND left_seq IS NOT NULL");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, user);
    int rc = store_step(st);
    int64_t share = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    return share;
}

/* A member of conv removed with unread left (0: none). */
static int64_t removed_with_unread(store *s, int64_t conv)
{
    store_stmt *st = store_prepare(s, "SELECT user_id FROM conv_members WHERE conversation_id = $1 AND "
                                      "left_seq > read_up_to ORDER BY user_id LIMIT 1");
    store_bind_int64(st, 1, conv);
    int rc = store_step(st);
    int64_t user = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    return user;
}

/* What the walk reached. */
typedef struct walk {
    int readded_with_unread, removed_with_unread, sends, reads;
} walk;

/* One random write in its own transaction, then the checks. */
static void random_write(store *s, const int64_t *convs, const int64_t *admins, int nconvs, int step, walk *w)
{
    chat_result r = {0};
    chat_limits lim = {.group_max_members = 500};
    int c = (int)chattest_pick(&rng, nconvs);
    int64_t me = 1 + chattest_pick(&rng, NUSERS), other = 1 + chattest_pick(&rng, NUSERS), conv = convs[c], now = 1000 + step;
    char cid[32];
    snprintf(cid, sizeof cid, "m%d", step);
    int kind = (int)chattest_pick(&rng, 6), rc;
    if (kind == 4 && other == admins[c]) other = other % NUSERS + 1; /* a group keeps its admin */
    if (kind == 5 && chattest_pick(&rng, 2) && removed_with_unread(s, conv)) other = removed_with_unread(s, conv);
    int64_t share = frozen_share(s, conv, other);
    assert_int_equal(store_begin(s), STORE_OK);
    switch (kind) {
    case 0:
    case 1: rc = chat_send(s, me, conv, cid, "hi", base_id_new(), now, &r); break;
    case 2: rc = chat_read(s, me, conv, chattest_pick(&rng, 40), now, &r); break;
    case 3: rc = chat_read(s, me, conv, 1000, now, &r); break; /* past the end: all */
    case 4: rc = chat_remove_member(s, chattest_pick(&rng, 2) ? admins[c] : other, conv, other, now, &r); break;
    default: rc = chat_add_members(s, chattest_pick(&rng, 4) ? admins[c] : me, conv, &other, 1, &lim, now, &r); break;
    }
    assert_int_equal(rc, STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    w->sends += kind <= 1 && r.status == 201;
    w->reads += (kind == 2 || kind == 3) && r.status == 200;
    w->removed_with_unread += kind == 4 && r.status == 204 && frozen_share(s, conv, other) > 0;
    w->readded_with_unread += kind == 5 && r.status == 200 && share > 0;
    assert_kept(s);
    assert_news(s, &r);
    chat_result_free(&r);
}

static void test_kept_through_every_write(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    int64_t convs[6], admins[6] = {1, 2, 3, 1, 2, 3};
    int n = 0;
    for (int64_t u = 1; u <= NUSERS; u++) testdb_user(s, u);
    chat_limits lim = {.group_max_members = 500};
    for (int64_t g = 1; g <= 3; g++) { /* groups of 1 + 3 members, admins 1, 2, 3 */
        int64_t members[3] = {g % NUSERS + 1, (g + 1) % NUSERS + 1, (g + 2) % NUSERS + 1};
        chat_result r = {0};
        assert_int_equal(store_begin(s), STORE_OK);
        assert_int_equal(chat_create_group(s, g, "g", NULL, members, 3, &lim, 1, &r), STORE_OK);
        assert_int_equal(store_commit(s), STORE_OK);
        assert_int_equal(r.status, 201);
        convs[n++] = chattest_conv_id(&r);
        chat_result_free(&r);
    }
    for (int64_t d = 1; d <= 3; d++) {
        chat_result r = {0};
        assert_int_equal(store_begin(s), STORE_OK);
        assert_int_equal(chat_create_direct(s, d, d + 3, 1, &r), STORE_OK);
        assert_int_equal(store_commit(s), STORE_OK);
        convs[n++] = chattest_conv_id(&r);
        chat_result_free(&r);
    }
    walk w = {0};
    rng = 88172645463325252ull; /* the same walk on both backends */
    for (int step = 0; step < 1000; step++) random_write(s, convs, admins, n, step, &w);
    /* The walk did reach every kind of write it is meant to. */
    assert_true(w.sends > 50);
    assert_true(w.reads > 50);
    assert_true(w.removed_with_unread > 3);
    assert_true(w.readded_with_unread > 3);
}

/* A database at version 40, its rows as the code of before wrote them,
 * then migrated: every user's total is filled in. */
static void test_migration(void **state)
{
    testdb *db = *state;
    store_schema all, before = {0};
    assert_int_equal(chime_schema(&all), 0);
    for (int i = 0; i < all.n && all.steps[i]->version < 41; i++)
        assert_int_equal(store_schema_add(&before, all.steps[i], 1), 0);
    assert_int_equal(store_migrate(db->s, &before), STORE_OK);
    for (int64_t u = 1; u <= 3; u++) testdb_user(db->s, u);
    EXEC_OK(db->s, "INSERT INTO conversations (id, kind, pair_key, created_by, created_ms, last_seq, last_ms) VALUES "
                   "(10, 'group', NULL, 1, 0, 9, 0), (11, 'direct', '1:2', 1, 0, 4, 0)");
    /* 1: 9 - 2 in the group, 4 - 4 direct; 2: left at 5, read 1, and 4 - 0
     * direct; 3: a member with everything read. */
    EXEC_OK(db->s, "INSERT INTO conv_members (conversation_id, user_id, role, joined_seq, left_seq, read_up_to) VALUES "
                   "(10, 1, 'admin', 0, NULL, 2), (10, 2, 'member', 0, 5, 1), (10, 3, 'member', 3, NULL, 9), "
                   "(11, 1, 'member', 0, NULL, 4), (11, 2, 'member', 0, NULL, 0)");
    EXEC_OK(db->s, "INSERT INTO chat_seqs (user_id, seq) VALUES (1, 14), (2, 12), (3, 7)");
    assert_int_equal(store_migrate(db->s, &all), STORE_OK);
    int64_t want[4] = {0, 7, 8, 0};
    for (int64_t u = 1; u <= 3; u++) {
        int64_t seq, unread;
        assert_int_equal(chat_seq_unread(db->s, &u, 1, &seq, &unread), CHAT_OK);
        assert_int_equal(unread, want[u]);
        assert_int_equal(seq, u == 1 ? 14 : u == 2 ? 12 : 7);
    }
    assert_kept(db->s);
    /* 42: on SQLite the user id is the rowid (no index beside the
     * table); the rows and the cascade from users are kept. */
    int64_t n;
    if (db->backend == STORE_SQLITE) {
        assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM chat_seqs WHERE rowid = user_id", &n), STORE_ROW);
        assert_int_equal(n, 3);
        assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                                                  "tbl_name = 'chat_seqs'", &n), STORE_ROW);
        assert_int_equal(n, 0);
    }
    /* 43: on SQLite the members are clustered by their key, with the
     * index by user made again; the rows and both cascades are kept. */
    if (db->backend == STORE_SQLITE) {
        assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM pragma_index_list('conv_members') WHERE "
                                                  "name = 'conv_members_user' OR origin = 'pk'", &n), STORE_ROW);
        assert_int_equal(n, 2);
        assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM sqlite_master WHERE name = 'conv_members' "
                                                  "AND sql LIKE '%WITHOUT ROWID%'", &n), STORE_ROW);
        assert_int_equal(n, 1);
    }
    assert_int_equal(store_query_int64(db->s, "SELECT sum(read_up_to + 10 * joined_seq + 100 * COALESCE(left_seq, 0))"
                                              " FROM conv_members", &n), STORE_ROW);
    assert_int_equal(n, 2 + (1 + 500) + (9 + 30) + 4 + 0);
    EXEC_OK(db->s, "DELETE FROM users WHERE id = 3");
    assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM chat_seqs", &n), STORE_ROW);
    assert_int_equal(n, 2);
    assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM conv_members", &n), STORE_ROW);
    assert_int_equal(n, 4);
    EXEC_OK(db->s, "DELETE FROM conversations WHERE id = 11");
    assert_int_equal(store_query_int64(db->s, "SELECT count(*) FROM conv_members", &n), STORE_ROW);
    assert_int_equal(n, 2);
}

static void set_kept(store *s, int64_t user, int64_t unread)
{
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE chat_seqs SET unread = %lld WHERE user_id = %lld", (long long)unread,
             (long long)user);
    EXEC_OK(s, sql);
}

static int64_t kept_of(store *s, int64_t user)
{
    int64_t seq, kept;
    assert_int_equal(chat_seq_unread(s, &user, 1, &seq, &kept), CHAT_OK);
    return kept;
}

/* One write in its own transaction. */
static void send_one(store *s, int64_t me, int64_t conv, const char *cid)
{
    chat_result r = {0};
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_send(s, me, conv, cid, "hi", base_id_new(), 5000, &r), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    assert_int_equal(r.status, 201);
    chat_result_free(&r);
}

static void test_check_sets_only_what_did_not_move(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    for (int64_t u = 1; u <= 4; u++) testdb_user(s, u);
    chat_result r = {0};
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_create_direct(s, 1, 2, 1, &r), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    int64_t conv = chattest_conv_id(&r);
    chat_result_free(&r);
    send_one(s, 1, conv, "a");
    send_one(s, 1, conv, "b"); /* 2 has 2 unread, 1 none */
    set_kept(s, 1, 7);
    set_kept(s, 2, 9);
    chat_unread_fix fix[4];
    size_t n;
    int read;
    int64_t from = 0, set;
    assert_int_equal(chat_unread_wrong(s, &from, 0, 4, fix, &n, &read), STORE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(from, 0); /* two users with numbers, fewer than 4: the round is over */
    assert_int_equal(fix[1].user, 2);
    assert_int_equal(fix[1].kept, 9);
    assert_int_equal(fix[1].unread, 2);
    /* A send between the read and the set moves both users' numbers (and
     * their kept totals, from the wrong ones): nothing is set. */
    send_one(s, 1, conv, "c");
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_unread_set(s, fix, n, &set), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    assert_int_equal(set, 0);
    assert_int_equal(kept_of(s, 2), 10); /* still wrong, for the next round */
    /* The next round sets both right. */
    assert_int_equal(chat_unread_wrong(s, &from, 0, 4, fix, &n, &read), STORE_OK);
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_unread_set(s, fix, n, &set), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    assert_int_equal(set, 2);
    assert_int_equal(kept_of(s, 1), 0);
    assert_int_equal(kept_of(s, 2), 3);
    assert_kept(s);
}

static void test_check_walks_the_users_round(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    for (int64_t u = 1; u <= NUSERS; u++) testdb_user(s, u);
    chat_limits lim = {.group_max_members = 500};
    int64_t members[5] = {2, 3, 4, 5, 6};
    chat_result r = {0};
    assert_int_equal(store_begin(s), STORE_OK);
    assert_int_equal(chat_create_group(s, 1, "g", NULL, members, 5, &lim, 1, &r), STORE_OK);
    assert_int_equal(store_commit(s), STORE_OK);
    chat_result_free(&r);
    set_kept(s, 6, 5); /* wrong, and last */
    chat_unread_fix fix[4];
    size_t n;
    int read;
    int64_t from = 0;
    assert_int_equal(chat_unread_wrong(s, &from, 0, 4, fix, &n, &read), STORE_OK);
    assert_int_equal((int)n, 0);
    assert_int_equal(read, 4);
    assert_int_equal(from, 4); /* users 1-4 read, more to come */
    assert_int_equal(chat_unread_wrong(s, &from, 0, 4, fix, &n, &read), STORE_OK);
    assert_int_equal((int)n, 1);
    assert_int_equal(fix[0].user, 6);
    assert_int_equal(read, 2);
    assert_int_equal(from, 0); /* the round is over: the next starts again */
    from = 2; /* a round started in the middle reads on from there */
    assert_int_equal(chat_unread_wrong(s, &from, 0, 4, fix, &n, &read), STORE_OK);
    assert_int_equal((int)n, 1);
    assert_int_equal(from, 6);
    /* ... and, past the end, from the first up to where it began only. */
    from = 0;
    assert_int_equal(chat_unread_wrong(s, &from, 5, 4, fix, &n, &read), STORE_OK);
    assert_int_equal(read, 4);
    assert_int_equal((int)n, 0);
    assert_int_equal(chat_unread_wrong(s, &from, 5, 4, fix, &n, &read), STORE_OK);
    assert_int_equal(read, 1); /* user 5: 6 is beyond the bound */
    assert_int_equal(from, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST(test_kept_through_every_write),
        TESTDB_TEST_RAW(test_migration),
        TESTDB_TEST(test_check_sets_only_what_did_not_move),
        TESTDB_TEST(test_check_walks_the_users_round),
    };
    return cmocka_run_group_tests(tests, setup_base, NULL);
}
