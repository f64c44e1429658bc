/* test-chat-tail.c -- the pulls answered from memory (chat_tail.h).
 *
 * The tail's promise: whenever it answers a pull, the answer is the one
 * the database gives, byte for byte. A random walk of every kind of chat
 * write (sends with texts that need escaping, read marks, members added,
 * removed and leaving, groups and direct conversations made) puts each
 * commit's changes into a tail as the writer does; after each write every
 * user's pulls around their newest number, with several limits, are
 * answered by both and compared. On SQLite and on PostgreSQL (the two
 * fan-outs make the parts differently).
 *
 * And its rules on their own: a gap or a change without a part makes it
 * forget the user, only the newest CHAT_TAIL_KEEP are kept, a cursor past
 * the newest or before the oldest is the database's, limits and has_more,
 * and sweeps, forgetting one user and clearing all. */
#include "testutil.h"
#include "testdb.h"
#include "chattest.h"

#include <string.h>

#include "base/base.h"
#include "chat/chat.h"
#include "chat/chat_tail.h"

#define NUSERS 7

static int setup_base(void **state)
{
    (void)state;
    return base_init();
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* Every user's pulls that the tail answers are the database's. Returns
 * how many it answered. */
static int compare_pulls(store *s, chat_tail *t)
{
    static const int limits[] = {1, 2, 3, CHAT_SYNC_DEFAULT};
    int answered = 0;
    for (int64_t u = 1; u <= NUSERS; u++) {
        int64_t seq, pruned;
        jsonw probe;
        jw_init(&probe, 64);
        assert_int_equal(chat_sync(s, u, 0, 1, &seq, &pruned, &probe), CHAT_OK);
        jw_free(&probe);
        for (int64_t since = seq - CHAT_TAIL_KEEP - 2; since <= seq + 1; since++) {
            if (since < 0) continue;
            for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
                jsonw mem, db;
                jw_init(&mem, 64);
                jw_init(&db, 64);
                bool from_mem = chat_tail_sync(t, u, since, limits[k], &mem);
                if (from_mem) {
                    int64_t dseq, dpruned;
                    assert_int_equal(chat_sync(s, u, since, limits[k], &dseq, &dpruned, &db), CHAT_OK);
                    assert_true(since <= dseq && since >= dpruned); /* the database answers 200 too */
                    assert_false(jw_failed(&mem));
                    if (mem.len != db.len || memcmp(mem.buf, db.buf, db.len) != 0)
                        fail_msg("user %lld since %lld limit %d:\n memory   %.*s\n database %.*s", (long long)u,
                                 (long long)since, limits[k], (int)mem.len, mem.buf, (int)db.len, db.buf);
                    answered++;
                }
                if (since > seq) assert_false(from_mem); /* the database's 400 */
                jw_free(&mem);
                jw_free(&db);
            }
        }
    }
    return answered;
}

/* One commit's changes into the tail, as the writer puts them. */
static void put_all(chat_tail *t, const chat_result *r, int64_t now)
{
    for (size_t i = 0; i < r->nsignal; i++) chat_tail_put(t, r->signal[i].user, r->signal[i].seq, r->signal[i].part, now);
}

static const char *const texts[] = {"hi", "a \"quoted\" word", "back\\slash", "tab\there", "line\nbreak",
                                    "caf\xc3\xa9 \xf0\x9f\x98\x80", "<b>&amp;</b>", "\x7f del"};

static void test_answers_are_the_databases(void **state)
{
    testdb *db = *state;
    store *s = db->s;
    chat_tail *t = chat_tail_new();
    assert_non_null(t);
    for (int64_t u = 1; u <= NUSERS; u++) testdb_user(s, u);
    chat_limits lim = {.group_max_members = 500};
    int64_t convs[6], admins[6] = {1, 2, 3, 1, 2, 3};
    int n = 0, answered = 0, sends = 0;
    for (int step = 0; step < 400; step++) {
        chat_result r = {.want_parts = true};
        int64_t me = 1 + chattest_pick(&rng, NUSERS), other = 1 + chattest_pick(&rng, NUSERS), now = 1000 + step;
        int kind = n < 6 ? 9 : (int)chattest_pick(&rng, 7), c = n ? (int)chattest_pick(&rng, n) : 0;
        char cid[32];
        snprintf(cid, sizeof cid, "m%d", step);
        assert_int_equal(store_begin(s), STORE_OK);
        int rc;
        if (kind == 9 && n < 3) { /* groups of 1 + 3, admins 1, 2, 3 */
            int64_t g = n + 1, members[3] = {g % NUSERS + 1, (g + 1) % NUSERS + 1, (g + 2) % NUSERS + 1};
            rc = chat_create_group(s, g, texts[n], NULL, members, 3, &lim, now, &r);
        } else if (kind == 9) {
            rc = chat_create_direct(s, n - 2, n + 2, now, &r);
        } else if (kind <= 2) {
            rc = chat_send(s, me, convs[c], cid, texts[chattest_pick(&rng, 8)], base_id_new(), now, &r);
        } else if (kind == 3) {
            rc = chat_read(s, me, convs[c], chattest_pick(&rng, 30), now, &r);
        } else if (kind == 4) {
            if (other == admins[c]) other = other % NUSERS + 1; /* a group keeps its admin */
            rc = chat_remove_member(s, chattest_pick(&rng, 2) ? admins[c] : other, convs[c], other, now, &r);
        } else {
            rc = chat_add_members(s, admins[c], convs[c], &other, 1, &lim, now, &r);
        }
        assert_int_equal(rc, STORE_OK);
        assert_int_equal(store_commit(s), STORE_OK);
        if (kind == 9) convs[n++] = chattest_conv_id(&r);
        sends += kind <= 2 && r.status == 201;
        for (size_t i = 0; i < r.nsignal; i++) assert_non_null(r.signal[i].part);
        put_all(t, &r, now);
        chat_result_free(&r);
        answered += compare_pulls(s, t);
    }
    assert_true(sends > 50);
    assert_true(answered > 1000); /* the tail did answer, and often */
    chat_tail_free(t);
}

