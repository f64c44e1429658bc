/* writer.c -- the chat writer's work for 1:1 messages, alone, for
 * callgrind: a fresh SQLite file with 2,000 users in 1,000 direct
 * conversations, then batches of 20 chat_send calls in one transaction
 * each, as chat_writer.c runs them (a warm-up of 200 batches, then the
 * measured ones). bench/chat/writer.sh counts the instructions a message
 * inside run_batches; the whole server's figures come from run.sh.
 * With "group": a group of GROUP of those users, and one message to it a
 * transaction (run_group), as the bench's rounds send them.
 * The changes of a group message wait in chat_recent and are settled
 * (chat_settle.c) as a writer with pauses between writes settles them:
 * all, once 8,192 wait (CHAT_SETTLE_MIN); with "busy", as a writer that
 * never pauses does: a settle after a message while more than 16,384
 * wait (CHAT_RECENT_MAX). The WAL is left to grow, as the server's
 * checkpointer thread, not the writer, copies it. Commits are synced as
 * the writer syncs them (synchronous=NORMAL, then the WAL's fdatasync;
 * settles not at all). Prints the wall and CPU
 * time a message of the measured part, settles included.
 *
 * usage: chatwriter PATH.db [batches [group [busy]]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "chat/chat.h"
#include "chat/chat_settle.h"
#include "schema.h"
#include "store/store.h"
#include "users/users.h"

#define USERS 2000
#define BATCH 20
#define GROUP 500
#define TEXT "hello there, a message of some length for the bench"

static void die(const char *what, store *s)
{
    fprintf(stderr, "chatwriter: %s: %s\n", what, s ? store_errmsg(s) : "");
    exit(1);
}

/* A batch's commit as the writer makes it: written with
 * synchronous=NORMAL, then the WAL synced (chat_writer.c's syncer). */
static void commit_synced(store *s)
{
    if (store_commit(s) != STORE_OK) die("commit", s);
    if (store_sync_log(s) != STORE_OK) die("sync", s);
}

static int64_t user_add(store *s, int n)
{
    char email[32];
    users_account a;
    snprintf(email, sizeof email, "u%d@x.com", n);
    if (users_create(s, email, "n", "h", &a) != USERS_OK) die("a user", s);
    return a.id;
}

static int64_t direct(store *s, int64_t a, int64_t b)
{
    chat_result r = {0};
    if (chat_create_direct(s, a, b, 0, &r) != STORE_OK || r.status != 201) die("a conversation", s);
    int64_t id = 0;
    const char *text = json_string_value(json_object_get(r.body, "id"));
    if (!text || base_id_parse(text, strlen(text), &id) != 0) die("a conversation's id", NULL);
    chat_result_free(&r);
    return id;
}

typedef struct pair {
    int64_t users[2], conv;
} pair;

static bool busy;      /* the writer never pauses (see the top) */
static int64_t waiting; /* changes in chat_recent */
static chat_settle_at at; /* the settles' walk */

/* Settles as the writer does (chat_writer.c), after a write that put
 * added changes in chat_recent. */
static void settle(store *s, size_t added)
{
    bool more = true;
    waiting += (int64_t)added;
    if (!busy && waiting < 8192) return;
    while (more && waiting > (busy ? 16384 : 0)) {
        if (chat_settle(s, &at, &more) != STORE_OK) die("settle", s);
        waiting = more ? waiting - CHAT_SETTLE_ROWS : 0;
    }
}

static void tail_put(chat_tail *t, chat_result *r)
{
    int64_t now = base_now_ms();
    for (size_t k = 0; k < r->nsignal; k++) chat_tail_put(t, r->signal[k].user, r->signal[k].seq, r->signal[k].part, now);
}

/* Messages between random pairs, by either side; ids count from *next.
 * Each batch's changes go to the tail after its commit, as the writer
 * puts them (SQLite keeps one: chat_tail.h). */
__attribute__((noinline)) void run_batches(store *s, chat_tail *t, const pair *pairs, int batches, int64_t *next)
{
    char cid[32];
    chat_result r[BATCH];
    for (int b = 0; b < batches; b++) {
        if (store_begin(s) != STORE_OK) die("begin", s);
        for (int i = 0; i < BATCH; i++) {
            const pair *p = &pairs[rand() % (USERS / 2)];
            int64_t me = p->users[rand() & 1], id = ++*next;
            snprintf(cid, sizeof cid, "c%lld", (long long)id);
            r[i] = (chat_result){.want_parts = true};
            if (chat_send(s, me, p->conv, cid, TEXT, id, base_now_ms(), &r[i]) != STORE_OK || r[i].status != 201)
                die("a send", s);
        }
        commit_synced(s);
        size_t added = 0;
        for (int i = 0; i < BATCH; i++) {
            added += r[i].nrecent;
            tail_put(t, &r[i]);
            chat_result_free(&r[i]);
        }
        settle(s, added);
    }
}

