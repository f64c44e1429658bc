/* chat_ops.c -- the chat's writes, each run inside the writer's open
 * transaction (chat_writer.c). An op reads what it must check first and
 * writes only once it knows it will succeed, so a refusal (404, 422...)
 * leaves nothing behind even though it shares the transaction with other
 * requests' ops. Every statement that can fail for a reason other than
 * the database's health is written so that it cannot (ON CONFLICT, WHERE
 * guards): a failed statement aborts the whole transaction (store.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "chat/chat.h"
#include "chat/chat_settle.h"

void chat_result_free(chat_result *r)
{
    json_decref(r->body);
    free(r->rendered);
    free(r->signal);
    for (size_t i = 0; i < r->nparts; i++) chat_part_release(r->parts[i]);
    free(r->parts);
    memset(r, 0, sizeof *r);
}

int chat_refuse(chat_result *r, int status, const char *code, const char *field, const char *fmt, ...)
{
    r->status = status;
    r->code = code;
    snprintf(r->field, sizeof r->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    return STORE_OK;
}

/* User's sequence moved to seq, their unread count to unread: the gateway
 * tells them, and the writer of the change (r->self) gets its own number. */
static int signal_add(chat_result *r, int64_t user, int64_t seq, int64_t unread)
{
    if (user == r->self) r->self_seq = seq;
    if (r->nsignal == r->signal_cap) {
        chat_news *grown = base_grow(r->signal, sizeof *grown, &r->signal_cap);
        if (!grown) return STORE_ERROR;
        r->signal = grown;
    }
    r->signal[r->nsignal++] = (chat_news){.user = user, .seq = seq, .unread = unread, .part = r->part};
    return STORE_OK;
}

/* Runs a statement to its end; when r is given, each row is (user, seq,
 * unread) of a change, for signal_add. */
