/* tz.c -- TZif zones (RFC 8536), their POSIX TZ footer rule, and the cache.
 *
 * A parsed zone is one sorted table of transitions. When the file has a
 * footer rule with DST, the rule is expanded into the table up to
 * TZ_GEN_LAST_YEAR at load time, so the hot lookups (tz_offset_at,
 * tz_local_to_utc) are a binary search with no calendar arithmetic. Only
 * instants past the table (or zones whose table cannot be expanded) evaluate
 * the rule on the fly, still without allocating.
 *
 * Local -> UTC uses one extra array, key[]: for transition i from offset a to
 * offset b at instant T, every wall time before T + min(a, b) is unambiguously
 * before it and every wall time at or after T + max(a, b) after it. Between
 * the two lies a gap (b > a) or an overlap (b < a), and RFC 5545 resolves
 * both the same way: use the offset before the transition. So the answer for
 * wall time L is L - (offset before the first transition with L < key[i]),
 * where key[i] = T + max(a, b).
 */
#include "time/tz.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "time/civil.h"

#define TZ_MAX_FILE (256 * 1024)  /* real TZif files are under 10 KiB */
#define TZ_MAX_NAME 255
#define TZ_MAX_OFFSET (26 * 3600) /* RFC 8536 keeps utoff within +-25:59:59 */
#define TZ_MAX_ABBR 31
#define TZ_MAX_FOOTER 255
/* The footer rule is expanded into the table for files whose last
 * transition falls in [FIRST, LAST] years; later instants use the rule. */
#define TZ_GEN_FIRST_YEAR 1800
#define TZ_GEN_LAST_YEAR 2200
/* Rule evaluation clamps instants to +-300,000 years, well inside civil.h's
 * valid range, so no calendar arithmetic can overflow. */
#define TZ_RULE_LIMIT INT64_C(9467280000000)

typedef struct tz_type {
    int32_t utoff;  /* seconds east of UTC */
    uint32_t abbr;  /* offset of a NUL-terminated name in zone->abbrs */
    bool isdst;
} tz_type;

typedef enum { TZ_DATE_JULIAN, TZ_DATE_ZERO, TZ_DATE_MWD } tz_date_kind;

/* One date of a POSIX rule: "Jn" (1..365, Feb 29 never counted), "n"
 * (0..365, counting it) or "Mm.w.d" (weekday d, 0 = Sunday, of week w of
 * month m, w = 5 meaning the last), plus a local time of day. */
typedef struct tz_date {
    tz_date_kind kind;
    int16_t n;
    int8_t m, w, d;
    int32_t secs; /* -167h..167h */
} tz_date;

typedef struct tz_rule {
    bool has_dst;
    int32_t std_off, dst_off; /* seconds east of UTC */
    uint16_t std_type, dst_type;
    tz_date start, end;
    char std_name[TZ_MAX_ABBR + 1], dst_name[TZ_MAX_ABBR + 1];
} tz_rule;

struct tz_zone {
    char *name;
    size_t n, cap;     /* transitions: the file's, then the expanded rule's */
    int64_t *utc;      /* strictly ascending instants */
    int64_t *key;      /* see the top of this file */
    uint16_t *after;   /* type in force from utc[i] */
    uint16_t first;    /* type in force before utc[0] (RFC 8536: type 0) */
    tz_type *types;
    size_t ntypes;
    char *abbrs;
    size_t abbrs_len, abbrs_cap;
    bool has_rule;     /* the footer governs from utc[n - 1] on */
    tz_rule rule;
};

/* A rule transition: at instant utc, type becomes `type`. */
typedef struct tz_change {
    int64_t utc;
    uint16_t type;
} tz_change;

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t clamp_rule(int64_t t)
{
    return t > TZ_RULE_LIMIT ? TZ_RULE_LIMIT : t < -TZ_RULE_LIMIT ? -TZ_RULE_LIMIT : t;
}

static int64_t year_of(int64_t t)
{
    civil_time c;
    civil_from_seconds(clamp_rule(t), &c);
    return c.year;
}

/* ---- POSIX TZ strings ---------------------------------------------------- */

