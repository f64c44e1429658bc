/* users_http.c -- the HTTP face of users.c. Password hashing and checking
 * run on workers (argon2id takes tens of milliseconds by design); the
 * database work runs on the request's own loop thread. */
#include "users/users_http.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "http/json.h"
#include "time/rfc3339.h"
#include "users/users.h"
#include "users/users_app_http.h"

struct users_http {
    users_http_opts o;
    bus *bus; /* borrowed, set once the bus runs; sign-outs are hinted on it */
    /* A hash of a random password: sign-ins for unknown emails verify
     * against it so they take as long as real ones. */
    char dummy_hash[USERS_HASH_MAX];
};

users_http *users_http_new(const users_http_opts *o)
{
    users_http *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    u->o = *o;
    char pw[33];
    unsigned char raw[16];
    base_random(raw, sizeof raw);
    base_hex(raw, sizeof raw, pw);
    if (users_hash_password(pw, o->password_ops, o->password_mem_kib, u->dummy_hash) != USERS_OK) {
        free(u);
        return NULL;
    }
    return u;
}

void users_http_free(users_http *u)
{
    free(u);
}

static store *db_of(const users_http *u, const http_req *r)
{
    return store_pool_at(u->o.dbs, r->loop);
}

static json_t *user_json(const users_account *u)
{
    char id[17], created[32];
    base_id_format(u->id, id);
    rfc3339_format_ms(u->created_ms, created, sizeof created);
    return json_pack("{s:s,s:s,s:s,s:s}", "id", id, "email", u->email, "name", u->name, "created", created);
}

/* ---- sign-up ------------------------------------------------------------ */

typedef struct users_signup {
    users_http *u;
    json_t *body; /* owns email, name and password strings */
    const char *email, *name, *password;
    int64_t ops, mem;
    char hash[USERS_HASH_MAX];
    int rc;
} users_signup;

static void signup_free(users_signup *s)
{
    json_decref(s->body);
    sodium_memzero(s->hash, sizeof s->hash);
    free(s);
}

static void signup_work(void *p)
{
    users_signup *s = p;
    s->rc = users_hash_password(s->password, s->ops, s->mem, s->hash);
}

static void signup_refuse_taken(http_req *r, int rc)
{
    if (rc == USERS_DUPLICATE) http_send_error(r, 409, "email_taken", "email", "that email is already registered");
    else http_send_error(r, 409, "email_confusable", "email", "that email looks like one already registered");
}

static void signup_done(http_req *r, void *p)
{
    users_signup *s = p;
    if (!r) {
        signup_free(s);
        return;
    }
    store *db = db_of(s->u, r);
    users_account u;
    int rc = s->rc == USERS_OK ? users_create(db, s->email, s->name, s->hash, &u) : USERS_ERROR;
    if (rc == USERS_OK) http_send_json(r, 201, user_json(&u));
    else if (rc == USERS_DUPLICATE || rc == USERS_CONFUSABLE) signup_refuse_taken(r, rc);
    else http_send_db_error(r, store_errmsg(db));
    signup_free(s);
}