static int run(store_stmt *st, chat_result *r)
{
    int rc;
    while ((rc = store_step(st)) == STORE_ROW)
        if (r && signal_add(r, store_col_int64(st, 0), store_col_int64(st, 1), store_col_int64(st, 2)) != STORE_OK) {
            rc = STORE_ERROR;
            break;
        }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* ---- sequences ------------------------------------------------------------ */

/* The user's sequence row, so the fan-out can count on it. */
static int seq_row(store *db, int64_t user)
{
    store_stmt *st =
        store_prepare(db, "INSERT INTO chat_seqs (user_id, seq) VALUES ($1, 0) ON CONFLICT (user_id) DO NOTHING");
    store_bind_int64(st, 1, user);
    return run(st, NULL);
}

/* A change for the members of a conversation: its kind and ref, and how
 * it moves unread counts -- every member's by unread (a message: 1) and
 * one member's, who, by who_unread more (the sender, who has read it all
 * now). */
typedef struct chat_change {
    int64_t conv;
    const char *kind;
    int64_t ref, now;
    int64_t unread, who, who_unread;
    const chat_msg *msg; /* a message's */
} chat_change;

/* The change as the writer's tail keeps it (chat_tail.h), made once for
 * all the users it goes to, when the writer keeps one: r->part for the
 * signals that follow. Out of memory, r->part is NULL, and the tail
 * forgets those users rather than keep a gap. */
static void part_begin(chat_result *r, const chat_change *ch)
{
    r->part = NULL;
    if (!r->want_parts) return;
    if (r->nparts == r->parts_cap) {
        chat_part **grown = base_grow(r->parts, sizeof *grown, &r->parts_cap);
        if (!grown) return;
        r->parts = grown;
    }
    jsonw w;
    jw_init(&w, 192 + (ch->msg ? ch->msg->text_len : 0));
    jw_obj(&w);
    chat_change_members(&w, ch->kind, ch->conv, ch->ref, ch->msg);
    size_t len;
    const char *members = jw_open_members(&w, &len);
    chat_part *p = jw_failed(&w) ? NULL : chat_part_new(members, len);
    jw_free(&w);
    if (p) r->parts[r->nparts++] = r->part = p;
}

static int64_t unread_delta(const chat_change *ch, int64_t user)
{
    return ch->unread + (user == ch->who ? ch->who_unread : 0);
}

/* One change for every current member of conv: their next numbers.
 *
 * Two forms, one result. PostgreSQL pays a round trip per statement, so it
 * gets two set statements whatever the group's size. SQLite runs in this
 * process, where the set statements are the costly form: the IN list and
 * the RETURNING rows each fill a temporary b-tree and the multi-row writes
 * open a statement journal, which was 45% of the writer's instructions for
 * a 1:1 message (callgrind); a read of the members' numbers and then two
 * one-row statements a member cost a fifth of that. */
static int fan_out_set(store *db, const chat_change *ch, chat_result *r)
{
    store_stmt *st = store_prepare(db, "UPDATE chat_seqs SET seq = seq + 1, unread = unread + $2 + CASE WHEN "
                                       "user_id = $3 THEN $4 ELSE 0 END WHERE user_id IN (SELECT user_id FROM "
                                       "conv_members WHERE conversation_id = $1 AND left_seq IS NULL) "
                                       "RETURNING user_id, seq, unread");
    store_bind_int64(st, 1, ch->conv);
    store_bind_int64(st, 2, ch->unread);
    store_bind_int64(st, 3, ch->who);
    store_bind_int64(st, 4, ch->who_unread);
    int rc = run(st, r);
    if (rc != STORE_OK) return rc;
    st = store_prepare(db, "INSERT INTO chat_changes (user_id, seq, kind, conversation_id, ref, created_ms) "
                           "SELECT m.user_id, s.seq, $2, $1, $3, $4 FROM conv_members m JOIN chat_seqs s "
                           "ON s.user_id = m.user_id WHERE m.conversation_id = $1 AND m.left_seq IS NULL");
    store_bind_int64(st, 1, ch->conv);
    store_bind_str(st, 2, ch->kind);
    store_bind_int64(st, 3, ch->ref);
    store_bind_int64(st, 4, ch->now);
    return run(st, NULL);
}

/* The change row of user's number seq: in chat_changes, or, when it is
 * one of a fan-out to CHAT_FANOUT_RECENT members or more on SQLite, in
 * chat_recent, in the order of the commits, for chat_settle to move to
 * the user's place later (a message to a group of 500 wrote a page of
 * chat_changes for each member, 580 pages a commit; in chat_recent, 24:
 * chat_settle.c). */
static int change_insert(store *db, int64_t user, int64_t seq, const chat_change *ch, bool recent)
{
    store_stmt *st = store_prepare(db, recent ? "INSERT INTO chat_recent (user_id, seq, kind, conversation_id, ref, "
                                                "created_ms) VALUES ($1, $2, $3, $4, $5, $6)"
                                              : "INSERT INTO chat_changes (user_id, seq, kind, conversation_id, ref, "
                                                "created_ms) VALUES ($1, $2, $3, $4, $5, $6)");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, seq);
    store_bind_str(st, 3, ch->kind);
    store_bind_int64(st, 4, ch->conv);
    store_bind_int64(st, 5, ch->ref);
    store_bind_int64(st, 6, ch->now);
    return run(st, NULL);
}

/* The members' (user, seq, unread), read whole before anything is
 * written (one statement at a time on a connection). */
static int members_seqs(store *db, int64_t conv, int64_t **rows, size_t *n)
{
    size_t cap = 0;
    *rows = NULL;
    *n = 0;
    store_stmt *st = store_prepare(db, "SELECT m.user_id, s.seq, s.unread FROM conv_members m JOIN chat_seqs s "
                                       "ON s.user_id = m.user_id WHERE m.conversation_id = $1 AND m.left_seq IS NULL");
    store_bind_int64(st, 1, conv);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        while (3 * *n + 3 > cap) {
            int64_t *grown = base_grow(*rows, sizeof *grown, &cap);
            if (!grown) break;
            *rows = grown;
        }
        if (3 * *n + 3 > cap) {
            rc = STORE_ERROR;
            break;
        }
        for (int k = 0; k < 3; k++) (*rows)[3 * *n + (size_t)k] = store_col_int64(st, k);
        (*n)++;
    }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