static int posix_name(const char **sp, char *out)
{
    const char *s = *sp;
    size_t len = 0;
    bool quoted = *s == '<';
    if (quoted) s++;
    for (;; s++, len++) {
        char c = *s;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                  (quoted && ((c >= '0' && c <= '9') || c == '+' || c == '-'));
        if (!ok) break;
        if (len == TZ_MAX_ABBR) return -1;
        out[len] = c;
    }
    out[len] = '\0';
    if (len < 3) return -1;
    if (quoted && *s++ != '>') return -1;
    *sp = s;
    return 0;
}

static int posix_digits(const char **sp, int maxdigits, int maxval, int *out)
{
    const char *s = *sp;
    int v = 0, n = 0;
    while (*s >= '0' && *s <= '9') {
        if (++n > maxdigits) return -1;
        v = v * 10 + (*s++ - '0');
    }
    if (n == 0 || v > maxval) return -1;
    *sp = s;
    *out = v;
    return 0;
}

/* [+-]hh[:mm[:ss]] with hours up to maxh; the value is signed seconds. */
static int posix_hms(const char **sp, int maxh, int32_t *secs)
{
    const char *s = *sp;
    int sign = 1, h, m = 0, sec = 0;
    if (*s == '+' || *s == '-') sign = *s++ == '-' ? -1 : 1;
    if (posix_digits(&s, 3, maxh, &h)) return -1;
    if (*s == ':') {
        s++;
        if (posix_digits(&s, 2, 59, &m)) return -1;
        if (*s == ':') {
            s++;
            if (posix_digits(&s, 2, 59, &sec)) return -1;
        }
    }
    *secs = sign * (h * 3600 + m * 60 + sec);
    *sp = s;
    return 0;
}

static int posix_date(const char **sp, tz_date *d)
{
    const char *s = *sp;
    int a, b, c;
    if (*s == 'J') {
        s++;
        if (posix_digits(&s, 3, 365, &a) || a < 1) return -1;
        d->kind = TZ_DATE_JULIAN;
        d->n = (int16_t)a;
    } else if (*s == 'M') {
        s++;
        if (posix_digits(&s, 2, 12, &a) || a < 1 || *s++ != '.') return -1;
        if (posix_digits(&s, 1, 5, &b) || b < 1 || *s++ != '.') return -1;
        if (posix_digits(&s, 1, 6, &c)) return -1;
        d->kind = TZ_DATE_MWD;
        d->m = (int8_t)a; d->w = (int8_t)b; d->d = (int8_t)c;
    } else {
        if (posix_digits(&s, 3, 365, &a)) return -1;
        d->kind = TZ_DATE_ZERO;
        d->n = (int16_t)a;
    }
    d->secs = 2 * 3600;
    if (*s == '/') {
        s++;
        if (posix_hms(&s, 167, &d->secs)) return -1; /* RFC 8536 3.3.1 */
    }
    *sp = s;
    return 0;
}

/* "std offset [dst [offset] [,start[/time],end[/time]]]" (POSIX, with the
 * RFC 8536 extensions). Offsets in the string count west, ours east. */
static int posix_parse(const char *s, tz_rule *r)
{
    int32_t secs;
    memset(r, 0, sizeof *r);
    if (posix_name(&s, r->std_name) || posix_hms(&s, 24, &secs)) return -1;
    r->std_off = -secs;
    if (*s == '\0') return 0;
    if (posix_name(&s, r->dst_name)) return -1;
    r->has_dst = true;
    r->dst_off = r->std_off + 3600;
    if (*s != ',' && *s != '\0') {
        if (posix_hms(&s, 24, &secs)) return -1;
        r->dst_off = -secs;
    }
    if (*s == '\0') {
        /* No rule given: POSIX leaves it to the implementation; glibc and
         * tzcode use the US rules. zic always writes one. */
        r->start = (tz_date){.kind = TZ_DATE_MWD, .m = 3, .w = 2, .d = 0, .secs = 7200};
        r->end = (tz_date){.kind = TZ_DATE_MWD, .m = 11, .w = 1, .d = 0, .secs = 7200};
        return 0;
    }
    if (*s++ != ',' || posix_date(&s, &r->start)) return -1;
    if (*s++ != ',' || posix_date(&s, &r->end)) return -1;
    return *s == '\0' ? 0 : -1;
}

