/* chat_query.c -- the chat's reads, on a loop's own connection: they see
 * committed writes only, and never wait for the writer (SQLite's WAL
 * readers do not; PostgreSQL's readers never do). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "chat/chat.h"
#include "time/rfc3339.h"

static json_t *id_json(int64_t id)
{
    char buf[17];
    base_id_format(id, buf);
    return json_string(buf);
}

static json_t *time_json(int64_t ms)
{
    char buf[32];
    rfc3339_format_ms(ms, buf, sizeof buf);
    return json_string(buf);
}

json_t *chat_message_json(store_stmt *st, int at)
{
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "id", id_json(store_col_int64(st, at + 2)));
    json_object_set_new(o, "conversation_id", id_json(store_col_int64(st, at)));
    json_object_set_new(o, "sender", id_json(store_col_int64(st, at + 3)));
    json_object_set_new(o, "seq", json_integer(store_col_int64(st, at + 1)));
    json_object_set_new(o, "client_msg_id", json_string(store_col_text(st, at + 4)));
    json_object_set_new(o, "text", json_stringn(store_col_text(st, at + 5), store_col_len(st, at + 5)));
    json_object_set_new(o, "sent", time_json(store_col_int64(st, at + 6)));
    return o;
}

static int done(int rc)
{
    return rc == STORE_DONE ? CHAT_OK : CHAT_ERROR;
}

#define MSG_COLS "conversation_id, seq, id, sender_id, client_msg_id, text, sent_ms"

/* ---- conversations ---------------------------------------------------- */

static int members_json(store *db, int64_t conv, json_t *out)
{
    store_stmt *st = store_prepare(db, "SELECT m.user_id, m.role, u.name FROM conv_members m JOIN users u ON "
                                       "u.id = m.user_id WHERE m.conversation_id = $1 AND m.left_seq IS NULL "
                                       "ORDER BY m.user_id");
    store_bind_int64(st, 1, conv);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW)
        json_array_append_new(out, json_pack("{s:o,s:s,s:s}", "id", id_json(store_col_int64(st, 0)), "role",
                                             store_col_text(st, 1), "name", store_col_text(st, 2)));
    store_reset(st);
    return done(rc);
}

/* The newest message the member may see, or null. */
static int last_message(store *db, int64_t conv, int64_t seq, json_t **out)
{
    *out = json_null();
    if (seq <= 0) return CHAT_OK;
    store_stmt *st = store_prepare(db, "SELECT " MSG_COLS " FROM messages WHERE conversation_id = $1 AND seq = $2");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, seq);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        json_decref(*out);
        *out = chat_message_json(st, 0);
    }
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? CHAT_OK : CHAT_ERROR;
}

typedef struct chat_conv_row {
    int64_t id, last_seq, last_ms, read, left, joined;
    bool active;
    char kind[8];
    char *title;
} chat_conv_row;

static json_t *conv_json(store *db, const chat_conv_row *c)
{
    int64_t visible = c->active ? c->last_seq : c->left;
    json_t *members = json_array(), *last = NULL;
    if (!members || members_json(db, c->id, members) != CHAT_OK ||
        last_message(db, c->id, visible > c->joined ? visible : 0, &last) != CHAT_OK) {
        json_decref(members);
        json_decref(last);
        return NULL;
    }
    json_t *o = json_pack("{s:o,s:s,s:s,s:o,s:I,s:I,s:I,s:o,s:o}", "id", id_json(c->id), "type", c->kind, "title",
                          c->title, "members", members, "last_seq", (json_int_t)visible, "read_up_to",
                          (json_int_t)c->read, "unread", (json_int_t)(visible - c->read), "last_message", last,
                          "last_activity", time_json(c->last_ms));
    if (o && !c->active) json_object_set_new(o, "left", json_true());
    return o;
}

