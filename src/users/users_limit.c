/* users_limit.c -- the sign-in limiter and the devices that are exempt
 * from it.
 *
 * A hard lock after N failures locked the owner out as surely as the
 * attacker, and N failures from one address locked out everyone behind
 * that NAT (issue 25). Now each failure past an allowance makes the key
 * (an account, a client address, a known device) wait longer: 1 s, 2 s,
 * 4 s ... up to the window, so guessing slows to one try per window while
 * a slip of the owner's costs a second or two. The count is forgotten a
 * window after the last failure. And a client that signed in before --
 * it holds a device token (a cookie) or a live session of the account --
 * is judged by its own failures only, so failures from elsewhere never
 * hold the owner back. */
#include "users/users.h"

#include <stdio.h>
#include <string.h>

#include "base/base.h"

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

/* The wait after the failures-th failure: none within the allowance,
 * then doubling from 1 s, at most the window. */
static int64_t limit_delay_ms(int64_t failures, const users_limit *lim)
{
    if (failures < lim->max_failures) return 0;
    int64_t over = failures - lim->max_failures;
    int64_t delay = over < 40 ? (int64_t)1000 << over : lim->window_ms;
    return delay < lim->window_ms ? delay : lim->window_ms;
}

/* Counting is one statement, so concurrent failures on several nodes all
 * count (window_start_ms is the last failure's time: the count restarts
 * a window after it); the wait it earns is set after, never shortened. */
int users_limit_fail(store *db, const char *key, int64_t now_ms, const users_limit *lim)
{
    store_stmt *st = store_prepare(
        db, "INSERT INTO auth_failures (key, failures, window_start_ms, locked_until_ms) VALUES ($1, 1, $2, 0) "
            "ON CONFLICT (key) DO UPDATE SET "
            "failures = CASE WHEN auth_failures.window_start_ms + CAST($3 AS BIGINT) <= CAST($2 AS BIGINT) "
            "  THEN 1 ELSE auth_failures.failures + 1 END, window_start_ms = $2 RETURNING failures");
    if (!st) return USERS_ERROR;
    store_bind_str(st, 1, key);
    store_bind_int64(st, 2, now_ms);
    store_bind_int64(st, 3, lim->window_ms);
    int rc = store_step(st);
    int64_t failures = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    if (rc != STORE_ROW) return USERS_ERROR;
    int64_t delay = limit_delay_ms(failures, lim);
    if (delay == 0) return USERS_OK;
    st = store_prepare(db, "UPDATE auth_failures SET locked_until_ms = $2 WHERE key = $1 AND locked_until_ms < $2");
    store_bind_str(st, 1, key);
    store_bind_int64(st, 2, now_ms + delay);
    rc = store_step(st);
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

int users_limit_check_both(store *db, const char *a, const char *b, int64_t now_ms, int64_t *retry_after_s)
{
    int64_t ra = 0, rb = 0;
    int x = users_limit_check(db, a, now_ms, &ra);
    int y = x == USERS_ERROR ? USERS_ERROR : users_limit_check(db, b, now_ms, &rb);
    if (x == USERS_ERROR || y == USERS_ERROR) return USERS_ERROR;
    if (x == USERS_OK && y == USERS_OK) return USERS_OK;
    *retry_after_s = ra > rb ? ra : rb;
    return 1;
}

int users_limit_fail_both(store *db, const char *a, const char *b, int64_t now_ms, const users_limit *la,
                          const users_limit *lb)
{
    if (users_limit_fail(db, a, now_ms, la) != USERS_OK) return USERS_ERROR;
    return users_limit_fail(db, b, now_ms, lb);
}

/* ---- devices -------------------------------------------------------------- */

int users_device_create(store *db, int64_t user_id, char token[USERS_TOKEN_MAX])
{
    char hash[65];
    users_token_new("chd_", token, hash);
    int64_t now = base_now_ms();
    store_stmt *st = store_prepare(db, "INSERT INTO known_devices (token_hash, user_id, created_ms, last_used_ms) "
                                       "VALUES ($1, $2, $3, $3)");
    store_bind_str(st, 1, hash);
    store_bind_int64(st, 2, user_id);
    store_bind_int64(st, 3, now);
    int rc = store_step(st);
    store_reset(st);
    if (rc != STORE_DONE) return USERS_ERROR;
    /* A client that drops its cookie makes a device at every sign-in:
     * only the user's USERS_DEVICES_MAX most recently used are kept. */
    st = store_prepare(db, "DELETE FROM known_devices WHERE user_id = $1 AND token_hash NOT IN (SELECT token_hash "
                           "FROM known_devices WHERE user_id = $1 ORDER BY last_used_ms DESC, created_ms DESC "
                           "LIMIT $2)");
    store_bind_int64(st, 1, user_id);
    store_bind_int64(st, 2, USERS_DEVICES_MAX);
    rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? USERS_OK : USERS_ERROR;
}

/* A device token of this user: USERS_OK (its use recorded, so the
 * cleanup job keeps it), USERS_NOT_FOUND, or USERS_ERROR. */
static int device_of(store *db, const char *token, size_t len, int64_t user_id)
{
    char hash[65];
    if (len == 0 || len >= USERS_TOKEN_MAX) return USERS_NOT_FOUND;
    base_sha256_hex(token, len, hash);
    store_stmt *st = store_prepare(db, "UPDATE known_devices SET last_used_ms = $3 WHERE token_hash = $1 "
                                       "AND user_id = $2");
    store_bind_str(st, 1, hash);
    store_bind_int64(st, 2, user_id);
    store_bind_int64(st, 3, base_now_ms());
    int rc = store_step(st);
    int64_t n = store_changes(st);
    store_reset(st);
    return rc != STORE_DONE ? USERS_ERROR : n ? USERS_OK : USERS_NOT_FOUND;
}

int users_device_known(store *db, int64_t user_id, const char *device, size_t device_len, const char *session,
                       size_t session_len, char key[USERS_LIMIT_KEY_MAX])
{
    int rc = device ? device_of(db, device, device_len, user_id) : USERS_NOT_FOUND;
    char hash[65];
    if (rc == USERS_OK) {
        base_sha256_hex(device, device_len, hash);
        snprintf(key, USERS_LIMIT_KEY_MAX, "device:%.16s", hash);
        return USERS_OK;
    }
    if (rc == USERS_ERROR || !session) return rc;
    int64_t owner;
    rc = users_session_check(db, session, session_len, &owner);
    if (rc == USERS_ERROR) return rc;
    if (rc != USERS_OK || owner != user_id) return USERS_NOT_FOUND;
    base_sha256_hex(session, session_len, hash);
    snprintf(key, USERS_LIMIT_KEY_MAX, "session:%.16s", hash);
    return USERS_OK;
}