static int fan_out_rows(store *db, const chat_change *ch, chat_result *r)
{
    int64_t *rows;
    size_t n;
    int rc = members_seqs(db, ch->conv, &rows, &n);
    bool recent = n >= CHAT_FANOUT_RECENT;
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        int64_t user = rows[3 * i], seq = rows[3 * i + 1] + 1, unread = rows[3 * i + 2] + unread_delta(ch, user);
        store_stmt *st = store_prepare(db, "UPDATE chat_seqs SET seq = $2, unread = $3 WHERE user_id = $1");
        store_bind_int64(st, 1, user);
        store_bind_int64(st, 2, seq);
        store_bind_int64(st, 3, unread);
        rc = run(st, NULL);
        if (rc != STORE_OK) break;
        rc = change_insert(db, user, seq, ch, recent);
        if (rc == STORE_OK) rc = signal_add(r, user, seq, unread);
        r->nrecent += recent && rc == STORE_OK;
    }
    free(rows);
    return rc;
}

static int fan_out(store *db, const chat_change *ch, chat_result *r)
{
    part_begin(r, ch);
    int rc = store_backend_of(db) == STORE_PG ? fan_out_set(db, ch, r) : fan_out_rows(db, ch, r);
    r->part = NULL;
    return rc;
}

/* One change for one user (a read mark), which moves their unread count
 * by unread. */
static int change_one(store *db, int64_t user, const chat_change *ch, chat_result *r)
{
    store_stmt *st = store_prepare(db, "UPDATE chat_seqs SET seq = seq + 1, unread = unread + $2 WHERE user_id = $1 "
                                       "RETURNING seq, unread");
    store_bind_int64(st, 1, user);
    store_bind_int64(st, 2, ch->unread);
    int rc = store_step(st);
    bool found = rc == STORE_ROW; /* a member has a row (member_put) */
    int64_t seq = found ? store_col_int64(st, 0) : 0, unread = found ? store_col_int64(st, 1) : 0;
    if (found) rc = store_step(st); /* to its end: one row */
    store_reset(st);
    if (!found || rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    rc = change_insert(db, user, seq, ch, false);
    part_begin(r, ch);
    if (rc == STORE_OK) rc = signal_add(r, user, seq, unread);
    r->part = NULL;
    return rc;
}

/* ---- membership ----------------------------------------------------------- */

typedef struct chat_member {
    bool present, active, admin;
    int64_t joined, left, read;
} chat_member;

static int member_of(store *db, int64_t conv, int64_t user, chat_member *m)
{
    memset(m, 0, sizeof *m);
    store_stmt *st = store_prepare(db, "SELECT role, joined_seq, left_seq, read_up_to FROM conv_members "
                                       "WHERE conversation_id = $1 AND user_id = $2");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, user);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        m->present = true;
        m->admin = strcmp(store_col_text(st, 0), "admin") == 0;
        m->joined = store_col_int64(st, 1);
        m->active = store_col_is_null(st, 2);
        m->left = m->active ? 0 : store_col_int64(st, 2);
        m->read = store_col_int64(st, 3);
    }
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : rc;
}

/* The conversation's kind ("" when there is none) and newest number. */
static int conv_of(store *db, int64_t conv, char kind[8], int64_t *last_seq)
{
    kind[0] = '\0';
    store_stmt *st = store_prepare(db, "SELECT kind, last_seq FROM conversations WHERE id = $1");
    store_bind_int64(st, 1, conv);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        snprintf(kind, 8, "%s", store_col_text(st, 0));
        *last_seq = store_col_int64(st, 1);
    }
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : rc;
}

static int active_count(store *db, int64_t conv, int64_t *n)
{
    store_stmt *st =
        store_prepare(db, "SELECT count(*) FROM conv_members WHERE conversation_id = $1 AND left_seq IS NULL");
    store_bind_int64(st, 1, conv);
    int rc = store_step(st);
    *n = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    return rc == STORE_ROW ? STORE_OK : rc;
}

