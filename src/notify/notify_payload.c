/* notify_payload.c -- what a webhook or email says: the webhook's JSON
 * body, written straight out for plain ASCII summaries (jansson otherwise),
 * and the email's subject, text and HTML. */
#include "notify/notify_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "time/rfc3339.h"

/* The summary as HTML text. */
static void html_escape(const char *in, char *out, size_t size)
{
    size_t n = 0;
    for (; *in && n + 7 < size; in++) {
        const char *rep = *in == '<' ? "&lt;" : *in == '>' ? "&gt;" : *in == '&' ? "&amp;" : *in == '"' ? "&quot;" : NULL;
        if (rep) {
            size_t k = strlen(rep);
            memcpy(out + n, rep, k);
            n += k;
        } else {
            out[n++] = *in;
        }
    }
    out[n] = '\0';
}

/* s as the inside of a JSON string, when it is plain ASCII (false
 * otherwise: jansson then checks and writes the UTF-8). out needs 6 bytes
 * a character and one more. */
static bool json_ascii(const char *s, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x80) return false;
        if (ch == '"' || ch == '\\') {
            *out++ = '\\';
            *out++ = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            memcpy(out, "\\u00", 4);
            out[4] = hex[ch >> 4];
            out[5] = hex[ch & 15];
            out += 6;
        } else {
            *out++ = (char)ch;
        }
    }
    *out = '\0';
    return true;
}

/* The webhook's JSON body (README: "A webhook's JSON body"). Written
 * straight out: through jansson it was a tenth of the engine's CPU on
 * bench/reminders. */
char *notify_payload_of(const notify_send_job *j)
{
    char ev[17], user[17], orig[32], due[32], fired[32];
    base_id_format(j->event_id, ev);
    base_id_format(j->user_id, user);
    rfc3339_format_ms(j->occurrence_ms, orig, sizeof orig);
    rfc3339_format_ms(j->it.due_ms, due, sizeof due);
    rfc3339_format_ms(j->fired_ms, fired, sizeof fired);
    const char *method = j->webhook ? "webhook" : "email";
    size_t cap = 6 * strlen(j->summary) + 400;
    char *text = malloc(cap), *summary = malloc(cap);
    if (text && summary && json_ascii(j->summary, summary)) {
        snprintf(text, cap,
                 "{\"delivery_id\":\"%s\",\"event_id\":\"%s\",\"summary\":\"%s\",\"original_start\":\"%s\","
                 "\"due\":\"%s\",\"fired\":\"%s\",\"user_id\":\"%s\",\"method\":\"%s\"%s}",
                 j->it.id, ev, summary, orig, due, fired, user, method, j->late ? ",\"late\":true" : "");
        free(summary);
        return text;
    }
    free(text);
    free(summary);
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "delivery_id", j->it.id, "event_id", ev, "summary",
                          j->summary, "original_start", orig, "due", due, "fired", fired, "user_id", user, "method",
                          method);
    if (o && j->late) json_object_set_new(o, "late", json_true());
    text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

void notify_email_text_of(const notify_send_job *j, notify_email_text *m)
{
    char safe[1200];
    snprintf(m->subject, sizeof m->subject, "Reminder: %.200s%s", j->summary, j->late ? " (late)" : "");
    snprintf(m->text, sizeof m->text, "Reminder: %.1000s\nDelivery %s\n", j->summary, j->it.id);
    html_escape(j->summary, safe, sizeof safe);
    snprintf(m->html, sizeof m->html, "<p>Reminder: <b>%s</b></p>", safe);
}
