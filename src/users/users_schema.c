/* users_schema.c -- the users room's schema steps: accounts, sessions,
 * the sign-in limiter's failure records and known devices. See store.h for the rules of a
 * step (never edit or renumber one that has shipped). */
#include "users/users.h"

static const store_migration users_steps[] = {
    {1, "users",
     "CREATE TABLE users ("
     " id BIGINT PRIMARY KEY,"
     " email TEXT NOT NULL,"
     " email_lower TEXT NOT NULL UNIQUE,"
     " name TEXT NOT NULL,"
     " password_hash TEXT NOT NULL,"
     " is_admin INTEGER NOT NULL DEFAULT 0,"
     " created_ms BIGINT NOT NULL);"
     "CREATE TABLE sessions ("
     " token_hash TEXT PRIMARY KEY,"
     " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " created_ms BIGINT NOT NULL,"
     " expires_ms BIGINT NOT NULL);"
     "CREATE INDEX sessions_user ON sessions(user_id);"
     "CREATE TABLE auth_failures ("
     " key TEXT PRIMARY KEY,"
     " failures INTEGER NOT NULL,"
     " window_start_ms BIGINT NOT NULL,"
     " locked_until_ms BIGINT NOT NULL DEFAULT 0)",
     NULL},
    /* E-mail addresses in normal form (users_email.c): display NFC,
     * email_lower becomes the NFC case-folded key, email_skeleton the
     * TR39 skeleton that look-alikes share (unique: see
     * users_email_migrate, which fills both and makes the index). */
    {21, "email_normal_form", "ALTER TABLE users ADD COLUMN email_skeleton TEXT", NULL},
    /* Clients that signed in before (users_limit.c): the SHA-256 of the
     * device token each was given. */
    {22, "known_devices",
     "CREATE TABLE known_devices ("
     " token_hash TEXT PRIMARY KEY,"
     " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " created_ms BIGINT NOT NULL,"
     " last_used_ms BIGINT NOT NULL);"
     "CREATE INDEX known_devices_used ON known_devices(last_used_ms)",
     NULL},
    /* A user's devices, newest use first: a sign-in that makes one more
     * forgets those past USERS_DEVICES_MAX (users_limit.c). */
    {26, "known_devices_per_user",
     "CREATE INDEX known_devices_user ON known_devices(user_id, last_used_ms)", NULL},
    /* App passwords: what calendar apps sign in with over HTTP Basic (they
     * cannot send bearer tokens). Random and long, so a SHA-256 is enough
     * to store; the account password is never accepted in their place.
     * Versions 30-39 are the CalDAV work's. */
    {30, "app_passwords",
     "CREATE TABLE app_passwords ("
     " id BIGINT PRIMARY KEY,"
     " user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
     " label TEXT NOT NULL,"
     " hash TEXT NOT NULL,"
     " created_ms BIGINT NOT NULL);"
     "CREATE INDEX app_passwords_user ON app_passwords(user_id, hash)",
     NULL},
};

int users_schema_add(store_schema *s)
{
    if (store_schema_add(s, users_steps, sizeof users_steps / sizeof users_steps[0]) != 0) return -1;
    return store_schema_add_fn(s, 21, users_email_migrate);
}