/* Adds (or re-adds) user to conv as of message number at, which moves
 * their unread count by unread (a re-added member's old share goes: they
 * start again from at). */
static int member_put(store *db, int64_t conv, int64_t user, const char *role, int64_t at, int64_t unread)
{
    int rc = seq_row(db, user);
    if (rc != STORE_OK) return rc;
    if (unread != 0) {
        store_stmt *st = store_prepare(db, "UPDATE chat_seqs SET unread = unread + $2 WHERE user_id = $1");
        store_bind_int64(st, 1, user);
        store_bind_int64(st, 2, unread);
        if ((rc = run(st, NULL)) != STORE_OK) return rc;
    }
    store_stmt *st = store_prepare(
        db, "INSERT INTO conv_members (conversation_id, user_id, role, joined_seq, left_seq, read_up_to) "
            "VALUES ($1, $2, $3, $4, NULL, $4) ON CONFLICT (conversation_id, user_id) DO UPDATE SET "
            "left_seq = NULL, joined_seq = $4, read_up_to = $4, role = $3");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, user);
    store_bind_str(st, 3, role);
    store_bind_int64(st, 4, at);
    return run(st, NULL);
}

/* The answer for a conversation: as GET /v1/conversations/{id} shows it. */
static int conv_answer(store *db, int64_t me, int64_t conv, int status, chat_result *r)
{
    json_t *list = NULL;
    int rc = chat_conversations(db, me, conv, &list);
    if (rc != CHAT_OK || json_array_size(list) != 1) {
        json_decref(list);
        return STORE_ERROR;
    }
    r->status = status;
    r->body = json_incref(json_array_get(list, 0));
    json_decref(list);
    return STORE_OK;
}

/* ---- conversations -------------------------------------------------------- */

static int conv_insert(store *db, int64_t id, const char *kind, const char *title, const char *pair, int64_t me,
                       int64_t now, bool *inserted)
{
    store_stmt *st = store_prepare(db, "INSERT INTO conversations (id, kind, title, pair_key, created_by, created_ms, "
                                       "last_seq, last_ms) VALUES ($1, $2, $3, $4, $5, $6, 0, $6) "
                                       "ON CONFLICT DO NOTHING");
    store_bind_int64(st, 1, id);
    store_bind_str(st, 2, kind);
    store_bind_str(st, 3, title);
    store_bind_str(st, 4, pair);
    store_bind_int64(st, 5, me);
    store_bind_int64(st, 6, now);
    int rc = store_step(st);
    *inserted = rc == STORE_DONE && store_changes(st) == 1;
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc;
}

int chat_create_direct(store *db, int64_t me, int64_t other, int64_t now, chat_result *r)
{
    if (other == me) return chat_refuse(r, 422, "invalid_value", "user", "a direct conversation needs another user");
    char pair[40], a[17], b[17];
    base_id_format(me < other ? me : other, a);
    base_id_format(me < other ? other : me, b);
    snprintf(pair, sizeof pair, "%s:%s", a, b);
    bool inserted;
    int64_t id = base_id_new();
    int rc = conv_insert(db, id, "direct", "", pair, me, now, &inserted);
    if (rc == STORE_OK && inserted) rc = member_put(db, id, me, "member", 0, 0);
    if (rc == STORE_OK && inserted) rc = member_put(db, id, other, "member", 0, 0);
    if (rc == STORE_OK && inserted) rc = fan_out(db, &(chat_change){.conv = id, .kind = "conversation", .now = now}, r);
    if (rc == STORE_OK && !inserted) {
        store_stmt *st = store_prepare(db, "SELECT id FROM conversations WHERE pair_key = $1");
        store_bind_str(st, 1, pair);
        rc = store_step(st);
        id = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
        store_reset(st);
        rc = rc == STORE_ROW ? STORE_OK : STORE_ERROR;
    }
    return rc == STORE_OK ? conv_answer(db, me, id, inserted ? 201 : 200, r) : rc;
}

