/* test-hot-rank.c -- the hot list's formulas against hand-computed values
 * (Hacker News and Reddit, with the default weights), future dates counted
 * as now, the tie rule, and the option parsers' answers to bad input. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "hot/hot_rank.h"

static hot_rank_opts defaults(const char *formula)
{
    hot_rank_opts o;
    char err[200];
    assert_int_equal(hot_rank_config(formula, "views=1,likes=5,comments=10,shares=20", "1.8", &o, err, sizeof err), 0);
    return o;
}

static void test_points(void **state)
{
    hot_rank_opts o = defaults("hn");
    hot_counts c = {.likes = 2, .comments = 3, .shares = 1, .views = 7};
    /* 7*1 + 2*5 + 3*10 + 1*20 */
    assert_true(hot_rank_points(&o.w, &c) == 67.0);
}

static void test_hn(void **state)
{
    hot_rank_opts o = defaults("hn");
    int64_t now = 1795000000000;
    hot_counts c = {.likes = 2}; /* 10 points: base 9 */
    /* 3 hours old: 9^0.8 / 5^1.8 = 5.7995 / 18.1195 = 0.3200722... */
    double s = hot_rank_score(&o, &c, now - 3 * 3600000, now);
    assert_true(fabs(s - pow(9, 0.8) / pow(5, 1.8)) < 1e-12);
    assert_true(fabs(s - 0.3200722) < 1e-6);
    /* Older ranks lower with the same points (decay). */
    assert_true(hot_rank_score(&o, &c, now - 10 * 3600000, now) < s);
    /* A future date counts as now: age 0, 9^0.8 / 2^1.8. */
    double future = hot_rank_score(&o, &c, now + 86400000, now);
    assert_true(fabs(future - pow(9, 0.8) / pow(2, 1.8)) < 1e-12);
    assert_true(future == hot_rank_score(&o, &c, now, now));
    /* No points: base -1 stays negative (news.arc keeps it as is). */
    hot_counts none = {0};
    assert_true(fabs(hot_rank_score(&o, &none, now, now) - (-1 / pow(2, 1.8))) < 1e-12);
    /* Gravity is the age exponent. */
    char err[200];
    assert_int_equal(hot_rank_config("hn", "likes=5", "1", &o, err, sizeof err), 0);
    assert_true(fabs(hot_rank_score(&o, &c, now - 3 * 3600000, now) - pow(9, 0.8) / 5) < 1e-12);
}

static void test_reddit(void **state)
{
    hot_rank_opts o = defaults("reddit");
    int64_t created = (1134028003LL + 45000) * 1000; /* one 45000 s step after Reddit's epoch */
    hot_counts c = {.views = 100};                   /* 100 points: log10 = 2 */
    assert_true(fabs(hot_rank_score(&o, &c, created, created + 3600000) - 3.0) < 1e-12);
    /* No decay: the score does not depend on now. */
    assert_true(hot_rank_score(&o, &c, created, created + 86400000) == hot_rank_score(&o, &c, created, created));
    /* Ten times the points is worth 12.5 hours. */
    hot_counts ten = {.views = 1000};
    assert_true(fabs(hot_rank_score(&o, &ten, created, created) - hot_rank_score(&o, &c, created + 45000000, created + 45000000)) < 1e-12);
    /* No points: sign 0, the time term alone. */
    hot_counts none = {0};
    assert_true(fabs(hot_rank_score(&o, &none, created, created) - 1.0) < 1e-12);
    /* A future date counts as now. */
    assert_true(hot_rank_score(&o, &c, created + 7200000, created) == hot_rank_score(&o, &c, created, created));
    assert_true(fabs(hot_rank_reddit(-100, 1134028003) - -2.0) < 1e-12);
}

static void test_config_errors(void **state)
{
    hot_rank_opts o;
    char err[200];
    assert_int_equal(hot_rank_config("lemmy", "likes=5", "1.8", &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "hot-formula"));
    assert_int_equal(hot_rank_config("hn", "likes=x", "1.8", &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "likes"));
    assert_int_equal(hot_rank_config("hn", "stars=5", "1.8", &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "stars"));
    assert_int_equal(hot_rank_config("hn", "likes=-1", "1.8", &o, err, sizeof err), -1);
    assert_int_equal(hot_rank_config("hn", "likes=5,", "1.8", &o, err, sizeof err), -1);
    assert_int_equal(hot_rank_config("hn", "", "1.8", &o, err, sizeof err), -1);
    assert_int_equal(hot_rank_config("hn", "likes", "1.8", &o, err, sizeof err), -1);
    assert_int_equal(hot_rank_config("hn", "likes=5", "nan", &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "hot-gravity"));
    assert_int_equal(hot_rank_config("hn", "likes=5", "11", &o, err, sizeof err), -1);
    /* A subset keeps the other defaults; fractions are fine. */
    assert_int_equal(hot_rank_config("reddit", "likes=2.5", "0.5", &o, err, sizeof err), 0);
    assert_true(o.formula == HOT_FORMULA_REDDIT && o.w.likes == 2.5 && o.w.views == 1 && o.w.comments == 10 &&
                o.w.shares == 20 && o.gravity == 0.5);
}

static void test_ties(void **state)
{
    hot_entry a = {.post_id = 1, .created_ms = 1000, .score = 2.0}, b = a;
    b.post_id = 2;
    assert_true(hot_rank_above(&b, &a)); /* same score and time: larger id */
    b.created_ms = 999;
    assert_true(hot_rank_above(&a, &b)); /* same score: the newer */
    b.score = 2.5;
    assert_true(hot_rank_above(&b, &a));
    assert_false(hot_rank_above(&a, &a));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_points),  cmocka_unit_test(test_hn),   cmocka_unit_test(test_reddit),
        cmocka_unit_test(test_config_errors), cmocka_unit_test(test_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
