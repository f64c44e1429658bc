/* users.h -- accounts, password hashes, sign-in sessions and the sign-in
 * rate limiter. Rules only; the HTTP handlers are in users_http.c. */
#ifndef CHIME_USERS_H
#define CHIME_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define USERS_EMAIL_MAX 254
#define USERS_NAME_MAX 200
#define USERS_PASSWORD_MIN 8
#define USERS_PASSWORD_MAX 1024
#define USERS_HASH_MAX 160 /* argon2id encoded string, with room */
#define USERS_TOKEN_MAX 64

enum {
    USERS_OK = 0,
    USERS_NOT_FOUND = 1,
    USERS_DUPLICATE = 2,
    USERS_EXPIRED = 3,
    USERS_CONFUSABLE = 4, /* looks like a registered address (users_email) */
    USERS_INVALID = 5,    /* breaks the address rule (users_email_normalize) */
    USERS_ERROR = -1
};

typedef struct users_account {
    int64_t id;
    char email[USERS_EMAIL_MAX + 1];
    char name[USERS_NAME_MAX + 1];
    bool is_admin;
    int64_t created_ms;
} users_account;

/* A plausible address: one '@', something on both sides, a dot in the
 * domain, no spaces or control characters. */
bool users_email_valid(const char *email);

/* The forms of an address (users_email.c). Shown as given, in NFC; unique
 * by key, NFC case-folded (so "ÉCOLE@x.com" is "école@x.com"); a look-alike
 * when its skeleton (Unicode TR39, of the key) equals a registered one's
 * ("knоwn@x.com" with a Cyrillic o is "known@x.com"). legacy is the input
 * ASCII-lowered: the key of before migration 21, which an account that
 * collided with an older one after normalization keeps (see
 * users_email_migrate). */
#define USERS_EMAIL_KEY_MAX 1024
typedef struct users_email {
    char nfc[USERS_EMAIL_MAX + 1];
    char key[USERS_EMAIL_KEY_MAX];
    char skeleton[USERS_EMAIL_KEY_MAX];
    char legacy[USERS_EMAIL_MAX + 1];
} users_email;
/* USERS_OK; USERS_INVALID with why (for the client) when the address is
 * not plausible (users_email_valid) or holds a character nobody can see
 * (controls, format characters such as a zero-width space, other
 * default-ignorables, white space, unassigned or private-use code
 * points); USERS_ERROR when ICU fails. Thread-safe. */
int users_email_normalize(const char *in, users_email *out, char *why, size_t whylen);
/* Migration 21: every row gets its NFC display form, its key and its
 * skeleton. Rows that collide after normalization keep the oldest (or the
 * one already in normal form) on the key; the others keep their old key,
 * reachable by the exact address they signed up with, and are logged for
 * the admin. Of rows with one skeleton, only the oldest records it. */
int users_email_migrate(store *db);

/* Slow by design (argon2id); call on a worker thread. */
int users_hash_password(const char *password, int64_t ops, int64_t mem_kib, char out[USERS_HASH_MAX]);
bool users_verify_password(const char *hash, const char *password);

/* Creates the user; the first user ever is the admin. USERS_INVALID when
 * the address breaks the rule, USERS_DUPLICATE when it is taken (by key),
 * USERS_CONFUSABLE when it looks like a registered one (by skeleton). */
int users_create(store *db, const char *email, const char *name, const char *hash, users_account *out);
/* Whether a normalized address may be registered: USERS_NOT_FOUND (free),
 * USERS_DUPLICATE, USERS_CONFUSABLE or USERS_ERROR. */
int users_email_taken(store *db, const users_email *em);
int users_get(store *db, int64_t id, users_account *out);
/* Finds by email (normalized: any case, any Unicode form) and copies the
 * password hash. An address that breaks the rule is USERS_NOT_FOUND. */
int users_find_by_email(store *db, const char *email, users_account *out, char hash[USERS_HASH_MAX]);
int users_count(store *db, int64_t *out);
/* A user named by id (16 hex digits) or email (any case): USERS_OK with
 * *id, USERS_NOT_FOUND, or USERS_ERROR. */
int users_resolve(store *db, const char *ref, int64_t *id);

/* A new secret token, prefix ("chm_", "chd_") and 32 random bytes in
 * URL-safe base64, and its SHA-256 (what is stored). */
void users_token_new(const char prefix[5], char token[USERS_TOKEN_MAX], char hash[65]);

