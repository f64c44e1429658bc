/* test-rrule.c -- the recurrence engine: every example of RFC 5545 3.8.5.3
 * and of the design notes, parse errors, canonical text, English text,
 * bounded work on rules that never match, and next_after/includes checked
 * against plain iteration on thousands of generated rules. Times are floating
 * here; zones are tested through the command line (tests/sh). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "time/rrule.h"
#include "time/rrule_set.h"
#include "time/tz.h"

struct example {
    const char *dtstart, *rule, *expected;
};

/* Expected values agree with the RFC text; UNTIL is written as a floating
 * time here (the RFC's "Z" forms are checked with a zone in tests/sh). */
static const struct example examples[] = {
    {"19970902T090000", "FREQ=DAILY;COUNT=10",
     "19970902T090000 19970903T090000 19970904T090000 19970905T090000 19970906T090000 19970907T090000 19970908T090000 19970909T090000 19970910T090000 19970911T090000"},
    {"19970902T090000", "FREQ=DAILY;UNTIL=19971224T000000",
     "19970902T090000 19970903T090000 19970904T090000 19970905T090000 19970906T090000 19970907T090000 19970908T090000 19970909T090000 19970910T090000 19970911T090000 19970912T090000 19970913T090000 19970914T090000 19970915T090000 19970916T090000 19970917T090000 19970918T090000 19970919T090000 19970920T090000 19970921T090000 19970922T090000 19970923T090000 19970924T090000 19970925T090000 19970926T090000 19970927T090000 19970928T090000 19970929T090000 19970930T090000 19971001T090000 19971002T090000 19971003T090000 19971004T090000 19971005T090000 19971006T090000 19971007T090000 19971008T090000 19971009T090000 19971010T090000 19971011T090000 19971012T090000 19971013T090000 19971014T090000 19971015T090000 19971016T090000 19971017T090000 19971018T090000 19971019T090000 19971020T090000 19971021T090000 19971022T090000 19971023T090000 19971024T090000 19971025T090000 19971026T090000 19971027T090000 19971028T090000 19971029T090000 19971030T090000 19971031T090000 19971101T090000 19971102T090000 19971103T090000 19971104T090000 19971105T090000 19971106T090000 19971107T090000 19971108T090000 19971109T090000 19971110T090000 19971111T090000 19971112T090000 19971113T090000 19971114T090000 19971115T090000 19971116T090000 19971117T090000 19971118T090000 19971119T090000 19971120T090000 19971121T090000 19971122T090000 19971123T090000 19971124T090000 19971125T090000 19971126T090000 19971127T090000 19971128T090000 19971129T090000 19971130T090000 19971201T090000 19971202T090000 19971203T090000 19971204T090000 19971205T090000 19971206T090000 19971207T090000 19971208T090000 19971209T090000 19971210T090000 19971211T090000 19971212T090000 19971213T090000 19971214T090000 19971215T090000 19971216T090000 19971217T090000 19971218T090000 19971219T090000 19971220T090000 19971221T090000 19971222T090000 19971223T090000"},
    {"19970902T090000", "FREQ=DAILY;INTERVAL=2",
     "19970902T090000 19970904T090000 19970906T090000 19970908T090000 19970910T090000 19970912T090000 19970914T090000 19970916T090000 19970918T090000 19970920T090000 19970922T090000 19970924T090000"},
    {"19970902T090000", "FREQ=DAILY;INTERVAL=10;COUNT=5",
     "19970902T090000 19970912T090000 19970922T090000 19971002T090000 19971012T090000"},
    {"19980101T090000", "FREQ=YEARLY;UNTIL=20000131T140000;BYMONTH=1;BYDAY=SU,MO,TU,WE,TH,FR,SA",
     "19980101T090000 19980102T090000 19980103T090000 19980104T090000 19980105T090000 19980106T090000 19980107T090000 19980108T090000 19980109T090000 19980110T090000 19980111T090000 19980112T090000 19980113T090000 19980114T090000 19980115T090000 19980116T090000 19980117T090000 19980118T090000 19980119T090000 19980120T090000 19980121T090000 19980122T090000 19980123T090000 19980124T090000 19980125T090000 19980126T090000 19980127T090000 19980128T090000 19980129T090000 19980130T090000 19980131T090000 19990101T090000 19990102T090000 19990103T090000 19990104T090000 19990105T090000 19990106T090000 19990107T090000 19990108T090000 19990109T090000 19990110T090000 19990111T090000 19990112T090000 19990113T090000 19990114T090000 19990115T090000 19990116T090000 19990117T090000 19990118T090000 19990119T090000 19990120T090000 19990121T090000 19990122T090000 19990123T090000 19990124T090000 19990125T090000 19990126T090000 19990127T090000 19990128T090000 19990129T090000 19990130T090000 19990131T090000 20000101T090000 20000102T090000 20000103T090000 20000104T090000 20000105T090000 20000106T090000 20000107T090000 20000108T090000 20000109T090000 20000110T090000 20000111T090000 20000112T090000 20000113T090000 20000114T090000 20000115T090000 20000116T090000 20000117T090000 20000118T090000 20000119T090000 20000120T090000 20000121T090000 20000122T090000 20000123T090000 20000124T090000 20000125T090000 20000126T090000 20000127T090000 20000128T090000 20000129T090000 20000130T090000 20000131T090000"},
    {"19980101T090000", "FREQ=DAILY;UNTIL=20000131T140000;BYMONTH=1",
     "19980101T090000 19980102T090000 19980103T090000 19980104T090000 19980105T090000 19980106T090000 19980107T090000 19980108T090000 19980109T090000 19980110T090000 19980111T090000 19980112T090000 19980113T090000 19980114T090000 19980115T090000 19980116T090000 19980117T090000 19980118T090000 19980119T090000 19980120T090000 19980121T090000 19980122T090000 19980123T090000 19980124T090000 19980125T090000 19980126T090000 19980127T090000 19980128T090000 19980129T090000 19980130T090000 19980131T090000 19990101T090000 19990102T090000 19990103T090000 19990104T090000 19990105T090000 19990106T090000 19990107T090000 19990108T090000 19990109T090000 19990110T090000 19990111T090000 19990112T090000 19990113T090000 19990114T090000 19990115T090000 19990116T090000 19990117T090000 19990118T090000 19990119T090000 19990120T090000 19990121T090000 19990122T090000 19990123T090000 19990124T090000 19990125T090000 19990126T090000 19990127T090000 19990128T090000 19990129T090000 19990130T090000 19990131T090000 20000101T090000 20000102T090000 20000103T090000 20000104T090000 20000105T090000 20000106T090000 20000107T090000 20000108T090000 20000109T090000 20000110T090000 20000111T090000 20000112T090000 20000113T090000 20000114T090000 20000115T090000 20000116T090000 20000117T090000 20000118T090000 20000119T090000 20000120T090000 20000121T090000 20000122T090000 20000123T090000 20000124T090000 20000125T090000 20000126T090000 20000127T090000 20000128T090000 20000129T090000 20000130T090000 20000131T090000"},
    {"19970902T090000", "FREQ=WEEKLY;COUNT=10",
     "19970902T090000 19970909T090000 19970916T090000 19970923T090000 19970930T090000 19971007T090000 19971014T090000 19971021T090000 19971028T090000 19971104T090000"},
    {"19970902T090000", "FREQ=WEEKLY;UNTIL=19971224T000000",
     "19970902T090000 19970909T090000 19970916T090000 19970923T090000 19970930T090000 19971007T090000 19971014T090000 19971021T090000 19971028T090000 19971104T090000 19971111T090000 19971118T090000 19971125T090000 19971202T090000 19971209T090000 19971216T090000 19971223T090000"},
    {"19970902T090000", "FREQ=WEEKLY;INTERVAL=2;WKST=SU",
     "19970902T090000 19970916T090000 19970930T090000 19971014T090000 19971028T090000 19971111T090000 19971125T090000 19971209T090000 19971223T090000 19980106T090000 19980120T090000 19980203T090000 19980217T090000"},
    {"19970902T090000", "FREQ=WEEKLY;UNTIL=19971007T000000;WKST=SU;BYDAY=TU,TH",
     "19970902T090000 19970904T090000 19970909T090000 19970911T090000 19970916T090000 19970918T090000 19970923T090000 19970925T090000 19970930T090000 19971002T090000"},
    {"19970902T090000", "FREQ=WEEKLY;COUNT=10;WKST=SU;BYDAY=TU,TH",
     "19970902T090000 19970904T090000 19970909T090000 19970911T090000 19970916T090000 19970918T090000 19970923T090000 19970925T090000 19970930T090000 19971002T090000"},
    {"19970901T090000", "FREQ=WEEKLY;INTERVAL=2;UNTIL=19971224T000000;WKST=SU;BYDAY=MO,WE,FR",
     "19970901T090000 19970903T090000 19970905T090000 19970915T090000 19970917T090000 19970919T090000 19970929T090000 19971001T090000 19971003T090000 19971013T090000 19971015T090000 19971017T090000 19971027T090000 19971029T090000 19971031T090000 19971110T090000 19971112T090000 19971114T090000 19971124T090000 19971126T090000 19971128T090000 19971208T090000 19971210T090000 19971212T090000 19971222T090000"},
    {"19970902T090000", "FREQ=WEEKLY;INTERVAL=2;COUNT=8;WKST=SU;BYDAY=TU,TH",
     "19970902T090000 19970904T090000 19970916T090000 19970918T090000 19970930T090000 19971002T090000 19971014T090000 19971016T090000"},
    {"19970905T090000", "FREQ=MONTHLY;COUNT=10;BYDAY=1FR",
     "19970905T090000 19971003T090000 19971107T090000 19971205T090000 19980102T090000 19980206T090000 19980306T090000 19980403T090000 19980501T090000 19980605T090000"},
    {"19970905T090000", "FREQ=MONTHLY;UNTIL=19971224T000000;BYDAY=1FR",
     "19970905T090000 19971003T090000 19971107T090000 19971205T090000"},
    {"19970907T090000", "FREQ=MONTHLY;INTERVAL=2;COUNT=10;BYDAY=1SU,-1SU",
     "19970907T090000 19970928T090000 19971102T090000 19971130T090000 19980104T090000 19980125T090000 19980301T090000 19980329T090000 19980503T090000 19980531T090000"},
    {"19970922T090000", "FREQ=MONTHLY;COUNT=6;BYDAY=-2MO",
     "19970922T090000 19971020T090000 19971117T090000 19971222T090000 19980119T090000 19980216T090000"},
    {"19970928T090000", "FREQ=MONTHLY;BYMONTHDAY=-3",
     "19970928T090000 19971029T090000 19971128T090000 19971229T090000 19980129T090000 19980226T090000"},
    {"19970902T090000", "FREQ=MONTHLY;COUNT=10;BYMONTHDAY=2,15",
     "19970902T090000 19970915T090000 19971002T090000 19971015T090000 19971102T090000 19971115T090000 19971202T090000 19971215T090000 19980102T090000 19980115T090000"},
    {"19970930T090000", "FREQ=MONTHLY;COUNT=10;BYMONTHDAY=1,-1",
     "19970930T090000 19971001T090000 19971031T090000 19971101T090000 19971130T090000 19971201T090000 19971231T090000 19980101T090000 19980131T090000 19980201T090000"},
    {"19970910T090000", "FREQ=MONTHLY;INTERVAL=18;COUNT=10;BYMONTHDAY=10,11,12,13,14,15",
     "19970910T090000 19970911T090000 19970912T090000 19970913T090000 19970914T090000 19970915T090000 19990310T090000 19990311T090000 19990312T090000 19990313T090000"},
    {"19970902T090000", "FREQ=MONTHLY;INTERVAL=2;BYDAY=TU",
     "19970902T090000 19970909T090000 19970916T090000 19970923T090000 19970930T090000 19971104T090000 19971111T090000 19971118T090000 19971125T090000 19980106T090000 19980113T090000 19980120T090000 19980127T090000 19980303T090000 19980310T090000 19980317T090000 19980324T090000 19980331T090000"},
    {"19970610T090000", "FREQ=YEARLY;COUNT=10;BYMONTH=6,7",
     "19970610T090000 19970710T090000 19980610T090000 19980710T090000 19990610T090000 19990710T090000 20000610T090000 20000710T090000 20010610T090000 20010710T090000"},
    {"19970310T090000", "FREQ=YEARLY;INTERVAL=2;COUNT=10;BYMONTH=1,2,3",
     "19970310T090000 19990110T090000 19990210T090000 19990310T090000 20010110T090000 20010210T090000 20010310T090000 20030110T090000 20030210T090000 20030310T090000"},
    {"19970101T090000", "FREQ=YEARLY;INTERVAL=3;COUNT=10;BYYEARDAY=1,100,200",
     "19970101T090000 19970410T090000 19970719T090000 20000101T090000 20000409T090000 20000718T090000 20030101T090000 20030410T090000 20030719T090000 20060101T090000"},
    {"19970519T090000", "FREQ=YEARLY;BYDAY=20MO",
     "19970519T090000 19980518T090000 19990517T090000"},
    {"19970512T090000", "FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO",
     "19970512T090000 19980511T090000 19990517T090000"},
    {"19970313T090000", "FREQ=YEARLY;BYMONTH=3;BYDAY=TH",
     "19970313T090000 19970320T090000 19970327T090000 19980305T090000 19980312T090000 19980319T090000 19980326T090000 19990304T090000 19990311T090000 19990318T090000 19990325T090000"},
    {"19970605T090000", "FREQ=YEARLY;BYDAY=TH;BYMONTH=6,7,8",
     "19970605T090000 19970612T090000 19970619T090000 19970626T090000 19970703T090000 19970710T090000 19970717T090000 19970724T090000 19970731T090000 19970807T090000 19970814T090000 19970821T090000 19970828T090000 19980604T090000 19980611T090000 19980618T090000 19980625T090000 19980702T090000 19980709T090000 19980716T090000 19980723T090000 19980730T090000 19980806T090000 19980813T090000 19980820T090000 19980827T090000 19990603T090000 19990610T090000 19990617T090000 19990624T090000 19990701T090000 19990708T090000 19990715T090000 19990722T090000 19990729T090000 19990805T090000 19990812T090000 19990819T090000 19990826T090000"},
    {"19980213T090000", "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13",
     "19980213T090000 19980313T090000 19981113T090000 19990813T090000 20001013T090000"},
    {"19970913T090000", "FREQ=MONTHLY;BYDAY=SA;BYMONTHDAY=7,8,9,10,11,12,13",
     "19970913T090000 19971011T090000 19971108T090000 19971213T090000 19980110T090000 19980207T090000 19980307T090000 19980411T090000 19980509T090000 19980613T090000"},
    {"19961105T090000", "FREQ=YEARLY;INTERVAL=4;BYMONTH=11;BYDAY=TU;BYMONTHDAY=2,3,4,5,6,7,8",
     "19961105T090000 20001107T090000 20041102T090000"},
    {"19970904T090000", "FREQ=MONTHLY;COUNT=3;BYDAY=TU,WE,TH;BYSETPOS=3",
     "19970904T090000 19971007T090000 19971106T090000"},
    {"19970929T090000", "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-2",
     "19970929T090000 19971030T090000 19971127T090000 19971230T090000 19980129T090000 19980226T090000 19980330T090000"},
    {"19970902T090000", "FREQ=HOURLY;INTERVAL=3;UNTIL=19970902T170000",
     "19970902T090000 19970902T120000 19970902T150000"},
    {"19970902T090000", "FREQ=MINUTELY;INTERVAL=15;COUNT=6",
     "19970902T090000 19970902T091500 19970902T093000 19970902T094500 19970902T100000 19970902T101500"},
    {"19970902T090000", "FREQ=MINUTELY;INTERVAL=90;COUNT=4",
     "19970902T090000 19970902T103000 19970902T120000 19970902T133000"},
    {"19970902T090000", "FREQ=DAILY;BYHOUR=9,10,11,12,13,14,15,16;BYMINUTE=0,20,40",
     "19970902T090000 19970902T092000 19970902T094000 19970902T100000 19970902T102000 19970902T104000 19970902T110000 19970902T112000 19970902T114000 19970902T120000 19970902T122000 19970902T124000 19970902T130000 19970902T132000 19970902T134000 19970902T140000 19970902T142000 19970902T144000 19970902T150000 19970902T152000 19970902T154000 19970902T160000 19970902T162000 19970902T164000 19970903T090000 19970903T092000 19970903T094000 19970903T100000 19970903T102000 19970903T104000"},
    {"19970902T090000", "FREQ=MINUTELY;INTERVAL=20;BYHOUR=9,10,11,12,13,14,15,16",
     "19970902T090000 19970902T092000 19970902T094000 19970902T100000 19970902T102000 19970902T104000 19970902T110000 19970902T112000 19970902T114000 19970902T120000 19970902T122000 19970902T124000 19970902T130000 19970902T132000 19970902T134000 19970902T140000 19970902T142000 19970902T144000 19970902T150000 19970902T152000 19970902T154000 19970902T160000 19970902T162000 19970902T164000 19970903T090000 19970903T092000 19970903T094000 19970903T100000 19970903T102000 19970903T104000"},
    {"19970805T090000", "FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=MO",
     "19970805T090000 19970810T090000 19970819T090000 19970824T090000"},
    {"19970805T090000", "FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=SU",
     "19970805T090000 19970817T090000 19970819T090000 19970831T090000"},
    {"20070115T090000", "FREQ=MONTHLY;BYMONTHDAY=15,30;COUNT=5",
     "20070115T090000 20070130T090000 20070215T090000 20070315T090000 20070330T090000"},
    {"20260101T080000", "FREQ=DAILY;INTERVAL=3",
     "20260101T080000 20260104T080000 20260107T080000 20260110T080000 20260113T080000"},
    {"20260101T080000", "FREQ=DAILY;UNTIL=20260105T080000",
     "20260101T080000 20260102T080000 20260103T080000 20260104T080000 20260105T080000"},
    {"20260101T080000", "FREQ=DAILY;COUNT=20",
     "20260101T080000 20260102T080000 20260103T080000 20260104T080000 20260105T080000 20260106T080000 20260107T080000 20260108T080000 20260109T080000 20260110T080000 20260111T080000 20260112T080000 20260113T080000 20260114T080000 20260115T080000 20260116T080000 20260117T080000 20260118T080000 20260119T080000 20260120T080000"},
    {"20260106T180000", "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH,SU",
     "20260106T180000 20260108T180000 20260111T180000 20260120T180000 20260122T180000 20260125T180000 20260203T180000 20260205T180000 20260208T180000"},
    {"20260731T120000", "FREQ=YEARLY;BYMONTH=7,8;BYMONTHDAY=-1",
     "20260731T120000 20260831T120000 20270731T120000 20270831T120000"},
    {"20260621T100000", "FREQ=YEARLY;BYMONTH=6;BYDAY=3SU",
     "20260621T100000 20270620T100000 20280618T100000 20290617T100000 20300616T100000"},
    {"20261126T150000", "FREQ=YEARLY;BYMONTH=11;BYDAY=4TH",
     "20261126T150000 20271125T150000 20281123T150000 20291122T150000 20301128T150000"},
    {"20260510T090000", "FREQ=YEARLY;BYMONTH=5;BYDAY=2SU",
     "20260510T090000 20270509T090000 20280514T090000 20290513T090000 20300512T090000"},
    {"20261231T230000", "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=-1",
     "20261231T230000 20271231T230000 20281231T230000 20291231T230000"},
};

