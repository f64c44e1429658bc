/* test-tz.c -- known transitions, the RFC 5545 gap/overlap rule, footer
 * rules past the table, UTC and floating time, bad names, malformed files,
 * Windows names, and concurrent loading. Expected instants were taken from
 * the IANA data (cross-checked with Python's zoneinfo). */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "time/civil.h"
#include "time/tz.h"

static int64_t wall(int y, int mo, int d, int h, int mi, int s)
{
    civil_time t = {.year = y, .month = (int8_t)mo, .day = (int8_t)d,
                    .hour = (int8_t)h, .minute = (int8_t)mi, .second = (int8_t)s};
    return civil_to_seconds(&t);
}

static int setup(void **state)
{
    *state = tz_db_new(NULL);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    tz_db_free(*state);
    return 0;
}

static const tz_zone *zone(void **state, const char *name)
{
    const tz_zone *z = tz_db_get(*state, name);
    assert_non_null(z);
    assert_string_equal(tz_zone_name(z), name);
    return z;
}

/* A transition at instant t from offset a to offset b. */
static void assert_transition(const tz_zone *z, int64_t t, int32_t a, int32_t b)
{
    assert_int_equal(tz_offset_at(z, t - 1), a);
    assert_int_equal(tz_offset_at(z, t), b);
}

static void test_new_york(void **state)
{
    const tz_zone *z = zone(state, "America/New_York");
    int64_t spring = wall(2026, 3, 8, 7, 0, 0), fall = wall(2026, 11, 1, 6, 0, 0);
    assert_transition(z, spring, -5 * 3600, -4 * 3600);
    assert_transition(z, fall, -4 * 3600, -5 * 3600);
    assert_string_equal(tz_abbrev_at(z, spring - 1), "EST");
    assert_string_equal(tz_abbrev_at(z, spring), "EDT");
    /* Gap: 02:30 does not exist, it is taken with EST, i.e. 03:30 EDT. */
    assert_int_equal(tz_local_to_utc(z, wall(2026, 3, 8, 2, 30, 0)), wall(2026, 3, 8, 7, 30, 0));
    assert_int_equal(tz_local_to_utc(z, wall(2026, 3, 8, 1, 59, 59)), spring - 1);
    assert_int_equal(tz_local_to_utc(z, wall(2026, 3, 8, 2, 0, 0)), spring);
    assert_int_equal(tz_local_to_utc(z, wall(2026, 3, 8, 3, 0, 0)), spring);
    /* Overlap: 01:30 happens twice; the first (EDT) one wins. */
    assert_int_equal(tz_local_to_utc(z, wall(2026, 11, 1, 1, 30, 0)), wall(2026, 11, 1, 5, 30, 0));
    assert_int_equal(tz_local_to_utc(z, wall(2026, 11, 1, 0, 59, 59)), wall(2026, 11, 1, 4, 59, 59));
    assert_int_equal(tz_local_to_utc(z, wall(2026, 11, 1, 2, 0, 0)), wall(2026, 11, 1, 7, 0, 0));
    assert_int_equal(tz_utc_to_local(z, wall(2026, 7, 4, 16, 0, 0)), wall(2026, 7, 4, 12, 0, 0));
    /* 1883 and before: local mean time, -4:56:02. */
    assert_int_equal(tz_offset_at(z, wall(1850, 1, 1, 0, 0, 0)), -(4 * 3600 + 56 * 60 + 2));
    assert_string_equal(tz_abbrev_at(z, wall(1850, 1, 1, 0, 0, 0)), "LMT");
}

static void test_london(void **state)
{
    const tz_zone *z = zone(state, "Europe/London");
    assert_transition(z, 1774746000, 0, 3600);
    assert_transition(z, 1792890000, 3600, 0);
    assert_string_equal(tz_abbrev_at(z, 1774746000), "BST");
    assert_string_equal(tz_abbrev_at(z, 1792890000), "GMT");
    assert_int_equal(tz_local_to_utc(z, wall(2026, 3, 29, 1, 30, 0)), wall(2026, 3, 29, 1, 30, 0));
    assert_int_equal(tz_local_to_utc(z, wall(2026, 10, 25, 1, 30, 0)), wall(2026, 10, 25, 0, 30, 0));
}

