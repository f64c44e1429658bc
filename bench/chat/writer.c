/* writer.c -- the chat writer's work for 1:1 messages, alone, for
 * callgrind: a fresh SQLite file with 2,000 users in 1,000 direct
 * conversations, then batches of 20 chat_send calls in one transaction
 * each, as chat_writer.c runs them (a warm-up of 200 batches, then the
 * measured ones). bench/chat/writer.sh counts the instructions a message
 * inside run_batches; the whole server's figures come from run.sh.
 *
 * usage: chatwriter PATH.db [batches] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "chat/chat.h"
#include "schema.h"
#include "store/store.h"

#define USERS 2000
#define BATCH 20
#define TEXT "hello there, a message of some length for the bench"

static void die(const char *what, store *s)
{
    fprintf(stderr, "chatwriter: %s: %s\n", what, s ? store_errmsg(s) : "");
    exit(1);
}

static void user_add(store *s, int64_t id)
{
    char email[32];
    snprintf(email, sizeof email, "u%lld@x.com", (long long)id);
    store_stmt *st = store_prepare(s, "INSERT INTO users (id, email, email_lower, name, password_hash, created_ms) "
                                      "VALUES ($1, $2, $2, 'n', 'h', 0)");
    store_bind_int64(st, 1, id);
    store_bind_str(st, 2, email);
    if (store_step(st) != STORE_DONE) die("a user", s);
    store_reset(st);
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

/* Messages between random pairs, by either side; ids count from *next. */
__attribute__((noinline)) void run_batches(store *s, const int64_t *convs, int batches, int64_t *next)
{
    char cid[32];
    for (int b = 0; b < batches; b++) {
        if (store_begin(s) != STORE_OK) die("begin", s);
        for (int i = 0; i < BATCH; i++) {
            int p = rand() % (USERS / 2);
            int64_t me = 1 + 2 * p + (rand() & 1), id = ++*next;
            snprintf(cid, sizeof cid, "c%lld", (long long)id);
            chat_result r = {0};
            if (chat_send(s, me, convs[p], cid, TEXT, id, base_now_ms(), &r) != STORE_OK || r.status != 201)
                die("a send", s);
            chat_result_free(&r);
        }
        if (store_commit(s) != STORE_OK) die("commit", s);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || base_init() != 0) {
        fprintf(stderr, "usage: chatwriter PATH.db [batches]\n");
        return 2;
    }
    char url[4096], err[256];
    snprintf(url, sizeof url, "sqlite:%s", argv[1]);
    store *s = store_open(url, err, sizeof err);
    store_schema schema;
    if (!s) die(err, NULL);
    if (chime_schema(&schema) != 0 || store_migrate(s, &schema) != STORE_OK) die("migrate", s);
    if (store_exec(s, "PRAGMA cache_size = -65536") != STORE_OK) die("cache_size", s); /* as the writer's */
    static int64_t convs[USERS / 2];
    if (store_begin(s) != STORE_OK) die("begin", s);
    for (int64_t u = 1; u <= USERS; u++) user_add(s, u);
    for (int p = 0; p < USERS / 2; p++) convs[p] = direct(s, 1 + 2 * p, 2 + 2 * p);
    if (store_commit(s) != STORE_OK) die("commit", s);
    int batches = argc > 2 ? atoi(argv[2]) : 250;
    int64_t next = 1000000;
    srand(1);
    run_batches(s, convs, 200, &next);
    run_batches(s, convs, batches, &next);
    store_close(s);
    printf("%d messages measured after %d warm-up\n", batches * BATCH, 200 * BATCH);
    return 0;
}