static int64_t secs(const char *s)
{
    civil_time t;
    bool is_date;
    assert_int_equal(civil_parse_basic(s, strlen(s), &t, &is_date), 0);
    return civil_to_seconds(&t);
}

static void plan_for(rrule_plan *p, const char *dtstart, const char *text)
{
    rrule r;
    char err[200] = "";
    civil_time dt;
    if (rrule_parse(text, strlen(text), &r, err, sizeof err) != 0) fail_msg("%s: %s", text, err);
    assert_int_equal(civil_parse_basic(dtstart, strlen(dtstart), &dt, NULL), 0);
    assert_int_equal(rrule_plan_init(p, &r, &dt, err, sizeof err), 0);
}

static rrule_plan plan; /* big enough to keep off the stack */

static void test_examples(void **state)
{
    (void)state;
    static int64_t want[512], got[512];
    for (size_t e = 0; e < sizeof examples / sizeof examples[0]; e++) {
        const struct example *x = &examples[e];
        size_t n = 0;
        for (const char *s = x->expected; *s; n++) {
            char one[16];
            memcpy(one, s, 15);
            one[15] = 0;
            want[n] = secs(one);
            s += 15;
            while (*s == ' ') s++;
        }
        plan_for(&plan, x->dtstart, x->rule);
        /* Ask for one more than expected: finite rules must stop. */
        bool finite = strstr(x->rule, "COUNT") || strstr(x->rule, "UNTIL");
        size_t m = rrule_expand(&plan, INT64_MIN, INT64_MAX, got, finite ? n + 1 : n);
        if (m != n) fail_msg("%s %s: %zu occurrences, want %zu", x->dtstart, x->rule, m, n);
        for (size_t i = 0; i < n; i++) {
            if (got[i] != want[i]) fail_msg("%s %s: occurrence %zu differs", x->dtstart, x->rule, i);
            int64_t t;
            assert_true(rrule_next_after(&plan, want[i] - 1, &t));
            assert_int_equal(t, want[i]);
            if (i + 1 < n) {
                assert_true(rrule_next_after(&plan, want[i], &t));
                assert_int_equal(t, want[i + 1]);
            }
            assert_true(rrule_includes(&plan, want[i]));
            bool next_is_occ = i + 1 < n && want[i + 1] == want[i] + 1;
            assert_int_equal(rrule_includes(&plan, want[i] + 1), next_is_occ);
        }
    }
}