static void test_lord_howe(void **state)
{
    const tz_zone *z = zone(state, "Australia/Lord_Howe");
    int32_t std = 10 * 3600 + 1800, dst = 11 * 3600;
    assert_transition(z, 1775314800, dst, std); /* 2026-04-05 02:00 -> 01:30 */
    assert_transition(z, 1791041400, std, dst); /* 2026-10-04 02:00 -> 02:30 */
    assert_string_equal(tz_abbrev_at(z, 1791041400), "+11");
    /* The 30-minute gap: 02:15 is taken with +10:30, i.e. 02:45 +11. */
    assert_int_equal(tz_local_to_utc(z, wall(2026, 10, 4, 2, 15, 0)), wall(2026, 10, 3, 15, 45, 0));
    /* The 30-minute overlap: 01:45 first happens at +11. */
    assert_int_equal(tz_local_to_utc(z, wall(2026, 4, 5, 1, 45, 0)), wall(2026, 4, 4, 14, 45, 0));
    /* Past the table (2350), from the footer rule. */
    assert_transition(z, INT64_C(11999458800), dst, std);
    assert_transition(z, INT64_C(12015185400), std, dst);
}

static void test_kolkata(void **state)
{
    const tz_zone *z = zone(state, "Asia/Kolkata");
    int32_t ist = 5 * 3600 + 1800;
    for (int y = 1950; y <= 2300; y += 7) {
        int64_t t = wall(y, 6, 1, 0, 0, 0);
        assert_int_equal(tz_offset_at(z, t), ist);
        assert_int_equal(tz_local_to_utc(z, t), t - ist);
    }
    assert_string_equal(tz_abbrev_at(z, wall(2026, 1, 1, 0, 0, 0)), "IST");
}

static void test_apia_skipped_day(void **state)
{
    const tz_zone *z = zone(state, "Pacific/Apia");
    int64_t t = wall(2011, 12, 30, 10, 0, 0);
    assert_transition(z, t, -10 * 3600, 14 * 3600);
    /* 2011-12-29 23:59:59 local was followed by 2011-12-31 00:00:00. */
    assert_int_equal(tz_utc_to_local(z, t - 1), wall(2011, 12, 29, 23, 59, 59));
    assert_int_equal(tz_utc_to_local(z, t), wall(2011, 12, 31, 0, 0, 0));
    /* Noon on the missing day takes the old offset: 22:00Z. */
    assert_int_equal(tz_local_to_utc(z, wall(2011, 12, 30, 12, 0, 0)), wall(2011, 12, 30, 22, 0, 0));
}

static void test_dublin_negative_dst(void **state)
{
    const tz_zone *z = zone(state, "Europe/Dublin");
    assert_transition(z, 1774746000, 0, 3600);
    assert_transition(z, 1792890000, 3600, 0);
    assert_string_equal(tz_abbrev_at(z, wall(2026, 1, 15, 0, 0, 0)), "GMT");
    assert_string_equal(tz_abbrev_at(z, wall(2026, 7, 1, 0, 0, 0)), "IST");
    assert_int_equal(tz_offset_at(z, wall(2250, 1, 15, 0, 0, 0)), 0);
    assert_int_equal(tz_offset_at(z, wall(2250, 7, 1, 0, 0, 0)), 3600);
    assert_string_equal(tz_abbrev_at(z, wall(2250, 1, 15, 0, 0, 0)), "GMT");
}

static void test_casablanca(void **state)
{
    const tz_zone *z = zone(state, "Africa/Casablanca");
    assert_transition(z, 1771120800, 3600, 0); /* Ramadan 2026 */
    assert_transition(z, 1774144800, 0, 3600);
}

static void test_sao_paulo_abolished(void **state)
{
    const tz_zone *z = zone(state, "America/Sao_Paulo");
    assert_transition(z, 1541300400, -3 * 3600, -2 * 3600);
    assert_transition(z, 1550368800, -2 * 3600, -3 * 3600);
    for (int y = 2020; y <= 2300; y += 3) {
        assert_int_equal(tz_offset_at(z, wall(y, 1, 15, 0, 0, 0)), -3 * 3600);
        assert_int_equal(tz_offset_at(z, wall(y, 7, 15, 0, 0, 0)), -3 * 3600);
    }
}

