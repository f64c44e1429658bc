/* rrule_set.h -- a recurrence set: (RRULE + RDATE) - EXDATE in a time zone.
 *
 * Everything is on local wall times of the series' zone (local seconds, see
 * civil.h); the zone is only used to turn an occurrence into its UTC instant
 * and to compare occurrences with an UNTIL written in UTC (RFC 5545 3.3.10:
 * with a zoned DTSTART, UNTIL is UTC). A NULL zone means floating time: a UTC
 * UNTIL is then compared as a wall time.
 *
 * The set is sorted and has no duplicates. COUNT counts RRULE occurrences
 * before EXDATE removes any (RFC 5545 3.8.5.1). DTSTART is the first
 * occurrence of the RRULE. RDATEs are not subject to UNTIL or COUNT.
 * Up to RRULE_SET_MAX_RULES RRULEs: RFC 5545 only discourages several (RFC
 * 2445 allowed them) and some producers still write two; the set is then
 * the union of the rules, each with its own COUNT and UNTIL.
 */
#ifndef CHIME_TIME_RRULE_SET_H
#define CHIME_TIME_RRULE_SET_H

#include "time/rrule.h"
#include "time/tz.h"

#define RRULE_SET_MAX_RULES 2

typedef struct rrule_set {
    rrule_plan plan;          /* the first rule (or DTSTART alone) */
    rrule_plan plan2;         /* the second, when nrules == 2 */
    int nrules;               /* 0: the set is DTSTART + RDATE - EXDATE */
    bool has_rule;            /* nrules > 0 */
    bool until_utc[RRULE_SET_MAX_RULES]; /* compare occurrences' UTC instants to until */
    int64_t until[RRULE_SET_MAX_RULES];  /* UTC seconds, when until_utc */
    const tz_zone *zone;      /* NULL for floating */
    int64_t *rdate, *exdate;  /* caller's arrays, sorted in place by init */
    size_t nrdate, nexdate;
} rrule_set;

/* rule may be NULL. rdate/exdate are the caller's arrays of local seconds;
 * rrule_set_init sorts them and drops duplicates in place (the counts are
 * updated), and the set refers to them until the caller is done with it.
 * Returns 0, or -1 with a message. */
int rrule_set_init(rrule_set *s, const rrule *rule, const civil_time *dtstart,
                   const tz_zone *zone, int64_t *rdate, size_t nrdate, int64_t *exdate,
                   size_t nexdate, char *err, size_t errlen);
/* The same with nrules (0..RRULE_SET_MAX_RULES) rules, united. */
int rrule_set_init_rules(rrule_set *s, const rrule *rules, int nrules, const civil_time *dtstart,
                         const tz_zone *zone, int64_t *rdate, size_t nrdate, int64_t *exdate,
                         size_t nexdate, char *err, size_t errlen);

typedef struct rrule_set_iter {
    rrule_set *s;
    rrule_iter it[RRULE_SET_MAX_RULES];
    bool rule_live[RRULE_SET_MAX_RULES]; /* it[i] has a pending value in rule_next[i] */
    int64_t rule_next[RRULE_SET_MAX_RULES];
    size_t ri;                /* next RDATE */
} rrule_set_iter;

void rrule_set_iter_init(rrule_set_iter *si, rrule_set *s, int64_t from);
bool rrule_set_iter_next(rrule_set_iter *si, int64_t *out);

size_t rrule_set_expand(rrule_set *s, int64_t from, int64_t to, int64_t *out, size_t limit);
bool rrule_set_next_after(rrule_set *s, int64_t t, int64_t *out);
bool rrule_set_includes(rrule_set *s, int64_t t);
/* UTC instant of a local occurrence (the local value itself when floating). */
int64_t rrule_set_to_utc(const rrule_set *s, int64_t local);

#endif