/* A set of one rule from DTSTART in zone z (NULL: floating). */
static void set_for(rrule_set *set, const char *dtstart, const char *text, const tz_zone *z, int64_t *rd, size_t nrd)
{
    rrule r;
    civil_time dt;
    char err[100];
    assert_int_equal(rrule_parse(text, strlen(text), &r, err, sizeof err), 0);
    civil_parse_basic(dtstart, strlen(dtstart), &dt, NULL);
    assert_int_equal(rrule_set_init(set, &r, &dt, z, rd, nrd, NULL, 0, err, sizeof err), 0);
}

/* The whole set is exactly want[0..n). */
static void expect_set(rrule_set *set, const char *const *want, size_t n)
{
    int64_t got[16];
    size_t m = rrule_set_expand(set, INT64_MIN, INT64_MAX, got, 16);
    if (m != n) fail_msg("%zu occurrences, want %zu", m, n);
    for (size_t i = 0; i < n; i++) assert_int_equal(got[i], secs(want[i]));
}

static void expect_list(rrule_plan *p, const char *const *want, size_t n)
{
    int64_t got[64];
    size_t m = rrule_expand(p, INT64_MIN, INT64_MAX, got, 64);
    if (m < n) fail_msg("%zu occurrences, want at least %zu", m, n);
    for (size_t i = 0; i < n; i++) assert_int_equal(got[i], secs(want[i]));
}

