/* fuzz-chat-body.c -- the chat's request bodies (create, members, send,
 * read): whatever a client sends is decoded and checked for shape, and
 * what passes keeps the promised bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_body.h"
#include "http/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    http_err e;
    json_t *body = http_json_decode((const char *)data, size, &e);
    if (!body) return 0;
    chat_create_in in;
    if (chat_body_create(body, 500, &in, &e) == 0) {
        if (in.group && (!in.title || strlen(in.title) > CHAT_TITLE_MAX)) abort();
        if (!in.group && (!in.user || !in.user[0])) abort();
        if (in.members && json_array_size(in.members) > 500) abort();
    }
    const json_t *users;
    if (chat_body_members(body, 500, &users, &e) == 0 && (json_array_size(users) == 0 || json_array_size(users) > 500))
        abort();
    const char *client_id, *text;
    if (chat_body_send(body, &client_id, &text, &e) == 0) {
        size_t n = strlen(text);
        if (n == 0 || n > CHAT_TEXT_MAX || !client_id[0] || strlen(client_id) > CHAT_CLIENT_ID_MAX) abort();
    }
    int64_t up_to;
    if (chat_body_read(body, &up_to, &e) == 0 && up_to < 0) abort();
    json_decref(body);
    return 0;
}
