/* test-hot-heap.c -- the bounded top-K min-heap: against a full sort of
 * random entries (with ties), for K from 1 to more than the entries, and
 * its memory never growing past K. */
#include "testutil.h"

#include <string.h>

#include "hot/hot_rank.h"

static int cmp_best_first(const void *x, const void *y)
{
    const hot_entry *a = x, *b = y;
    return hot_rank_above(a, b) ? -1 : hot_rank_above(b, a) ? 1 : 0;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check(size_t n, size_t k)
{
    hot_entry *all = calloc(n ? n : 1, sizeof *all), *store = calloc(k ? k : 1, sizeof *store);
    hot_heap h;
    hot_heap_init(&h, store, k);
    for (size_t i = 0; i < n; i++) {
        /* Few distinct scores and times: many ties to break. */
        all[i] = (hot_entry){.post_id = (int64_t)i + 1, .created_ms = (int64_t)(next_rand() % 5),
                             .score = (double)(next_rand() % 7)};
        hot_heap_offer(&h, &all[i]);
        assert_true(h.n <= k);
    }
    hot_heap_sort(&h);
    qsort(all, n, sizeof *all, cmp_best_first);
    size_t want = n < k ? n : k;
    assert_int_equal(h.n, want);
    for (size_t i = 0; i < want; i++) assert_int_equal(h.v[i].post_id, all[i].post_id);
    free(all);
    free(store);
}

static void test_against_sort(void **state)
{
    size_t ks[] = {1, 2, 3, 50, 999, 1000, 1001, 5000};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        check(1000, ks[i]);
        check(0, ks[i]);
        check(1, ks[i]);
    }
}

static void test_zero_k(void **state)
{
    hot_heap h;
    hot_entry e = {.post_id = 1, .score = 1};
    hot_heap_init(&h, NULL, 0);
    hot_heap_offer(&h, &e);
    assert_int_equal(h.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_sort), cmocka_unit_test(test_zero_k)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