/* RFC 5545: DTSTART is the first occurrence even when the rule would not
 * produce it, and COUNT counts it. (dateutil differs; see rrule.h.) */
static void test_unsynchronized_dtstart(void **state)
{
    (void)state;
    plan_for(&plan, "19970902T090000", "FREQ=MONTHLY;COUNT=3;BYDAY=1FR");
    static const char *const want[] = {"19970902T090000", "19970905T090000", "19971003T090000"};
    expect_list(&plan, want, 3);
    int64_t out[8];
    assert_int_equal(rrule_expand(&plan, INT64_MIN, INT64_MAX, out, 8), 3);
    int64_t t;
    assert_true(rrule_next_after(&plan, secs("19970905T090000"), &t));
    assert_int_equal(t, secs("19971003T090000"));
    assert_false(rrule_next_after(&plan, secs("19971003T090000"), &t));
    assert_true(rrule_includes(&plan, secs("19970902T090000")));
    /* Occurrences of the rule before DTSTART are not part of the series. */
    plan_for(&plan, "19970915T090000", "FREQ=MONTHLY;BYMONTHDAY=1,15,20");
    static const char *const want2[] = {"19970915T090000", "19970920T090000", "19971001T090000"};
    expect_list(&plan, want2, 3);
    assert_false(rrule_includes(&plan, secs("19970901T090000")));
    /* BYSETPOS picks from the whole first week (Monday Nov 30 onwards): its
     * picks fall before DTSTART and are dropped (dateutil would restart the
     * set at DTSTART and pick 09:27:32 on Dec 6). */
    plan_for(&plan, "20201206T092716", "FREQ=WEEKLY;INTERVAL=5;BYDAY=MO,TH,SU;BYHOUR=0,9,11,23;"
                                       "BYMINUTE=27;BYSECOND=16,32;BYSETPOS=3,4");
    static const char *const want3[] = {"20201206T092716", "20210104T092716", "20210104T092732"};
    expect_list(&plan, want3, 3);
}

/* Friday the 13th: the RFC removes the unsynchronized DTSTART with EXDATE. */
static void test_set_exdate_rdate(void **state)
{
    (void)state;
    static rrule_set set;
    rrule r;
    civil_time dt;
    char err[100];
    const char *rule = "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13";
    assert_int_equal(rrule_parse(rule, strlen(rule), &r, err, sizeof err), 0);
    civil_parse_basic("19970902T090000", 15, &dt, NULL);
    int64_t ex[] = {secs("19970902T090000"), secs("19981113T090000")};
    int64_t rd[] = {secs("19990101T000000"), secs("19980213T090000"), secs("19990101T000000")};
    assert_int_equal(rrule_set_init(&set, &r, &dt, NULL, rd, 3, ex, 2, err, sizeof err), 0);
    assert_int_equal(set.nrdate, 2);
    static const char *const want[] = {"19980213T090000", "19980313T090000", "19990101T000000",
                                       "19990813T090000", "20001013T090000"};
    int64_t got[5], t;
    assert_int_equal(rrule_set_expand(&set, INT64_MIN, INT64_MAX, got, 5), 5);
    for (int i = 0; i < 5; i++) assert_int_equal(got[i], secs(want[i]));
    assert_false(rrule_set_includes(&set, secs("19981113T090000")));
    assert_true(rrule_set_includes(&set, secs("19990101T000000")));
    assert_true(rrule_set_next_after(&set, secs("19980313T090000"), &t));
    assert_int_equal(t, secs("19990101T000000"));
    assert_true(rrule_set_next_after(&set, secs("19981001T000000"), &t));
    assert_int_equal(t, secs("19990101T000000"));
    /* COUNT counts RRULE occurrences before EXDATE removes any. */
    rule = "FREQ=DAILY;COUNT=3";
    assert_int_equal(rrule_parse(rule, strlen(rule), &r, err, sizeof err), 0);
    int64_t ex2[] = {secs("19970903T090000")};
    assert_int_equal(rrule_set_init(&set, &r, &dt, NULL, NULL, 0, ex2, 1, err, sizeof err), 0);
    assert_int_equal(rrule_set_expand(&set, INT64_MIN, INT64_MAX, got, 5), 2);
    assert_int_equal(got[1], secs("19970904T090000"));
}

/* UNTIL before DTSTART bounds DTSTART too: the set is empty, as libical,
 * dateutil and rrule.js have it (issue 24.4). */
static void test_until_before_dtstart(void **state)
{
    (void)state;
    int64_t out[4], t;
    plan_for(&plan, "19970902T090000", "FREQ=DAILY;UNTIL=19970901T090000");
    assert_int_equal(rrule_expand(&plan, INT64_MIN, INT64_MAX, out, 4), 0);
    assert_false(rrule_includes(&plan, secs("19970902T090000")));
    assert_false(rrule_next_after(&plan, secs("19970101T000000"), &t));
    /* UNTIL equal to DTSTART keeps it; a DATE UNTIL covers its whole day. */
    plan_for(&plan, "19970902T090000", "FREQ=DAILY;UNTIL=19970902T090000");
    assert_int_equal(rrule_expand(&plan, INT64_MIN, INT64_MAX, out, 4), 1);
    plan_for(&plan, "19970902T090000", "FREQ=DAILY;UNTIL=19970902");
    assert_int_equal(rrule_expand(&plan, INT64_MIN, INT64_MAX, out, 4), 1);
    /* In a zone, a UTC UNTIL an hour before DTSTART's instant (13:00Z). */
    static rrule_set set;
    tz_db *db = tz_db_new(NULL);
    const tz_zone *ny = tz_db_get(db, "America/New_York");
    assert_non_null(ny);
    set_for(&set, "19970902T090000", "FREQ=DAILY;UNTIL=19970902T120000Z", ny, NULL, 0);
    assert_int_equal(rrule_set_expand(&set, INT64_MIN, INT64_MAX, out, 4), 0);
    assert_false(rrule_set_includes(&set, secs("19970902T090000")));
    assert_false(rrule_set_next_after(&set, secs("19970101T000000"), &t));
    /* RDATEs are not bounded by UNTIL (RFC 5545): they stay. */
    int64_t rd[] = {secs("19970903T100000")};
    set_for(&set, "19970902T090000", "FREQ=DAILY;UNTIL=19970902T120000Z", ny, rd, 1);
    assert_int_equal(rrule_set_expand(&set, INT64_MIN, INT64_MAX, out, 4), 1);
    assert_int_equal(out[0], secs("19970903T100000"));
    tz_db_free(db);
}