static void handle_signup(http_req *r, void *arg)
{
    static const char *const fields[] = {"email", "name", "password", NULL};
    users_http *uh = arg;
    store *db = db_of(uh, r);
    http_err e;
    users_signup *s = calloc(1, sizeof *s);
    if (!s) {
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    s->u = uh;
    s->body = http_json_body(r, &e);
    if (!s->body || http_json_only(s->body, fields, &e) ||
        http_json_str(s->body, "email", true, USERS_EMAIL_MAX, &s->email, &e) ||
        http_json_text(s->body, "name", true, USERS_NAME_MAX, TEXT_LINE, &s->name, &e) ||
        http_json_str(s->body, "password", true, USERS_PASSWORD_MAX, &s->password, &e))
        goto bad;
    users_email em;
    char why[160];
    int rc = users_email_normalize(s->email, &em, why, sizeof why);
    if (rc == USERS_INVALID) {
        http_err_set(&e, 400, "invalid_value", "email", "%s", why);
        goto bad;
    }
    if (strlen(s->password) < USERS_PASSWORD_MIN) {
        http_err_set(&e, 400, "too_short", "password", "password must be at least %d bytes", USERS_PASSWORD_MIN);
        goto bad;
    }
    /* Refuse a taken or look-alike email before paying for the hash; the
     * unique indexes still decide races. */
    if (rc == USERS_OK) rc = users_email_taken(db, &em);
    if (rc == USERS_DUPLICATE || rc == USERS_CONFUSABLE) {
        signup_refuse_taken(r, rc);
        signup_free(s);
        return;
    }
    if (rc != USERS_NOT_FOUND) {
        http_send_db_error(r, store_errmsg(db));
        signup_free(s);
        return;
    }
    s->ops = uh->o.password_ops;
    s->mem = uh->o.password_mem_kib;
    http_defer(r, signup_work, signup_done, s);
    return;
bad:
    http_send_err(r, &e);
    signup_free(s);
}

/* ---- sign-in ------------------------------------------------------------ */

/* The limiter (users_limit.c): a client that signed in to the account
 * before is judged by its own key alone; any other by the account's and
 * its address's. */
typedef struct users_signin {
    users_http *uh;
    json_t *body;
    const char *email, *password;
    char hash[USERS_HASH_MAX];
    char account_key[USERS_LIMIT_KEY_MAX], addr_key[80], device_key[USERS_LIMIT_KEY_MAX];
    bool known;       /* the email is an account's */
    bool trusted;     /* the client signed in to it before (device_key) */
    bool has_device;  /* ... and holds a device token of it */
    users_account u;
    bool ok;
} users_signin;

#define USERS_DEVICE_COOKIE "chime_device"

static void signin_free(users_signin *s)
{
    json_decref(s->body);
    free(s);
}

static void signin_work(void *p)
{
    users_signin *s = p;
    s->ok = users_verify_password(s->hash, s->password) && s->known;
}

static void signin_fail(http_req *r, store *db, users_signin *s, int64_t now)
{
    const users_http_opts *o = &s->uh->o;
    users_limit acct = {o->signin_limit, o->signin_window_s * 1000};
    users_limit addr = {o->signin_ip_limit, o->signin_window_s * 1000};
    int rc = s->trusted ? users_limit_fail(db, s->device_key, now, &acct)
                        : users_limit_fail(db, s->account_key, now, &acct);
    if (rc == USERS_OK && !s->trusted) rc = users_limit_fail(db, s->addr_key, now, &addr);
    if (rc != USERS_OK) http_send_db_error(r, store_errmsg(db));
    else http_send_error(r, 401, "invalid_credentials", NULL, "wrong email or password");
}

/* A client without a device token of the account gets one, as a cookie
 * for the sign-in path only (it is of no use elsewhere). */
static int signin_device_cookie(http_req *r, store *db, users_signin *s)
{
    char device[USERS_TOKEN_MAX], cookie[USERS_TOKEN_MAX + 128];
    if (s->has_device) return USERS_OK;
    if (users_device_create(db, s->u.id, device) != USERS_OK) return USERS_ERROR;
    snprintf(cookie, sizeof cookie, USERS_DEVICE_COOKIE "=%s; Path=/v1/sessions; Max-Age=%lld; HttpOnly; "
             "SameSite=Strict", device, (long long)(USERS_DEVICE_TTL_MS / 1000));
    http_add_header(r, "Set-Cookie", cookie);
    sodium_memzero(device, sizeof device);
    return USERS_OK;
}

static void signin_done(http_req *r, void *p)
{
    users_signin *s = p;
    if (!r) {
        signin_free(s);
        return;
    }
    const users_http_opts *o = &s->uh->o;
    store *db = db_of(s->uh, r);
    int64_t now = base_now_ms();
    if (!s->ok) {
        signin_fail(r, db, s, now);
        signin_free(s);
        return;
    }
    char token[USERS_TOKEN_MAX];
    if (users_limit_reset(db, s->trusted ? s->device_key : s->account_key) != USERS_OK ||
        signin_device_cookie(r, db, s) != USERS_OK ||
        users_session_create(db, s->u.id, o->session_ttl_s, token) != USERS_OK) {
        http_send_db_error(r, store_errmsg(db));
    } else {
        /* Before the answer: h2o writes it at once, and a client may use
         * its token on another connection before this returns. */
        if (o->on_signin) o->on_signin(o->on_signin_arg, db, s->u.id);
        char expires[32];
        rfc3339_format_ms(now + o->session_ttl_s * 1000, expires, sizeof expires);
        http_send_json(r, 201, json_pack("{s:s,s:s,s:o}", "token", token, "expires", expires, "user", user_json(&s->u)));
        sodium_memzero(token, sizeof token);
    }
    signin_free(s);
}

void users_limit_keys(const http_req *r, const char *prefix, const char *email, char *account, size_t asize,
                      char *addr, size_t bsize)
{
    char peer[64], lower[USERS_EMAIL_MAX + 1];
    size_t i = 0;
    for (; email[i] && i < USERS_EMAIL_MAX; i++)
        lower[i] = (char)(email[i] >= 'A' && email[i] <= 'Z' ? email[i] + 32 : email[i]);
    lower[i] = '\0';
    http_peer(r, peer, sizeof peer);
    snprintf(account, asize, "%saccount:%s", prefix, lower);
    snprintf(addr, bsize, "%saddr:%s", prefix, peer);
}

/* 429 while a key the client is judged by must wait. */
static bool signin_limited(http_req *r, store *db, users_signin *s)
{
    int64_t retry = 0, now = base_now_ms();
    int a = users_limit_check(db, s->trusted ? s->device_key : s->account_key, now, &retry);
    int b = a == USERS_OK && !s->trusted ? users_limit_check(db, s->addr_key, now, &retry) : a;
    if (a == USERS_ERROR || b == USERS_ERROR) {
        http_send_db_error(r, store_errmsg(db));
        return true;
    }
    if (a == USERS_OK && b == USERS_OK) return false;
    http_send_429(r, retry, "too_many_attempts", "too many failed sign-ins; retry in %lld s", (long long)retry);
    return true;
}

/* The chime_device cookie's value, if the request has one. */
static bool signin_cookie(const http_req *r, http_str *out)
{
    http_str h;
    if (!http_header(r, "cookie", &h)) return false;
    const char *p = h.ptr, *end = h.ptr + h.len;
    size_t nlen = strlen(USERS_DEVICE_COOKIE);
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ';')) p++;
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *stop = semi ? semi : end;
        if ((size_t)(stop - p) > nlen && memcmp(p, USERS_DEVICE_COOKIE "=", nlen + 1) == 0) {
            out->ptr = p + nlen + 1;
            out->len = (size_t)(stop - out->ptr);
            return true;
        }
        p = stop;
    }
    return false;
}

