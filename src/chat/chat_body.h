/* chat_body.h -- the chat's request bodies and device frames, checked
 * for shape (chat_body.c). Each returns 0, or -1 with e filled (status,
 * code, the field, the reason). Strings point into the body. */
#ifndef CHIME_CHAT_BODY_H
#define CHIME_CHAT_BODY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/chat.h"
#include "http/http.h"

/* POST /v1/conversations: {"type":"direct","user":REF} or
 * {"type":"group","title":T,"members":[REF...],"client_id":S} (client_id
 * optional: NULL when absent) */
typedef struct chat_create_in {
    bool group;
    const char *user, *title, *client_id;
    const json_t *members; /* NULL when absent */
} chat_create_in;
int chat_body_create(const json_t *body, size_t max_members, chat_create_in *in, http_err *e);
/* A list of at most max user references (ids or emails). */
int chat_body_users(const json_t *list, const char *field, size_t max, http_err *e);
/* POST .../members {"users":[REF...]}: at least one. */
int chat_body_members(const json_t *body, size_t max, const json_t **users, http_err *e);
/* POST .../messages {"client_msg_id","text"} */
int chat_body_send(const json_t *body, const char **client_id, const char **text, http_err *e);
/* POST .../read {"up_to":N} */
int chat_body_read(const json_t *body, int64_t *up_to, http_err *e);

/* A frame a device sent: {"type":"ping"} gets *reply (malloc'd)
 * {"type":"pong"}; anything else is refused (-1: close 1008). */
int chat_ws_frame(const char *text, size_t len, char **reply);

#endif
