/* users_http.c -- the HTTP face of users.c. Password hashing and checking
 * run on workers (argon2id takes tens of milliseconds by design); the
 * database work runs on the request's own loop thread. */
#include "users/users_http.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app.h"
#include "base/base.h"
#include "http/json.h"
#include "users/users.h"

static app_thread *thread_of(http_req *r)
{
    return r->thread;
}

static json_t *user_json(const user *u)
{
    char id[17], created[32];
    base_id_format(u->id, id);
    base_format_rfc3339_ms(u->created_ms, created, sizeof created);
    return json_pack("{s:s,s:s,s:s,s:s}", "id", id, "email", u->email, "name", u->name, "created", created);
}

static void send_store_error(http_req *r, store *db)
{
    log_error("request %s: database: %s", r->request_id, store_errmsg(db));
    http_send_error(r, 503, "unavailable", NULL, "the database did not answer; try again");
}

/* ---- sign-up ------------------------------------------------------------ */

typedef struct signup {
    json_t *body; /* owns email, name and password strings */
    const char *email, *name, *password;
    int64_t ops, mem;
    char hash[USERS_HASH_MAX];
    int rc;
} signup;

static void signup_free(signup *s)
{
    json_decref(s->body);
    sodium_memzero(s->hash, sizeof s->hash);
    free(s);
}

static void signup_work(void *p)
{
    signup *s = p;
    s->rc = users_hash_password(s->password, s->ops, s->mem, s->hash);
}

static void signup_done(http_req *r, void *p)
{
    signup *s = p;
    if (!r) {
        signup_free(s);
        return;
    }
    app_thread *t = thread_of(r);
    user u;
    int rc = s->rc == USERS_OK ? users_create(t->db, s->email, s->name, s->hash, &u) : USERS_ERROR;
    if (rc == USERS_OK) http_send_json(r, 201, user_json(&u));
    else if (rc == USERS_DUPLICATE) http_send_error(r, 409, "email_taken", "email", "that email is already registered");
    else send_store_error(r, t->db);
    signup_free(s);
}

