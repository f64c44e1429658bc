/* users_app_http.c -- app passwords over HTTP, and HTTP Basic sign-in with
 * them for the routes flagged HTTP_ROUTE_BASIC (CalDAV).
 *
 *   POST   /v1/me/app-passwords {"label"}  201 {id, label, password, created}: the only time it shows
 *   GET    /v1/me/app-passwords            {"items": [{id, label, created}]}
 *   DELETE /v1/me/app-passwords/{id}       204; 404 if it is not yours
 *
 * Basic failures count against the same limits as sign-ins (per account
 * and per client address) under keys of their own ("app:..."), so a
 * calendar app stuck on an old password cannot lock its owner out of the
 * web sign-in, and nobody can guess passwords faster over CalDAV than
 * over /v1/sessions. A success does not clear the failures (that would be
 * a write on every request an app makes); they age out with the window. */
#include "users/users_app_http.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/base.h"
#include "http/json.h"
#include "time/rfc3339.h"
#include "users/users.h"

static store *app_db(const users_http_opts *o, const http_req *r)
{
    return store_pool_at(o->dbs, r->loop);
}

static json_t *app_json(const users_app_password *a, const char *password)
{
    char id[17], created[32];
    base_id_format(a->id, id);
    rfc3339_format_ms(a->created_ms, created, sizeof created);
    json_t *j = json_pack("{s:s,s:s,s:s}", "id", id, "label", a->label, "created", created);
    if (j && password) json_object_set_new(j, "password", json_string(password));
    return j;
}

static void handle_app_create(http_req *r, void *arg)
{
    static const char *const fields[] = {"label", NULL};
    const users_http_opts *o = arg;
    store *db = app_db(o, r);
    http_err e;
    const char *label;
    json_t *body = http_json_body(r, &e);
    if (!body || http_json_only(body, fields, &e) ||
        http_json_str(body, "label", true, USERS_APP_LABEL_MAX, &label, &e)) {
        json_decref(body);
        return http_send_err(r, &e);
    }
    users_app_password a;
    char password[USERS_APP_PASSWORD_LEN + 1];
    int rc = users_app_create(db, r->user_id, label, &a, password);
    json_decref(body);
    if (rc == USERS_DUPLICATE)
        return http_send_error(r, 409, "too_many", NULL, "at most %d app passwords per user", USERS_APP_MAX);
    if (rc != USERS_OK) return http_send_db_error(r, store_errmsg(db));
    http_send_json(r, 201, app_json(&a, password));
    sodium_memzero(password, sizeof password);
}

static void handle_app_list(http_req *r, void *arg)
{
    const users_http_opts *o = arg;
    store *db = app_db(o, r);
    users_app_password *list;
    size_t n;
    if (users_app_list(db, r->user_id, &list, &n) != USERS_OK) return http_send_db_error(r, store_errmsg(db));
    json_t *items = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(items, app_json(&list[i], NULL));
    free(list);
    http_send_json(r, 200, json_pack("{s:o}", "items", items));
}

static void handle_app_delete(http_req *r, void *arg)
{
    const users_http_opts *o = arg;
    store *db = app_db(o, r);
    int64_t id;
    int rc = base_id_parse(r->params[0].ptr, r->params[0].len, &id) == 0 ? users_app_delete(db, r->user_id, id)
                                                                        : USERS_NOT_FOUND;
    if (rc == USERS_NOT_FOUND) return http_send_error(r, 404, "not_found", NULL, "no such app password");
    if (rc != USERS_OK) return http_send_db_error(r, store_errmsg(db));
    http_send_empty(r, 204);
}

/* ---- HTTP Basic --------------------------------------------------------- */

/* "Basic base64(email:password)" into email and password; false when the
 * header is missing or malformed. */