/* Day number (days since 1970-01-01) of a rule date in year y. */
static int64_t posix_day(const tz_date *d, int64_t y)
{
    int64_t jan1 = civil_days_from_ymd(y, 1, 1);
    if (d->kind == TZ_DATE_JULIAN) return jan1 + d->n - 1 + (civil_is_leap(y) && d->n >= 60);
    if (d->kind == TZ_DATE_ZERO) return jan1 + d->n;
    int64_t first = civil_days_from_ymd(y, d->m, 1);
    int want = (d->d + 6) % 7; /* POSIX 0 = Sunday; civil 0 = Monday */
    int64_t day = first + (want - civil_weekday(first) + 7) % 7 + 7 * (d->w - 1);
    if (day >= first + civil_days_in_month(y, d->m)) day -= 7; /* w = 5: last */
    return day;
}

/* The rule's changes in years y-1..y+1, sorted by instant (stable, so at a
 * tie the later year's change wins, as for all-year DST "J365/25,0/0"). */
static int rule_changes(const tz_rule *r, int64_t y, tz_change out[6])
{
    int n = 0;
    for (int64_t yy = y - 1; yy <= y + 1; yy++) {
        out[n++] = (tz_change){posix_day(&r->start, yy) * 86400 + r->start.secs - r->std_off,
                               r->dst_type};
        out[n++] = (tz_change){posix_day(&r->end, yy) * 86400 + r->end.secs - r->dst_off,
                               r->std_type};
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && out[j - 1].utc > out[j].utc; j--) {
            tz_change t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static uint16_t rule_other(const tz_rule *r, uint16_t type)
{
    return type == r->dst_type ? r->std_type : r->dst_type;
}

static uint16_t rule_type_at(const tz_zone *z, int64_t t)
{
    const tz_rule *r = &z->rule;
    if (!r->has_dst) return r->std_type;
    t = clamp_rule(t);
    tz_change c[6];
    int n = rule_changes(r, year_of(t), c);
    uint16_t type = rule_other(r, c[0].type);
    for (int i = 0; i < n && c[i].utc <= t; i++) type = c[i].type;
    return type;
}

static int64_t rule_local_to_utc(const tz_zone *z, int64_t local)
{
    const tz_rule *r = &z->rule;
    if (!r->has_dst) return sat_sub(local, r->std_off);
    int64_t l = clamp_rule(local);
    tz_change c[6];
    int n = rule_changes(r, year_of(l), c);
    int32_t before = z->types[rule_other(r, c[0].type)].utoff;
    for (int i = 0; i < n; i++) {
        int32_t after = z->types[c[i].type].utoff;
        if (l < c[i].utc + (before > after ? before : after)) break;
        before = after;
    }
    return sat_sub(local, before);
}

/* ---- TZif parsing ---------------------------------------------------------- */

typedef struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chars;
} tzif_counts;

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* Reads a 44-byte header; returns the version (1, 2, 3, ...) or -1. */
static int tzif_header(const uint8_t *p, size_t len, tzif_counts *c)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0) return -1;
    int version = p[4] == 0 ? 1 : (p[4] >= '2' && p[4] <= '9') ? p[4] - '0' : -1;
    c->isut = be32(p + 20);
    c->isstd = be32(p + 24);
    c->leap = be32(p + 28);
    c->time = be32(p + 32);
    c->type = be32(p + 36);
    c->chars = be32(p + 40);
    return version;
}

static uint64_t tzif_block_size(const tzif_counts *c, int tsize)
{
    return (uint64_t)c->time * (uint64_t)(tsize + 1) + (uint64_t)c->type * 6 + c->chars +
           (uint64_t)c->leap * (uint64_t)(tsize + 4) + c->isstd + c->isut;
}

static int zone_add_abbr(tz_zone *z, const char *s, size_t len, uint32_t *off)
{
    if (z->abbrs_len + len + 1 > z->abbrs_cap) return -1;
    memcpy(z->abbrs + z->abbrs_len, s, len);
    z->abbrs[z->abbrs_len + len] = '\0';
    *off = (uint32_t)z->abbrs_len;
    z->abbrs_len += len + 1;
    return 0;
}