/* A group's client_id is kept in pair_key, which is UNIQUE already: "g:"
 * and the creator's id before it, so it cannot meet a direct pair's key
 * (two ids in hex) nor another creator's. */
static void group_key(int64_t me, const char *client_id, char *key, size_t size)
{
    char id[17];
    base_id_format(me, id);
    snprintf(key, size, "g:%s:%s", id, client_id);
}

/* The group made before under key: 200 with it, while me is still in it. */
static int group_again(store *db, int64_t me, const char *key, chat_result *r)
{
    store_stmt *st = store_prepare(db, "SELECT id FROM conversations WHERE pair_key = $1");
    store_bind_str(st, 1, key);
    int rc = store_step(st);
    int64_t id = rc == STORE_ROW ? store_col_int64(st, 0) : 0;
    store_reset(st);
    if (rc != STORE_ROW) return rc < 0 ? rc : STORE_ERROR;
    chat_member m;
    if ((rc = member_of(db, id, me, &m)) != STORE_OK) return rc;
    if (!m.active)
        return chat_refuse(r, 409, "client_id_used", "client_id", "client_id named a group you have left");
    return conv_answer(db, me, id, 200, r);
}

int chat_create_group(store *db, int64_t me, const char *title, const char *client_id, const int64_t *members,
                      size_t n, const chat_limits *lim, int64_t now, chat_result *r)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        bool dup = members[i] == me;
        for (size_t k = 0; k < i && !dup; k++) dup = members[k] == members[i];
        total += !dup;
    }
    if ((int64_t)total > lim->group_max_members)
        return chat_refuse(r, 422, "too_many", "members", "a group has at most %lld members",
                           (long long)lim->group_max_members);
    bool inserted;
    char key[24 + CHAT_CLIENT_ID_MAX];
    if (client_id) group_key(me, client_id, key, sizeof key);
    int64_t id = base_id_new();
    int rc = conv_insert(db, id, "group", title, client_id ? key : NULL, me, now, &inserted);
    if (rc == STORE_OK && !inserted && client_id) return group_again(db, me, key, r);
    if (rc == STORE_OK && !inserted) rc = STORE_ERROR; /* an id collision: 2^-63 */
    if (rc == STORE_OK) rc = member_put(db, id, me, "admin", 0, 0);
    for (size_t i = 0; i < n && rc == STORE_OK; i++)
        if (members[i] != me) rc = member_put(db, id, members[i], "member", 0, 0);
    if (rc == STORE_OK) rc = fan_out(db, &(chat_change){.conv = id, .kind = "conversation", .now = now}, r);
    return rc == STORE_OK ? conv_answer(db, me, id, 201, r) : rc;
}

int chat_add_members(store *db, int64_t me, int64_t conv, const int64_t *users, size_t n, const chat_limits *lim,
                     int64_t now, chat_result *r)
{
    chat_member m;
    char kind[8];
    int64_t last = 0, count = 0;
    int rc = member_of(db, conv, me, &m);
    if (rc == STORE_OK) rc = conv_of(db, conv, kind, &last);
    if (rc != STORE_OK) return rc;
    if (!m.active) return chat_refuse(r, 404, "not_found", NULL, "no such conversation");
    if (strcmp(kind, "group") != 0)
        return chat_refuse(r, 422, "invalid_value", NULL, "members are added to groups only");
    if (!m.admin) return chat_refuse(r, 403, "forbidden", NULL, "only the group's admin adds members");
    if ((rc = active_count(db, conv, &count)) != STORE_OK) return rc;
    size_t add = 0;
    for (size_t i = 0; i < n; i++) {
        chat_member x;
        if ((rc = member_of(db, conv, users[i], &x)) != STORE_OK) return rc;
        bool dup = x.active;
        for (size_t k = 0; k < i && !dup; k++) dup = users[k] == users[i];
        add += !dup;
    }
    if (count + (int64_t)add > lim->group_max_members)
        return chat_refuse(r, 422, "too_many", "users", "a group has at most %lld members",
                           (long long)lim->group_max_members);
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        chat_member x;
        rc = member_of(db, conv, users[i], &x);
        if (rc != STORE_OK || x.active) continue;
        /* A member removed before had last_seq's share frozen at its
         * left_seq; it starts again from last with none. */
        rc = member_put(db, conv, users[i], "member", last, x.present ? -(x.left - x.read) : 0);
        chat_change ch = {.conv = conv, .kind = "member_added", .ref = users[i], .now = now};
        if (rc == STORE_OK) rc = fan_out(db, &ch, r);
    }
    return rc == STORE_OK ? conv_answer(db, me, conv, 200, r) : rc;
}