static bool basic_credentials(const http_req *r, char *email, size_t esize, char *password, size_t psize,
                              size_t *plen)
{
    http_str h;
    char decoded[USERS_EMAIL_MAX + USERS_PASSWORD_MAX + 2];
    size_t len;
    if (!http_header(r, "authorization", &h) || h.len < 7 || strncasecmp(h.ptr, "basic ", 6) != 0) return false;
    const char *b64 = h.ptr + 6;
    size_t blen = h.len - 6;
    while (blen && *b64 == ' ') b64++, blen--;
    if (sodium_base642bin((unsigned char *)decoded, sizeof decoded - 1, b64, blen, " ", &len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0 &&
        sodium_base642bin((unsigned char *)decoded, sizeof decoded - 1, b64, blen, " ", &len, NULL,
                          sodium_base64_VARIANT_ORIGINAL_NO_PADDING) != 0)
        return false;
    decoded[len] = '\0';
    char *colon = memchr(decoded, ':', len);
    if (!colon || (size_t)(colon - decoded) >= esize || memchr(decoded, '\0', len)) return false;
    memcpy(email, decoded, (size_t)(colon - decoded));
    email[colon - decoded] = '\0';
    *plen = len - (size_t)(colon - decoded) - 1;
    if (*plen >= psize) return false;
    memcpy(password, colon + 1, *plen + 1);
    sodium_memzero(decoded, sizeof decoded);
    return true;
}

/* 429 (with Retry-After) when the account or the address is locked. */
static int basic_limited(const users_http_opts *o, http_req *r, const char *akey, const char *bkey, http_err *e)
{
    int64_t retry = 0;
    int rc = users_limit_check_both(app_db(o, r), akey, bkey, base_now_ms(), &retry);
    if (rc == USERS_OK) return 0;
    if (rc == USERS_ERROR) {
        http_err_set(e, 503, "unavailable", NULL, "the database did not answer; try again");
        return -1;
    }
    http_add_retry_after(r, retry);
    http_err_set(e, 429, "too_many_attempts", NULL, "too many failed sign-ins; retry in %lld s", (long long)retry);
    return -1;
}

static int authenticate_basic(void *arg, http_req *r, http_err *e)
{
    const users_http_opts *o = arg;
    store *db = app_db(o, r);
    char email[USERS_EMAIL_MAX + 1], password[USERS_PASSWORD_MAX + 1];
    char akey[USERS_EMAIL_MAX + 24], bkey[96];
    size_t plen;
    if (!basic_credentials(r, email, sizeof email, password, sizeof password, &plen)) {
        http_err_set(e, 401, "unauthorized", "authorization",
                     "send your email and an app password (HTTP Basic); make one with POST /v1/me/app-passwords");
        return -1;
    }
    users_limit_keys(r, "app:", email, akey, sizeof akey, bkey, sizeof bkey);
    int rc = basic_limited(o, r, akey, bkey, e) == 0 ? users_app_check(db, email, password, plen, &r->user_id)
                                                     : USERS_EXPIRED;
    sodium_memzero(password, sizeof password);
    if (rc == USERS_OK) return 0;
    if (rc == USERS_EXPIRED) return -1; /* e says why */
    users_limit acct = {o->signin_limit, o->signin_window_s * 1000};
    users_limit addr = {o->signin_ip_limit, o->signin_window_s * 1000};
    if (rc == USERS_ERROR || users_limit_fail_both(db, akey, bkey, base_now_ms(), &acct, &addr) != USERS_OK) {
        log_error("request %s: database: %s", r->request_id, store_errmsg(db));
        http_err_set(e, 503, "unavailable", NULL, "the database did not answer; try again");
        return -1;
    }
    http_err_set(e, 401, "invalid_credentials", "authorization",
                 "wrong email or app password (the account password is not accepted here)");
    return -1;
}

void users_app_http_register(const users_http_opts *o, http_server *s)
{
    void *arg = (void *)o;
    http_server_set_basic_auth(s, authenticate_basic, arg);
    http_route(s, HTTP_POST, "/v1/me/app-passwords", handle_app_create, arg, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_GET, "/v1/me/app-passwords", handle_app_list, arg, HTTP_ROUTE_AUTH);
    http_route(s, HTTP_DELETE, "/v1/me/app-passwords/{id}", handle_app_delete, arg, HTTP_ROUTE_AUTH);
}
