/* users.c -- accounts, sessions and the sign-in limiter on the store. */
#include "users/users.h"

#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

bool users_email_valid(const char *email)
{
    const char *at = strchr(email, '@');
    size_t len = strlen(email);
    if (!at || at == email || strchr(at + 1, '@') || len > USERS_EMAIL_MAX) return false;
    const char *dot = strrchr(at + 1, '.');
    if (!dot || dot == at + 1 || dot[1] == '\0') return false;
    for (const unsigned char *p = (const unsigned char *)email; *p; p++)
        if (*p <= ' ' || *p == 0x7f) return false;
    return true;
}

static void lower_ascii(const char *in, char *out, size_t size)
{
    size_t i = 0;
    for (; in[i] && i + 1 < size; i++) out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

int users_hash_password(const char *password, int64_t ops, int64_t mem_kib, char out[USERS_HASH_MAX])
{
    _Static_assert(crypto_pwhash_STRBYTES <= USERS_HASH_MAX, "hash buffer");
    return crypto_pwhash_str_alg(out, password, strlen(password), (unsigned long long)ops,
                                 (size_t)mem_kib * 1024, crypto_pwhash_ALG_ARGON2ID13) == 0
               ? USERS_OK
               : USERS_ERROR;
}

bool users_verify_password(const char *hash, const char *password)
{
    /* libsodium compares in constant time. */
    return crypto_pwhash_str_verify(hash, password, strlen(password)) == 0;
}

static void user_from_row(store_stmt *st, users_account *u)
{
    u->id = store_col_int64(st, 0);
    snprintf(u->email, sizeof u->email, "%s", store_col_text(st, 1));
    snprintf(u->name, sizeof u->name, "%s", store_col_text(st, 2));
    u->is_admin = store_col_int64(st, 3) != 0;
    u->created_ms = store_col_int64(st, 4);
}

int users_create(store *db, const char *email, const char *name, const char *hash, users_account *out)
{
    char lower[USERS_EMAIL_MAX + 1];
    lower_ascii(email, lower, sizeof lower);
    /* The first account becomes the admin. */
    store_stmt *st = store_prepare(
        db, "INSERT INTO users (id, email, email_lower, name, password_hash, is_admin, created_ms) "
            "VALUES ($1, $2, $3, $4, $5, CASE WHEN EXISTS (SELECT 1 FROM users) THEN 0 ELSE 1 END, $6) "
            "RETURNING id, email, name, is_admin, created_ms");
    if (!st) return USERS_ERROR;
    store_bind_int64(st, 1, base_id_new());
    store_bind_str(st, 2, email);
    store_bind_str(st, 3, lower);
    store_bind_str(st, 4, name);
    store_bind_str(st, 5, hash);
    store_bind_int64(st, 6, base_now_ms());
    int rc = store_step(st);
    if (rc == STORE_ROW) user_from_row(st, out);
    store_reset(st);
    if (rc == STORE_CONSTRAINT) return USERS_DUPLICATE;
    return rc == STORE_ROW ? USERS_OK : USERS_ERROR;
}

int users_get(store *db, int64_t id, users_account *out)
{
    store_stmt *st = store_prepare(db, "SELECT id, email, name, is_admin, created_ms FROM users WHERE id = $1");
    if (!st) return USERS_ERROR;
    store_bind_int64(st, 1, id);
    int rc = store_step(st);
    if (rc == STORE_ROW) user_from_row(st, out);
    store_reset(st);
    return rc == STORE_ROW ? USERS_OK : rc == STORE_DONE ? USERS_NOT_FOUND : USERS_ERROR;
}

int users_find_by_email(store *db, const char *email, users_account *out, char hash[USERS_HASH_MAX])
{
    char lower[USERS_EMAIL_MAX + 1];
    lower_ascii(email, lower, sizeof lower);
    store_stmt *st = store_prepare(
        db, "SELECT id, email, name, is_admin, created_ms, password_hash FROM users WHERE email_lower = $1");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, lower);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        user_from_row(st, out);
        snprintf(hash, USERS_HASH_MAX, "%s", store_col_text(st, 5));
    }
    store_reset(st);
    return rc == STORE_ROW ? USERS_OK : rc == STORE_DONE ? USERS_NOT_FOUND : USERS_ERROR;
}

int users_resolve(store *db, const char *ref, int64_t *id)
{
    users_account u;
    char hash[USERS_HASH_MAX];
    int rc = base_id_parse(ref, strlen(ref), id) == 0 ? users_get(db, *id, &u)
             : strchr(ref, '@')                       ? users_find_by_email(db, ref, &u, hash)
                                                      : USERS_NOT_FOUND;
    if (rc == USERS_OK) *id = u.id;
    return rc;
}

