/* email.c -- a reminder as one multipart/alternative message over SMTP.
 *
 * User data (subject, text, html, the address) never reaches a header
 * line raw: the subject loses its line breaks and is RFC 2047-encoded when
 * it is not plain ASCII, the bodies travel base64-encoded, and the address
 * must be one plain addr-spec. */
#define _GNU_SOURCE /* memmem */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "deliver/channels_int.h"

#define SUBJECT_MAX 900 /* bytes kept; a header line stays under 998 */

/* A growing buffer; any failed append leaves failed set. */
typedef struct email_buf {
    char *p;
    size_t len, cap;
    bool failed;
} email_buf;

static void buf_add(email_buf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_str(email_buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

/* Base64 in lines of 76 characters (RFC 2045). */
static void buf_base64(email_buf *b, const unsigned char *data, size_t n)
{
    for (size_t off = 0; off < n || off == 0; off += 57) {
        size_t chunk = n - off < 57 ? n - off : 57;
        char line[80];
        sodium_bin2base64(line, sizeof line, data + off, chunk, sodium_base64_VARIANT_ORIGINAL);
        buf_str(b, line);
        buf_str(b, "\r\n");
        if (n == 0) break;
    }
}

static bool plain_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f) return false;
    /* "=?" would make a reader decode our raw text as an encoded word. */
    return !memmem(s, n, "=?", 2);
}

/* Subject: line breaks and controls become spaces; non-ASCII goes into
 * encoded words of at most 45 bytes, cut between UTF-8 characters. */
static void buf_subject(email_buf *b, const char *subject)
{
    char clean[SUBJECT_MAX + 1];
    size_t n = 0;
    for (const char *p = subject ? subject : ""; *p && n < SUBJECT_MAX; p++)
        clean[n++] = ((unsigned char)*p < 0x20 || *p == 0x7f) ? ' ' : *p;
    /* Do not end in the middle of a UTF-8 character. */
    while (n > 0 && n == SUBJECT_MAX && ((unsigned char)clean[n - 1] & 0xc0) == 0x80) n--;
    if (n == SUBJECT_MAX && (unsigned char)clean[n - 1] >= 0xc0) n--;
    clean[n] = '\0';
    buf_str(b, "Subject: ");
    if (plain_ascii(clean, n)) {
        buf_add(b, clean, n);
        buf_str(b, "\r\n");
        return;
    }
    size_t off = 0;
    while (off < n) {
        size_t chunk = n - off < 45 ? n - off : 45;
        while (chunk > 1 && off + chunk < n && ((unsigned char)clean[off + chunk] & 0xc0) == 0x80) chunk--;
        char enc[80];
        sodium_bin2base64(enc, sizeof enc, (const unsigned char *)clean + off, chunk, sodium_base64_VARIANT_ORIGINAL);
        if (off) buf_str(b, "\r\n ");
        buf_str(b, "=?UTF-8?B?");
        buf_str(b, enc);
        buf_str(b, "?=");
        off += chunk;
    }
    buf_str(b, "\r\n");
}

/* When the caller has no HTML, the text escaped, with its line breaks. */
static void buf_html_from_text(email_buf *b, const char *text)
{
    buf_str(b, "<!DOCTYPE html><html><body><p>");
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '<': buf_str(b, "&lt;"); break;
        case '>': buf_str(b, "&gt;"); break;
        case '&': buf_str(b, "&amp;"); break;
        case '"': buf_str(b, "&quot;"); break;
        case '\n': buf_str(b, "<br>\n"); break;
        default: buf_add(b, p, 1);
        }
    }
    buf_str(b, "</p></body></html>\n");
}

/* One addr-spec of visible ASCII: local@domain, no specials that could
 * start a second address or a new SMTP command. */
static bool address_valid(const char *to)
{
    size_t n = strnlen(to, 255);
    if (n == 0 || n > 254) return false;
    const char *at = strrchr(to, '@');
    if (!at || at == to || at[1] == '\0') return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)to[i];
        if (ch <= 0x20 || ch >= 0x7f || strchr("<>()[]\\,;:\"", ch)) return false;
    }
    return true;
}

