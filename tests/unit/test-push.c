/* test-push.c -- signal hints on the bus (push.c): news with numbers goes
 * over and comes back the same, split where a payload is full; the old
 * form without numbers reads as "not known", and so does a negative count
 * on its way out; a malformed hint gives the items before the fault and
 * nothing made up. */
#include "testutil.h"

#include <string.h>

#include "cluster/bus.h"
#include "deliver/push.h"

static void test_round_trip_and_split(void **state)
{
    (void)state;
    enum { N = 1000 };
    static ws_news news[N], back[N];
    for (int i = 0; i < N; i++)
        news[i] = (ws_news){.user_id = INT64_MAX - i * 7919, .seq = (int64_t)i * 1000003 + 1, .unread = i % 3 ? i : 0};
    char buf[BUS_PAYLOAD_MAX];
    size_t at = 0, got = 0, payloads = 0;
    while (at < N) {
        size_t len, n = push_news_encode(news + at, N - at, buf, sizeof buf, &len);
        assert_true(n > 0 && len <= sizeof buf);
        assert_int_equal(buf[0], 'n');
        got += push_news_parse(buf, len, back + got, N - got);
        at += n;
        payloads++;
    }
    assert_int_equal(got, N);
    assert_true(payloads > 1); /* 1000 items do not fit one payload */
    assert_memory_equal(news, back, sizeof news);
}

/* A negative count (a total gone wrong) goes as "not known", and the
 * items after it are not lost. */
static void test_negative_goes_as_not_known(void **state)
{
    (void)state;
    ws_news news[3] = {{1, 5, 2}, {2, 7, -1}, {3, 9, 0}}, back[3];
    char buf[256];
    size_t len;
    assert_int_equal(push_news_encode(news, 3, buf, sizeof buf, &len), 3);
    assert_int_equal(push_news_parse(buf, len, back, 3), 3);
    assert_int_equal(back[1].user_id, 2);
    assert_int_equal(back[1].seq, 0);
    assert_memory_equal(&back[2], &news[2], sizeof news[2]);
}

static void test_old_form_is_not_known(void **state)
{
    (void)state;
    const char *hint = "u00000000000000ff,0000000000000100";
    ws_news v[4];
    assert_int_equal(push_news_parse(hint, strlen(hint), v, 4), 2);
    assert_int_equal(v[0].user_id, 255);
    assert_int_equal(v[1].user_id, 256);
    assert_int_equal(v[0].seq, 0); /* the gateway reads the numbers */
    assert_int_equal(v[1].seq, 0);
    /* Number 0 in the new form is "not known" too: no count with it. */
    const char *zero = "n00000000000000ff:0:2";
    assert_int_equal(push_news_parse(zero, strlen(zero), v, 4), 1);
    assert_int_equal(v[0].seq, 0);
    assert_int_equal(v[0].unread, 0);
}

static void test_malformed(void **state)
{
    (void)state;
    ws_news v[4];
    const struct {
        const char *hint;
        size_t n;
    } cases[] = {
        {"", 0},
        {"x00000000000000ff:1:2", 0},                             /* unknown kind */
        {"n00000000000000ff", 0},                                 /* no numbers */
        {"n00000000000000ff:1", 0},                               /* no unread */
        {"n00000000000000ff:1:", 0},                              /* empty unread */
        {"n00000000000000ff::2", 0},                              /* empty seq */
        {"n00000000000000ff:-1:2", 0},                            /* signed */
        {"n00000000000000ff:1:2;0000000000000100:3:4", 1},        /* bad separator: the first only */
        {"n00000000000000ff:1:2,00000000000001zz:3:4", 1},        /* bad id */
        {"n00000000000000ff:1234567890123456789:2", 0},           /* 19 digits: over the bound */
        {"n00000000000000ff:1:2,0000000000000100:3:4,", 2},       /* trailing comma */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = push_news_parse(cases[i].hint, strlen(cases[i].hint), v, 4);
        if (n != cases[i].n) fail_msg("%s: %zu items, want %zu", cases[i].hint, n, cases[i].n);
        for (size_t k = 0; k < n; k++) assert_true(v[k].seq > 0 && v[k].unread >= 0);
    }
    /* At most max items. */
    const char *three = "n0000000000000001:1:0,0000000000000002:1:0,0000000000000003:1:0";
    assert_int_equal(push_news_parse(three, strlen(three), v, 2), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_split),
        cmocka_unit_test(test_negative_goes_as_not_known),
        cmocka_unit_test(test_old_form_is_not_known),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