int users_count(store *db, int64_t *out)
{
    return store_query_int64(db, "SELECT COUNT(*) FROM users", out) == STORE_ROW ? USERS_OK : USERS_ERROR;
}

int users_session_create(store *db, int64_t user_id, int64_t ttl_s, char token[USERS_TOKEN_MAX])
{
    unsigned char raw[32];
    char hash[65];
    base_random(raw, sizeof raw);
    memcpy(token, "chm_", 4);
    sodium_bin2base64(token + 4, USERS_TOKEN_MAX - 4, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    base_sha256_hex(token, strlen(token), hash);
    int64_t now = base_now_ms();
    store_stmt *st = store_prepare(
        db, "INSERT INTO sessions (token_hash, user_id, created_ms, expires_ms) VALUES ($1, $2, $3, $4)");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, hash);
    store_bind_int64(st, 2, user_id);
    store_bind_int64(st, 3, now);
    store_bind_int64(st, 4, now + ttl_s * 1000);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? USERS_OK : USERS_ERROR;
}

int users_session_check(store *db, const char *token, size_t len, int64_t *user_id)
{
    char hash[65];
    if (len == 0 || len >= USERS_TOKEN_MAX) return USERS_NOT_FOUND;
    base_sha256_hex(token, len, hash);
    store_stmt *st = store_prepare(db, "SELECT user_id, expires_ms FROM sessions WHERE token_hash = $1");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, hash);
    int rc = store_step(st);
    int64_t expires = 0;
    if (rc == STORE_ROW) {
        *user_id = store_col_int64(st, 0);
        expires = store_col_int64(st, 1);
    }
    store_reset(st);
    if (rc == STORE_DONE) return USERS_NOT_FOUND;
    if (rc != STORE_ROW) return USERS_ERROR;
    if (expires <= base_now_ms()) {
        users_session_delete(db, token, len);
        return USERS_EXPIRED;
    }
    return USERS_OK;
}

int users_session_delete(store *db, const char *token, size_t len)
{
    char hash[65];
    base_sha256_hex(token, len, hash);
    store_stmt *st = store_prepare(db, "DELETE FROM sessions WHERE token_hash = $1");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, hash);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? USERS_OK : USERS_ERROR;
}

int users_limit_check(store *db, const char *key, int64_t now_ms, int64_t *retry_after_s)
{
    store_stmt *st = store_prepare(db, "SELECT locked_until_ms FROM auth_failures WHERE key = $1");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, key);
    int rc = store_step(st);
    int64_t until = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    if (rc != STORE_ROW && rc != STORE_DONE) return USERS_ERROR;
    if (until <= now_ms) return USERS_OK;
    *retry_after_s = (until - now_ms + 999) / 1000;
    return 1;
}

/* One statement, so concurrent failures on several nodes all count: a
 * failure outside the window starts a new one; reaching the limit locks the
 * key until a full window has passed. */
int users_limit_fail(store *db, const char *key, int64_t now_ms, const users_limit *lim)
{
    store_stmt *st = store_prepare(
        db, "INSERT INTO auth_failures (key, failures, window_start_ms, locked_until_ms) "
            "VALUES ($1, 1, $2, CASE WHEN CAST($4 AS BIGINT) <= 1 THEN CAST($2 AS BIGINT) + CAST($3 AS BIGINT) ELSE 0 END) "
            "ON CONFLICT (key) DO UPDATE SET "
            "failures = CASE WHEN auth_failures.window_start_ms + CAST($3 AS BIGINT) <= CAST($2 AS BIGINT) "
            "  THEN 1 ELSE auth_failures.failures + 1 END, "
            "window_start_ms = CASE WHEN auth_failures.window_start_ms + CAST($3 AS BIGINT) <= CAST($2 AS BIGINT) "
            "  THEN CAST($2 AS BIGINT) ELSE auth_failures.window_start_ms END, "
            "locked_until_ms = CASE WHEN auth_failures.window_start_ms + CAST($3 AS BIGINT) > CAST($2 AS BIGINT) "
            "  AND auth_failures.failures + 1 >= CAST($4 AS BIGINT) "
            "  THEN CAST($2 AS BIGINT) + CAST($3 AS BIGINT) ELSE auth_failures.locked_until_ms END");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, key);
    store_bind_int64(st, 2, now_ms);
    store_bind_int64(st, 3, lim->window_ms);
    store_bind_int64(st, 4, lim->max_failures);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? USERS_OK : USERS_ERROR;
}

int users_limit_reset(store *db, const char *key)
{
    store_stmt *st = store_prepare(db, "DELETE FROM auth_failures WHERE key = $1");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, key);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? USERS_OK : USERS_ERROR;
}