static bool bearer_token(const http_req *r, http_str *tok);

/* Whether the client signed in to the account before (s->trusted). */
static int signin_trust(http_req *r, store *db, users_signin *s)
{
    http_str dev = {0}, ses = {0};
    bool has_dev = signin_cookie(r, &dev), has_ses = bearer_token(r, &ses);
    if (!s->known || (!has_dev && !has_ses)) return USERS_OK;
    int rc = users_device_known(db, s->u.id, has_dev ? dev.ptr : NULL, dev.len, has_ses ? ses.ptr : NULL, ses.len,
                                s->device_key);
    s->trusted = rc == USERS_OK;
    s->has_device = s->trusted && strncmp(s->device_key, "device:", 7) == 0;
    return rc == USERS_ERROR ? USERS_ERROR : USERS_OK;
}

/* The limiter's keys: the account by its key (any form of the address
 * counts as one), the address as the server sees it. */
static void signin_keys(http_req *r, users_signin *s)
{
    users_email em;
    char peer[64];
    bool valid = users_email_normalize(s->email, &em, NULL, 0) == USERS_OK;
    snprintf(s->account_key, sizeof s->account_key, "account:%s", valid ? em.key : em.legacy);
    http_peer(r, peer, sizeof peer);
    snprintf(s->addr_key, sizeof s->addr_key, "addr:%s", peer);
}