/* Fills the transitions, types and abbreviations from one data block. */
static int tzif_block(tz_zone *z, const uint8_t *p, const tzif_counts *c, int tsize)
{
    if (c->type == 0 || c->type > 256 || c->chars == 0 || c->leap != 0 ||
        (c->isstd != 0 && c->isstd != c->type) || (c->isut != 0 && c->isut != c->type))
        return -1;
    const uint8_t *idx = p + (size_t)c->time * tsize;
    const uint8_t *tt = idx + c->time;
    const uint8_t *chars = tt + (size_t)c->type * 6;
    for (uint32_t i = 0; i < c->time; i++) {
        z->utc[i] = tsize == 8 ? be64(p + 8 * (size_t)i) : (int32_t)be32(p + 4 * (size_t)i);
        if ((i > 0 && z->utc[i] <= z->utc[i - 1]) || idx[i] >= c->type) return -1;
        z->after[i] = idx[i];
    }
    z->n = c->time;
    uint32_t base;
    if (zone_add_abbr(z, (const char *)chars, c->chars, &base)) return -1;
    for (uint32_t i = 0; i < c->type; i++) {
        const uint8_t *t = tt + 6 * (size_t)i;
        int32_t off = (int32_t)be32(t);
        if (off < -TZ_MAX_OFFSET || off > TZ_MAX_OFFSET || t[4] > 1 || t[5] >= c->chars)
            return -1;
        z->types[i] = (tz_type){.utoff = off, .abbr = base + t[5], .isdst = t[4]};
    }
    z->ntypes = c->type;
    z->first = 0;
    return 0;
}

static uint16_t zone_find_type(tz_zone *z, int32_t off, bool isdst, const char *name)
{
    for (size_t i = 0; i < z->ntypes; i++)
        if (z->types[i].utoff == off && z->types[i].isdst == isdst &&
            strcmp(z->abbrs + z->types[i].abbr, name) == 0)
            return (uint16_t)i;
    uint32_t abbr = 0;
    zone_add_abbr(z, name, strlen(name), &abbr); /* capacity reserved at alloc */
    z->types[z->ntypes] = (tz_type){.utoff = off, .abbr = abbr, .isdst = isdst};
    return (uint16_t)z->ntypes++;
}

/* Parses the "\nTZ\n" footer after the v2+ block. */
static int tzif_footer(tz_zone *z, const uint8_t *p, size_t len)
{
    if (len == 0 || p[0] != '\n') return -1;
    const uint8_t *nl = memchr(p + 1, '\n', len - 1 < TZ_MAX_FOOTER + 1 ? len - 1 : TZ_MAX_FOOTER + 1);
    if (!nl) return -1;
    size_t slen = (size_t)(nl - p - 1);
    if (slen == 0) return 0; /* no rule: the last type stays in force */
    char text[TZ_MAX_FOOTER + 1];
    memcpy(text, p + 1, slen);
    text[slen] = '\0';
    if (memchr(text, '\0', slen) || posix_parse(text, &z->rule)) return -1;
    tz_rule *r = &z->rule;
    if (r->std_off < -TZ_MAX_OFFSET || r->std_off > TZ_MAX_OFFSET ||
        r->dst_off < -TZ_MAX_OFFSET || r->dst_off > TZ_MAX_OFFSET)
        return -1;
    r->std_type = zone_find_type(z, r->std_off, false, r->std_name);
    r->dst_type = r->has_dst ? zone_find_type(z, r->dst_off, true, r->dst_name) : r->std_type;
    z->has_rule = true;
    return 0;
}

/* Appends the rule's changes after the file's last transition through
 * TZ_GEN_LAST_YEAR, skipping changes that change nothing. */
static void zone_expand_rule(tz_zone *z)
{
    if (!z->has_rule || !z->rule.has_dst || z->n == 0) return;
    int64_t t = z->utc[z->n - 1];
    int64_t y0 = year_of(t);
    if (y0 < TZ_GEN_FIRST_YEAR || y0 > TZ_GEN_LAST_YEAR) return;
    uint16_t cur = z->after[z->n - 1];
    for (int64_t y = y0; y <= TZ_GEN_LAST_YEAR; y++) {
        tz_change c[6];
        rule_changes(&z->rule, y, c);
        for (int i = 0; i < 6 && z->n < z->cap; i++) {
            if (c[i].utc <= t || c[i].type == cur) continue;
            z->utc[z->n] = c[i].utc;
            z->after[z->n++] = cur = c[i].type;
            t = c[i].utc;
        }
    }
}