static void test_past_2037(void **state)
{
    const tz_zone *z = zone(state, "America/New_York");
    assert_transition(z, INT64_C(2530767600), -5 * 3600, -4 * 3600); /* 2050-03-13 */
    assert_transition(z, INT64_C(2551327200), -4 * 3600, -5 * 3600);
    assert_transition(z, INT64_C(10419778800), -5 * 3600, -4 * 3600); /* 2300-03-11 */
    assert_transition(z, INT64_C(10440338400), -4 * 3600, -5 * 3600);
    assert_int_equal(tz_local_to_utc(z, wall(2300, 3, 11, 2, 30, 0)), wall(2300, 3, 11, 7, 30, 0));
    assert_int_equal(tz_local_to_utc(z, wall(2300, 11, 4, 1, 30, 0)), wall(2300, 11, 4, 5, 30, 0));
    assert_string_equal(tz_abbrev_at(z, INT64_C(10419778800)), "EDT");
    /* Extremes saturate rather than overflow. */
    assert_int_equal(tz_offset_at(z, INT64_MAX), -5 * 3600);
    assert_int_equal(tz_local_to_utc(z, INT64_MAX), INT64_MAX);
    assert_int_equal(tz_utc_to_local(z, INT64_MIN), INT64_MIN);
    assert_int_equal(tz_local_to_utc(z, INT64_MIN), INT64_MIN + (4 * 3600 + 56 * 60 + 2));
}

static void test_utc_and_floating(void **state)
{
    const tz_zone *z = zone(state, "UTC");
    for (int64_t t = -INT64_C(5000000000); t < INT64_C(20000000000); t += 86400 * 97 + 13) {
        assert_int_equal(tz_offset_at(z, t), 0);
        assert_int_equal(tz_local_to_utc(z, t), t);
        assert_int_equal(tz_utc_to_local(z, t), t);
    }
    assert_string_equal(tz_abbrev_at(z, 0), "UTC");
    /* Floating: the NULL zone. */
    assert_int_equal(tz_offset_at(NULL, 12345), 0);
    assert_int_equal(tz_local_to_utc(NULL, 12345), 12345);
    assert_int_equal(tz_utc_to_local(NULL, 12345), 12345);
    assert_string_equal(tz_abbrev_at(NULL, 0), "");
    assert_string_equal(tz_zone_name(NULL), "");
    /* Etc/GMT+5 is five hours *behind* UTC (POSIX sign convention). */
    assert_int_equal(tz_offset_at(zone(state, "Etc/GMT+5"), 0), -5 * 3600);
}

static void test_bad_names(void **state)
{
    static const char *bad[] = {
        "../etc/passwd", "Nope/Zone", "", "/etc/passwd", "America/../../etc/passwd",
        "America//New_York", "America/New_York/", "America", "zone.tab", "America/New York",
        "America/New_York\n", "right/America/New_York", "leapseconds",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_null(tz_db_get(*state, bad[i]));
    assert_null(tz_db_get(*state, NULL));
    char longname[400];
    memset(longname, 'A', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_null(tz_db_get(*state, longname));
    /* A directory without zoneinfo still knows UTC. */
    tz_db *empty = tz_db_new("/nonexistent-zoneinfo");
    assert_non_null(empty);
    assert_non_null(tz_db_get(empty, "UTC"));
    assert_null(tz_db_get(empty, "America/New_York"));
    tz_db_free(empty);
}

/* The release named by tzdata.zi's first line, in a directory of our own. */
static const char *version_of(const char *first_line)
{
    static char got[64];
    char dir[] = "/tmp/chime-tzver-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tzdata.zi", dir);
    if (first_line) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(first_line, f);
        fclose(f);
    }
    tz_db *db = tz_db_new(dir);
    assert_non_null(db);
    snprintf(got, sizeof got, "%s", tz_db_version(db));
    tz_db_free(db);
    unlink(path);
    rmdir(dir);
    return got;
}

