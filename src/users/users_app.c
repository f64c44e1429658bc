/* users_app.c -- app passwords on the store: what calendar apps sign in
 * with over HTTP Basic. A password is 25 characters from a 32-letter
 * alphabet (125 random bits) in five dash-separated groups; with that much
 * entropy a slow hash buys nothing, so only its SHA-256 is kept, like the
 * session tokens, and checking one costs a lookup rather than an argon2id
 * run on every request a calendar app makes. */
#include "users/users.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* No 0/o, 1/l: people copy these by hand into phone settings. */
static const char app_alphabet[] = "abcdefghijkmnpqrstuvwxyz23456789";
#define APP_GROUPS 5
#define APP_GROUP_LEN 5

/* The password without dashes and spaces, lower case: what is hashed. */
static size_t app_canonical(const char *pw, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < size; i++) {
        if (pw[i] == '-' || pw[i] == ' ') continue;
        out[n++] = (char)tolower((unsigned char)pw[i]);
    }
    out[n] = '\0';
    return n;
}

static void app_hash(const char *pw, size_t len, char hash[65])
{
    char canon[USERS_PASSWORD_MAX + 1];
    size_t n = app_canonical(pw, len, canon, sizeof canon);
    base_sha256_hex(canon, n, hash);
}

static void app_generate(char out[USERS_APP_PASSWORD_LEN + 1])
{
    unsigned char raw[APP_GROUPS * APP_GROUP_LEN];
    base_random(raw, sizeof raw);
    size_t n = 0;
    for (int g = 0; g < APP_GROUPS; g++) {
        if (g) out[n++] = '-';
        for (int k = 0; k < APP_GROUP_LEN; k++) out[n++] = app_alphabet[raw[g * APP_GROUP_LEN + k] & 31];
    }
    out[n] = '\0';
}

static int app_count(store *db, int64_t user_id, int64_t *n)
{
    store_stmt *st = store_prepare(db, "SELECT COUNT(*) FROM app_passwords WHERE user_id = $1");
    store_bind_int64(st, 1, user_id);
    int rc = store_step(st);
    *n = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    return rc == STORE_ROW ? USERS_OK : USERS_ERROR;
}

int users_app_create(store *db, int64_t user_id, const char *label, users_app_password *out,
                     char password[USERS_APP_PASSWORD_LEN + 1])
{
    int64_t count;
    if (app_count(db, user_id, &count) != USERS_OK) return USERS_ERROR;
    if (count >= USERS_APP_MAX) return USERS_DUPLICATE;
    char hash[65];
    app_generate(password);
    app_hash(password, strlen(password), hash);
    out->id = base_id_new();
    out->created_ms = base_now_ms();
    snprintf(out->label, sizeof out->label, "%s", label);
    store_stmt *st = store_prepare(
        db, "INSERT INTO app_passwords (id, user_id, label, hash, created_ms) VALUES ($1, $2, $3, $4, $5)");
    store_bind_int64(st, 1, out->id);
    store_bind_int64(st, 2, user_id);
    store_bind_str(st, 3, out->label);
    store_bind_str(st, 4, hash);
    store_bind_int64(st, 5, out->created_ms);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? USERS_OK : USERS_ERROR;
}

int users_app_list(store *db, int64_t user_id, users_app_password **out, size_t *n)
{
    store_stmt *st = store_prepare(
        db, "SELECT id, label, created_ms FROM app_passwords WHERE user_id = $1 ORDER BY created_ms, id");
    store_bind_int64(st, 1, user_id);
    size_t cap = 0;
    int rc;
    *out = NULL;
    *n = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (*n == cap) {
            users_app_password *grown = base_grow(*out, sizeof *grown, &cap);
            if (!grown) {
                rc = STORE_ERROR;
                break;
            }
            *out = grown;
        }
        users_app_password *a = &(*out)[(*n)++];
        a->id = store_col_int64(st, 0);
        snprintf(a->label, sizeof a->label, "%s", store_col_text(st, 1));
        a->created_ms = store_col_int64(st, 2);
    }
    store_reset(st);
    if (rc == STORE_DONE) return USERS_OK;
    free(*out);
    *out = NULL;
    *n = 0;
    return USERS_ERROR;
}

int users_app_delete(store *db, int64_t user_id, int64_t id)
{
    store_stmt *st = store_prepare(db, "DELETE FROM app_passwords WHERE id = $1 AND user_id = $2");
    store_bind_int64(st, 1, id);
    store_bind_int64(st, 2, user_id);
    int rc = store_step(st);
    int64_t changed = store_changes(st);
    store_reset(st);
    if (rc != STORE_DONE) return USERS_ERROR;
    return changed ? USERS_OK : USERS_NOT_FOUND;
}

int users_app_check(store *db, const char *email, const char *password, size_t len, int64_t *user_id)
{
    char lower[USERS_EMAIL_MAX + 1], hash[65];
    size_t i = 0;
    for (; email[i] && i < USERS_EMAIL_MAX; i++) lower[i] = (char)tolower((unsigned char)email[i]);
    lower[i] = '\0';
    app_hash(password, len, hash);
    store_stmt *st = store_prepare(db, "SELECT a.user_id FROM app_passwords a JOIN users u ON u.id = a.user_id "
                                       "WHERE u.email_lower = $1 AND a.hash = $2");
    store_bind_str(st, 1, lower);
    store_bind_str(st, 2, hash);
    int rc = store_step(st);
    if (rc == STORE_ROW) *user_id = store_col_int64(st, 0);
    store_reset(st);
    return rc == STORE_ROW ? USERS_OK : rc == STORE_DONE ? USERS_NOT_FOUND : USERS_ERROR;
}
