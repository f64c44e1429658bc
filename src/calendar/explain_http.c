/* explain_http.c -- the recurrence engine's English, for the web app's
 * recurrence editor: GET /v1/recurrence/explain?rrule=...&start=...
 * -> {"text":"every 2 weeks on Monday and Friday, 10 times",
 *     "rrule":"FREQ=WEEKLY;INTERVAL=2;COUNT=10;BYDAY=MO,FR"}
 * The rule is checked exactly as an event's would be; start (the event's
 * wall time, "2026-10-26T09:00:00", "2026-10-26" or basic form) lets the
 * text spell out what the rule takes from it ("monthly on the 26th"). */
#include <stdio.h>
#include <string.h>

#include "calendar/cal_http.h"
#include "time/civil.h"
#include "time/rrule.h"

/* "2026-10-26T09:00:00", "2026-10-26", "20261026T090000" or "20261026";
 * an offset or 'Z' after the time is ignored (the wall time is what the
 * rule repeats). 0 or -1. */
static int parse_start(const char *s, civil_time *t)
{
    char basic[16];
    size_t n = 0;
    bool seen_t = false, is_date;
    const char *p = s;
    for (; *p && n < 15; p++) {
        if (*p == 'T' && !seen_t) seen_t = true;
        else if ((*p == '-' && !seen_t) || *p == ':') continue;
        else if (*p < '0' || *p > '9') break;
        basic[n++] = *p;
    }
    /* What may follow the wall time: an offset, 'Z' or a fraction. */
    if (*p && !(seen_t && (*p == 'Z' || *p == '+' || *p == '-' || *p == '.' || *p == ':'))) return -1;
    basic[n] = '\0';
    return civil_parse_basic(basic, n, t, &is_date);
}

static void handle_explain(http_req *r, void *arg)
{
    char text[RRULE_TEXT_MAX + 8], start[64], err[256];
    int has = http_query(r, "rrule", text, sizeof text);
    if (has <= 0 || !text[0]) {
        http_send_error(r, has < 0 ? 400 : 422, has < 0 ? "invalid_rrule" : "missing_field", "rrule",
                        has < 0 ? "rrule is malformed or longer than %d bytes" : "rrule is required",
                        RRULE_TEXT_MAX);
        return;
    }
    rrule rule;
    if (rrule_parse(text, strlen(text), &rule, err, sizeof err) != 0) {
        http_send_error(r, 422, "invalid_rrule", "rrule", "%s", err);
        return;
    }
    civil_time dtstart;
    int hs = http_query(r, "start", start, sizeof start);
    if (hs < 0 || (hs > 0 && parse_start(start, &dtstart) != 0)) {
        http_send_error(r, 400, "invalid_start", "start", "start must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS");
        return;
    }
    char english[2048], canon[RRULE_TEXT_MAX + 64];
    rrule_explain(&rule, hs > 0 ? &dtstart : NULL, english, sizeof english);
    rrule_format(&rule, canon, sizeof canon);
    http_send_json(r, 200, json_pack("{s:s,s:s}", "text", english, "rrule", canon));
}

void explain_http_register(cal_http *c, http_server *s)
{
    http_route(s, HTTP_GET, "/v1/recurrence/explain", handle_explain, c, HTTP_ROUTE_AUTH);
}