static void zone_build_keys(tz_zone *z)
{
    for (size_t i = 0; i < z->n; i++) {
        int32_t a = z->types[i == 0 ? z->first : z->after[i - 1]].utoff;
        int32_t b = z->types[z->after[i]].utoff;
        z->key[i] = sat_add(z->utc[i], a > b ? a : b);
    }
}

static tz_zone *zone_alloc(const char *name, const tzif_counts *c)
{
    tz_zone *z = calloc(1, sizeof *z);
    if (!z) return NULL;
    /* Room for the rule's expansion: at most two changes a year. */
    size_t cap = (size_t)c->time + 2 * (TZ_GEN_LAST_YEAR - TZ_GEN_FIRST_YEAR + 3);
    z->abbrs_cap = (size_t)c->chars + 1 + 2 * (TZ_MAX_ABBR + 1);
    z->cap = cap;
    z->name = strdup(name ? name : "");
    z->utc = malloc(cap * sizeof *z->utc);
    z->key = malloc(cap * sizeof *z->key);
    z->after = malloc(cap * sizeof *z->after);
    z->types = malloc(((size_t)c->type + 2) * sizeof *z->types);
    z->abbrs = malloc(z->abbrs_cap);
    if (!z->name || !z->utc || !z->key || !z->after || !z->types || !z->abbrs) {
        tz_zone_free(z);
        return NULL;
    }
    return z;
}

/* Gives back the expansion room the rule did not use. */
static void zone_shrink(tz_zone *z)
{
    size_t n = z->n ? z->n : 1;
    int64_t *utc = realloc(z->utc, n * sizeof *utc);
    if (utc) z->utc = utc;
    int64_t *key = realloc(z->key, n * sizeof *key);
    if (key) z->key = key;
    uint16_t *after = realloc(z->after, n * sizeof *after);
    if (after) z->after = after;
    z->cap = n;
}

tz_zone *tz_zone_parse(const char *name, const uint8_t *data, size_t len)
{
    tzif_counts c;
    int version = tzif_header(data, len, &c);
    if (version < 0) return NULL;
    size_t off = 44;
    int tsize = 4;
    if (version >= 2) { /* skip the 32-bit block, use the 64-bit one */
        uint64_t skip = tzif_block_size(&c, 4);
        if (skip > len - off) return NULL;
        off += (size_t)skip;
        if (tzif_header(data + off, len - off, &c) != version) return NULL;
        off += 44;
        tsize = 8;
    }
    uint64_t size = tzif_block_size(&c, tsize);
    if (size > len - off) return NULL;
    tz_zone *z = zone_alloc(name, &c);
    if (!z) return NULL;
    if (tzif_block(z, data + off, &c, tsize) ||
        (version >= 2 && tzif_footer(z, data + off + size, len - off - (size_t)size))) {
        tz_zone_free(z);
        return NULL;
    }
    zone_expand_rule(z);
    zone_shrink(z);
    zone_build_keys(z);
    return z;
}

void tz_zone_free(tz_zone *z)
{
    if (!z) return;
    free(z->name);
    free(z->utc);
    free(z->key);
    free(z->after);
    free(z->types);
    free(z->abbrs);
    free(z);
}

/* ---- zones from explicit changes (an iCalendar VTIMEZONE's definition) ------ */

/* The type for an offset, added (with no abbreviation) if new. */
static uint16_t zone_type_for(tz_zone *z, int32_t off)
{
    for (size_t i = 0; i < z->ntypes; i++)
        if (z->types[i].utoff == off) return (uint16_t)i;
    z->types[z->ntypes] = (tz_type){.utoff = off, .abbr = 0, .isdst = false};
    return (uint16_t)z->ntypes++;
}

