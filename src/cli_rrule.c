/* cli_rrule.c -- `chime rrule`: the recurrence engine on the command line.
 *
 * Without options it reads JSON lines on stdin and writes exactly one JSON
 * line per input line, in order; a bad line gets {"error": "..."} and the run
 * goes on. With options it is a human tool (see usage()).
 *
 * A request: {"dtstart", "tzid" (null: floating), "rrule" (null: none),
 * "rdate": [], "exdate": [], "keep_dtstart" (default true, RFC 5545; false
 * drops a DTSTART the rule does not yield, as python-dateutil does)} and one
 * of: "limit" (with optional "from"/"to" bounds) -> {"occurrences",
 * "occurrences_utc"}; "after" -> {"next", "next_utc"}; "includes" ->
 * {"includes"}; "explain": true -> {"explain", "rrule" (canonical)}. */
#include "cli_rrule.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time/rrule_set.h"

#define CLI_MAX_LINE (1 << 20)
#define CLI_MAX_LIMIT 100000
#define CLI_MAX_DATES 10000

typedef struct cli_req {
    civil_time dtstart;
    bool date_only;           /* DTSTART was a DATE: print dates */
    const tz_zone *zone;
    rrule rule;
    bool has_rule;
    int64_t *rdate, *exdate;  /* owned by the request */
    size_t nrdate, nexdate;
} cli_req;

/* "YYYYMMDD", "YYYYMMDDTHHMMSS" or with a trailing Z (a UTC instant, turned
 * into the zone's wall time). Returns 0 or -1. */
static int parse_time(const char *s, const tz_zone *zone, int64_t *out, bool *date_only)
{
    size_t n = strlen(s);
    bool utc = n == 16 && (s[15] == 'Z' || s[15] == 'z');
    civil_time t;
    bool is_date;
    if (civil_parse_basic(s, utc ? 15 : n, &t, &is_date) != 0) return -1;
    if (t.year < 0 || t.year > RRULE_MAX_YEAR) return -1;
    *out = civil_to_seconds(&t);
    if (utc && zone) *out = tz_utc_to_local(zone, *out);
    if (date_only) *date_only = is_date;
    return 0;
}

static json_t *error_reply(const char *msg)
{
    return json_pack("{s:s}", "error", msg);
}

static json_t *format_time(int64_t secs, bool date_only, bool z)
{
    civil_time t;
    char buf[24];
    civil_from_seconds(secs, &t);
    int n = civil_format_basic(&t, date_only && !z, buf, sizeof buf - 1);
    if (z) strcpy(buf + n, "Z");
    return json_string(buf);
}

/* Reads an array of times into a fresh array the request owns. */
static const char *read_dates(json_t *arr, const char *name, const tz_zone *zone, int64_t **out,
                              size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!arr || json_is_null(arr)) return NULL;
    if (!json_is_array(arr)) return snprintf(err, errlen, "%s: must be an array", name), err;
    size_t len = json_array_size(arr);
    if (len > CLI_MAX_DATES)
        return snprintf(err, errlen, "%s: more than %d dates", name, CLI_MAX_DATES), err;
    *out = malloc((len ? len : 1) * sizeof **out);
    if (!*out) return "out of memory";
    for (size_t i = 0; i < len; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s || parse_time(s, zone, &(*out)[i], NULL) != 0)
            return snprintf(err, errlen, "%s: item %zu is not a date-time", name, i), err;
    }
    *n = len;
    return NULL;
}

static const char *read_request(json_t *in, tz_db *db, cli_req *q, char *err, size_t errlen)
{
    const char *s;
    json_t *v;
    if (!json_is_object(in)) return "expected a JSON object";
    s = json_string_value(json_object_get(in, "dtstart"));
    if (!s) return "dtstart: missing or not a string";
    size_t n = strlen(s);
    bool utc = n == 16 && (s[15] == 'Z' || s[15] == 'z');
    if (civil_parse_basic(s, utc ? 15 : n, &q->dtstart, &q->date_only) != 0 ||
        q->dtstart.year < 0 || q->dtstart.year > RRULE_MAX_YEAR)
        return "dtstart: not YYYYMMDD or YYYYMMDDTHHMMSS";
    q->zone = NULL;
    v = json_object_get(in, "tzid");
    if (v && !json_is_null(v)) {
        if (!json_is_string(v)) return "tzid: must be a string or null";
        q->zone = tz_db_get(db, json_string_value(v));
        if (!q->zone) return snprintf(err, errlen, "tzid: unknown zone '%s'", json_string_value(v)), err;
    }
    if (utc) {
        /* A UTC DTSTART: the series' wall clock is UTC unless a zone is given. */
        if (q->zone) civil_from_seconds(tz_utc_to_local(q->zone, civil_to_seconds(&q->dtstart)), &q->dtstart);
    }
    v = json_object_get(in, "rrule");
    q->has_rule = v && !json_is_null(v);
    if (q->has_rule) {
        if (!json_is_string(v)) return "rrule: must be a string or null";
        char perr[200];
        if (rrule_parse(json_string_value(v), json_string_length(v), &q->rule, perr, sizeof perr) != 0)
            return snprintf(err, errlen, "rrule: %s", perr), err;
    }
    const char *e = read_dates(json_object_get(in, "rdate"), "rdate", q->zone, &q->rdate, &q->nrdate, err, errlen);
    if (!e) e = read_dates(json_object_get(in, "exdate"), "exdate", q->zone, &q->exdate, &q->nexdate, err, errlen);
    return e;
}