int chat_conversations(store *db, int64_t me, int64_t conv, json_t **out)
{
    store_stmt *st = store_prepare(
        db, conv ? "SELECT c.id, c.kind, c.title, c.last_seq, c.last_ms, m.read_up_to, m.left_seq, m.joined_seq "
                   "FROM conv_members m JOIN conversations c ON c.id = m.conversation_id "
                   "WHERE m.user_id = $1 AND c.id = $2"
                 : "SELECT c.id, c.kind, c.title, c.last_seq, c.last_ms, m.read_up_to, m.left_seq, m.joined_seq "
                   "FROM conv_members m JOIN conversations c ON c.id = m.conversation_id "
                   "WHERE m.user_id = $1 ORDER BY c.last_ms DESC, c.id");
    store_bind_int64(st, 1, me);
    if (conv) store_bind_int64(st, 2, conv);
    chat_conv_row *rows = NULL;
    size_t n = 0, cap = 0;
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (n == cap) {
            chat_conv_row *grown = base_grow(rows, sizeof *grown, &cap);
            if (!grown) break;
            rows = grown;
        }
        chat_conv_row *c = &rows[n++];
        c->id = store_col_int64(st, 0);
        snprintf(c->kind, sizeof c->kind, "%s", store_col_text(st, 1));
        c->title = strdup(store_col_text(st, 2));
        c->last_seq = store_col_int64(st, 3);
        c->last_ms = store_col_int64(st, 4);
        c->read = store_col_int64(st, 5);
        c->active = store_col_is_null(st, 6);
        c->left = c->active ? 0 : store_col_int64(st, 6);
        c->joined = store_col_int64(st, 7);
    }
    store_reset(st);
    /* The members and last messages are read after the list statement is
     * done with: one statement at a time per connection. */
    json_t *list = rc == STORE_DONE ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *o = list && rows[i].title ? conv_json(db, &rows[i]) : NULL;
        if (!o) {
            json_decref(list);
            list = NULL;
        } else {
            json_array_append_new(list, o);
        }
        free(rows[i].title);
    }
    free(rows);
    *out = list;
    return list ? CHAT_OK : CHAT_ERROR;
}

/* ---- messages ----------------------------------------------------------- */

/* The numbers the member may see: (joined, upto]. */
static int visible_range(store *db, int64_t me, int64_t conv, int64_t *joined, int64_t *upto)
{
    store_stmt *st = store_prepare(db, "SELECT m.joined_seq, COALESCE(m.left_seq, c.last_seq) FROM conv_members m "
                                       "JOIN conversations c ON c.id = m.conversation_id "
                                       "WHERE m.conversation_id = $1 AND m.user_id = $2");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, me);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        *joined = store_col_int64(st, 0);
        *upto = store_col_int64(st, 1);
    }
    store_reset(st);
    return rc == STORE_ROW ? CHAT_OK : rc == STORE_DONE ? CHAT_NOT_FOUND : CHAT_ERROR;
}

int chat_messages(store *db, int64_t me, int64_t conv, int64_t before, int64_t after, int limit, json_t **out)
{
    int64_t joined = 0, upto = 0;
    int rc = visible_range(db, me, conv, &joined, &upto);
    if (rc != CHAT_OK) return rc;
    /* after_seq reads forward from it; otherwise the page before
     * before_seq (or the newest), read backward and then reversed. */
    bool forward = after > 0;
    int64_t lo = forward ? (after > joined ? after : joined) : joined;
    int64_t hi = !forward && before > 0 && before - 1 < upto ? before - 1 : upto;
    store_stmt *st = store_prepare(db, forward ? "SELECT " MSG_COLS " FROM messages WHERE conversation_id = $1 "
                                                 "AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4"
                                               : "SELECT " MSG_COLS " FROM messages WHERE conversation_id = $1 "
                                                 "AND seq > $2 AND seq <= $3 ORDER BY seq DESC LIMIT $4");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, lo);
    store_bind_int64(st, 3, hi);
    store_bind_int64(st, 4, limit + 1);
    json_t *items = json_array();
    int n = 0;
    while ((rc = store_step(st)) == STORE_ROW)
        if (n++ < limit) json_array_append_new(items, chat_message_json(st, 0));
    store_reset(st);
    if (rc != STORE_DONE) {
        json_decref(items);
        return CHAT_ERROR;
    }
    if (!forward) { /* oldest first */
        size_t k = json_array_size(items);
        json_t *ordered = json_array();
        for (size_t i = k; i > 0; i--) json_array_append(ordered, json_array_get(items, i - 1));
        json_decref(items);
        items = ordered;
    }
    *out = json_pack("{s:o,s:b}", "messages", items, "has_more", n > limit);
    return *out ? CHAT_OK : CHAT_ERROR;
}