static void rfc5322_date(char *out, size_t size)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    static const char *days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    snprintf(out, size, "%s, %02d %s %04d %02d:%02d:%02d +0000", days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void buf_part(email_buf *b, const char *boundary, const char *type, const char *content, size_t len)
{
    buf_str(b, "--");
    buf_str(b, boundary);
    buf_str(b, "\r\nContent-Type: ");
    buf_str(b, type);
    buf_str(b, "; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n");
    buf_base64(b, (const unsigned char *)content, len);
}

static int build_message(email_buf *b, const chan_settings *st, const char *to, const char *subject, const char *text,
                         const char *html, const char *id)
{
    char date[64], boundary[48], msgid[CHANNELS_ID_MAX + 1];
    unsigned char raw[12];
    base_random(raw, sizeof raw);
    memcpy(boundary, "=_chime_", 8);
    base_hex(raw, sizeof raw, boundary + 8);
    rfc5322_date(date, sizeof date);
    /* ':' is fine in a header value but not in a Message-ID's left side. */
    snprintf(msgid, sizeof msgid, "%s", id);
    for (char *p = msgid; *p; p++)
        if (*p == ':') *p = '.';

    buf_str(b, "From: ");
    buf_str(b, st->smtp_from);
    buf_str(b, "\r\nTo: <");
    buf_str(b, to);
    buf_str(b, ">\r\n");
    buf_subject(b, subject);
    buf_str(b, "Date: ");
    buf_str(b, date);
    buf_str(b, "\r\nMessage-ID: <chime.");
    buf_str(b, msgid);
    buf_str(b, "@");
    buf_str(b, st->msgid_domain);
    buf_str(b, ">\r\nX-Chime-Delivery: ");
    buf_str(b, id);
    buf_str(b, "\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"");
    buf_str(b, boundary);
    buf_str(b, "\"\r\n\r\n");
    buf_part(b, boundary, "text/plain", text, strlen(text));
    if (html) {
        buf_part(b, boundary, "text/html", html, strlen(html));
    } else {
        email_buf made = {0};
        buf_html_from_text(&made, text);
        if (made.failed) b->failed = true;
        else buf_part(b, boundary, "text/html", made.p, made.len);
        free(made.p);
    }
    buf_str(b, "--");
    buf_str(b, boundary);
    buf_str(b, "--\r\n");
    return b->failed ? -1 : 0;
}

static size_t read_message(char *ptr, size_t size, size_t nmemb, void *p)
{
    chan_send *s = p;
    size_t room = size * nmemb, left = s->payload_len - s->read_pos;
    size_t n = left < room ? left : room;
    memcpy(ptr, s->payload + s->read_pos, n);
    s->read_pos += n;
    return n;
}

int channels_email(channels *c, const char *to, const char *subject, const char *text, const char *html,
                   const char *delivery_id, channels_done_fn done, void *ctx)
{
    chan_settings st;
    if (!c || !done || !to || !chan_id_valid(delivery_id) || !address_valid(to)) return -1;
    chan_settings_of(c, &st);
    if (!st.smtp_url) return -1;
    if (!text) text = "";
    if (strnlen(text, CHANNELS_TEXT_MAX + 1) > CHANNELS_TEXT_MAX ||
        (html && strnlen(html, CHANNELS_TEXT_MAX + 1) > CHANNELS_TEXT_MAX))
        return -1;
    chan_send *s = chan_send_new(c, done, ctx);
    if (!s) return -1;
    s->kind = CHAN_EMAIL;
    chan_origin_set(s, st.smtp_url);
    snprintf(s->id, sizeof s->id, "%s", delivery_id);
    email_buf b = {0};
    if (build_message(&b, &st, to, subject, text, html, delivery_id) != 0) {
        free(b.p);
        goto fail;
    }
    s->payload = b.p;
    s->payload_len = b.len;

    char rcpt[300], from[300];
    snprintf(rcpt, sizeof rcpt, "<%s>", to);
    snprintf(from, sizeof from, "<%s>", st.from_addr);
    s->list = curl_slist_append(NULL, rcpt);
    if (!s->list) goto fail;
    CURL *e = s->easy;
    curl_easy_setopt(e, CURLOPT_URL, st.smtp_url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(e, CURLOPT_MAIL_FROM, from);
    curl_easy_setopt(e, CURLOPT_MAIL_RCPT, s->list);
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, read_message);
    curl_easy_setopt(e, CURLOPT_READDATA, s);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)s->payload_len);
    /* STARTTLS when the server offers it; smtps:// for TLS from the start. */
    curl_easy_setopt(e, CURLOPT_USE_SSL, (long)CURLUSESSL_TRY);
    if (chan_enqueue(c, s) != 0) goto fail;
    return 0;
fail:
    chan_send_free(s);
    return -1;
}