/* Sessions: the token is returned once and only its SHA-256 is stored. */
int users_session_create(store *db, int64_t user_id, int64_t ttl_s, char token[USERS_TOKEN_MAX]);
/* USERS_OK with *user_id, USERS_NOT_FOUND, or USERS_EXPIRED (then deleted). */
int users_session_check(store *db, const char *token, size_t len, int64_t *user_id);
/* The same by the token's SHA-256 (hex), also giving the expiry. */
int users_session_lookup(store *db, const char hash[65], int64_t *user_id, int64_t *expires_ms);
int users_session_delete(store *db, const char *token, size_t len);
int users_session_delete_hash(store *db, const char hash[65]);

/* Sign-in limiter (users_limit.c) keyed by "account:KEY", "addr:IP" or,
 * for a client that signed in before, "device:..." / "session:...",
 * shared by every node through the database. Failures past max_failures
 * make the key wait 1 s, 2 s, 4 s ... at most window_ms; the count is
 * forgotten window_ms after the last failure. */
#define USERS_LIMIT_KEY_MAX (USERS_EMAIL_KEY_MAX + 16)
typedef struct users_limit {
    int64_t max_failures;
    int64_t window_ms;
} users_limit;
/* USERS_OK, or 1 with *retry_after_s while the key must wait. */
int users_limit_check(store *db, const char *key, int64_t now_ms, int64_t *retry_after_s);
int users_limit_fail(store *db, const char *key, int64_t now_ms, const users_limit *lim);
int users_limit_reset(store *db, const char *key);
/* Both keys at once: USERS_OK when neither is locked, 1 with the longer
 * *retry_after_s when one is, USERS_ERROR. */
int users_limit_check_both(store *db, const char *a, const char *b, int64_t now_ms, int64_t *retry_after_s);
/* Counts a failure against both keys. */
int users_limit_fail_both(store *db, const char *a, const char *b, int64_t now_ms, const users_limit *la,
                          const users_limit *lb);

/* App passwords (users_app.c): random, shown once, stored as SHA-256. */
#define USERS_APP_LABEL_MAX 100
#define USERS_APP_MAX 50          /* per user */
#define USERS_APP_PASSWORD_LEN 29 /* "xxxxx-xxxxx-xxxxx-xxxxx-xxxxx", 125 random bits */

typedef struct users_app_password {
    int64_t id;
    char label[USERS_APP_LABEL_MAX + 1];
    int64_t created_ms;
} users_app_password;

/* A new app password for the user: *out and the password itself, which
 * is not kept. USERS_DUPLICATE when the user has USERS_APP_MAX already. */
int users_app_create(store *db, int64_t user_id, const char *label, users_app_password *out,
                     char password[USERS_APP_PASSWORD_LEN + 1]);
/* The user's app passwords, oldest first; the caller frees *out. */
int users_app_list(store *db, int64_t user_id, users_app_password **out, size_t *n);
/* USERS_NOT_FOUND unless the user has that app password. */
int users_app_delete(store *db, int64_t user_id, int64_t id);
/* USERS_OK and *user_id when password is one of the app passwords of the
 * account with this email (any case; dashes, spaces and case in the
 * password do not matter); USERS_NOT_FOUND otherwise. */
int users_app_check(store *db, const char *email, const char *password, size_t len, int64_t *user_id);

/* Known devices: a successful sign-in hands the client a device token
 * ("chd_..."; only its SHA-256 is stored), which it presents at later
 * sign-ins (the chime_device cookie) so failures from elsewhere do not
 * hold it back. */
#define USERS_DEVICE_TTL_MS (365LL * 86400000) /* unseen this long: forgotten (the cleanup job) */
#define USERS_DEVICES_MAX 50 /* a user's devices kept; a new one forgets the least recently used */
int users_device_create(store *db, int64_t user_id, char token[USERS_TOKEN_MAX]);
/* Whether a client proves it signed in to user_id before: a device token
 * of that user, or a live session of that user (either may be NULL).
 * USERS_OK with the limiter key the client is judged by alone,
 * USERS_NOT_FOUND, or USERS_ERROR. */
int users_device_known(store *db, int64_t user_id, const char *device, size_t device_len, const char *session,
                       size_t session_len, char key[USERS_LIMIT_KEY_MAX]);

/* Adds the users' schema steps (users_schema.c) to the one list. */
int users_schema_add(store_schema *s);

#endif