static json_t *occurrences_reply(rrule_set *set, const cli_req *q, int64_t from, int64_t to,
                                 size_t limit)
{
    int64_t *occ = malloc((limit ? limit : 1) * sizeof *occ);
    if (!occ) return error_reply("out of memory");
    size_t n = rrule_set_expand(set, from, to, occ, limit);
    json_t *local = json_array(), *utc = q->zone ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(local, format_time(occ[i], q->date_only, false));
        if (utc) json_array_append_new(utc, format_time(rrule_set_to_utc(set, occ[i]), false, true));
    }
    free(occ);
    json_t *out = json_object();
    json_object_set_new(out, "occurrences", local);
    if (utc) json_object_set_new(out, "occurrences_utc", utc);
    return out;
}

static json_t *time_field(json_t *in, const char *name, const tz_zone *zone, int64_t *out,
                          bool *present, char *err, size_t errlen)
{
    json_t *v = json_object_get(in, name);
    *present = v && !json_is_null(v);
    if (!*present) return NULL;
    const char *s = json_string_value(v);
    if (!s || parse_time(s, zone, out, NULL) != 0) {
        snprintf(err, errlen, "%s: not YYYYMMDD or YYYYMMDDTHHMMSS", name);
        return error_reply(err);
    }
    return NULL;
}

static json_t *answer(json_t *in, tz_db *db, cli_req *q)
{
    char err[300];
    const char *e = read_request(in, db, q, err, sizeof err);
    if (e) return error_reply(e);
    rrule_set *set = malloc(sizeof *set);
    if (!set) return error_reply("out of memory");
    json_t *out = NULL;
    if (rrule_set_init(set, q->has_rule ? &q->rule : NULL, &q->dtstart, q->zone, q->rdate,
                       q->nrdate, q->exdate, q->nexdate, err, sizeof err) != 0) {
        out = error_reply(err);
        goto done;
    }
    json_t *keep = json_object_get(in, "keep_dtstart");
    if (keep && !json_is_boolean(keep)) {
        out = error_reply("keep_dtstart: must be true or false");
        goto done;
    }
    if (q->has_rule && json_is_false(keep)) set->plan.keep_dtstart = false;
    int64_t after, inc, from = INT64_MIN, to = INT64_MAX, t;
    bool has_after, has_inc, has_from, has_to;
    if ((out = time_field(in, "after", q->zone, &after, &has_after, err, sizeof err)) ||
        (out = time_field(in, "includes", q->zone, &inc, &has_inc, err, sizeof err)) ||
        (out = time_field(in, "from", q->zone, &from, &has_from, err, sizeof err)) ||
        (out = time_field(in, "to", q->zone, &to, &has_to, err, sizeof err)))
        goto done;
    json_t *lim = json_object_get(in, "limit");
    if (json_is_true(json_object_get(in, "explain"))) {
        char text[2048];
        if (!q->has_rule) snprintf(text, sizeof text, "once");
        else rrule_explain(&q->rule, &q->dtstart, text, sizeof text);
        char canon[RRULE_TEXT_MAX + 64] = "";
        if (q->has_rule) rrule_format(&q->rule, canon, sizeof canon);
        out = json_pack("{s:s,s:s}", "explain", text, "rrule", canon);
    } else if (has_after) {
        out = json_object();
        json_object_set_new(out, "next", rrule_set_next_after(set, after, &t)
                                             ? format_time(t, q->date_only, false) : json_null());
        if (q->zone)
            json_object_set_new(out, "next_utc", json_is_null(json_object_get(out, "next"))
                                                     ? json_null()
                                                     : format_time(rrule_set_to_utc(set, t), false, true));
    } else if (has_inc) {
        out = json_pack("{s:b}", "includes", rrule_set_includes(set, inc));
    } else if (lim && !json_is_null(lim)) {
        if (!json_is_integer(lim) || json_integer_value(lim) < 0 ||
            json_integer_value(lim) > CLI_MAX_LIMIT) {
            snprintf(err, sizeof err, "limit: must be an integer 0..%d", CLI_MAX_LIMIT);
            out = error_reply(err);
        } else {
            out = occurrences_reply(set, q, from, to, (size_t)json_integer_value(lim));
        }
    } else {
        out = error_reply("one of limit, after, includes or explain is required");
    }
done:
    free(set);
    return out;
}