/* Two RRULEs (RFC 2445; RFC 5545 only discourages it): the set is their
 * union, each rule with its own COUNT and UNTIL (issue 24.3b). */
static void test_two_rules_union(void **state)
{
    (void)state;
    static rrule_set set;
    static rrule_set_iter si;
    rrule rs[2];
    civil_time dt;
    char err[100];
    const char *a = "FREQ=WEEKLY;BYDAY=MO;COUNT=3", *b = "FREQ=MONTHLY;BYMONTHDAY=15;UNTIL=20260301T000000Z";
    assert_int_equal(rrule_parse(a, strlen(a), &rs[0], err, sizeof err), 0);
    assert_int_equal(rrule_parse(b, strlen(b), &rs[1], err, sizeof err), 0);
    civil_parse_basic("20260105T090000", 15, &dt, NULL);
    int64_t ex[] = {secs("20260212T090000")};
    assert_int_equal(rrule_set_init_rules(&set, rs, 2, &dt, NULL, NULL, 0, ex, 1, err, sizeof err), 0);
    static const char *const want[] = {"20260105T090000", "20260112T090000", "20260115T090000",
                                       "20260119T090000", "20260215T090000"};
    int64_t t;
    expect_set(&set, want, 5);
    assert_true(rrule_set_includes(&set, secs("20260115T090000")));
    assert_true(rrule_set_includes(&set, secs("20260119T090000")));
    assert_false(rrule_set_includes(&set, secs("20260126T090000"))); /* past rule 1's COUNT */
    assert_false(rrule_set_includes(&set, secs("20260315T090000"))); /* past rule 2's UNTIL */
    assert_true(rrule_set_next_after(&set, secs("20260112T090000"), &t));
    assert_int_equal(t, secs("20260115T090000"));
    /* The iterator jumps into the middle of both. */
    rrule_set_iter_init(&si, &set, secs("20260116T000000"));
    assert_true(rrule_set_iter_next(&si, &t));
    assert_int_equal(t, secs("20260119T090000"));
    assert_true(rrule_set_iter_next(&si, &t));
    assert_int_equal(t, secs("20260215T090000"));
    assert_false(rrule_set_iter_next(&si, &t));
    /* More than two is refused. */
    rrule three[3] = {rs[0], rs[1], rs[0]};
    assert_int_equal(rrule_set_init_rules(&set, three, 3, &dt, NULL, NULL, 0, NULL, 0, err, sizeof err), -1);
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const struct { const char *text, *err; } cases[] = {
        {"", "FREQ: missing"},
        {"BYDAY=MO", "FREQ: missing"},
        {"FREQ=FORTNIGHTLY", "FREQ: 'FORTNIGHTLY' is not a frequency"},
        {"FREQ=DAILY;FOO=1", "RRULE: unknown part 'FOO'"},
        {"FREQ=DAILY;COUNT=2;COUNT=3", "COUNT: given twice"},
        {"FREQ=DAILY;COUNT=2;UNTIL=20260101", "UNTIL: not allowed together with COUNT"},
        {"FREQ=MONTHLY;BYMONTHDAY=32", "BYMONTHDAY: 32 is out of range"},
        {"FREQ=MONTHLY;BYMONTHDAY=0", "BYMONTHDAY: 0 is out of range"},
        {"FREQ=DAILY;BYHOUR=24", "BYHOUR: 24 is out of range"},
        {"FREQ=DAILY;BYMINUTE=60", "BYMINUTE: 60 is out of range"},
        {"FREQ=DAILY;BYSECOND=61", "BYSECOND: 61 is out of range"},
        {"FREQ=YEARLY;BYWEEKNO=54", "BYWEEKNO: 54 is out of range"},
        {"FREQ=YEARLY;BYYEARDAY=367", "BYYEARDAY: 367 is out of range"},
        {"FREQ=YEARLY;BYMONTH=13", "BYMONTH: 13 is out of range"},
        {"FREQ=YEARLY;BYMONTH=-1", "BYMONTH: -1 is out of range"},
        {"FREQ=MONTHLY;BYDAY=MO;BYSETPOS=0", "BYSETPOS: 0 is out of range"},
        {"FREQ=MONTHLY;BYDAY=MO;BYSETPOS=367", "BYSETPOS: 367 is out of range"},
        {"FREQ=MONTHLY;BYWEEKNO=3", "BYWEEKNO: only allowed with FREQ=YEARLY"},
        {"FREQ=WEEKLY;BYYEARDAY=3", "BYYEARDAY: not allowed with FREQ=WEEKLY"},
        {"FREQ=DAILY;BYYEARDAY=3", "BYYEARDAY: not allowed with FREQ=DAILY"},
        {"FREQ=MONTHLY;BYYEARDAY=3", "BYYEARDAY: not allowed with FREQ=MONTHLY"},
        {"FREQ=WEEKLY;BYMONTHDAY=3", "BYMONTHDAY: not allowed with FREQ=WEEKLY"},
        {"FREQ=WEEKLY;BYDAY=1MO", "BYDAY: ordinals (like 1MO) only with FREQ=MONTHLY or YEARLY"},
        {"FREQ=DAILY;BYDAY=-1FR", "BYDAY: ordinals (like 1MO) only"},
        {"FREQ=YEARLY;BYWEEKNO=1;BYDAY=1MO", "BYDAY: ordinals not allowed together with BYWEEKNO"},
        {"FREQ=MONTHLY;BYDAY=6MO", "BYDAY: ordinal beyond 5 with FREQ=MONTHLY"},
        {"FREQ=YEARLY;BYDAY=54MO", "BYDAY: ordinal 54 is out of range"},
        {"FREQ=YEARLY;BYDAY=0MO", "BYDAY: ordinal 0 is out of range"},
        {"FREQ=YEARLY;BYDAY=XX", "BYDAY: 'XX' is not a weekday"},
        {"FREQ=YEARLY;BYDAY=MO,,TU", "BYDAY: empty list item"},
        {"FREQ=DAILY;INTERVAL=0", "INTERVAL: must be at least 1"},
        {"FREQ=DAILY;INTERVAL=x", "INTERVAL: 'x' is not a number"},
        {"FREQ=DAILY;COUNT=0", "COUNT: must be at least 1"},
        {"FREQ=DAILY;COUNT=9999999999", "COUNT: '9999999999' is not a number"},
        {"FREQ=DAILY;UNTIL=2026", "UNTIL: '2026' is not a date or date-time"},
        {"FREQ=DAILY;UNTIL=20260230", "UNTIL: '20260230' is not a date or date-time"},
        {"FREQ=DAILY;WKST=XY", "WKST: 'XY' is not a weekday"},
        {"FREQ=DAILY;;COUNT=1", "RRULE: empty part"},
        {"FREQ=DAILY;COUNT", "RRULE: 'COUNT' has no '='"},
        {"FREQ=DAILY;COUNT=", "COUNT: empty value"},
        {"FREQ=DAILY;BYHOUR=+-1", "BYHOUR: '+-1' is not a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rrule r;
        char err[200] = "";
        if (rrule_parse(cases[i].text, strlen(cases[i].text), &r, err, sizeof err) == 0)
            fail_msg("'%s' parsed", cases[i].text);
        if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            fail_msg("'%s': got '%s', want '%s'", cases[i].text, err, cases[i].err);
    }
}

static void test_format(void **state)
{
    (void)state;
    static const struct { const char *in, *out; } cases[] = {
        {"freq=weekly;byday=th,tu,su;interval=2", "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH,SU"},
        {"RRULE:FREQ=YEARLY;BYMONTH=6;BYDAY=3SU", "FREQ=YEARLY;BYDAY=3SU;BYMONTH=6"},
        {"FREQ=MONTHLY;BYMONTHDAY=15,-1,1,-3;INTERVAL=1", "FREQ=MONTHLY;BYMONTHDAY=-3,-1,1,15"},
        {"FREQ=DAILY;UNTIL=19971224T000000Z;WKST=SU", "FREQ=DAILY;UNTIL=19971224T000000Z;WKST=SU"},
        {"FREQ=DAILY;UNTIL=19971224;WKST=MO", "FREQ=DAILY;UNTIL=19971224"},
        {"FREQ=MONTHLY;BYDAY=-1FR,MO,+2MO;BYSETPOS=-1,3;COUNT=4",
         "FREQ=MONTHLY;COUNT=4;BYDAY=MO,2MO,-1FR;BYSETPOS=-1,3"},
        {"FREQ=SECONDLY;BYSECOND=60,0;BYMINUTE=5;BYHOUR=23,0",
         "FREQ=SECONDLY;BYSECOND=0,60;BYMINUTE=5;BYHOUR=0,23"},
        {"FREQ=YEARLY;BYWEEKNO=-1,20;BYYEARDAY=-366,366", "FREQ=YEARLY;BYYEARDAY=-366,366;BYWEEKNO=-1,20"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rrule r, r2;
        char err[200], buf[300], buf2[300];
        if (rrule_parse(cases[i].in, strlen(cases[i].in), &r, err, sizeof err) != 0)
            fail_msg("%s: %s", cases[i].in, err);
        size_t n = rrule_format(&r, buf, sizeof buf);
        assert_int_equal(n, strlen(buf));
        assert_string_equal(buf, cases[i].out);
        assert_int_equal(rrule_parse(buf, n, &r2, err, sizeof err), 0);
        rrule_format(&r2, buf2, sizeof buf2);
        assert_string_equal(buf, buf2);
        /* A short buffer is cut, never overrun, and the length still told. */
        char tiny[8];
        assert_int_equal(rrule_format(&r, tiny, sizeof tiny), n);
        assert_int_equal(strlen(tiny), 7);
    }
}

static void test_explain(void **state)
{
    (void)state;
    static const struct { const char *rule, *dtstart, *text; } cases[] = {
        {"FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH,SU", NULL, "every 2 weeks on Tuesday, Thursday and Sunday"},
        {"FREQ=YEARLY;BYMONTH=6;BYDAY=3SU", NULL, "yearly on the third Sunday of June"},
        {"FREQ=YEARLY;BYMONTH=11;BYDAY=4TH", NULL, "yearly on the fourth Thursday of November"},
        {"FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=-1", NULL, "yearly on the last day of December"},
        {"FREQ=YEARLY;BYMONTH=7,8;BYMONTHDAY=-1", NULL, "yearly on the last day of July and August"},
        {"FREQ=DAILY;INTERVAL=3", NULL, "every 3 days"},
        {"FREQ=DAILY;COUNT=20", "19970902T090000", "daily at 09:00, 20 times"},
        {"FREQ=DAILY;UNTIL=19971224T000000Z", NULL, "daily, until December 24, 1997 00:00 UTC"},
        {"FREQ=MONTHLY;BYDAY=1FR", "19970905T090000", "monthly on the first Friday at 09:00"},
        {"FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-2", NULL,
         "monthly on weekdays, only the second-to-last of each month"},
        {"FREQ=MONTHLY;BYMONTHDAY=2,15;COUNT=10", NULL, "monthly on the 2nd and 15th, 10 times"},
        {"FREQ=MONTHLY;BYMONTHDAY=-3", NULL, "monthly on the 3rd-to-last day"},
        {"FREQ=YEARLY", "19970902T090000", "yearly on September 2 at 09:00"},
        {"FREQ=WEEKLY", "19970902T090000", "weekly on Tuesday at 09:00"},
        {"FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13", NULL, "monthly on the 13th if it is Friday"},
        {"FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO", NULL, "yearly in week 20 on Monday"},
        {"FREQ=YEARLY;INTERVAL=3;BYYEARDAY=1,100,200", NULL, "every 3 years on the 1st, 100th and 200th day of the year"},
        {"FREQ=HOURLY;INTERVAL=3", NULL, "every 3 hours"},
        {"FREQ=MINUTELY;INTERVAL=20;BYHOUR=9,10", NULL, "every 20 minutes during hours 9 and 10"},
        {"FREQ=DAILY;BYHOUR=9,17;BYMINUTE=30", NULL, "daily at 09:30 and 17:30"},
        {"FREQ=YEARLY;BYDAY=20MO", NULL, "yearly on the 20th Monday"},
        {"FREQ=YEARLY;BYYEARDAY=-1", NULL, "yearly on the last day of the year"},
        {"FREQ=YEARLY;BYWEEKNO=1,-1;BYDAY=MO", NULL, "yearly in the 1st and last week of the year on Monday"},
        {"FREQ=MONTHLY;BYMONTHDAY=1,-1;BYSETPOS=1", NULL, "monthly on the 1st and last day, only the first of each month"},
        {"FREQ=SECONDLY;INTERVAL=30;BYSECOND=0,30;BYMINUTE=5", NULL, "every 30 seconds at minute 5 at seconds 0 and 30"},
        {"FREQ=DAILY;BYHOUR=0,12;BYMINUTE=0", NULL, "daily at 00:00 and 12:00"},
        {"FREQ=YEARLY;BYMONTH=2,3", "20260115T093000", "yearly in February and March on the 15th at 09:30"},
        {"FREQ=WEEKLY;INTERVAL=2;BYDAY=SA,SU;WKST=SU", NULL, "every 2 weeks on weekends (weeks start on Sunday)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rrule r;
        char err[200], buf[300];
        civil_time dt;
        assert_int_equal(rrule_parse(cases[i].rule, strlen(cases[i].rule), &r, err, sizeof err), 0);
        if (cases[i].dtstart) civil_parse_basic(cases[i].dtstart, 15, &dt, NULL);
        rrule_explain(&r, cases[i].dtstart ? &dt : NULL, buf, sizeof buf);
        if (strcmp(buf, cases[i].text) != 0)
            fail_msg("%s: got '%s', want '%s'", cases[i].rule, buf, cases[i].text);
    }
}

/* Rules that never match give DTSTART alone, and quickly. */
static void test_never_matches(void **state)
{
    (void)state;
    static const char *const rules[] = {
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=31",
        "FREQ=YEARLY;BYMONTHDAY=30;BYMONTH=2;BYDAY=MO",
        "FREQ=MONTHLY;BYMONTHDAY=31;BYMONTH=4,6,9,11",
        "FREQ=WEEKLY;BYDAY=MO;BYSETPOS=2",
        "FREQ=MINUTELY;BYSETPOS=2",
        "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=HOURLY;INTERVAL=2;BYHOUR=1",
        "FREQ=MINUTELY;INTERVAL=2;BYMINUTE=1",
        "FREQ=SECONDLY;INTERVAL=2;BYSECOND=1;BYHOUR=5",
        "FREQ=SECONDLY;INTERVAL=86400;BYHOUR=1",
        "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6",
        "FREQ=YEARLY;BYYEARDAY=366;BYMONTH=1",
        "FREQ=YEARLY;BYWEEKNO=53;BYMONTH=6",
        "FREQ=DAILY;BYSECOND=60",
        "FREQ=YEARLY;INTERVAL=400;BYMONTH=2;BYMONTHDAY=29",
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        clock_t t0 = clock();
        /* 2001 is not a leap year and INTERVAL=400 keeps it that way. */
        plan_for(&plan, "20010102T000000", rules[i]);
        int64_t out[4], t;
        assert_int_equal(rrule_expand(&plan, INT64_MIN, INT64_MAX, out, 4), 1);
        assert_false(rrule_next_after(&plan, plan.dtstart, &t));
        assert_false(rrule_next_after(&plan, secs("30000101T000000"), &t));
        assert_false(rrule_includes(&plan, secs("20240229T000000")));
        double ms = (double)(clock() - t0) * 1000 / CLOCKS_PER_SEC;
        if (ms > 2000) fail_msg("%s took %.0f ms", rules[i], ms);
    }
}

/* A cheap deterministic generator so failures can be replayed. */
static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static void add_list(char *buf, size_t size, const char *name, int lo, int hi, bool sign, int k)
{
    size_t len = strlen(buf);
    len += (size_t)snprintf(buf + len, size - len, ";%s=", name);
    for (int i = 0; i < k; i++) {
        int v = lo + (int)rnd((uint32_t)(hi - lo + 1));
        if (sign && rnd(3) == 0) v = -v;
        len += (size_t)snprintf(buf + len, size - len, "%s%d", i ? "," : "", v);
    }
}

static void random_rule(char *buf, size_t size)
{
    static const char *const freqs[] = {"SECONDLY", "MINUTELY", "HOURLY", "DAILY",
                                        "WEEKLY", "MONTHLY", "YEARLY"};
    static const char *const days[] = {"MO", "TU", "WE", "TH", "FR", "SA", "SU"};
    int f = (int)rnd(7);
    if (f < 3 && rnd(2)) f += 3; /* fewer sub-daily rules */
    snprintf(buf, size, "FREQ=%s", freqs[f]);
    size_t len = strlen(buf);
    if (rnd(3) == 0) len += (size_t)snprintf(buf + len, size - len, ";COUNT=%u", 1 + rnd(3000));
    if (rnd(2)) len += (size_t)snprintf(buf + len, size - len, ";INTERVAL=%u", 1 + rnd(rnd(2) ? 5 : 40));
    if (rnd(4) == 0) add_list(buf, size, "BYSECOND", 0, 59, false, 1 + (int)rnd(3));
    if (rnd(4) == 0) add_list(buf, size, "BYMINUTE", 0, 59, false, 1 + (int)rnd(3));
    if (rnd(3) == 0) add_list(buf, size, "BYHOUR", 0, 23, false, 1 + (int)rnd(3));
    if (rnd(2)) {
        len = strlen(buf);
        len += (size_t)snprintf(buf + len, size - len, ";BYDAY=");
        int k = 1 + (int)rnd(3);
        for (int i = 0; i < k; i++) {
            int ord = f >= 5 && rnd(2) ? (int)rnd(5) + 1 : 0;
            if (ord && rnd(2)) ord = -ord;
            if (ord) len += (size_t)snprintf(buf + len, size - len, "%s%d%s", i ? "," : "", ord, days[rnd(7)]);
            else len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? "," : "", days[rnd(7)]);
        }
    }
    if (f != 4 && rnd(4) == 0) add_list(buf, size, "BYMONTHDAY", 1, 31, true, 1 + (int)rnd(3));
    if ((f < 3 || f == 6) && rnd(6) == 0) add_list(buf, size, "BYYEARDAY", 1, 366, true, 1 + (int)rnd(3));
    if (f == 6 && rnd(6) == 0) add_list(buf, size, "BYWEEKNO", 1, 53, true, 1 + (int)rnd(3));
    if (rnd(4) == 0) add_list(buf, size, "BYMONTH", 1, 12, false, 1 + (int)rnd(3));
    if (rnd(5) == 0) add_list(buf, size, "BYSETPOS", 1, 5, true, 1 + (int)rnd(2));
    if (rnd(4) == 0) {
        len = strlen(buf);
        snprintf(buf + len, size - len, ";WKST=%s", days[rnd(7)]);
    }
}

/* next_after and includes (which jump to the period of t and count whole
 * periods for COUNT) against plain iteration from DTSTART. */
static void test_queries_match_iteration(void **state)
{
    (void)state;
    enum { N = 600 };
    static int64_t occ[N];
    int rules = 0;
    for (int attempt = 0; rules < 2500 && attempt < 20000; attempt++) {
        char text[400], err[200];
        rrule r;
        random_rule(text, sizeof text);
        if (rrule_parse(text, strlen(text), &r, err, sizeof err) != 0) continue;
        civil_time dt = {.year = 1990 + (int)rnd(40), .month = (int8_t)(1 + rnd(12)),
                         .day = (int8_t)(1 + rnd(28)), .hour = (int8_t)rnd(24),
                         .minute = (int8_t)rnd(60), .second = (int8_t)rnd(60)};
        assert_int_equal(rrule_plan_init(&plan, &r, &dt, err, sizeof err), 0);
        size_t n = rrule_expand(&plan, INT64_MIN, INT64_MAX, occ, N);
        rules++;
        for (size_t i = 1; i < n; i++)
            if (occ[i] <= occ[i - 1]) fail_msg("%s: not increasing at %zu", text, i);
        int64_t span = n > 1 ? occ[n - 1] - occ[0] : 86400 * 400;
        for (int q = 0; q < 12; q++) {
            int64_t t = occ[0] - 5 + (int64_t)(((uint64_t)rnd(1u << 31) << 20 | rnd(1u << 20)) % (uint64_t)(span + 10));
            int64_t got;
            bool has = rrule_next_after(&plan, t, &got);
            size_t j = 0;
            while (j < n && occ[j] <= t) j++;
            if (j < n) {
                if (!has || got != occ[j])
                    fail_msg("%s dtstart %d-%d-%d: next_after wrong (q %d)", text, dt.year, dt.month, dt.day, q);
            } else if (n < N && has) {
                fail_msg("%s: next_after past the end", text);
            }
            bool inc = j > 0 && occ[j - 1] == t;
            if (t <= occ[n - 1] || n < N) assert_int_equal(rrule_includes(&plan, t), inc);
        }
        for (int q = 0; q < 4 && n > 0; q++) {
            size_t j = rnd((uint32_t)n);
            if (!rrule_includes(&plan, occ[j])) fail_msg("%s: includes(occurrence %zu) false", text, j);
        }
    }
    assert_true(rules > 2000);
}

/* COUNT far from DTSTART: counting whole periods gives the same answer as
 * walking, and stops at the end of the series. */
static void test_count_far(void **state)
{
    (void)state;
    static const char *const rules[] = {
        "FREQ=DAILY;COUNT=20000", "FREQ=DAILY;INTERVAL=3;COUNT=5000;BYDAY=MO,FR",
        "FREQ=WEEKLY;COUNT=5000;BYDAY=MO,WE", "FREQ=WEEKLY;INTERVAL=2;COUNT=3000;BYDAY=TU;BYSETPOS=1",
        "FREQ=MONTHLY;COUNT=2000;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
        "FREQ=YEARLY;COUNT=300;BYMONTH=2;BYMONTHDAY=29",
        "FREQ=YEARLY;COUNT=5000;BYDAY=FR;BYMONTHDAY=13",
        "FREQ=HOURLY;COUNT=200000;BYHOUR=9,17", "FREQ=MINUTELY;INTERVAL=7;COUNT=100000;BYHOUR=8",
        "FREQ=SECONDLY;INTERVAL=7;COUNT=150000;BYHOUR=3;BYMINUTE=7;BYDAY=MO,FR",
        "FREQ=MINUTELY;INTERVAL=1441;COUNT=20000;BYMINUTE=0,15,30,45;BYSETPOS=1",
    };
    static int64_t occ[200001];
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        plan_for(&plan, "19900101T090000", rules[i]);
        size_t n = rrule_expand(&plan, INT64_MIN, INT64_MAX, occ, 200001);
        /* The whole series comes out: no scan budget cuts a long expansion. */
        if (n != strtoul(strstr(rules[i], "COUNT=") + 6, NULL, 10))
            fail_msg("%s: %zu occurrences", rules[i], n);
        for (int q = 0; q < 200; q++) {
            size_t j = rnd((uint32_t)n);
            int64_t t = occ[j] - 1 + rnd(2), got;
            bool has = rrule_next_after(&plan, t, &got);
            size_t k = j;
            while (k < n && occ[k] <= t) k++;
            if (k < n) {
                if (!has || got != occ[k]) fail_msg("%s: next_after wrong near %zu", rules[i], j);
            } else if (has) {
                fail_msg("%s: next_after past COUNT", rules[i]);
            }
        }
        int64_t t;
        if (rrule_next_after(&plan, occ[n - 1], &t)) fail_msg("%s: occurrence after the last", rules[i]);
    }
}

/* A random MONTHLY rule with COUNT whose number of occurrences varies by
 * month: what count_periods counts by kind of month (month_kind_count). */
static void random_monthly(char *buf, size_t size)
{
    static const char *const days[] = {"MO", "TU", "WE", "TH", "FR", "SA", "SU"};
    static const unsigned intervals[] = {1, 1, 1, 2, 3, 4, 6, 12, 5, 7};
    size_t len = (size_t)snprintf(buf, size, "FREQ=MONTHLY;COUNT=%u;INTERVAL=%u", 200 + rnd(3000),
                                  intervals[rnd(sizeof intervals / sizeof intervals[0])]);
    bool byday = rnd(3) != 0, monthday = !byday || rnd(2);
    if (byday) {
        len += (size_t)snprintf(buf + len, size - len, ";BYDAY=");
        int k = 1 + (int)rnd(3);
        for (int i = 0; i < k; i++) {
            int ord = rnd(2) ? (int)rnd(5) + 1 : 0;
            if (ord && rnd(2)) ord = -ord;
            if (ord) len += (size_t)snprintf(buf + len, size - len, "%s%d%s", i ? "," : "", ord, days[rnd(7)]);
            else len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? "," : "", days[rnd(7)]);
        }
    }
    if (monthday) add_list(buf, size, "BYMONTHDAY", rnd(2) ? 1 : 25, 31, true, 1 + (int)rnd(3));
    if (rnd(3) == 0) add_list(buf, size, "BYMONTH", 1, 12, false, 1 + (int)rnd(6));
    if (rnd(4) == 0) add_list(buf, size, "BYSETPOS", 1, 3, true, 1);
    if (rnd(5) == 0) add_list(buf, size, "BYHOUR", 0, 23, false, 1 + (int)rnd(2));
}