/* ---- the rules, on parts of our own -------------------------------------- */

static chat_part *part(int i)
{
    char m[32];
    int n = snprintf(m, sizeof m, "\"kind\":\"k%d\"", i);
    return chat_part_new(m, (size_t)n);
}

/* The tail's answer for (user, since, limit), or NULL when it has none. */
static char *pull(chat_tail *t, int64_t user, int64_t since, int limit)
{
    jsonw w;
    jw_init(&w, 64);
    if (!chat_tail_sync(t, user, since, limit, &w)) {
        jw_free(&w);
        return NULL;
    }
    char *s = malloc(w.len + 1); /* w.buf has no terminating NUL */
    assert_non_null(s);
    memcpy(s, w.buf, w.len);
    s[w.len] = '\0';
    jw_free(&w);
    return s;
}

static void assert_pull(chat_tail *t, int64_t user, int64_t since, int limit, const char *want)
{
    char *got = pull(t, user, since, limit);
    if (!want) {
        if (got) fail_msg("user %lld since %lld: want the database, got %s", (long long)user, (long long)since, got);
        return;
    }
    if (!got || strcmp(got, want) != 0)
        fail_msg("user %lld since %lld: want %s, got %s", (long long)user, (long long)since, want, got ? got : "none");
    free(got);
}

/* user gets changes from..to, change i as part(i), at now. */
static void put_range(chat_tail *t, int64_t user, int64_t from, int64_t to, int64_t now)
{
    for (int64_t i = from; i <= to; i++) {
        chat_part *p = part((int)i);
        chat_tail_put(t, user, i, p, now);
        chat_part_release(p); /* the tail holds its own */
    }
}

static void test_rules(void **state)
{
    (void)state;
    chat_tail *t = chat_tail_new();
    assert_pull(t, 1, 0, 10, NULL); /* nobody yet */
    put_range(t, 1, 5, 7, 100);
    assert_pull(t, 1, 4, 10,
                "{\"changes\":[{\"seq\":5,\"kind\":\"k5\"},{\"seq\":6,\"kind\":\"k6\"},{\"seq\":7,\"kind\":\"k7\"}],"
                "\"seq\":7,\"has_more\":false}");
    assert_pull(t, 1, 3, 10, NULL); /* change 4 is not here */
    assert_pull(t, 1, 8, 10, NULL); /* past the newest: the database's 400 */
    assert_pull(t, 1, 7, 10, "{\"changes\":[],\"seq\":7,\"has_more\":false}");
    assert_pull(t, 1, 4, 2,
                "{\"changes\":[{\"seq\":5,\"kind\":\"k5\"},{\"seq\":6,\"kind\":\"k6\"}],\"seq\":6,\"has_more\":true}");
    /* A gap: the user starts again at the new number. */
    put_range(t, 1, 9, 9, 100);
    assert_pull(t, 1, 7, 10, NULL);
    assert_pull(t, 1, 8, 10, "{\"changes\":[{\"seq\":9,\"kind\":\"k9\"}],\"seq\":9,\"has_more\":false}");
    /* A change without a part: forgotten. */
    chat_tail_put(t, 1, 10, NULL, 100);
    assert_pull(t, 1, 9, 10, NULL);
    assert_pull(t, 1, 10, 10, NULL);
    /* Only the newest CHAT_TAIL_KEEP stay. */
    put_range(t, 2, 1, CHAT_TAIL_KEEP + 3, 100); /* 4 .. KEEP + 3 stay */
    assert_pull(t, 2, 2, 1, NULL);
    assert_pull(t, 2, 3, 1, "{\"changes\":[{\"seq\":4,\"kind\":\"k4\"}],\"seq\":4,\"has_more\":true}");
    /* Sweeps drop who was not written to lately; forgetting drops one user. */
    put_range(t, 3, 1, 1, 100 + CHAT_TAIL_IDLE_MS);
    chat_tail_sweep(t, 101 + CHAT_TAIL_IDLE_MS);
    assert_pull(t, 2, 3, 1, NULL);
    assert_pull(t, 3, 0, 1, "{\"changes\":[{\"seq\":1,\"kind\":\"k1\"}],\"seq\":1,\"has_more\":false}");
    chat_tail_forget(t, 3);
    assert_pull(t, 3, 0, 1, NULL);
    /* Many users: the shards' tables grow and every user is found. */
    for (int64_t u = 1000; u < 3000; u++) put_range(t, u * 7919, 1, 2, 200);
    for (int64_t u = 1000; u < 3000; u++) {
        char *got = pull(t, u * 7919, 1, 5);
        assert_non_null(got);
        assert_non_null(strstr(got, "\"seq\":2,\"kind\":\"k2\""));
        free(got);
    }
    chat_tail_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TESTDB_TEST(test_answers_are_the_databases),
        cmocka_unit_test(test_rules),
    };
    return cmocka_run_group_tests(tests, setup_base, NULL);
}
