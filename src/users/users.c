/* users.c -- accounts, sessions and the sign-in limiter on the store. */
#include "users/users.h"

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

int users_email_taken(store *db, const users_email *em)
{
    store_stmt *st = store_prepare(db, "SELECT email_lower = $1 FROM users WHERE email_lower = $1 OR "
                                       "email_skeleton = $2 ORDER BY 1 DESC LIMIT 1");
    store_bind_str(st, 1, em->key);
    store_bind_str(st, 2, em->skeleton);
    int rc = store_step(st);
    bool same = rc == STORE_ROW && store_col_int64(st, 0) != 0;
    store_reset(st);
    return rc == STORE_DONE ? USERS_NOT_FOUND : rc != STORE_ROW ? USERS_ERROR : same ? USERS_DUPLICATE : USERS_CONFUSABLE;
}

int users_create(store *db, const char *email, const char *name, const char *hash, users_account *out)
{
    users_email em;
    int rc = users_email_normalize(email, &em, NULL, 0);
    if (rc != USERS_OK) return rc;
    /* The first account becomes the admin. */
    store_stmt *st = store_prepare(
        db, "INSERT INTO users (id, email, email_lower, email_skeleton, name, password_hash, is_admin, created_ms) "
            "VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN EXISTS (SELECT 1 FROM users) THEN 0 ELSE 1 END, $7) "
            "RETURNING id, email, name, is_admin, created_ms");
    if (!st) return USERS_ERROR;
    store_bind_int64(st, 1, base_id_new());
    store_bind_str(st, 2, em.nfc);
    store_bind_str(st, 3, em.key);
    store_bind_str(st, 4, em.skeleton);
    store_bind_str(st, 5, name);
    store_bind_str(st, 6, hash);
    store_bind_int64(st, 7, base_now_ms());
    rc = store_step(st);
    if (rc == STORE_ROW) user_from_row(st, out);
    store_reset(st);
    /* The unique indexes decide races; say which one. */
    if (rc == STORE_CONSTRAINT) return users_email_taken(db, &em) == USERS_CONFUSABLE ? USERS_CONFUSABLE : USERS_DUPLICATE;
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
    users_email em;
    int rc = users_email_normalize(email, &em, NULL, 0);
    if (rc != USERS_OK) return rc == USERS_INVALID ? USERS_NOT_FOUND : USERS_ERROR;
    /* The key, or -- an account kept on its old key by migration 21 --
     * the exact old key, which wins: it names that account alone. */
    store_stmt *st = store_prepare(
        db, "SELECT id, email, name, is_admin, created_ms, password_hash FROM users WHERE email_lower IN ($1, $2) "
            "ORDER BY CASE WHEN email_lower = $2 THEN 0 ELSE 1 END LIMIT 1");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, em.key);
    store_bind_str(st, 2, em.legacy);
    rc = store_step(st);
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

void users_token_new(const char prefix[5], char token[USERS_TOKEN_MAX], char hash[65])
{
    unsigned char raw[32];
    base_random(raw, sizeof raw);
    memcpy(token, prefix, 4);
    sodium_bin2base64(token + 4, USERS_TOKEN_MAX - 4, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    base_sha256_hex(token, strlen(token), hash);
    sodium_memzero(raw, sizeof raw);
}

int users_session_create(store *db, int64_t user_id, int64_t ttl_s, char token[USERS_TOKEN_MAX])
{
    char hash[65];
    users_token_new("chm_", token, hash);
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

int users_session_lookup(store *db, const char hash[65], int64_t *user_id, int64_t *expires_ms)
{
    store_stmt *st = store_prepare(db, "SELECT user_id, expires_ms FROM sessions WHERE token_hash = $1");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, hash);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        *user_id = store_col_int64(st, 0);
        *expires_ms = store_col_int64(st, 1);
    }
    store_reset(st);
    if (rc == STORE_DONE) return USERS_NOT_FOUND;
    if (rc != STORE_ROW) return USERS_ERROR;
    if (*expires_ms <= base_now_ms()) {
        users_session_delete_hash(db, hash);
        return USERS_EXPIRED;
    }
    return USERS_OK;
}

int users_session_check(store *db, const char *token, size_t len, int64_t *user_id)
{
    char hash[65];
    int64_t expires;
    if (len == 0 || len >= USERS_TOKEN_MAX) return USERS_NOT_FOUND;
    base_sha256_hex(token, len, hash);
    return users_session_lookup(db, hash, user_id, &expires);
}

int users_session_delete_hash(store *db, const char hash[65])
{
    store_stmt *st = store_prepare(db, "DELETE FROM sessions WHERE token_hash = $1");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, hash);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? USERS_OK : USERS_ERROR;
}

int users_session_delete(store *db, const char *token, size_t len)
{
    char hash[65];
    base_sha256_hex(token, len, hash);
    return users_session_delete_hash(db, hash);
}