/* MONTHLY COUNT rules queried decades after DTSTART: next_after counts
 * whole months and years by their kind (weekday of the 1st, length) rather
 * than walking; it must give what walking gives, up to the series' end. */
static void test_count_monthly_far(void **state)
{
    (void)state;
    enum { N = 4000 };
    static int64_t occ[N];
    int rules = 0;
    for (int attempt = 0; rules < 400 && attempt < 4000; attempt++) {
        char text[300], err[200];
        rrule r;
        random_monthly(text, sizeof text);
        if (rrule_parse(text, strlen(text), &r, err, sizeof err) != 0) continue;
        civil_time dt = {.year = 1900 + (int)rnd(200), .month = (int8_t)(1 + rnd(12)),
                         .day = (int8_t)(1 + rnd(28)), .hour = 9};
        assert_int_equal(rrule_plan_init(&plan, &r, &dt, err, sizeof err), 0);
        size_t n = rrule_expand(&plan, INT64_MIN, INT64_MAX, occ, N);
        if (n < 20) continue;
        rules++;
        for (int q = 0; q < 40; q++) {
            size_t j = rnd((uint32_t)n);
            int64_t t = occ[j] - 1 + rnd(2) - (int64_t)rnd(40) * 86400, got;
            bool has = rrule_next_after(&plan, t, &got);
            size_t k = 0;
            while (k < n && occ[k] <= t) k++;
            if (k < n && (!has || got != occ[k]))
                fail_msg("%s dtstart %d-%d-%d: next_after wrong near occurrence %zu", text, dt.year, dt.month,
                         dt.day, j);
            assert_true(rrule_includes(&plan, occ[j]));
        }
        int64_t t;
        if (n < N && rrule_next_after(&plan, occ[n - 1], &t)) fail_msg("%s: an occurrence past COUNT", text);
    }
    assert_true(rules > 300);
}

