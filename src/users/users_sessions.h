/* users_sessions.h -- a node's memory of the bearer tokens it checked
 * lately, so a request's sign-in check costs a hash and a lookup instead
 * of a database read (the feed's unread count and the chat's sends are
 * polled; the read was half of /v1/me's cost).
 *
 * What it trusts, and for how long:
 *   - an entry was true when it was read from the database, and stays
 *     usable for at most ttl_ms after that read, and never past the
 *     session's own expiry;
 *   - a sign-out on this node forgets the token at once; a sign-out on
 *     another node arrives as a bus hint (at most once), so the worst case
 *     for a revoked token to keep working on a node that missed the hint
 *     is ttl_ms;
 *   - tokens that were not found are never remembered (an attacker cannot
 *     fill it with guesses; they go to the database as before).
 *
 * Keys are the tokens' SHA-256 (what the sessions table stores), so the
 * table never holds a usable token. Direct-mapped: a slot holds the last
 * token that hashed to it, so memory is fixed (slots x 48 bytes). Safe
 * from any thread: slots are guarded by striped mutexes. */
#ifndef CHIME_USERS_SESSIONS_H
#define CHIME_USERS_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct users_sessions users_sessions;

/* The server's size: 65,536 tokens, 3 MiB. */
#define USERS_SESSIONS_SLOTS 65536

/* slots is rounded up to a power of two. ttl_ms 0: nothing is kept (every
 * call misses). NULL when out of memory. */
users_sessions *users_sessions_new(size_t slots, int64_t ttl_ms);
void users_sessions_free(users_sessions *c);

/* hash: the token's SHA-256 as lowercase hex (base_sha256_hex). True and
 * *user_id when a usable entry is there at now (ms). */
bool users_sessions_get(users_sessions *c, const char hash[65], int64_t now, int64_t *user_id);
/* Remembers what the database said at now: the session's user and expiry. */
void users_sessions_put(users_sessions *c, const char hash[65], int64_t user_id, int64_t expires_ms, int64_t now);
/* The session is gone (signed out): forget it. */
void users_sessions_forget(users_sessions *c, const char hash[65]);

/* Bus hints: "s" and the hash. users_sessions_hint formats one into buf
 * (at least 66 bytes) and returns its length; users_sessions_on_hint
 * forgets the hinted token and returns true, or returns false when the
 * payload is not a session hint. */
size_t users_sessions_hint(const char hash[65], char *buf);
bool users_sessions_on_hint(users_sessions *c, const char *payload, size_t len);

#endif
