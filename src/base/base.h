/* base.h -- the few helpers every room uses: clocks, random ids, hex, logs.
 * Depends on libc and libsodium only. */
#ifndef CHIME_BASE_H
#define CHIME_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Wall clock (Unix ms) and a monotonic clock (ns) for measuring durations. */
int64_t base_now_ms(void);
int64_t base_mono_ns(void);

/* Initialises libsodium; call once before threads start. Returns 0 or -1. */
int base_init(void);

/* A random positive 63-bit id. Ids carry no order or count, so seeing some
 * reveals nothing about how many exist or when they were made. */
int64_t base_id_new(void);
/* Ids travel as 16 lowercase hex digits; buf needs 17 bytes. */
void base_id_format(int64_t id, char buf[17]);
/* Returns 0 and sets *id, or -1 when s is not a well-formed id. */
int base_id_parse(const char *s, size_t len, int64_t *id);

/* A counter shown as an id: a keyed permutation (a four-round Feistel
 * network on SipHash-2-4) of [1, 2^63) onto itself, so n from a sequence
 * becomes an id that looks like base_id_new's -- no order, no count --
 * and base_id_reveal gives n back. key: 16 bytes, kept secret and the
 * same on every node. */
#define BASE_ID_KEY_LEN 16
int64_t base_id_conceal(const unsigned char key[BASE_ID_KEY_LEN], int64_t n);
int64_t base_id_reveal(const unsigned char key[BASE_ID_KEY_LEN], int64_t id);

void base_random(void *buf, size_t len);
/* Lowercase hex of len bytes into out (2*len+1 bytes). */
void base_hex(const unsigned char *in, size_t len, char *out);
/* SHA-256 of data as lowercase hex (65 bytes). */
void base_sha256_hex(const void *data, size_t len, char out[65]);
/* Constant-time equality of two byte strings of the same length. */
bool base_equal_ct(const void *a, const void *b, size_t len);

/* Growing arrays: v (capacity *cap elements of `size` bytes, possibly
 * NULL and 0) reallocated to twice the capacity (16 at first). Returns the
 * new storage and updates *cap, or NULL when out of memory -- v and *cap
 * untouched, still the caller's. Call when the array is full. */
void *base_grow(void *v, size_t size, size_t *cap);

/* Formats into err (when err and errlen are set) and returns -1, so a
 * validator can `return base_errf(err, errlen, "...", ...)`. */
int base_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Names the calling thread (at most 15 characters show), so top -H and
 * perf tell the server's threads apart. */
void base_thread_name(const char *name);

/* Logging to stderr, one write per line so threads never interleave. */
typedef enum { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;
void log_set_level(log_level level);
void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