/* A month of a MONTHLY rule can hold millions of occurrences (BYSECOND
 * and BYMINUTE multiply the times of a day): its count does not fit 16
 * bits (helper-1 found it cut to them, and the series ran past COUNT). */
static void test_count_monthly_many_times(void **state)
{
    (void)state;
    char text[512], list[200] = "";
    for (int i = 0; i < 60; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", i);
    snprintf(text, sizeof text, "FREQ=MONTHLY;COUNT=212400;BYDAY=MO,TU,WE,TH,FR,SA,SU;BYMINUTE=%s;BYSECOND=%s",
             list, list);
    plan_for(&plan, "20010101T000000", text); /* 3,600 a day: January 111,600, February 100,800 */
    int64_t t;
    assert_true(rrule_next_after(&plan, secs("20010228T005958"), &t));
    assert_int_equal(t, secs("20010228T005959"));
    assert_false(rrule_next_after(&plan, secs("20010301T000000"), &t));
    assert_false(rrule_includes(&plan, secs("20010301T000000")));
    assert_true(rrule_includes(&plan, secs("20010228T005959")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_unsynchronized_dtstart),
        cmocka_unit_test(test_set_exdate_rdate),
        cmocka_unit_test(test_until_before_dtstart),
        cmocka_unit_test(test_two_rules_union),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_never_matches),
        cmocka_unit_test(test_queries_match_iteration),
        cmocka_unit_test(test_count_far),
        cmocka_unit_test(test_count_monthly_far),
        cmocka_unit_test(test_count_monthly_many_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
