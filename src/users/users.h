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

enum { USERS_OK = 0, USERS_NOT_FOUND = 1, USERS_DUPLICATE = 2, USERS_EXPIRED = 3, USERS_ERROR = -1 };

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

/* Slow by design (argon2id); call on a worker thread. */
int users_hash_password(const char *password, int64_t ops, int64_t mem_kib, char out[USERS_HASH_MAX]);
bool users_verify_password(const char *hash, const char *password);

/* Creates the user; the first user ever is the admin. USERS_DUPLICATE when
 * the email is taken (compared case-insensitively). */
int users_create(store *db, const char *email, const char *name, const char *hash, users_account *out);
int users_get(store *db, int64_t id, users_account *out);
/* Finds by email (any case) and copies the password hash. */
int users_find_by_email(store *db, const char *email, users_account *out, char hash[USERS_HASH_MAX]);
int users_count(store *db, int64_t *out);
/* A user named by id (16 hex digits) or email (any case): USERS_OK with
 * *id, USERS_NOT_FOUND, or USERS_ERROR. */
int users_resolve(store *db, const char *ref, int64_t *id);

/* Sessions: the token is returned once and only its SHA-256 is stored. */
int users_session_create(store *db, int64_t user_id, int64_t ttl_s, char token[USERS_TOKEN_MAX]);
/* USERS_OK with *user_id, USERS_NOT_FOUND, or USERS_EXPIRED (then deleted). */
int users_session_check(store *db, const char *token, size_t len, int64_t *user_id);
int users_session_delete(store *db, const char *token, size_t len);

/* Sign-in limiter keyed by "account:EMAIL" or "addr:IP", shared by every
 * node through the database. */
typedef struct users_limit {
    int64_t max_failures;
    int64_t window_ms;
} users_limit;
/* USERS_OK, or USERS_EXPIRED-style refusal: returns 1 and sets
 * *retry_after_s when the key is locked. */
int users_limit_check(store *db, const char *key, int64_t now_ms, int64_t *retry_after_s);
int users_limit_fail(store *db, const char *key, int64_t now_ms, const users_limit *lim);
int users_limit_reset(store *db, const char *key);

/* Adds the users' schema steps (users_schema.c) to the one list. */
int users_schema_add(store_schema *s);

#endif