static void test_version(void **state)
{
    assert_string_equal(version_of("# version 2031x\n# Rule...\n"), "2031x");
    assert_string_equal(version_of("# version 2031x"), "2031x"); /* no newline */
    assert_string_equal(version_of("# version 1.2-rc3 trailing\n"), "1.2-rc3");
    assert_string_equal(version_of("# version 0123456789012345678901234567890123456789\n"),
                        "0123456789012345678901234567890"); /* 31 at most */
    assert_string_equal(version_of("# Version 2031x\n"), "");
    assert_string_equal(version_of("Rule EU 1981 max - Mar lastSu 1u 1 S\n"), "");
    assert_string_equal(version_of(""), "");
    assert_string_equal(version_of(NULL), ""); /* no tzdata.zi */
    /* The system's own data names a release. */
    assert_true(strlen(tz_db_version(*state)) > 0);
}

static void test_cached_once(void **state)
{
    const tz_zone *a = zone(state, "Europe/Paris");
    const tz_zone *b = zone(state, "Europe/Paris");
    assert_ptr_equal(a, b);
    /* An alias is its own zone (named as asked) with the same data. */
    const tz_zone *c = zone(state, "US/Eastern");
    assert_int_equal(tz_offset_at(c, 1774746000), -4 * 3600);
}

/* ---- synthetic TZif files ----------------------------------------------------- */

typedef struct tzif_spec {
    int ntimes;
    int64_t times[8];
    uint8_t idx[8];
    int ntypes;
    int32_t off[4];
    uint8_t dst[4], abbr[4];
    const char *chars; /* NUL-separated, nchars long */
    int nchars;
    const char *footer; /* NULL: version 1 file */
} tzif_spec;

static void put32(uint8_t **p, uint32_t v)
{
    for (int i = 3; i >= 0; i--) *(*p)++ = (uint8_t)(v >> (8 * i));
}

static size_t tzif_build(const tzif_spec *s, uint8_t *buf)
{
    uint8_t *p = buf;
    bool v2 = s->footer != NULL;
    for (int pass = 0; pass < (v2 ? 2 : 1); pass++) {
        bool wide = v2 && pass == 1;
        bool empty = v2 && pass == 0; /* a v2 file's v1 block may be empty */
        memcpy(p, "TZif", 4);
        p[4] = v2 ? '3' : 0;
        memset(p + 5, 0, 15);
        p += 20;
        put32(&p, 0); put32(&p, 0); put32(&p, 0);
        put32(&p, empty ? 0 : (uint32_t)s->ntimes);
        put32(&p, empty ? 0 : (uint32_t)s->ntypes);
        put32(&p, empty ? 0 : (uint32_t)s->nchars);
        if (empty) continue;
        for (int i = 0; i < s->ntimes; i++) {
            if (wide) put32(&p, (uint32_t)((uint64_t)s->times[i] >> 32));
            put32(&p, (uint32_t)s->times[i]);
        }
        memcpy(p, s->idx, (size_t)s->ntimes);
        p += s->ntimes;
        for (int i = 0; i < s->ntypes; i++) {
            put32(&p, (uint32_t)s->off[i]);
            *p++ = s->dst[i];
            *p++ = s->abbr[i];
        }
        memcpy(p, s->chars, (size_t)s->nchars);
        p += s->nchars;
    }
    if (v2) p += sprintf((char *)p, "\n%s\n", s->footer);
    return (size_t)(p - buf);
}

static tz_zone *parse_footer_only(const char *footer, int32_t off0)
{
    tzif_spec s = {.ntypes = 1, .off = {off0}, .chars = "LMT", .nchars = 4, .footer = footer};
    uint8_t buf[512];
    size_t len = tzif_build(&s, buf);
    return tz_zone_parse("Test/Zone", buf, len);
}

/* A slim-style file: no transitions, everything from the footer. */
static void test_footer_only_zone(void **state)
{
    tz_zone *z = parse_footer_only("EST5EDT,M3.2.0,M11.1.0", -5 * 3600);
    assert_non_null(z);
    const tz_zone *ny = zone(state, "America/New_York");
    for (int64_t t = wall(2008, 1, 1, 0, 0, 0); t < wall(2040, 1, 1, 0, 0, 0); t += 3600 * 7 + 11) {
        assert_int_equal(tz_offset_at(z, t), tz_offset_at(ny, t));
        assert_string_equal(tz_abbrev_at(z, t), tz_abbrev_at(ny, t));
        assert_int_equal(tz_local_to_utc(z, t), tz_local_to_utc(ny, t));
    }
    tz_zone_free(z);
}

