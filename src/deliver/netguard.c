/* netguard.c -- what a webhook URL may look like, and which addresses an
 * outbound call must never reach. Pure functions: no I/O, no state. */
#include "deliver/channels.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/base.h"

static bool host_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
           ch == '.' || ch == '_';
}

/* "[v6]" (a valid IPv6 literal, no zone id) or a DNS name / IPv4 literal. */
static int check_host(const char *h, size_t n, char *err, size_t errlen)
{
    if (n == 0) return base_errf(err, errlen, "url has no host");
    if (h[0] == '[') {
        char lit[64];
        struct in6_addr a6;
        if (n < 3 || h[n - 1] != ']' || n - 2 >= sizeof lit)
            return base_errf(err, errlen, "url has a malformed IPv6 host");
        memcpy(lit, h + 1, n - 2);
        lit[n - 2] = '\0';
        if (inet_pton(AF_INET6, lit, &a6) != 1) return base_errf(err, errlen, "url has a malformed IPv6 host");
        return 0;
    }
    if (n > 253) return base_errf(err, errlen, "url host is longer than 253 characters");
    for (size_t i = 0; i < n; i++)
        if (!host_char(h[i])) return base_errf(err, errlen, "url host has a character a host name cannot have");
    if (h[0] == '.' || h[0] == '-') return base_errf(err, errlen, "url host is not a valid name");
    return 0;
}

static int check_port(const char *p, size_t n, char *err, size_t errlen)
{
    long v = 0;
    if (n == 0 || n > 5) return base_errf(err, errlen, "url port must be a number from 1 to 65535");
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return base_errf(err, errlen, "url port must be a number from 1 to 65535");
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535) return base_errf(err, errlen, "url port must be a number from 1 to 65535");
    return 0;
}

int channels_url_check(const char *url, char *err, size_t errlen)
{
    if (!url) return base_errf(err, errlen, "url is missing");
    size_t len = strnlen(url, CHANNELS_URL_MAX + 1);
    if (len > CHANNELS_URL_MAX) return base_errf(err, errlen, "url is longer than %d bytes", CHANNELS_URL_MAX);
    /* Only visible ASCII: no spaces, controls (header and request-line
     * injection) or raw non-ASCII that parsers disagree about. */
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f || url[i] == '\\')
            return base_errf(err, errlen, "url has a space, control, backslash or non-ASCII character");
    const char *rest;
    if (strncasecmp(url, "http://", 7) == 0) rest = url + 7;
    else if (strncasecmp(url, "https://", 8) == 0) rest = url + 8;
    else return base_errf(err, errlen, "url must start with http:// or https://");
    size_t auth_len = strcspn(rest, "/?#");
    if (memchr(rest, '@', auth_len)) return base_errf(err, errlen, "url must not carry a user name or password");
    if (rest[auth_len] == '#' || strchr(rest + auth_len, '#'))
        return base_errf(err, errlen, "url must not have a #fragment");
    /* The port is after the last ':' outside an IPv6 literal's brackets. */
    const char *close = rest[0] == '[' ? memchr(rest, ']', auth_len) : NULL;
    if (rest[0] == '[' && !close) return base_errf(err, errlen, "url has a malformed IPv6 host");
    const char *search = close ? close : rest;
    const char *colon = memchr(search, ':', auth_len - (size_t)(search - rest));
    size_t host_len = colon ? (size_t)(colon - rest) : auth_len;
    if (check_host(rest, host_len, err, errlen) != 0) return -1;
    if (colon && check_port(colon + 1, auth_len - host_len - 1, err, errlen) != 0) return -1;
    return 0;
}

/* ---- addresses ---------------------------------------------------------- */

static bool v4_private(uint32_t a) /* host byte order */
{
    uint8_t o1 = (uint8_t)(a >> 24), o2 = (uint8_t)(a >> 16);
    if (o1 == 0 || o1 == 10 || o1 == 127) return true;        /* this network, private, loopback */
    if (o1 == 100 && (o2 & 0xc0) == 64) return true;          /* 100.64/10 carrier-grade NAT */
    if (o1 == 169 && o2 == 254) return true;                  /* link-local, cloud metadata */
    if (o1 == 172 && (o2 & 0xf0) == 16) return true;          /* 172.16/12 */
    if (o1 == 192 && o2 == 168) return true;                  /* 192.168/16 */
    if (o1 == 192 && o2 == 0 && (uint8_t)(a >> 8) == 0) return true; /* 192.0.0/24 IETF assignments */
    if (o1 == 198 && (o2 & 0xfe) == 18) return true;          /* 198.18/15 benchmarking */
    if (o1 >= 224) return true;                               /* multicast, reserved, broadcast */
    return false;
}

static uint32_t v4_at(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static bool v6_private(const uint8_t *b)
{
    static const uint8_t zero[12];
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b};
    if (memcmp(b, zero, 12) == 0) return true; /* ::, ::1 and IPv4-compatible ::a.b.c.d */
    if (memcmp(b, mapped, 12) == 0) return v4_private(v4_at(b + 12)); /* ::ffff:a.b.c.d */
    if (memcmp(b, nat64, 12) == 0) return v4_private(v4_at(b + 12)); /* 64:ff9b::a.b.c.d */
    if (b[0] == 0x20 && b[1] == 0x02) return v4_private(v4_at(b + 2)); /* 6to4 2002:aabb:ccdd:: */
    if ((b[0] & 0xfe) == 0xfc) return true;                  /* fc00::/7 unique local */
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;  /* fe80::/10 link-local */
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return true;  /* fec0::/10 old site-local */
    if (b[0] == 0xff) return true;                           /* multicast */
    return false;
}

bool channels_addr_private(const struct sockaddr *sa)
{
    if (!sa) return true;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return v4_private(ntohl(in->sin_addr.s_addr));
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return v6_private(in6->sin6_addr.s6_addr);
    }
    return true;
}
