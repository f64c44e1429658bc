/* fuzz-webhook-url.c -- arbitrary bytes through channels_url_check. A
 * refusal must say why; an accepted URL must be one libcurl parses the same
 * way: scheme http or https, no user name or password, the same host we
 * checked (a disagreement would let a URL look harmless to us and go
 * somewhere else for curl). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "deliver/channels.h"
#include "deliver/channels_int.h"

/* curl writes IPv4 numbers in their dotted form ("127" -> "0.0.0.127",
 * "0x7f.1" -> "127.0.0.1") and may respell IPv6; the address is the same. */
static int same_host(const char *ours, size_t n, const char *curls)
{
    if (strlen(curls) == n && strncasecmp(curls, ours, n) == 0) return 1;
    char a[300], b[300];
    unsigned char x[16], y[16];
    if (n >= sizeof a) return 0;
    memcpy(a, ours, n);
    a[n] = '\0';
    if (a[0] == '[' && curls[0] == '[') {
        snprintf(b, sizeof b, "%s", curls + 1);
        a[n - 1] = '\0';
        b[strcspn(b, "]")] = '\0';
        return inet_pton(AF_INET6, a + 1, x) == 1 && inet_pton(AF_INET6, b, y) == 1 && memcmp(x, y, 16) == 0;
    }
    return strspn(a, "0123456789abcdefABCDEFxX.") == n && inet_pton(AF_INET, curls, y) == 1;
}

static void check_with_curl(const char *text)
{
    CURLU *u = curl_url();
    if (!u) abort();
    if (curl_url_set(u, CURLUPART_URL, text, 0) != CURLUE_OK) abort();
    char *scheme = NULL, *user = NULL, *password = NULL, *host = NULL;
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) abort();
    if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) abort();
    if (curl_url_get(u, CURLUPART_USER, &user, 0) != CURLUE_NO_USER) abort();
    if (curl_url_get(u, CURLUPART_PASSWORD, &password, 0) != CURLUE_NO_PASSWORD) abort();
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host[0] == '\0') abort();
    /* Our host: from after "://" to the first of ":/?#" outside brackets. */
    const char *rest = strstr(text, "://") + 3;
    size_t n = rest[0] == '[' ? (size_t)(strchr(rest, ']') - rest) + 1 : strcspn(rest, ":/?#");
    if (!same_host(rest, n, host)) abort();
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
}

/* The receiver key a send is queued under (any text: it runs before the
 * URL check too): bounded, terminated, lowercase, a prefix of the URL up
 * to its path. */
static void check_origin(const char *text)
{
    chan_send s;
    memset(s.origin, 'x', sizeof s.origin);
    chan_origin_set(&s, text);
    size_t n = strnlen(s.origin, sizeof s.origin);
    if (n == sizeof s.origin) abort();
    if (strncasecmp(s.origin, text, n) != 0) abort();
    for (size_t i = 0; i < n; i++)
        if (s.origin[i] >= 'A' && s.origin[i] <= 'Z') abort();
    const char *sep = strstr(text, "://");
    for (size_t i = sep ? (size_t)(sep - text) + 3 : n; i < n; i++)
        if (strchr("/?#", s.origin[i])) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > CHANNELS_URL_MAX + 16) return 0;
    char text[CHANNELS_URL_MAX + 17];
    memcpy(text, data, size);
    text[size] = '\0';
    check_origin(text);
    char err[160] = "";
    if (channels_url_check(text, err, sizeof err) != 0) {
        if (err[0] == '\0') abort();
        return 0;
    }
    if (strlen(text) > CHANNELS_URL_MAX) abort();
    check_with_curl(text);
    return 0;
}