static void test_footer_forms(void **state)
{
    (void)state;
    /* v3: negative and >24h times (Nuuk's rule: -1 and 0 local). */
    tz_zone *z = parse_footer_only("<-02>2<-01>,M3.5.0/-1,M10.5.0/0", 0);
    assert_non_null(z);
    /* Last Sunday of March 2030 is the 31st; -1:00 local is 30th 23:00 -02. */
    assert_transition(z, wall(2030, 3, 31, 1, 0, 0), -2 * 3600, -3600);
    assert_string_equal(tz_abbrev_at(z, wall(2030, 6, 1, 0, 0, 0)), "-01");
    tz_zone_free(z);
    /* Jn never counts Feb 29; n does. J60 is March 1 even in a leap year. */
    z = parse_footer_only("AAA-1BBB,J60/0,300/0", 0);
    assert_non_null(z);
    assert_transition(z, wall(2032, 2, 29, 23, 0, 0), 3600, 7200);
    assert_transition(z, wall(2032, 10, 26, 22, 0, 0), 7200, 3600); /* day 300: Oct 27 */
    tz_zone_free(z);
    /* All-year DST, the tzcode idiom. */
    z = parse_footer_only("XXX3YYY,0/0,J365/25", 0);
    assert_non_null(z);
    for (int y = 2000; y < 2400; y += 3)
        assert_int_equal(tz_offset_at(z, wall(y, 1, 1, 0, 30, 0)), -2 * 3600);
    tz_zone_free(z);
    /* No DST: a fixed offset with minutes and seconds. */
    z = parse_footer_only("<+0545>-5:45:10", 0);
    assert_non_null(z);
    assert_int_equal(tz_offset_at(z, 0), 5 * 3600 + 45 * 60 + 10);
    tz_zone_free(z);
    /* DST with no rule: the US default, like glibc. */
    z = parse_footer_only("EST5EDT", 0);
    assert_non_null(z);
    assert_transition(z, wall(2026, 3, 8, 7, 0, 0), -5 * 3600, -4 * 3600);
    tz_zone_free(z);
    static const char *bad[] = {
        "E5", "EST", "EST5EDT,M3.2.0", "EST5EDT,M13.2.0,M11.1.0", "EST5EDT,M3.6.0,M11.1.0",
        "EST5EDT,M3.2.7,M11.1.0", "EST5EDT,J0,J100", "EST5EDT,366,1", "EST5EDT,M3.2.0/168,M11.1.0",
        "EST25", "<EST5", "<E>5", "EST5EDT,M3.2.0,M11.1.0x", "EST5:60", "EST5EDT4,",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        z = parse_footer_only(bad[i], 0);
        if (z) fail_msg("footer '%s' accepted", bad[i]);
    }
}

static void test_malformed_files(void **state)
{
    (void)state;
    tzif_spec s = {.ntimes = 2, .times = {-100, 100}, .idx = {1, 0}, .ntypes = 2,
                   .off = {0, 3600}, .dst = {0, 1}, .abbr = {0, 4}, .chars = "AAA\0BBB",
                   .nchars = 8, .footer = "AAA0"};
    uint8_t buf[512];
    size_t len = tzif_build(&s, buf);
    tz_zone *z = tz_zone_parse("T", buf, len);
    assert_non_null(z);
    assert_int_equal(tz_offset_at(z, -101), 0);
    assert_int_equal(tz_offset_at(z, -100), 3600);
    assert_int_equal(tz_offset_at(z, 100), 0);
    assert_string_equal(tz_abbrev_at(z, 0), "BBB");
    tz_zone_free(z);
    /* Every truncation is refused. */
    for (size_t n = 0; n < len; n++) assert_null(tz_zone_parse("T", buf, n));
    /* Version 1 (no footer) still works. */
    s.footer = NULL;
    len = tzif_build(&s, buf);
    z = tz_zone_parse("T", buf, len);
    assert_non_null(z);
    assert_int_equal(tz_offset_at(z, 0), 3600);
    tz_zone_free(z);
    s.footer = "AAA0";
    tzif_spec t = s;
    t.idx[1] = 2; /* type index out of range */
    len = tzif_build(&t, buf);
    assert_null(tz_zone_parse("T", buf, len));
    t = s;
    t.times[1] = -100; /* not ascending */
    len = tzif_build(&t, buf);
    assert_null(tz_zone_parse("T", buf, len));
    t = s;
    t.abbr[1] = 8; /* abbreviation index past the characters */
    len = tzif_build(&t, buf);
    assert_null(tz_zone_parse("T", buf, len));
    t = s;
    t.off[1] = INT32_MIN;
    len = tzif_build(&t, buf);
    assert_null(tz_zone_parse("T", buf, len));
    t = s;
    t.ntypes = 0;
    len = tzif_build(&t, buf);
    assert_null(tz_zone_parse("T", buf, len));
    t = s;
    t.footer = "AAA0\nBBB";
    len = tzif_build(&t, buf);
    z = tz_zone_parse("T", buf, len); /* bytes after the footer are ignored */
    assert_non_null(z);
    tz_zone_free(z);
}

