/* base.c -- clocks, ids, hashing and logging shared by every module. */
#define _GNU_SOURCE
#include "base/base.h"

#include <pthread.h>

#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t base_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t base_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void base_thread_name(const char *name)
{
    char n[16];
    snprintf(n, sizeof n, "%s", name);
    pthread_setname_np(pthread_self(), n);
}

int base_init(void)
{
    return sodium_init() < 0 ? -1 : 0;
}

void base_random(void *buf, size_t len)
{
    randombytes_buf(buf, len);
}

int64_t base_id_new(void)
{
    uint64_t v;
    do {
        randombytes_buf(&v, sizeof v);
        v &= INT64_MAX;
    } while (v == 0);
    return (int64_t)v;
}

void base_id_format(int64_t id, char buf[17])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t v = (uint64_t)id;
    for (int i = 15; i >= 0; i--, v >>= 4) buf[i] = hex[v & 15];
    buf[16] = '\0';
}

/* One round's function: 32 bits of SipHash of (round, half). */
static uint32_t feistel_f(const unsigned char *key, uint32_t round, uint32_t half)
{
    unsigned char in[8], out[crypto_shorthash_BYTES];
    memcpy(in, &round, 4);
    memcpy(in + 4, &half, 4);
    crypto_shorthash(out, in, sizeof in, key);
    uint32_t v;
    memcpy(&v, out, 4);
    return v;
}

static uint64_t feistel(const unsigned char *key, uint64_t x, bool inverse)
{
    uint32_t l = (uint32_t)(x >> 32), r = (uint32_t)x;
    for (uint32_t i = 0; i < 4; i++) {
        if (!inverse) {
            uint32_t t = r;
            r = l ^ feistel_f(key, i, r);
            l = t;
        } else {
            uint32_t t = l;
            l = r ^ feistel_f(key, 3 - i, l);
            r = t;
        }
    }
    return (uint64_t)l << 32 | r;
}

/* Cycle-walking: the permutation of 64-bit values, applied again until
 * the result is a valid id, is a permutation of the valid ids. */
static int64_t id_walk(const unsigned char *key, int64_t n, bool inverse)
{
    _Static_assert(BASE_ID_KEY_LEN == crypto_shorthash_KEYBYTES, "SipHash key");
    uint64_t x = (uint64_t)n;
    do x = feistel(key, x, inverse);
    while (x == 0 || x > INT64_MAX);
    return (int64_t)x;
}

int64_t base_id_conceal(const unsigned char key[BASE_ID_KEY_LEN], int64_t n)
{
    return n > 0 ? id_walk(key, n, false) : 0;
}

int64_t base_id_reveal(const unsigned char key[BASE_ID_KEY_LEN], int64_t id)
{
    return id > 0 ? id_walk(key, id, true) : 0;
}

int base_id_parse(const char *s, size_t len, int64_t *id)
{
    uint64_t v = 0;
    if (len != 16) return -1;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v << 4 | (uint64_t)d;
    }
    if (v == 0 || v > INT64_MAX) return -1;
    *id = (int64_t)v;
    return 0;
}

void base_hex(const unsigned char *in, size_t len, char *out)
{
    sodium_bin2hex(out, len * 2 + 1, in, len);
}

void base_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, data, len);
    base_hex(h, sizeof h, out);
}

bool base_equal_ct(const void *a, const void *b, size_t len)
{
    return sodium_memcmp(a, b, len) == 0;
}

void *base_grow(void *v, size_t size, size_t *cap)
{
    size_t ncap = *cap ? *cap * 2 : 16;
    if (ncap < *cap || size == 0 || ncap > SIZE_MAX / size) return NULL;
    void *grown = realloc(v, ncap * size);
    if (grown) *cap = ncap;
    return grown;
}

int base_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static _Atomic int log_threshold = LOG_INFO;

void log_set_level(log_level level)
{
    log_threshold = level;
}

void log_msg(log_level level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if ((int)level < log_threshold) return;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2) len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