tz_zone *tz_zone_from_changes(const char *name, int32_t first, const int64_t *utc, const int32_t *offsets, size_t n)
{
    if (n > TZ_MAX_CHANGES || first < -TZ_MAX_OFFSET || first > TZ_MAX_OFFSET) return NULL;
    for (size_t i = 0; i < n; i++)
        if ((i > 0 && utc[i] <= utc[i - 1]) || offsets[i] < -TZ_MAX_OFFSET || offsets[i] > TZ_MAX_OFFSET)
            return NULL;
    tzif_counts c = {.time = (uint32_t)n, .type = (uint32_t)n + 1, .chars = 1};
    tz_zone *z = zone_alloc(name, &c);
    if (!z) return NULL;
    uint32_t none;
    zone_add_abbr(z, "", 0, &none);
    z->first = zone_type_for(z, first);
    int32_t cur = first;
    for (size_t i = 0; i < n; i++) {
        if (offsets[i] == cur) continue; /* changes nothing */
        z->utc[z->n] = utc[i];
        z->after[z->n++] = zone_type_for(z, cur = offsets[i]);
    }
    zone_shrink(z);
    zone_build_keys(z);
    return z;
}

bool tz_next_change(const tz_zone *z, int64_t after, int64_t *at)
{
    if (!z) return false;
    int32_t cur = tz_offset_at(z, after);
    size_t lo = 0, hi = z->n; /* first utc[i] > after */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->utc[mid] <= after) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < z->n; i++)
        if (z->types[z->after[i]].utoff != cur) return (*at = z->utc[i], true);
    if (!z->has_rule || !z->rule.has_dst) return false;
    /* Past the table: the rule's next change (it changes twice a year). */
    int64_t from = z->n && z->utc[z->n - 1] > after ? z->utc[z->n - 1] : after;
    for (int64_t y = year_of(clamp_rule(from)), k = 0; k < 3; y++, k++) {
        tz_change ch[6];
        int m = rule_changes(&z->rule, y, ch);
        for (int i = 0; i < m; i++)
            if (ch[i].utc > after && z->types[ch[i].type].utoff != cur) return (*at = ch[i].utc, true);
    }
    return false;
}

/* ---- lookups (hot path: no allocation, no libc time calls) ----------------- */

static uint16_t zone_type_at(const tz_zone *z, int64_t t)
{
    if (z->has_rule && (z->n == 0 || t >= z->utc[z->n - 1])) return rule_type_at(z, t);
    if (z->n == 0 || t < z->utc[0]) return z->first;
    size_t lo = 0, hi = z->n; /* utc[lo] <= t < utc[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->utc[mid] <= t) lo = mid;
        else hi = mid;
    }
    return z->after[lo];
}

const char *tz_zone_name(const tz_zone *z)
{
    return z ? z->name : "";
}

int32_t tz_offset_at(const tz_zone *z, int64_t utc_secs)
{
    return z ? z->types[zone_type_at(z, utc_secs)].utoff : 0;
}

int64_t tz_utc_to_local(const tz_zone *z, int64_t utc_secs)
{
    return sat_add(utc_secs, tz_offset_at(z, utc_secs));
}

const char *tz_abbrev_at(const tz_zone *z, int64_t utc_secs)
{
    return z ? z->abbrs + z->types[zone_type_at(z, utc_secs)].abbr : "";
}

int64_t tz_local_to_utc(const tz_zone *z, int64_t local_secs)
{
    if (!z) return local_secs;
    if (z->has_rule && z->n == 0) return rule_local_to_utc(z, local_secs);
    size_t lo = 0, hi = z->n; /* first i with local < key[i] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (local_secs < z->key[mid]) hi = mid;
        else lo = mid + 1;
    }
    if (lo == z->n && z->has_rule) return rule_local_to_utc(z, local_secs);
    uint16_t before = lo == 0 ? z->first : z->after[lo - 1];
    return sat_sub(local_secs, z->types[before].utoff);
}

/* ---- the database ------------------------------------------------------------ */

struct tz_db {
    char *dir;
    char version[32]; /* tz_db_version */
    pthread_mutex_t lock;
    tz_zone **zones; /* sorted by name */
    size_t n, cap;
};

/* The first line of tzdata.zi, "# version 2025b": the letters, digits,
 * dots and dashes after it (at most 31). */
static void tz_version_read(tz_db *db)
{
    char path[4096], line[64] = "";
    snprintf(path, sizeof path, "%s/tzdata.zi", db->dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    static const char prefix[] = "# version ";
    if (strncmp(line, prefix, sizeof prefix - 1) != 0) return;
    size_t n = 0;
    for (const char *p = line + sizeof prefix - 1; n < sizeof db->version - 1; p++, n++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
                  *p == '-';
        if (!ok) break;
        db->version[n] = *p;
    }
    db->version[n] = '\0';
}

tz_db *tz_db_new(const char *dir)
{
    tz_db *db = calloc(1, sizeof *db);
    if (!db) return NULL;
    db->dir = strdup(dir ? dir : "/usr/share/zoneinfo");
    if (!db->dir || pthread_mutex_init(&db->lock, NULL) != 0) {
        free(db->dir);
        free(db);
        return NULL;
    }
    tz_version_read(db);
    return db;
}

const char *tz_db_version(const tz_db *db)
{
    return db->version;
}

const char *tz_db_dir(const tz_db *db)
{
    return db->dir;
}

void tz_db_free(tz_db *db)
{
    if (!db) return;
    for (size_t i = 0; i < db->n; i++) tz_zone_free(db->zones[i]);
    free(db->zones);
    free(db->dir);
    pthread_mutex_destroy(&db->lock);
    free(db);
}

/* [A-Za-z0-9/_+-], no leading, trailing or doubled '/'; '.' is not allowed
 * at all, so neither is "..". Doubled slashes are refused so that one file
 * cannot be cached under unboundedly many spellings. */
static bool tz_name_valid(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > TZ_MAX_NAME || name[0] == '/' || name[len - 1] == '/') return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '/' || c == '_' || c == '+' || c == '-';
        if (!ok || (c == '/' && name[i + 1] == '/')) return false;
    }
    return true;
}

