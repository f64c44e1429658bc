/* test-notify-queue.c -- the reminder engine's in-memory structures alone
 * (notify_queue.h): the timer heap (order, equal keys, growth, the
 * due-count walk and its cap, the hold walk, a randomized run against a
 * sorted array) and the table of sends in flight (take/drop, deletion
 * across the end of the table, the three-quarters refusal, a randomized
 * run against a plain list). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "notify/notify_queue.h"

/* xorshift64*: the randomized tests are the same run every time. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static notify_item item_at(int64_t due_ms, int k)
{
    notify_item it = {.due_ms = due_ms, .hold_ms = due_ms + 3000, .channel = NOTIFY_CHAN_INAPP};
    snprintf(it.id, sizeof it.id, "%032x", (unsigned)k);
    return it;
}

static void push(notify_heap *h, int64_t due_ms, int k)
{
    notify_item it = item_at(due_ms, k);
    assert_true(notify_heap_push(h, &it));
}

/* ---- the timer heap ------------------------------------------------------ */

static void test_heap_pops_in_due_order(void **state)
{
    notify_heap h = {0};
    const int64_t keys[] = {50, 10, 40, 30, 20, 60, 0, -5};
    const int64_t sorted[] = {-5, 0, 10, 20, 30, 40, 50, 60};
    for (int i = 0; i < 8; i++) push(&h, keys[i], i);
    assert_int_equal(notify_heap_size(&h), 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(notify_heap_peek(&h)->due_ms, sorted[i]);
        notify_item it = notify_heap_pop(&h);
        assert_int_equal(it.due_ms, sorted[i]);
        /* the item comes out whole, not just its key */
        int k = -1;
        for (int j = 0; j < 8; j++)
            if (keys[j] == sorted[i]) k = j;
        assert_string_equal(it.id, item_at(0, k).id);
        assert_int_equal(it.hold_ms, sorted[i] + 3000);
    }
    notify_heap_free(&h);
}

static void test_heap_equal_keys_all_come_out(void **state)
{
    notify_heap h = {0};
    bool seen[40] = {0};
    for (int i = 0; i < 40; i++) push(&h, i % 3 == 0 ? 100 : i % 3 == 1 ? 200 : 100, i);
    int64_t last = INT64_MIN;
    for (int i = 0; i < 40; i++) {
        notify_item it = notify_heap_pop(&h);
        assert_true(it.due_ms >= last);
        last = it.due_ms;
        int k = (int)strtol(it.id, NULL, 16);
        assert_in_range(k, 0, 39);
        assert_false(seen[k]);
        seen[k] = true;
    }
    assert_int_equal(notify_heap_size(&h), 0);
    notify_heap_free(&h);
}

static void test_heap_pops_to_empty_and_refills(void **state)
{
    notify_heap h = {0};
    assert_null(notify_heap_peek(&h));
    push(&h, 7, 1);
    assert_int_equal(notify_heap_pop(&h).due_ms, 7);
    assert_int_equal(notify_heap_size(&h), 0);
    assert_null(notify_heap_peek(&h));
    push(&h, 9, 2);
    push(&h, 8, 3);
    assert_int_equal(notify_heap_pop(&h).due_ms, 8);
    assert_int_equal(notify_heap_pop(&h).due_ms, 9);
    assert_null(notify_heap_peek(&h));
    notify_heap_free(&h);
    assert_null(h.v);
    assert_int_equal(h.n, 0);
}

static void test_heap_grows_past_its_first_capacity(void **state)
{
    notify_heap h = {0};
    /* base_grow starts at 16: descending keys make every push sift to the top */
    for (int i = 1000; i > 0; i--) push(&h, i, i);
    assert_int_equal(notify_heap_size(&h), 1000);
    assert_true(h.cap >= 1000);
    for (int i = 1; i <= 1000; i++) assert_int_equal(notify_heap_pop(&h).due_ms, i);
    notify_heap_free(&h);
}

