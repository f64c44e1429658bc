/* users_schema.c -- the users room's schema steps: accounts, sessions and
 * the sign-in limiter's failure records. See store.h for the rules of a
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
    /* App passwords: what calendar apps sign in with over HTTP Basic (they
     * cannot send bearer tokens). Random and long, so a SHA-256 is enough
     * to store; the account password is never accepted in their place.
     * Versions 30-39 belong to the CalDAV branch. */
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
    return store_schema_add(s, users_steps, sizeof users_steps / sizeof users_steps[0]);
}