/* ---- sync --------------------------------------------------------------- */

void chat_message_members(jsonw *w, const chat_msg *m)
{
    char id[17], conv[17], sender[17], sent[32];
    base_id_format(m->id, id);
    base_id_format(m->conv, conv);
    base_id_format(m->sender, sender);
    rfc3339_format_ms(m->sent_ms, sent, sizeof sent);
    jw_kplain(w, "id", id);
    jw_kplain(w, "conversation_id", conv);
    jw_kplain(w, "sender", sender);
    jw_kint(w, "seq", m->seq);
    jw_kstr(w, "client_msg_id", m->client_id);
    jw_key(w, "text");
    jw_strn(w, m->text, m->text_len);
    jw_kplain(w, "sent", sent);
}

/* A message from columns at (as chat_message_json reads them). */
static chat_msg msg_of(store_stmt *st, int at)
{
    return (chat_msg){.conv = store_col_int64(st, at), .seq = store_col_int64(st, at + 1),
                      .id = store_col_int64(st, at + 2), .sender = store_col_int64(st, at + 3),
                      .client_id = store_col_text(st, at + 4), .text = store_col_text(st, at + 5),
                      .text_len = store_col_len(st, at + 5), .sent_ms = store_col_int64(st, at + 6)};
}

void chat_message_write(jsonw *w, store_stmt *st, int at)
{
    chat_msg m = msg_of(st, at);
    jw_obj(w);
    chat_message_members(w, &m);
    jw_obj_end(w);
}

void chat_change_members(jsonw *w, const char *kind, int64_t conv, int64_t ref, const chat_msg *m)
{
    char c[17], user[17];
    base_id_format(conv, c);
    jw_kstr(w, "kind", kind);
    jw_kplain(w, "conversation_id", c);
    if (strcmp(kind, "message") == 0) {
        jw_key(w, "message");
        if (!m) {
            jw_null(w);
        } else {
            jw_obj(w);
            chat_message_members(w, m);
            jw_obj_end(w);
        }
    } else if (strcmp(kind, "read") == 0) {
        jw_kint(w, "up_to", ref);
    } else if (strncmp(kind, "member_", 7) == 0) {
        base_id_format(ref, user);
        jw_kplain(w, "user", user);
    }
}

/* A change from columns at: seq, kind, conversation, ref, then the
 * message's columns (NULL when it is not a message). */
static void change_write(jsonw *w, store_stmt *st, int at)
{
    const char *kind = store_col_text(st, at + 1);
    int64_t conv = store_col_int64(st, at + 2), ref = store_col_int64(st, at + 3);
    jw_obj(w);
    jw_kint(w, "seq", store_col_int64(st, at));
    if (strcmp(kind, "message") == 0 && !store_col_is_null(st, at + 4)) {
        chat_msg m = msg_of(st, at + 4);
        chat_change_members(w, kind, conv, ref, &m);
    } else {
        chat_change_members(w, kind, conv, ref, NULL);
    }
    jw_obj_end(w);
}

/* One statement for the bounds and the changes, written straight from
 * the rows: a pull is the most frequent request of all (each message is
 * pulled by every member's devices); a jansson tree made and dumped for
 * it was a third of a loop's instructions, and a statement of its own for
 * the bounds another 15% of a pull's (callgrind, bench/chat). The user's
 * row comes first (one at most); the changes join it, so a user with no
 * changes after since still gives one row, with NULL changes. A change
 * may be in either of two tables (chat_settle.c): the first limit + 1 of
 * each, in order, and of those the first limit + 1, before the messages
 * are looked up. */