static void handle_signin(http_req *r, void *arg)
{
    static const char *const fields[] = {"email", "password", NULL};
    users_http *uh = arg;
    store *db = db_of(uh, r);
    http_err e;
    users_signin *s = calloc(1, sizeof *s);
    if (!s) {
        http_send_error(r, 503, "unavailable", NULL, "out of memory");
        return;
    }
    s->uh = uh;
    s->body = http_json_body(r, &e);
    if (!s->body || http_json_only(s->body, fields, &e) ||
        http_json_str(s->body, "email", true, USERS_EMAIL_MAX, &s->email, &e) ||
        http_json_str(s->body, "password", true, USERS_PASSWORD_MAX, &s->password, &e)) {
        http_send_err(r, &e);
        signin_free(s);
        return;
    }
    signin_keys(r, s);
    int rc = users_find_by_email(db, s->email, &s->u, s->hash);
    s->known = rc == USERS_OK;
    if (rc == USERS_ERROR || signin_trust(r, db, s) != USERS_OK) {
        http_send_db_error(r, store_errmsg(db));
        signin_free(s);
        return;
    }
    if (signin_limited(r, db, s)) {
        signin_free(s);
        return;
    }
    if (!s->known) snprintf(s->hash, sizeof s->hash, "%s", uh->dummy_hash);
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

/* The token's session: from this node's memory when it checked the token
 * lately (see users_sessions.h), else from the database. */
static int session_of(users_http *uh, store *db, const http_str *tok, int64_t *user_id)
{
    char hash[65];
    int64_t now = base_now_ms(), expires;
    if (tok->len >= USERS_TOKEN_MAX) return USERS_NOT_FOUND;
    if (users_sessions_get(uh->o.sessions, tok->ptr, tok->len, now, user_id)) return USERS_OK;
    base_sha256_hex(tok->ptr, tok->len, hash);
    int rc = users_session_lookup(db, hash, user_id, &expires);
    if (rc == USERS_OK) users_sessions_put(uh->o.sessions, tok->ptr, tok->len, hash, *user_id, expires, now);
    return rc;
}

static int authenticate(void *arg, http_req *r, http_err *e)
{
    store *db = db_of(arg, r);
    http_str tok;
    if (!bearer_token(r, &tok)) {
        http_err_set(e, 401, "unauthorized", "authorization", "sign in and send Authorization: Bearer TOKEN");
        return -1;
    }
    int rc = session_of(arg, db, &tok, &r->user_id);
    if (rc == USERS_OK) return 0;
    if (rc == USERS_EXPIRED) http_err_set(e, 401, "token_expired", "authorization", "the session has expired; sign in again");
    else if (rc == USERS_NOT_FOUND) http_err_set(e, 401, "invalid_token", "authorization", "the token is not valid");
    else http_err_set(e, 503, "unavailable", NULL, "the database did not answer; try again");
    return -1;
}

/* The admin flag, or the --admin-email account. */
static bool account_is_admin(const users_http *uh, const users_account *u)
{
    const char *admin = uh->o.admin_email ? uh->o.admin_email : "";
    return u->is_admin || (admin[0] && strcasecmp(admin, u->email) == 0);
}

static int authorize_admin(void *arg, http_req *r, http_err *e)
{
    users_http *uh = arg;
    users_account u;
    int rc = users_get(db_of(uh, r), r->user_id, &u);
    if (rc == USERS_ERROR) {
        log_error("request %s: database: %s", r->request_id, store_errmsg(db_of(uh, r)));
        http_err_set(e, 503, "unavailable", NULL, "the database did not answer; try again");
        return -1;
    }
    if (rc == USERS_OK && account_is_admin(uh, &u)) return 0;
    http_err_set(e, 403, "forbidden", NULL, "this needs an admin");
    return -1;
}

/* Forgotten here at once, and hinted to the other nodes (which forget it
 * within the cache's time at the latest if the hint is lost). */
static void handle_signout(http_req *r, void *arg)
{
    users_http *uh = arg;
    store *db = db_of(uh, r);
    http_str tok;
    char hash[65], hint[66];
    bearer_token(r, &tok);
    base_sha256_hex(tok.ptr, tok.len, hash);
    if (users_session_delete_hash(db, hash) != USERS_OK) {
        http_send_db_error(r, store_errmsg(db));
        return;
    }
    users_sessions_forget(uh->o.sessions, hash);
    bus *b = __atomic_load_n(&uh->bus, __ATOMIC_ACQUIRE);
    if (bus_enabled(b)) bus_publish(b, hint, users_sessions_hint(hash, hint));
    http_send_empty(r, 204);
}

void users_http_set_bus(users_http *u, bus *b)
{
    __atomic_store_n(&u->bus, b, __ATOMIC_RELEASE);
}

static void handle_me(http_req *r, void *arg)
{
    store *db = db_of(arg, r);
    users_account u;
    int rc = users_get(db, r->user_id, &u);
    json_t *me = rc == USERS_OK ? user_json(&u) : NULL;
    /* The web app shows its admin page to the admin alone. */
    if (me) json_object_set_new(me, "admin", json_boolean(account_is_admin(arg, &u)));
    if (rc == USERS_OK) http_send_json(r, 200, me);
    else if (rc == USERS_NOT_FOUND) http_send_error(r, 401, "invalid_token", "authorization", "the account no longer exists");
    else http_send_db_error(r, store_errmsg(db));
}

void users_http_register(users_http *u, http_server *s)
{
    http_server_set_auth(s, authenticate, authorize_admin, u);
    http_route(s, HTTP_POST, "/v1/users", handle_signup, u, 0);
    http_route(s, HTTP_POST, "/v1/sessions", handle_signin, u, 0);
    http_route(s, HTTP_DELETE, "/v1/sessions/current", handle_signout, u, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_GET, "/v1/me", handle_me, u, HTTP_ROUTE_AUTH);
    users_app_http_register(&u->o, s);
}

int users_http_path_user(store *db, const http_req *r, int i, int64_t *id)
{
    char ref[320]; /* an address is at most 254 bytes */
    if (http_url_decode(r->params[i].ptr, r->params[i].len, ref, sizeof ref, false) != 0) return USERS_NOT_FOUND;
    return users_resolve(db, ref, id);
}
