/* users_http.h -- sign-up, sign-in, sign-out, /v1/me, and the bearer-token
 * authenticator the server runs on routes that need a user. */
#ifndef CHIME_USERS_HTTP_H
#define CHIME_USERS_HTTP_H

#include "http/server.h"

void users_http_register(http_server *s);
int users_http_authenticate(http_req *r, http_err *e);

#endif