static void test_windows_names(void **state)
{
    assert_string_equal(tz_windows_to_iana("Eastern Standard Time"), "America/New_York");
    assert_string_equal(tz_windows_to_iana("W. Europe Standard Time"), "Europe/Berlin");
    assert_string_equal(tz_windows_to_iana("China Standard Time"), "Asia/Shanghai");
    assert_string_equal(tz_windows_to_iana("india standard time"), "Asia/Kolkata");
    assert_string_equal(tz_windows_to_iana("AUS Eastern Standard Time"), "Australia/Sydney");
    assert_null(tz_windows_to_iana("Mars Standard Time"));
    assert_null(tz_windows_to_iana(""));
    assert_null(tz_windows_to_iana(NULL));
    /* Every target resolves in the system's zoneinfo. */
    static const char *all[] = {"Dateline Standard Time", "Pacific Standard Time",
                                "Greenwich Standard Time", "Romance Standard Time",
                                "FLE Standard Time", "Nepal Standard Time",
                                "Myanmar Standard Time", "Lord Howe Standard Time",
                                "Line Islands Standard Time", "Samoa Standard Time"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        assert_non_null(tz_db_get(*state, tz_windows_to_iana(all[i])));
}

/* ---- threads ------------------------------------------------------------------- */

#define NTHREADS 8
static const char *const thread_zones[] = {
    "Europe/Berlin", "Asia/Tokyo", "America/Chicago", "Australia/Sydney",
    "Africa/Cairo", "America/Santiago", "Pacific/Auckland", "Asia/Tehran",
};

typedef struct thread_arg {
    tz_db *db;
    const tz_zone *got[8];
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    for (int round = 0; round < 50; round++)
        for (int i = 0; i < 8; i++) {
            const tz_zone *z = tz_db_get(a->db, thread_zones[(i + round) % 8]);
            if (round == 0) a->got[(i + round) % 8] = z;
            else if (z != a->got[(i + round) % 8]) a->got[0] = NULL;
            tz_local_to_utc(z, 1700000000);
        }
    return NULL;
}

static void test_concurrent_get(void **state)
{
    (void)state;
    tz_db *db = tz_db_new(NULL);
    assert_non_null(db);
    pthread_t th[NTHREADS];
    thread_arg args[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (thread_arg){.db = db};
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < NTHREADS; i++)
        for (int j = 0; j < 8; j++) {
            assert_non_null(args[i].got[j]);
            assert_ptr_equal(args[i].got[j], args[0].got[j]);
        }
    tz_db_free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_york, setup, teardown),
        cmocka_unit_test_setup_teardown(test_london, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lord_howe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kolkata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apia_skipped_day, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dublin_negative_dst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_casablanca, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sao_paulo_abolished, setup, teardown),
        cmocka_unit_test_setup_teardown(test_past_2037, setup, teardown),
        cmocka_unit_test_setup_teardown(test_utc_and_floating, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cached_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_footer_only_zone, setup, teardown),
        cmocka_unit_test(test_footer_forms),
        cmocka_unit_test(test_malformed_files),
        cmocka_unit_test_setup_teardown(test_windows_names, setup, teardown),
        cmocka_unit_test(test_concurrent_get),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