/* Reads a regular file of at most TZ_MAX_FILE bytes; caller frees. */
static uint8_t *read_small_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= TZ_MAX_FILE &&
        (buf = malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        ssize_t r;
        while (got < (size_t)st.st_size &&
               (r = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
            got += (size_t)r;
        *len = got;
    }
    close(fd);
    return buf;
}

/* "UTC" works even where the system has no zoneinfo: a one-type TZif. */
static tz_zone *zone_builtin_utc(void)
{
    static const uint8_t tzif[44 + 6 + 4] = {
        'T', 'Z', 'i', 'f', [39] = 1, [43] = 4, [50] = 'U', 'T', 'C', 0};
    return tz_zone_parse("UTC", tzif, sizeof tzif);
}

static tz_zone *zone_load(const tz_db *db, const char *name)
{
    size_t plen = strlen(db->dir) + strlen(name) + 2, len = 0;
    char *path = malloc(plen);
    if (!path) return NULL;
    snprintf(path, plen, "%s/%s", db->dir, name);
    uint8_t *data = read_small_file(path, &len);
    free(path);
    tz_zone *z = data ? tz_zone_parse(name, data, len) : NULL;
    free(data);
    if (!z && strcmp(name, "UTC") == 0) z = zone_builtin_utc();
    return z;
}

/* Index of the first zone whose name is >= name. */
static size_t db_find(const tz_db *db, const char *name)
{
    size_t lo = 0, hi = db->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(db->zones[mid]->name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int db_insert(tz_db *db, size_t at, tz_zone *z)
{
    if (db->n == db->cap) {
        size_t cap = db->cap ? db->cap * 2 : 64;
        tz_zone **zones = realloc(db->zones, cap * sizeof *zones);
        if (!zones) return -1;
        db->zones = zones;
        db->cap = cap;
    }
    memmove(db->zones + at + 1, db->zones + at, (db->n - at) * sizeof *db->zones);
    db->zones[at] = z;
    db->n++;
    return 0;
}

const tz_zone *tz_db_get(tz_db *db, const char *name)
{
    if (!db || !name || !tz_name_valid(name)) return NULL;
    pthread_mutex_lock(&db->lock);
    /* Loading under the lock keeps each zone loaded exactly once; a load is
     * one small file read, and it happens once per zone per process. */
    size_t at = db_find(db, name);
    tz_zone *z = NULL;
    if (at < db->n && strcmp(db->zones[at]->name, name) == 0) {
        z = db->zones[at];
    } else if ((z = zone_load(db, name)) && db_insert(db, at, z)) {
        tz_zone_free(z);
        z = NULL;
    }
    pthread_mutex_unlock(&db->lock);
    return z;
}