static json_t *answer_line(const char *line, size_t len, tz_db *db)
{
    json_error_t jerr;
    json_t *in = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!in) return error_reply("not valid JSON");
    cli_req q;
    memset(&q, 0, sizeof q);
    json_t *out = answer(in, db, &q);
    free(q.rdate);
    free(q.exdate);
    json_decref(in);
    return out;
}

char *cli_rrule_answer(const char *line, size_t len, tz_db *db)
{
    json_t *out = len > CLI_MAX_LINE ? error_reply("line longer than 1 MiB") : answer_line(line, len, db);
    char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    return text;
}

static int json_lines(tz_db *db)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        size_t len = (size_t)n;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        char *text = cli_rrule_answer(line, len, db);
        puts(text ? text : "{\"error\":\"out of memory\"}");
        fflush(stdout);
        free(text);
    }
    free(line);
    return 0;
}

static void usage(void)
{
    fputs("usage: chime rrule                 (JSON lines on stdin, one reply per line)\n"
          "       chime rrule --dtstart 19970902T090000 [--tz America/New_York]\n"
          "                   --rule 'FREQ=YEARLY;BYMONTH=6;BYDAY=3SU'\n"
          "                   [--count N | --after T | --includes T] [--explain]\n",
          stderr);
}

/* An answer of the human form, a line per value. */
static void human_print(json_t *out)
{
    json_t *v;
    if ((v = json_object_get(out, "occurrences"))) {
        json_t *u = json_object_get(out, "occurrences_utc");
        for (size_t i = 0; i < json_array_size(v); i++)
            printf("%s%s%s\n", json_string_value(json_array_get(v, i)), u ? "  " : "",
                   u ? json_string_value(json_array_get(u, i)) : "");
    } else if ((v = json_object_get(out, "next"))) {
        puts(json_is_null(v) ? "none" : json_string_value(v));
    } else {
        puts(json_is_true(json_object_get(out, "includes")) ? "yes" : "no");
    }
}

static int human(int argc, char **argv, tz_db *db)
{
    const char *dtstart = NULL, *tz = NULL, *rule = NULL, *after = NULL, *inc = NULL;
    long count = 10;
    bool explain = false, asked = false; /* asked: --count, --after or --includes given */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--explain") == 0) { explain = true; continue; }
        if (!v) { usage(); return 2; }
        if (strcmp(a, "--dtstart") == 0) dtstart = v;
        else if (strcmp(a, "--tz") == 0) tz = v;
        else if (strcmp(a, "--rule") == 0) rule = v;
        else if (strcmp(a, "--count") == 0) count = strtol(v, NULL, 10);
        else if (strcmp(a, "--after") == 0) after = v;
        else if (strcmp(a, "--includes") == 0) inc = v;
        else { usage(); return 2; }
        asked |= strcmp(a, "--count") == 0 || strcmp(a, "--after") == 0 || strcmp(a, "--includes") == 0;
        i++;
    }
    if (!dtstart || !rule || count < 0 || count > CLI_MAX_LIMIT) { usage(); return 2; }
    json_t *in = json_pack("{s:s,s:s?,s:s}", "dtstart", dtstart, "tzid", tz, "rrule", rule);
    if (after) json_object_set_new(in, "after", json_string(after));
    else if (inc) json_object_set_new(in, "includes", json_string(inc));
    else json_object_set_new(in, "limit", json_integer(count));
    cli_req q;
    memset(&q, 0, sizeof q);
    json_t *out = answer(in, db, &q);
    int rc = 0;
    json_t *v;
    if ((v = json_object_get(out, "error"))) {
        fprintf(stderr, "chime rrule: %s\n", json_string_value(v));
        rc = 1;
    } else {
        if (explain) { /* the English; then what was asked, if anything */
            char text[1024];
            rrule_explain(&q.rule, &q.dtstart, text, sizeof text);
            puts(text);
        }
        if (!explain || asked) human_print(out);
    }
    free(q.rdate);
    free(q.exdate);
    json_decref(out);
    json_decref(in);
    return rc;
}

int cli_rrule_main(int argc, char **argv)
{
    tz_db *db = tz_db_new(NULL);
    if (!db) {
        fputs("chime rrule: out of memory\n", stderr);
        return 1;
    }
    int rc;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage();
        rc = 0;
    } else {
        rc = argc > 1 ? human(argc, argv, db) : json_lines(db);
    }
    tz_db_free(db);
    return rc;
}
