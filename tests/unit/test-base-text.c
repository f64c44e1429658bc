/* test-base-text.c -- the helpers of base/ that judge what comes from
 * outside: the control-character rule of text fields (text.h), and the
 * keyed permutation that turns a counter into an opaque id (base.h). */
#include "testutil.h"

#include <string.h>

#include "base/base.h"
#include "base/text.h"

static ptrdiff_t find(const char *s, text_kind k, uint32_t *cp)
{
    return text_find_control(s, strlen(s), k, cp);
}

static void test_controls_by_kind(void **state)
{
    (void)state;
    uint32_t cp = 0;
    assert_int_equal(find("plain text, caf\xc3\xa9", TEXT_IDENT, &cp), -1);
    assert_int_equal(find("tab\there", TEXT_LINE, &cp), -1);
    assert_int_equal(find("tab\there", TEXT_IDENT, &cp), 3);
    assert_int_equal(cp, '\t');
    assert_int_equal(find("two\nlines", TEXT_MULTILINE, &cp), -1);
    assert_int_equal(find("two\nlines", TEXT_LINE, &cp), 3);
    assert_int_equal(find("crlf\r\n", TEXT_MULTILINE, &cp), 4);
    assert_int_equal(cp, '\r');
    assert_int_equal(find("del\x7f", TEXT_MULTILINE, &cp), 3);
    assert_int_equal(cp, 0x7f);
    /* C1: U+0085 (NEL) is C2 85; U+00A0 (C2 A0) is not a control. */
    assert_int_equal(find("nel\xc2\x85", TEXT_MULTILINE, &cp), 3);
    assert_int_equal(cp, 0x85);
    assert_int_equal(find("nbsp\xc2\xa0ok", TEXT_IDENT, &cp), -1);
    assert_int_equal(find("bell\x07", TEXT_LINE, &cp), 4);
    const char nul[] = {'a', 0, 'b'};
    assert_int_equal(text_find_control(nul, 3, TEXT_MULTILINE, &cp), 1);
}

static void test_conceal_is_a_permutation(void **state)
{
    (void)state;
    unsigned char key[BASE_ID_KEY_LEN], other[BASE_ID_KEY_LEN];
    memset(key, 7, sizeof key);
    memset(other, 8, sizeof other);
    int64_t prev = 0;
    for (int64_t n = 1; n < 5000; n++) {
        int64_t id = base_id_conceal(key, n);
        char text[17];
        int64_t parsed;
        base_id_format(id, text);
        assert_int_equal(base_id_parse(text, 16, &parsed), 0); /* a valid id */
        assert_int_equal(base_id_reveal(key, id), n);
        assert_true(id != prev && id != prev + 1);
        assert_true(base_id_conceal(other, n) != id);
        prev = id;
    }
    int64_t big = INT64_MAX - 3;
    assert_int_equal(base_id_reveal(key, base_id_conceal(key, big)), big);
    assert_int_equal(base_id_conceal(key, 0), 0);
    assert_int_equal(base_id_reveal(key, -5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_controls_by_kind),
        cmocka_unit_test(test_conceal_is_a_permutation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