int chat_sync(store *db, int64_t me, int64_t since, int limit, int64_t *seq, int64_t *pruned_to, jsonw *w)
{
    store_stmt *st = store_prepare(
        db, "SELECT s.seq, s.pruned_to, c.seq, c.kind, c.conversation_id, c.ref, m.conversation_id, m.seq, m.id, "
            "m.sender_id, m.client_msg_id, m.text, m.sent_ms FROM chat_seqs s LEFT JOIN ("
            "SELECT * FROM (SELECT seq, kind, conversation_id, ref FROM chat_changes WHERE user_id = $1 AND seq > $2 "
            "ORDER BY seq LIMIT $3) settled UNION ALL "
            "SELECT * FROM (SELECT seq, kind, conversation_id, ref FROM chat_recent WHERE user_id = $1 AND seq > $2 "
            "ORDER BY seq LIMIT $3) recent ORDER BY seq LIMIT $3) c ON TRUE "
            "LEFT JOIN messages m ON c.kind = 'message' AND m.conversation_id = c.conversation_id AND m.seq = c.ref "
            "WHERE s.user_id = $1 ORDER BY c.seq LIMIT $3");
    store_bind_int64(st, 1, me);
    store_bind_int64(st, 2, since);
    store_bind_int64(st, 3, limit + 1);
    int rc = store_step(st);
    *seq = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    *pruned_to = rc == STORE_ROW ? store_col_int64(st, 1) : 0;
    if (since > *seq || since < *pruned_to) { /* the caller answers 400 or 410 */
        store_reset(st);
        return rc == STORE_ROW || rc == STORE_DONE ? CHAT_OK : CHAT_ERROR;
    }
    int64_t last = since;
    int n = 0;
    jw_obj(w);
    jw_key(w, "changes");
    jw_arr(w);
    for (; rc == STORE_ROW && !store_col_is_null(st, 2); rc = store_step(st)) {
        if (n++ >= limit) continue;
        last = store_col_int64(st, 2);
        change_write(w, st, 2);
    }
    if (rc == STORE_ROW) rc = store_step(st); /* the one row with no changes */
    store_reset(st);
    jw_arr_end(w);
    jw_kint(w, "seq", last);
    jw_key(w, "has_more");
    jw_bool(w, n > limit);
    jw_obj_end(w);
    return rc == STORE_DONE ? CHAT_OK : CHAT_ERROR;
}

/* ---- unread ------------------------------------------------------------- */

#define UNREAD_OF(USER)                                                                                    \
    "SELECT COALESCE(sum(COALESCE(m.left_seq, c.last_seq) - m.read_up_to), 0), "                           \
    "count(CASE WHEN COALESCE(m.left_seq, c.last_seq) > m.read_up_to THEN 1 END) "                         \
    "FROM conv_members m JOIN conversations c ON c.id = m.conversation_id WHERE m.user_id = " USER

int chat_unread(store *db, int64_t me, int64_t *total, int64_t *conversations)
{
    store_stmt *st = store_prepare(db, UNREAD_OF("$1"));
    store_bind_int64(st, 1, me);
    int rc = store_step(st);
    *total = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    *conversations = rc == STORE_ROW ? store_col_int64(st, 1) : 0;
    store_reset(st);
    return rc == STORE_ROW ? CHAT_OK : CHAT_ERROR;
}

int chat_seq_unread(store *db, const int64_t *users, size_t n, int64_t *seq, int64_t *unread)
{
    store_stmt *st = store_prepare(db, "SELECT seq, unread FROM chat_seqs WHERE user_id = $1");
    for (size_t i = 0; i < n; i++) {
        store_bind_int64(st, 1, users[i]);
        int rc = store_step(st);
        seq[i] = rc == STORE_ROW ? store_col_int64(st, 0) : 0; /* no row: nothing yet */
        unread[i] = rc == STORE_ROW ? store_col_int64(st, 1) : 0;
        store_reset(st);
        if (rc != STORE_ROW && rc != STORE_DONE) return CHAT_ERROR;
    }
    return CHAT_OK;
}

int chat_share(store *db, int64_t a, int64_t b, bool *shared)
{
    store_stmt *st = store_prepare(db, "SELECT 1 FROM conv_members x JOIN conv_members y ON y.conversation_id = "
                                       "x.conversation_id WHERE x.user_id = $1 AND y.user_id = $2 "
                                       "AND x.left_seq IS NULL AND y.left_seq IS NULL LIMIT 1");
    store_bind_int64(st, 1, a);
    store_bind_int64(st, 2, b);
    int rc = store_step(st);
    *shared = rc == STORE_ROW;
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? CHAT_OK : CHAT_ERROR;
}
