/* notify_http.h -- the in-app inbox and the admin view of the outbox:
 *     GET  /v1/notifications?after=CURSOR&limit=N   the signed-in user's inbox
 *     POST /v1/notifications/read {"up_to": CURSOR} read marks up to a cursor
 *     POST /v1/notifications/{id}/read              one read mark
 * An inbox item's id is its seq concealed by a keyed permutation
 * (base_id_conceal): it looks like every other id and tells nobody how
 * many deliveries the server has made.
 *     GET  /v1/admin/deliveries?state=S             outbox rows (admin)
 *     GET  /v1/me/deliveries?state=S                the user's own, in an end state
 */
#ifndef CHIME_NOTIFY_HTTP_H
#define CHIME_NOTIFY_HTTP_H

#include "http/server.h"
#include "store/store_pool.h"

#include <pthread.h>
#include <stdbool.h>

#include "base/base.h"

/* The routes' context; the caller owns it for the server's life (only dbs
 * is the caller's to set). */
typedef struct notify_http {
    store_pool *dbs; /* borrowed */
    /* The key that conceals inbox seqs as ids (server_keys 'inbox_ids'),
     * read from the database at first use. */
    pthread_mutex_t key_mu;
    bool have_key;
    unsigned char key[BASE_ID_KEY_LEN];
} notify_http;

void notify_http_register(notify_http *n, http_server *s);

#endif
