/* chat_body.c -- the shapes of the chat's request bodies and of the
 * frames devices send, checked before anything is looked up or written
 * (fuzzed by fuzz/fuzz-chat-body.c and fuzz/fuzz-ws-frame.c). */
#include "chat/chat_body.h"

#include <stdlib.h>
#include <string.h>

#include "http/json.h"

#define USER_REF_MAX 254 /* an email address at most */

int chat_body_users(const json_t *list, const char *field, size_t max, http_err *e)
{
    if (!json_is_array(list) || json_array_size(list) > max) {
        http_err_set(e, 400, "invalid_value", field, "%s must be a list of at most %zu user ids or emails", field, max);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *v = json_array_get(list, i);
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > USER_REF_MAX ||
            strlen(json_string_value(v)) != json_string_length(v)) {
            http_err_set(e, 400, "invalid_value", field, "%s[%zu] must be a user id or an email", field, i);
            return -1;
        }
    }
    return 0;
}

int chat_body_create(const json_t *body, size_t max_members, chat_create_in *in, http_err *e)
{
    static const char *const direct_fields[] = {"type", "user", NULL};
    static const char *const group_fields[] = {"type", "title", "members", "client_id", NULL};
    const char *type;
    memset(in, 0, sizeof *in);
    if (http_json_str(body, "type", true, 16, &type, e)) return -1;
    if (strcmp(type, "direct") == 0)
        return http_json_only(body, direct_fields, e) || http_json_str(body, "user", true, USER_REF_MAX, &in->user, e)
                   ? -1
                   : 0;
    if (strcmp(type, "group") != 0) {
        http_err_set(e, 400, "invalid_value", "type", "type must be direct or group");
        return -1;
    }
    in->group = true;
    if (http_json_only(body, group_fields, e) || http_json_text(body, "title", true, CHAT_TITLE_MAX, TEXT_LINE, &in->title, e) ||
        http_json_text(body, "client_id", false, CHAT_CLIENT_ID_MAX, TEXT_IDENT, &in->client_id, e))
        return -1;
    in->members = json_object_get(body, "members");
    /* The cap is checked again in the transaction (with the creator and
     * without repeats); a longer list is refused before any lookup. */
    return in->members ? chat_body_users(in->members, "members", max_members, e) : 0;
}

int chat_body_send(const json_t *body, const char **client_id, const char **text, http_err *e)
{
    static const char *const fields[] = {"client_msg_id", "text", NULL};
    if (http_json_only(body, fields, e) || http_json_text(body, "client_msg_id", true, CHAT_CLIENT_ID_MAX, TEXT_IDENT, client_id, e))
        return -1;
    json_t *t = json_object_get(body, "text");
    if (!json_is_string(t) || json_string_length(t) == 0 || json_string_length(t) > CHAT_TEXT_MAX) {
        http_err_set(e, 400, "invalid_value", "text", "text must be 1 to %d bytes of UTF-8", CHAT_TEXT_MAX);
        return -1;
    }
    *text = json_string_value(t);
    if (strlen(*text) != json_string_length(t)) {
        http_err_set(e, 400, "invalid_value", "text", "text may not contain NUL characters");
        return -1;
    }
    return http_text_check(*text, json_string_length(t), "text", TEXT_MULTILINE, e);
}

int chat_body_read(const json_t *body, int64_t *up_to, http_err *e)
{
    static const char *const fields[] = {"up_to", NULL};
    bool present;
    return http_json_only(body, fields, e) || http_json_int(body, "up_to", true, 0, INT64_MAX, up_to, &present, e)
               ? -1
               : 0;
}

int chat_body_members(const json_t *body, size_t max, const json_t **users, http_err *e)
{
    static const char *const fields[] = {"users", NULL};
    if (http_json_only(body, fields, e)) return -1;
    *users = json_object_get(body, "users");
    if (chat_body_users(*users, "users", max, e) != 0) return -1;
    if (json_array_size(*users) == 0) {
        http_err_set(e, 400, "invalid_value", "users", "users must name at least one user");
        return -1;
    }
    return 0;
}

int chat_ws_frame(const char *text, size_t len, char **reply)
{
    *reply = NULL;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    int rc = json_is_object(j) && type && strcmp(type, "ping") == 0 ? 0 : -1;
    json_decref(j);
    if (rc == 0 && !(*reply = strdup("{\"type\":\"pong\"}"))) rc = -1;
    return rc;
}