static void test_heap_due_count_and_its_cap(void **state)
{
    notify_heap h = {0};
    assert_int_equal(notify_heap_due_count(&h, 1000, 100), 0);
    for (int i = 0; i < 100; i++) push(&h, (int64_t)(rng() % 1000), i);
    for (int64_t now = -1; now <= 1000; now += 37) {
        size_t want = 0;
        for (size_t i = 0; i < h.n; i++) want += h.v[i].due_ms <= now;
        assert_int_equal(notify_heap_due_count(&h, now, 1000), want);
        assert_int_equal(notify_heap_due_count(&h, now, 5), want < 5 ? want : 5);
        assert_int_equal(notify_heap_due_count(&h, now, 0), 0);
    }
    /* due exactly now counts */
    notify_heap_free(&h);
    push(&h, 10, 1);
    push(&h, 11, 2);
    assert_int_equal(notify_heap_due_count(&h, 10, 10), 1);
    assert_int_equal(notify_heap_due_count(&h, 9, 10), 0);
    notify_heap_free(&h);
}

static void test_heap_hold_walk(void **state)
{
    notify_heap h = {0};
    /* k: due, hold, channel */
    struct { int64_t due, hold; notify_chan ch; } in[] = {
        {100, 150, NOTIFY_CHAN_WEBHOOK}, /* 0: extended */
        {110, 150, NOTIFY_CHAN_INAPP},   /* 1: in-app, left to lapse */
        {120, 500, NOTIFY_CHAN_EMAIL},   /* 2: hold far enough */
        {130, 199, NOTIFY_CHAN_EMAIL},   /* 3: extended */
        {200, 150, NOTIFY_CHAN_WEBHOOK}, /* 4: due too late to be looked at */
        {300, 100, NOTIFY_CHAN_WEBHOOK}, /* 5: likewise */
    };
    for (int i = 0; i < 6; i++) {
        notify_item it = item_at(in[i].due, i);
        it.hold_ms = in[i].hold;
        it.channel = in[i].ch;
        assert_true(notify_heap_push(&h, &it));
    }
    notify_item_buf out = {0};
    notify_heap_holds_near(&h, 200, 200, 9000, 100, &out);
    assert_int_equal(out.n, 2);
    bool got0 = false, got3 = false;
    for (size_t i = 0; i < out.n; i++) {
        int k = (int)strtol(out.v[i].id, NULL, 16);
        got0 |= k == 0;
        got3 |= k == 3;
        assert_int_equal(out.v[i].hold_ms, in[k].hold); /* the copy is as it was */
    }
    assert_true(got0 && got3);
    for (size_t i = 0; i < h.n; i++) {
        int k = (int)strtol(h.v[i].id, NULL, 16);
        assert_int_equal(h.v[i].hold_ms, k == 0 || k == 3 ? 9000 : in[k].hold);
    }
    /* extended, they are not near any more */
    out.n = 0;
    notify_heap_holds_near(&h, 200, 200, 9500, 100, &out);
    assert_int_equal(out.n, 0);
    /* max counts what out already holds */
    notify_heap_holds_near(&h, 1000, 10000, 9900, 1, &out);
    assert_int_equal(out.n, 1);
    notify_heap_holds_near(&h, 1000, 10000, 9900, 1, &out);
    assert_int_equal(out.n, 1);
    free(out.v);
    notify_heap_free(&h);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Pushes and pops at random (keys from a small range: many equal) and
 * checks each pop against the minimum of a sorted array of what is in. */
static void test_heap_random_against_sorted_array(void **state)
{
    enum { OPS = 20000 };
    notify_heap h = {0};
    int64_t *ref = malloc(OPS * sizeof *ref);
    assert_non_null(ref);
    size_t n = 0, lo = 0; /* ref[lo..n) sorted: what the heap holds */
    for (int op = 0; op < OPS; op++) {
        if (n > lo && rng() % 5 < 2) {
            notify_item it = notify_heap_pop(&h);
            assert_int_equal(it.due_ms, ref[lo]);
            lo++;
        } else {
            int64_t key = (int64_t)(rng() % 500) - 250;
            push(&h, key, op);
            ref[n++] = key;
            qsort(ref + lo, n - lo, sizeof *ref, cmp_i64);
        }
        assert_int_equal(notify_heap_size(&h), n - lo);
        if (n > lo) assert_int_equal(notify_heap_peek(&h)->due_ms, ref[lo]);
    }
    while (n > lo) assert_int_equal(notify_heap_pop(&h).due_ms, ref[lo++]);
    assert_null(notify_heap_peek(&h));
    free(ref);
    notify_heap_free(&h);
}

/* ---- sends in flight ----------------------------------------------------- */

static void id_of(int k, char id[NOTIFY_ID_LEN + 1])
{
    snprintf(id, NOTIFY_ID_LEN + 1, "%032x", (unsigned)k);
}

static bool in_table(notify_flights *t, const char *id)
{
    return strcmp(notify_flights_slot(t, id)->id, id) == 0;
}

static void test_flights_size_from_bound(void **state)
{
    const size_t bound[] = {0, 1, 4, 5, 100, 128, 129};
    const size_t slots[] = {16, 16, 16, 32, 512, 512, 1024};
    for (int i = 0; i < 7; i++) {
        notify_flights t;
        assert_true(notify_flights_init(&t, bound[i]));
        assert_int_equal(t.mask + 1, slots[i]);
        assert_int_equal(notify_flights_count(&t), 0);
        notify_flights_free(&t);
        assert_null(t.v);
    }
}

static void test_flights_take_and_drop(void **state)
{
    notify_flights t;
    assert_true(notify_flights_init(&t, 4));
    char a[NOTIFY_ID_LEN + 1], b[NOTIFY_ID_LEN + 1];
    id_of(1, a);
    id_of(2, b);
    assert_false(in_table(&t, a));
    assert_true(notify_flights_take(&t, a, 111));
    assert_false(notify_flights_take(&t, a, 222)); /* a send of it is being made */
    assert_int_equal(notify_flights_slot(&t, a)->hold_ms, 111);
    assert_true(notify_flights_take(&t, b, 333));
    assert_int_equal(notify_flights_count(&t), 2);
    notify_flights_slot(&t, b)->hold_ms = 444;
    notify_flights_drop(&t, a);
    assert_false(in_table(&t, a));
    assert_true(in_table(&t, b));
    assert_int_equal(notify_flights_slot(&t, b)->hold_ms, 444);
    assert_int_equal(notify_flights_count(&t), 1);
    notify_flights_drop(&t, a); /* not in: nothing */
    assert_int_equal(notify_flights_count(&t), 1);
    assert_true(notify_flights_take(&t, a, 555));
    assert_int_equal(notify_flights_count(&t), 2);
    notify_flights_free(&t);
}

/* The first ids (from *k on) whose home slot is `home`, found as the slot
 * an empty table gives them. */
static void ids_homed_at(notify_flights *empty, size_t home, int *k, int count, char (*out)[NOTIFY_ID_LEN + 1])
{
    for (int got = 0; got < count; ++*k) {
        id_of(*k, out[got]);
        if ((size_t)(notify_flights_slot(empty, out[got]) - empty->v) == home) got++;
    }
}

static size_t slot_index(notify_flights *t, const char *id)
{
    return (size_t)(notify_flights_slot(t, id) - t->v);
}

/* A cluster across the end of the table: three ids at home in the last
 * slot take it and slots 0 and 1; one at home in 0 goes to 2. Dropping
 * the first must move the other three back one by one, over the wrap. */
static void test_flights_drop_wraps_around(void **state)
{
    notify_flights t;
    assert_true(notify_flights_init(&t, 4)); /* 16 slots */
    size_t last = t.mask;
    char at_end[3][NOTIFY_ID_LEN + 1], at_zero[1][NOTIFY_ID_LEN + 1], at_five[1][NOTIFY_ID_LEN + 1];
    int k = 0;
    ids_homed_at(&t, last, &k, 3, at_end);
    ids_homed_at(&t, 0, &k, 1, at_zero);
    ids_homed_at(&t, 5, &k, 1, at_five);
    for (int i = 0; i < 3; i++) assert_true(notify_flights_take(&t, at_end[i], i));
    assert_true(notify_flights_take(&t, at_zero[0], 10));
    assert_true(notify_flights_take(&t, at_five[0], 50));
    assert_int_equal(slot_index(&t, at_end[0]), last);
    assert_int_equal(slot_index(&t, at_end[1]), 0);
    assert_int_equal(slot_index(&t, at_end[2]), 1);
    assert_int_equal(slot_index(&t, at_zero[0]), 2);
    notify_flights_drop(&t, at_end[0]);
    assert_int_equal(notify_flights_count(&t), 4);
    assert_false(in_table(&t, at_end[0]));
    assert_int_equal(slot_index(&t, at_end[1]), last);
    assert_int_equal(slot_index(&t, at_end[2]), 0);
    assert_int_equal(slot_index(&t, at_zero[0]), 1);
    assert_int_equal(notify_flights_slot(&t, at_zero[0])->hold_ms, 10); /* moved whole */
    assert_int_equal(slot_index(&t, at_five[0]), 5);                   /* not in the cluster: untouched */
    assert_int_equal(t.v[2].id[0], '\0');
    /* drop the one now in 0 (its home the last slot): the one in 1 moves
     * back to its home, 0 */
    notify_flights_drop(&t, at_end[2]);
    assert_int_equal(slot_index(&t, at_zero[0]), 0);
    assert_int_equal(slot_index(&t, at_end[1]), last);
    assert_int_equal(t.v[1].id[0], '\0');
    notify_flights_free(&t);

    /* Across the end, entries at home stay: X and W at home in 14 take 14
     * and 1 around Y (home 15) and Z (home 0); dropping X leaves Y and Z
     * where they are and moves W to 14. */
    assert_true(notify_flights_init(&t, 4));
    char at14[2][NOTIFY_ID_LEN + 1], at15[1][NOTIFY_ID_LEN + 1], at0[1][NOTIFY_ID_LEN + 1];
    ids_homed_at(&t, 14, &k, 2, at14);
    ids_homed_at(&t, 15, &k, 1, at15);
    ids_homed_at(&t, 0, &k, 1, at0);
    assert_true(notify_flights_take(&t, at14[0], 1));
    assert_true(notify_flights_take(&t, at15[0], 2));
    assert_true(notify_flights_take(&t, at0[0], 3));
    assert_true(notify_flights_take(&t, at14[1], 4));
    assert_int_equal(slot_index(&t, at14[1]), 1);
    notify_flights_drop(&t, at14[0]);
    assert_int_equal(slot_index(&t, at15[0]), 15);
    assert_int_equal(slot_index(&t, at0[0]), 0);
    assert_int_equal(slot_index(&t, at14[1]), 14);
    assert_int_equal(t.v[1].id[0], '\0');
    notify_flights_free(&t);
}

/* An entry whose home lies between the freed slot and itself stays: X
 * and Z at home in 3 take 3 and 5 around Y at home in 4; dropping X
 * leaves Y in 4 and moves Z to 3. */
static void test_flights_drop_leaves_entries_at_home(void **state)
{
    notify_flights t;
    assert_true(notify_flights_init(&t, 4));
    char at3[2][NOTIFY_ID_LEN + 1], at4[1][NOTIFY_ID_LEN + 1];
    int k = 0;
    ids_homed_at(&t, 3, &k, 2, at3);
    ids_homed_at(&t, 4, &k, 1, at4);
    assert_true(notify_flights_take(&t, at3[0], 1));
    assert_true(notify_flights_take(&t, at4[0], 2));
    assert_true(notify_flights_take(&t, at3[1], 3));
    assert_int_equal(slot_index(&t, at3[1]), 5);
    notify_flights_drop(&t, at3[0]);
    assert_int_equal(slot_index(&t, at4[0]), 4);
    assert_int_equal(slot_index(&t, at3[1]), 3);
    assert_int_equal(t.v[5].id[0], '\0');
    assert_false(in_table(&t, at3[0]));
    notify_flights_free(&t);
}

static void test_flights_refuse_when_three_quarters_full(void **state)
{
    notify_flights t;
    assert_true(notify_flights_init(&t, 4)); /* 16 slots: 12 entries at most */
    char id[NOTIFY_ID_LEN + 1];
    for (int i = 0; i < 12; i++) {
        id_of(i, id);
        assert_true(notify_flights_take(&t, id, i));
    }
    id_of(12, id);
    assert_false(notify_flights_take(&t, id, 12));
    assert_false(in_table(&t, id));
    assert_int_equal(notify_flights_count(&t), 12);
    char first[NOTIFY_ID_LEN + 1];
    id_of(0, first);
    notify_flights_drop(&t, first);
    assert_true(notify_flights_take(&t, id, 12));
    for (int i = 1; i <= 12; i++) {
        id_of(i, id);
        assert_true(in_table(&t, id));
    }
    notify_flights_free(&t);
}

static void test_flights_hold_walk(void **state)
{
    notify_flights t;
    assert_true(notify_flights_init(&t, 4));
    char id[NOTIFY_ID_LEN + 1];
    for (int i = 0; i < 6; i++) {
        id_of(i, id);
        assert_true(notify_flights_take(&t, id, 100 * i)); /* holds 0, 100, ... 500 */
    }
    notify_item_buf out = {0};
    notify_flights_holds_near(&t, 250, 7000, &out); /* 0, 100, 200 */
    assert_int_equal(out.n, 3);
    for (size_t i = 0; i < out.n; i++) {
        assert_int_equal(out.v[i].hold_ms, 7000);
        int k = (int)strtol(out.v[i].id, NULL, 16);
        assert_in_range(k, 0, 2);
    }
    for (int i = 0; i < 6; i++) {
        id_of(i, id);
        assert_int_equal(notify_flights_slot(&t, id)->hold_ms, i < 3 ? 7000 : 100 * i);
    }
    free(out.v);
    notify_flights_free(&t);
}

/* Takes and drops at random in a small table (long clusters, wrapping)
 * and checks every id against a plain list after each step. */
static void test_flights_random_against_a_list(void **state)
{
    enum { IDS = 40, OPS = 20000 };
    notify_flights t;
    assert_true(notify_flights_init(&t, 8)); /* 32 slots: 24 entries at most */
    bool in[IDS] = {0};
    size_t count = 0;
    char id[NOTIFY_ID_LEN + 1];
    for (int op = 0; op < OPS; op++) {
        int k = (int)(rng() % IDS);
        id_of(k, id);
        if (rng() % 2) {
            bool took = notify_flights_take(&t, id, k);
            assert_int_equal(took, !in[k] && count < 24);
            if (took) {
                in[k] = true;
                count++;
            }
        } else {
            notify_flights_drop(&t, id);
            if (in[k]) count--;
            in[k] = false;
        }
        assert_int_equal(notify_flights_count(&t), count);
        for (int j = 0; j < IDS; j++) {
            id_of(j, id);
            assert_int_equal(in_table(&t, id), in[j]);
            if (in[j]) assert_int_equal(notify_flights_slot(&t, id)->hold_ms, j);
        }
    }
    notify_flights_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_pops_in_due_order),
        cmocka_unit_test(test_heap_equal_keys_all_come_out),
        cmocka_unit_test(test_heap_pops_to_empty_and_refills),
        cmocka_unit_test(test_heap_grows_past_its_first_capacity),
        cmocka_unit_test(test_heap_due_count_and_its_cap),
        cmocka_unit_test(test_heap_hold_walk),
        cmocka_unit_test(test_heap_random_against_sorted_array),
        cmocka_unit_test(test_flights_size_from_bound),
        cmocka_unit_test(test_flights_take_and_drop),
        cmocka_unit_test(test_flights_drop_wraps_around),
        cmocka_unit_test(test_flights_drop_leaves_entries_at_home),
        cmocka_unit_test(test_flights_refuse_when_three_quarters_full),
        cmocka_unit_test(test_flights_hold_walk),
        cmocka_unit_test(test_flights_random_against_a_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