/* Messages to a group by random members, one a transaction. */
__attribute__((noinline)) void run_group(store *s, chat_tail *t, const int64_t *members, int64_t conv, int n,
                                         int64_t *next)
{
    char cid[32];
    for (int b = 0; b < n; b++) {
        int64_t me = members[rand() % GROUP], id = ++*next;
        snprintf(cid, sizeof cid, "g%lld", (long long)id);
        chat_result r = {.want_parts = true};
        if (store_begin(s) != STORE_OK) die("begin", s);
        if (chat_send(s, me, conv, cid, TEXT, id, base_now_ms(), &r) != STORE_OK || r.status != 201)
            die("a group send", s);
        commit_synced(s);
        tail_put(t, &r);
        size_t added = r.nrecent;
        chat_result_free(&r);
        settle(s, added);
    }
}

static int64_t group(store *s, const pair *pairs, int64_t *members)
{
    for (int i = 0; i < GROUP; i++) members[i] = pairs[i / 2].users[i % 2];
    chat_result r = {0};
    chat_limits lim = {.group_max_members = GROUP};
    if (store_begin(s) != STORE_OK) die("begin", s);
    if (chat_create_group(s, members[0], "g", NULL, members + 1, GROUP - 1, &lim, 0, &r) != STORE_OK || r.status != 201)
        die("a group", s);
    if (store_commit(s) != STORE_OK) die("commit", s);
    int64_t id = 0;
    const char *text = json_string_value(json_object_get(r.body, "id"));
    if (!text || base_id_parse(text, strlen(text), &id) != 0) die("a group's id", NULL);
    chat_result_free(&r);
    return id;
}

/* The WAL's length in bytes (it only grows here: see the top). */
static int64_t wal_bytes(const char *db)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s-wal", db);
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static void report(int messages, int64_t t0, clock_t c0, const char *db, int64_t wal0)
{
    printf("%.3f ms a message, %.3f ms of CPU, %.1f WAL frames\n", (double)(base_now_ms() - t0) / messages,
           (double)(clock() - c0) * 1000.0 / CLOCKS_PER_SEC / messages,
           (double)(wal_bytes(db) - wal0) / (4096 + 24) / messages);
}

int main(int argc, char **argv)
{
    if (argc < 2 || base_init() != 0) {
        fprintf(stderr, "usage: chatwriter PATH.db [batches [group [busy]]]\n");
        return 2;
    }
    char url[4096], err[256];
    snprintf(url, sizeof url, "sqlite:%s", argv[1]);
    store *s = store_open(url, err, sizeof err);
    store_schema schema;
    if (!s) die(err, NULL);
    if (chime_schema(&schema) != 0 || store_migrate(s, &schema) != STORE_OK) die("migrate", s);
    if (store_exec(s, "PRAGMA cache_size = -65536") != STORE_OK || /* as the writer's */
        store_exec(s, "PRAGMA wal_autocheckpoint = 262144") != STORE_OK ||
        store_exec(s, "PRAGMA synchronous = NORMAL") != STORE_OK)
        die("pragmas", s);
    static pair pairs[USERS / 2];
    if (store_begin(s) != STORE_OK) die("begin", s);
    for (int i = 0; i < USERS / 2; i++) {
        pair *p = &pairs[i];
        p->users[0] = user_add(s, 2 * i);
        p->users[1] = user_add(s, 2 * i + 1);
        p->conv = direct(s, p->users[0], p->users[1]);
    }
    if (store_commit(s) != STORE_OK) die("commit", s);
    int batches = argc > 2 ? atoi(argv[2]) : 250;
    int64_t next = 1000000;
    srand(1);
    chat_tail *t = chat_tail_new();
    if (!t) die("out of memory", s);
    busy = argc > 4 && strcmp(argv[4], "busy") == 0;
    if (argc > 3 && strcmp(argv[3], "group") == 0) {
        static int64_t members[GROUP];
        int64_t conv = group(s, pairs, members);
        run_group(s, t, members, conv, 20, &next);
        clock_t c0 = clock();
        int64_t t0 = base_now_ms(), wal0 = wal_bytes(argv[1]);
        run_group(s, t, members, conv, batches, &next);
        report(batches, t0, c0, argv[1], wal0);
        printf("%d group messages measured after 20 warm-up\n", batches);
    } else {
        run_batches(s, t, pairs, 200, &next);
        clock_t c0 = clock();
        int64_t t0 = base_now_ms(), wal0 = wal_bytes(argv[1]);
        run_batches(s, t, pairs, batches, &next);
        report(batches * BATCH, t0, c0, argv[1], wal0);
        printf("%d messages measured after %d warm-up\n", batches * BATCH, 200 * BATCH);
    }
    chat_tail_free(t);
    store_close(s);
    return 0;
}