int chat_remove_member(store *db, int64_t me, int64_t conv, int64_t user, int64_t now, chat_result *r)
{
    chat_member m, x;
    char kind[8];
    int64_t last = 0;
    int rc = member_of(db, conv, me, &m);
    if (rc == STORE_OK) rc = member_of(db, conv, user, &x);
    if (rc == STORE_OK) rc = conv_of(db, conv, kind, &last);
    if (rc != STORE_OK) return rc;
    if (!m.active) return chat_refuse(r, 404, "not_found", NULL, "no such conversation");
    if (strcmp(kind, "group") != 0) return chat_refuse(r, 422, "invalid_value", NULL, "only groups have members to remove");
    if (user != me && !m.admin) return chat_refuse(r, 403, "forbidden", NULL, "only the admin removes others");
    if (!x.active) return chat_refuse(r, 404, "not_found", "user", "no such member");
    /* Everyone, the one leaving included, hears of it; then it leaves. */
    rc = fan_out(db, &(chat_change){.conv = conv, .kind = "member_removed", .ref = user, .now = now}, r);
    store_stmt *st = store_prepare(db, "UPDATE conv_members SET left_seq = $3 WHERE conversation_id = $1 AND user_id = $2");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, user);
    store_bind_int64(st, 3, last);
    if (rc == STORE_OK) rc = run(st, NULL);
    else store_reset(st);
    if (rc == STORE_OK) r->status = 204;
    return rc;
}

/* ---- messages ------------------------------------------------------------- */

#define MSG_COLS "conversation_id, seq, id, sender_id, client_msg_id, text, sent_ms"

/* How far back a retried send's change is looked for: a retry comes soon
 * after its first try, and the look runs on the writer's thread, which
 * every message waits for; a client retrying an old message over and over
 * must not make it walk a month of changes each time. */
#define CHAT_RETRY_LOOKBACK 1000

/* The sender's change number for its message seq in conv (the 201's
 * user_seq), for a retried send: null when the change is more than
 * CHAT_RETRY_LOOKBACK changes back, or past the sync retention. */
static int original_user_seq(store *db, int64_t conv, int64_t me, int64_t seq, json_t *body)
{
    store_stmt *st = store_prepare(db, "SELECT max(c.seq) FROM (SELECT seq, conversation_id, kind, ref FROM chat_recent "
                                       "WHERE user_id = $1 AND seq > (SELECT s.seq FROM chat_seqs s WHERE "
                                       "s.user_id = $1) - $4 UNION ALL SELECT seq, conversation_id, kind, ref FROM "
                                       "chat_changes WHERE user_id = $1 AND seq > (SELECT s.seq FROM chat_seqs s "
                                       "WHERE s.user_id = $1) - $4) c WHERE c.conversation_id = $2 AND "
                                       "c.kind = 'message' AND c.ref = $3");
    store_bind_int64(st, 1, me);
    store_bind_int64(st, 2, conv);
    store_bind_int64(st, 3, seq);
    store_bind_int64(st, 4, CHAT_RETRY_LOOKBACK);
    int rc = store_step(st);
    json_t *v = rc == STORE_ROW && !store_col_is_null(st, 0) ? json_integer(store_col_int64(st, 0)) : json_null();
    if (rc == STORE_ROW) rc = store_step(st); /* to its end: one row */
    store_reset(st);
    if (rc != STORE_ROW && rc != STORE_DONE) {
        json_decref(v);
        return rc;
    }
    return json_object_set_new(body, "user_seq", v) == 0 ? STORE_OK : STORE_ERROR;
}

