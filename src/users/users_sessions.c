/* users_sessions.c -- see users_sessions.h. */
#include "users/users_sessions.h"

#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define STRIPES 64 /* a power of two; loops rarely meet on one */

typedef struct slot {
    unsigned char key[crypto_shorthash_siphashx24_BYTES]; /* keyed SipHash of the token; all zero: empty */
    unsigned char sha[32];                                /* the token's SHA-256, raw */
    int64_t user_id, expires_ms, until_ms;
} slot;

struct users_sessions {
    slot *slots;
    size_t mask;
    int64_t ttl_ms;
    unsigned char hash_key[crypto_shorthash_siphashx24_KEYBYTES];
    pthread_mutex_t locks[STRIPES];
};

users_sessions *users_sessions_new(size_t slots, int64_t ttl_ms)
{
    users_sessions *c = calloc(1, sizeof *c);
    size_t n = 1;
    while (n < slots) n <<= 1;
    if (!c || !(c->slots = calloc(n, sizeof *c->slots))) {
        free(c);
        return NULL;
    }
    c->mask = n - 1;
    c->ttl_ms = ttl_ms;
    randombytes_buf(c->hash_key, sizeof c->hash_key);
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&c->locks[i], NULL);
    return c;
}

void users_sessions_free(users_sessions *c)
{
    if (!c) return;
    for (int i = 0; i < STRIPES; i++) pthread_mutex_destroy(&c->locks[i]);
    free(c->slots);
    free(c);
}

static int nibble(char h)
{
    return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
}

/* The raw bytes of a hex SHA-256; false when it is not 64 lowercase hex
 * digits. */
static bool sha_of(const char *hex, unsigned char sha[32])
{
    for (int i = 0; i < 32; i++) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        sha[i] = (unsigned char)(hi << 4 | lo);
    }
    return true;
}

/* The token's slot key; its first bytes pick the slot (a keyed hash, so
 * nobody outside can aim tokens at one slot). */
static size_t key_of(const users_sessions *c, const char *token, size_t len,
                     unsigned char key[crypto_shorthash_siphashx24_BYTES])
{
    crypto_shorthash_siphashx24(key, (const unsigned char *)token, len, c->hash_key);
    uint64_t v;
    memcpy(&v, key, sizeof v);
    return (size_t)v & c->mask;
}

bool users_sessions_get(users_sessions *c, const char *token, size_t len, int64_t now, int64_t *user_id)
{
    unsigned char key[crypto_shorthash_siphashx24_BYTES];
    if (!c || c->ttl_ms <= 0) return false;
    size_t i = key_of(c, token, len, key);
    pthread_mutex_t *m = &c->locks[i & (STRIPES - 1)];
    pthread_mutex_lock(m);
    slot *s = &c->slots[i];
    bool hit = memcmp(s->key, key, sizeof key) == 0 && now < s->until_ms && now < s->expires_ms;
    if (hit) *user_id = s->user_id;
    pthread_mutex_unlock(m);
    return hit;
}

void users_sessions_put(users_sessions *c, const char *token, size_t len, const char hash[65], int64_t user_id,
                        int64_t expires_ms, int64_t now)
{
    unsigned char key[crypto_shorthash_siphashx24_BYTES], sha[32];
    if (!c || c->ttl_ms <= 0 || !sha_of(hash, sha)) return;
    size_t i = key_of(c, token, len, key);
    pthread_mutex_t *m = &c->locks[i & (STRIPES - 1)];
    pthread_mutex_lock(m);
    slot *s = &c->slots[i];
    memcpy(s->key, key, sizeof key);
    memcpy(s->sha, sha, sizeof sha);
    s->user_id = user_id;
    s->expires_ms = expires_ms;
    s->until_ms = now + c->ttl_ms;
    pthread_mutex_unlock(m);
}

/* Stripe by stripe: one lock taken 64 times, not one per slot. */
void users_sessions_forget(users_sessions *c, const char hash[65])
{
    unsigned char sha[32];
    if (!c || !sha_of(hash, sha)) return;
    for (size_t stripe = 0; stripe < STRIPES; stripe++) {
        pthread_mutex_lock(&c->locks[stripe]);
        for (size_t i = stripe; i <= c->mask; i += STRIPES)
            if (memcmp(c->slots[i].sha, sha, sizeof sha) == 0) memset(&c->slots[i], 0, sizeof c->slots[i]);
        pthread_mutex_unlock(&c->locks[stripe]);
    }
}

size_t users_sessions_hint(const char hash[65], char *buf)
{
    buf[0] = 's';
    memcpy(buf + 1, hash, 64);
    buf[65] = '\0';
    return 65;
}

bool users_sessions_on_hint(users_sessions *c, const char *payload, size_t len)
{
    if (len != 65 || payload[0] != 's') return false;
    char hash[65];
    memcpy(hash, payload + 1, 64);
    hash[64] = '\0';
    users_sessions_forget(c, hash);
    return true;
}