static void handle_signup(http_req *r)
{
    static const char *const fields[] = {"email", "name", "password", NULL};
    app_thread *t = thread_of(r);
    http_err e;
    signup *s = calloc(1, sizeof *s);
    if (!s) {
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    s->body = http_json_body(r, &e);
    if (!s->body || json_only_fields(s->body, fields, &e) ||
        json_field_str(s->body, "email", true, USERS_EMAIL_MAX, &s->email, &e) ||
        json_field_str(s->body, "name", true, USERS_NAME_MAX, &s->name, &e) ||
        json_field_str(s->body, "password", true, USERS_PASSWORD_MAX, &s->password, &e))
        goto bad;
    if (!users_email_valid(s->email)) {
        http_err_set(&e, 400, "invalid_value", "email", "email is not a valid address");
        goto bad;
    }
    if (strlen(s->password) < USERS_PASSWORD_MIN) {
        http_err_set(&e, 400, "too_short", "password", "password must be at least %d bytes", USERS_PASSWORD_MIN);
        goto bad;
    }
    /* Refuse a taken email before paying for the hash; the unique index
     * still decides races. */
    user u;
    char hash[USERS_HASH_MAX];
    int rc = users_find_by_email(t->db, s->email, &u, hash);
    if (rc == USERS_OK) {
        http_err_set(&e, 409, "email_taken", "email", "that email is already registered");
        goto bad;
    }
    if (rc != USERS_NOT_FOUND) {
        send_store_error(r, t->db);
        signup_free(s);
        return;
    }
    s->ops = t->app->cfg.password_ops;
    s->mem = t->app->cfg.password_mem;
    http_defer(r, signup_work, signup_done, s);
    return;
bad:
    http_send_err(r, &e);
    signup_free(s);
}

/* ---- sign-in ------------------------------------------------------------ */

typedef struct signin {
    json_t *body;
    const char *email, *password;
    char hash[USERS_HASH_MAX];
    char account_key[USERS_EMAIL_MAX + 16], addr_key[80];
    bool known;
    user u;
    bool ok;
} signin;

static void signin_free(signin *s)
{
    json_decref(s->body);
    free(s);
}

static void signin_work(void *p)
{
    signin *s = p;
    s->ok = users_verify_password(s->hash, s->password) && s->known;
}

static void signin_done(http_req *r, void *p)
{
    signin *s = p;
    if (!r) {
        signin_free(s);
        return;
    }
    app_thread *t = thread_of(r);
    const chime_config *cfg = &t->app->cfg;
    int64_t now = base_now_ms();
    if (!s->ok) {
        users_limit acct = {cfg->signin_limit, cfg->signin_window * 1000};
        users_limit addr = {cfg->signin_ip_limit, cfg->signin_window * 1000};
        if (users_limit_fail(t->db, s->account_key, now, &acct) != USERS_OK ||
            users_limit_fail(t->db, s->addr_key, now, &addr) != USERS_OK)
            send_store_error(r, t->db);
        else
            http_send_error(r, 401, "invalid_credentials", NULL, "wrong email or password");
        signin_free(s);
        return;
    }
    char token[USERS_TOKEN_MAX];
    if (users_limit_reset(t->db, s->account_key) != USERS_OK ||
        users_session_create(t->db, s->u.id, cfg->session_ttl, token) != USERS_OK) {
        send_store_error(r, t->db);
    } else {
        char expires[32];
        base_format_rfc3339_ms(now + cfg->session_ttl * 1000, expires, sizeof expires);
        http_send_json(r, 201, json_pack("{s:s,s:s,s:o}", "token", token, "expires", expires, "user", user_json(&s->u)));
        sodium_memzero(token, sizeof token);
    }
    signin_free(s);
}

/* 429 when either the account or the client address is locked. */
static bool signin_limited(http_req *r, store *db, signin *s)
{
    int64_t retry = 0, now = base_now_ms();
    int a = users_limit_check(db, s->account_key, now, &retry);
    int b = a == USERS_OK ? users_limit_check(db, s->addr_key, now, &retry) : a;
    if (a == USERS_ERROR || b == USERS_ERROR) {
        send_store_error(r, db);
        return true;
    }
    if (a == USERS_OK && b == USERS_OK) return false;
    char secs[24];
    snprintf(secs, sizeof secs, "%lld", (long long)retry);
    http_add_header(r, "Retry-After", secs);
    http_send_error(r, 429, "too_many_attempts", NULL, "too many failed sign-ins; retry in %lld s", (long long)retry);
    return true;
}

static void handle_signin(http_req *r)
{
    static const char *const fields[] = {"email", "password", NULL};
    app_thread *t = thread_of(r);
    http_err e;
    signin *s = calloc(1, sizeof *s);
    if (!s) {
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    s->body = http_json_body(r, &e);
    if (!s->body || json_only_fields(s->body, fields, &e) ||
        json_field_str(s->body, "email", true, USERS_EMAIL_MAX, &s->email, &e) ||
        json_field_str(s->body, "password", true, USERS_PASSWORD_MAX, &s->password, &e)) {
        http_send_err(r, &e);
        signin_free(s);
        return;
    }
    char peer[64], lower[USERS_EMAIL_MAX + 1];
    size_t i = 0;
    for (; s->email[i] && i < USERS_EMAIL_MAX; i++)
        lower[i] = (char)(s->email[i] >= 'A' && s->email[i] <= 'Z' ? s->email[i] + 32 : s->email[i]);
    lower[i] = '\0';
    http_peer(r, peer, sizeof peer);
    snprintf(s->account_key, sizeof s->account_key, "account:%s", lower);
    snprintf(s->addr_key, sizeof s->addr_key, "addr:%s", peer);
    if (signin_limited(r, t->db, s)) {
        signin_free(s);
        return;
    }
    int rc = users_find_by_email(t->db, s->email, &s->u, s->hash);
    if (rc == USERS_ERROR) {
        send_store_error(r, t->db);
        signin_free(s);
        return;
    }
    s->known = rc == USERS_OK;
    if (!s->known) snprintf(s->hash, sizeof s->hash, "%s", t->app->dummy_hash);
    http_defer(r, signin_work, signin_done, s);
}

/* ---- sign-out, me, authentication --------------------------------------- */

static bool bearer_token(const http_req *r, http_str *tok)
{
    http_str h;
    if (!http_header(r, "authorization", &h) || h.len < 7 || strncasecmp(h.ptr, "bearer ", 7) != 0) return false;
    tok->ptr = h.ptr + 7;
    tok->len = h.len - 7;
    while (tok->len && tok->ptr[0] == ' ') tok->ptr++, tok->len--;
    return tok->len > 0;
}

int users_http_authenticate(http_req *r, http_err *e)
{
    app_thread *t = thread_of(r);
    http_str tok;
    if (!bearer_token(r, &tok)) {
        http_err_set(e, 401, "unauthorized", "authorization", "sign in and send Authorization: Bearer TOKEN");
        return -1;
    }
    int rc = users_session_check(t->db, tok.ptr, tok.len, &r->user_id);
    if (rc == USERS_OK) return 0;
    if (rc == USERS_EXPIRED) http_err_set(e, 401, "token_expired", "authorization", "the session has expired; sign in again");
    else if (rc == USERS_NOT_FOUND) http_err_set(e, 401, "invalid_token", "authorization", "the token is not valid");
    else http_err_set(e, 503, "unavailable", NULL, "the database did not answer; try again");
    return -1;
}

static void handle_signout(http_req *r)
{
    app_thread *t = thread_of(r);
    http_str tok;
    bearer_token(r, &tok);
    if (users_session_delete(t->db, tok.ptr, tok.len) != USERS_OK) send_store_error(r, t->db);
    else http_send_empty(r, 204);
}

static void handle_me(http_req *r)
{
    app_thread *t = thread_of(r);
    user u;
    int rc = users_get(t->db, r->user_id, &u);
    if (rc == USERS_OK) http_send_json(r, 200, user_json(&u));
    else if (rc == USERS_NOT_FOUND) http_send_error(r, 401, "invalid_token", "authorization", "the account no longer exists");
    else send_store_error(r, t->db);
}

void users_http_register(http_server *s)
{
    http_route(s, HTTP_POST, "/v1/users", handle_signup, 0);
    http_route(s, HTTP_POST, "/v1/sessions", handle_signin, 0);
    http_route(s, HTTP_DELETE, "/v1/sessions/current", handle_signout, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_GET, "/v1/me", handle_me, HTTP_ROUTE_AUTH);
}