/* A retried send: the original, when there is one. */
static int find_original(store *db, int64_t conv, int64_t me, const char *client_id, chat_result *r, bool *found)
{
    store_stmt *st = store_prepare(db, "SELECT " MSG_COLS " FROM messages WHERE conversation_id = $1 AND "
                                       "sender_id = $2 AND client_msg_id = $3");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, me);
    store_bind_str(st, 3, client_id);
    int rc = store_step(st);
    *found = rc == STORE_ROW;
    int64_t seq = *found ? store_col_int64(st, 1) : 0;
    if (*found) {
        r->status = 200;
        r->body = chat_message_json(st, 0);
    }
    store_reset(st);
    if (*found && !r->body) return STORE_ERROR;
    if (*found) return original_user_seq(db, conv, me, seq, r->body);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : rc;
}

/* The sender's standing in conv (*active false: not a member now), its
 * read mark and the conversation's newest number, in one read. */
static int sender_of(store *db, int64_t conv, int64_t me, bool *active, int64_t *read, int64_t *last_seq)
{
    store_stmt *st = store_prepare(db, "SELECT m.left_seq, c.last_seq, m.read_up_to FROM conv_members m JOIN "
                                       "conversations c ON c.id = m.conversation_id WHERE m.conversation_id = $1 "
                                       "AND m.user_id = $2");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, me);
    int rc = store_step(st);
    *active = rc == STORE_ROW && store_col_is_null(st, 0);
    *last_seq = rc == STORE_ROW ? store_col_int64(st, 1) : 0;
    *read = rc == STORE_ROW ? store_col_int64(st, 2) : 0;
    store_reset(st);
    return rc == STORE_ROW || rc == STORE_DONE ? STORE_OK : rc;
}

/* Takes the conversation's next number. The read of the last one (sender_of)
 * and this write are in one transaction that holds the conversation (the
 * write lock on SQLite, the row lock taken first on PostgreSQL): no other
 * writer can take the same number. Not UPDATE ... RETURNING: on SQLite
 * RETURNING fills a temporary b-tree on every call. */
static int next_number(store *db, int64_t conv, int64_t seq, int64_t now)
{
    store_stmt *st = store_prepare(db, "UPDATE conversations SET last_seq = $2, last_ms = $3 WHERE id = $1");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, seq);
    store_bind_int64(st, 3, now);
    int rc = store_step(st);
    bool one = rc == STORE_DONE && store_changes(st) == 1;
    store_reset(st);
    return one ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

/* The message's row, unless its sender sent this client_msg_id here
 * before (*fresh false, nothing written): the probe of messages_client
 * that the insert makes anyway is the check for a retried send, so a new
 * message pays for no read of its own for it (a tenth of the writer's
 * statements, callgrind). */
static int message_insert(store *db, int64_t conv, int64_t seq, int64_t id, int64_t me, const char *client_id,
                          const char *text, int64_t now, bool *fresh)
{
    store_stmt *st = store_prepare(db, "INSERT INTO messages (" MSG_COLS ") VALUES ($1, $2, $3, $4, $5, $6, $7) "
                                       "ON CONFLICT (conversation_id, sender_id, client_msg_id) DO NOTHING");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, seq);
    store_bind_int64(st, 3, id);
    store_bind_int64(st, 4, me);
    store_bind_str(st, 5, client_id);
    store_bind_str(st, 6, text);
    store_bind_int64(st, 7, now);
    int rc = store_step(st);
    *fresh = rc == STORE_DONE && store_changes(st) == 1;
    store_reset(st);
    if (rc != STORE_DONE) return rc < 0 ? rc : STORE_ERROR;
    if (!*fresh) return STORE_OK;
    /* The sender has read what it sent. */
    st = store_prepare(db, "UPDATE conv_members SET read_up_to = $3 WHERE conversation_id = $1 AND user_id = $2 "
                           "AND read_up_to < $3");
    store_bind_int64(st, 1, conv);
    store_bind_int64(st, 2, me);
    store_bind_int64(st, 3, seq);
    return run(st, NULL);
}

