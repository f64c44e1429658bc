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
 * Slots are found by a keyed SipHash (128 bits, a key of this process's)
 * of the token, which costs a tenth of the SHA-256 the database is asked
 * with; a slot also keeps that SHA-256, so a sign-out hinted by another
 * node (which sends only the SHA-256) finds it. Neither is a usable token.
 * Direct-mapped: a slot holds the last token that hashed to it, so memory
 * is fixed (slots x 72 bytes). Safe from any thread: slots are guarded by
 * striped mutexes. */
#ifndef CHIME_USERS_SESSIONS_H
#define CHIME_USERS_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct users_sessions users_sessions;

/* The server's size: 65,536 tokens, 4.5 MiB. */
#define USERS_SESSIONS_SLOTS 65536

/* slots is rounded up to a power of two. ttl_ms 0: nothing is kept (every
 * call misses). NULL when out of memory. */
users_sessions *users_sessions_new(size_t slots, int64_t ttl_ms);
void users_sessions_free(users_sessions *c);

/* True and *user_id when a usable entry for the token is there at now (ms). */
bool users_sessions_get(users_sessions *c, const char *token, size_t len, int64_t now, int64_t *user_id);
/* Remembers what the database said at now about the token, whose SHA-256
 * (lowercase hex, base_sha256_hex) is hash: the session's user and expiry. */
void users_sessions_put(users_sessions *c, const char *token, size_t len, const char hash[65], int64_t user_id,
                        int64_t expires_ms, int64_t now);
/* The session is gone (signed out): forget it. By its SHA-256 (a hint from
 * another node) this looks at every slot: sign-outs are rare. */
void users_sessions_forget(users_sessions *c, const char hash[65]);

/* Bus hints: "s" and the hash. users_sessions_hint formats one into buf
 * (at least 66 bytes) and returns its length; users_sessions_on_hint
 * forgets the hinted token and returns true, or returns false when the
 * payload is not a session hint. */
size_t users_sessions_hint(const char hash[65], char *buf);
bool users_sessions_on_hint(users_sessions *c, const char *payload, size_t len);

#endif
