/* test-jsonw.c -- the streaming JSON writer: structure, commas, escaping,
 * reused member fragments; every output parses back with jansson. */
#include "testutil.h"

#include <jansson.h>
#include <string.h>

#include "http/jsonw.h"

static json_t *parse(const jsonw *w)
{
    json_error_t e;
    json_t *j = json_loadb(w->buf, w->len, 0, &e);
    if (!j) fail_msg("not JSON (%s): %.*s", e.text, (int)w->len, w->buf);
    return j;
}

static void test_shapes(void **state)
{
    (void)state;
    jsonw w;
    jw_init(&w, 4); /* tiny: forces growth */
    jw_obj(&w);
    jw_kstr(&w, "s", "a\"b\\c\n\t\x01 \xc3\xa9");
    jw_kint(&w, "i", -9223372036854775807LL - 1);
    jw_kint(&w, "z", 0);
    jw_key(&w, "arr");
    jw_arr(&w);
    jw_int(&w, 1);
    jw_null(&w);
    jw_bool(&w, true);
    jw_obj(&w);
    jw_obj_end(&w);
    jw_arr(&w);
    jw_arr_end(&w);
    jw_arr_end(&w);
    jw_kplain(&w, "p", "2026-10-26T09:00:00Z");
    jw_obj_end(&w);
    assert_false(jw_failed(&w));
    json_t *j = parse(&w);
    assert_string_equal(json_string_value(json_object_get(j, "s")), "a\"b\\c\n\t\x01 \xc3\xa9");
    assert_true(json_integer_value(json_object_get(j, "i")) == INT64_MIN);
    assert_int_equal(json_array_size(json_object_get(j, "arr")), 5);
    assert_string_equal(json_string_value(json_object_get(j, "p")), "2026-10-26T09:00:00Z");
    json_decref(j);
    jw_free(&w);
}

static void test_fragments(void **state)
{
    (void)state;
    jsonw frag, w;
    jw_init(&frag, 64);
    jw_obj(&frag);
    jw_kstr(&frag, "a", "x");
    jw_kint(&frag, "b", 2);
    size_t n;
    const char *m = jw_open_members(&frag, &n);
    jw_init(&w, 64);
    jw_arr(&w);
    for (int i = 0; i < 3; i++) {
        jw_obj(&w);
        jw_kint(&w, "id", i);
        jw_members(&w, m, n);
        jw_obj_end(&w);
        jw_obj(&w); /* fragment first, then more */
        jw_members(&w, m, n);
        jw_kint(&w, "c", i);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    json_t *j = parse(&w);
    assert_int_equal(json_array_size(j), 6);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 5), "a")), "x");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 5), "c")), 2);
    json_decref(j);
    jw_free(&w);
    jw_free(&frag);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_fragments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