/* The 201's body, as chat_message_json would show the message, and
 * "user_seq": the sender's own change number for it. A device that knows
 * it needs no pull for its own message: when its sync frame says
 * user_seq and the device had everything up to user_seq - 1, it is up to
 * date (Telegram's pts of a sent message). */
static int message_render(chat_result *r, const chat_msg *m)
{
    jsonw w;
    jw_init(&w, 256 + m->text_len + strlen(m->client_id));
    jw_obj(&w);
    chat_message_members(&w, m);
    jw_kint(&w, "user_seq", r->self_seq);
    jw_obj_end(&w);
    if (jw_failed(&w)) {
        jw_free(&w);
        return STORE_ERROR;
    }
    r->rendered = w.buf; /* the writer's buffer, handed over */
    r->rendered_len = w.len;
    return STORE_OK;
}

int chat_send(store *db, int64_t me, int64_t conv, const char *client_id, const char *text, int64_t id,
              int64_t now, chat_result *r)
{
    bool active, found;
    int64_t last, read;
    int rc = sender_of(db, conv, me, &active, &read, &last);
    if (rc != STORE_OK) return rc;
    if (!active) return chat_refuse(r, 404, "not_found", NULL, "no such conversation");
    int64_t seq = last + 1;
    bool fresh;
    if ((rc = message_insert(db, conv, seq, id, me, client_id, text, now, &fresh)) != STORE_OK) return rc;
    if (!fresh) { /* a retried send: the original */
        rc = find_original(db, conv, me, client_id, r, &found);
        return rc == STORE_OK && !found ? STORE_ERROR : rc;
    }
    rc = next_number(db, conv, seq, now);
    r->self = me;
    chat_msg m = {.conv = conv, .seq = seq, .id = id, .sender = me, .sent_ms = now, .client_id = client_id,
                  .text = text, .text_len = strlen(text)};
    /* One more unread for every member; the sender has read up to it. */
    chat_change ch = {.conv = conv, .kind = "message", .ref = seq, .now = now, .unread = 1, .who = me,
                      .who_unread = -(seq - read), .msg = &m};
    if (rc == STORE_OK) rc = fan_out(db, &ch, r);
    if (rc != STORE_OK) return rc;
    r->status = 201;
    return message_render(r, &m);
}

int chat_read(store *db, int64_t me, int64_t conv, int64_t up_to, int64_t now, chat_result *r)
{
    chat_member m;
    char kind[8];
    int64_t last = 0;
    int rc = member_of(db, conv, me, &m);
    if (rc == STORE_OK) rc = conv_of(db, conv, kind, &last);
    if (rc != STORE_OK) return rc;
    if (!m.present) return chat_refuse(r, 404, "not_found", NULL, "no such conversation");
    int64_t visible = m.active ? last : m.left;
    if (up_to > visible) up_to = visible; /* never past what exists */
    bool moved = up_to > m.read;
    if (moved) {
        store_stmt *st = store_prepare(db, "UPDATE conv_members SET read_up_to = $3 WHERE conversation_id = $1 "
                                           "AND user_id = $2 AND read_up_to < $3");
        store_bind_int64(st, 1, conv);
        store_bind_int64(st, 2, me);
        store_bind_int64(st, 3, up_to);
        rc = run(st, NULL);
        /* The user's other devices learn of it through their sequence. */
        chat_change ch = {.conv = conv, .kind = "read", .ref = up_to, .now = now, .unread = -(up_to - m.read)};
        if (rc == STORE_OK) rc = change_one(db, me, &ch, r);
    }
    if (rc != STORE_OK) return rc;
    int64_t read = moved ? up_to : m.read;
    r->status = 200;
    r->body = json_pack("{s:I,s:I}", "read_up_to", (json_int_t)read, "unread", (json_int_t)(visible - read));
    return r->body ? STORE_OK : STORE_ERROR;
}
