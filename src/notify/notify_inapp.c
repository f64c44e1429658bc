/* notify_inapp.c -- in-app delivery: a batch of due in-app rows becomes
 * inbox rows in set statements, one transaction a batch, guarded so that
 * two transactions delivering the same row give the user one inbox row.
 * Also the helpers every batch statement uses (ids as a JSON list). */
#include "notify/notify_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* The ids of a batch as a JSON array, the one list parameter both
 * backends can take apart (json_each / json_array_elements_text). Ids are
 * hex digits: nothing to escape. Caller frees. */
char *notify_ids_json(const notify_item *its, size_t n)
{
    char *out = malloc(n * (NOTIFY_ID_LEN + 3) + 3);
    if (!out) return NULL;
    size_t k = 0;
    out[k++] = '[';
    for (size_t i = 0; i < n; i++) {
        if (i) out[k++] = ',';
        out[k++] = '"';
        size_t len = strlen(its[i].id);
        memcpy(out + k, its[i].id, len);
        k += len;
        out[k++] = '"';
    }
    out[k++] = ']';
    out[k] = '\0';
    return out;
}

/* Runs one set statement over the batch: $1 the ids, $2 now (or another
 * time), $3 when arg3 is given (PostgreSQL refuses a parameter the
 * statement does not use). */
int notify_batch_exec(store *db, const char *sql, const char *ids, int64_t now, const int64_t *arg3)
{
    store_stmt *st = store_prepare(db, sql);
    store_bind_str(st, 1, ids);
    store_bind_int64(st, 2, now);
    if (arg3) store_bind_int64(st, 3, *arg3);
    int rc = store_step(st);
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

#define LATE_SQL "CASE WHEN $2 - due_ms > $3 THEN 1 ELSE 0 END"
#define REMINDER_LIVE "EXISTS (SELECT 1 FROM reminders r WHERE r.id = deliveries.reminder_id)"

#define INAPP_INBOX(BATCH, TAIL)                                                                           \
    "INSERT INTO notifications (user_id, delivery_id, event_id, summary, original_start_ms, due_ms, "      \
    "fired_ms, late, method, read, created_ms) SELECT user_id, id, event_id, summary, occurrence_ms, "     \
    "due_ms, $2, " LATE_SQL ", 'push', 0, $2 FROM deliveries WHERE " BATCH " AND " REMINDER_LIVE            \
    " ORDER BY due_ms ON CONFLICT (delivery_id) DO NOTHING" TAIL
#define INAPP_FINISH(BATCH)                                                                                \
    "UPDATE deliveries SET state = CASE WHEN " REMINDER_LIVE " THEN 'done' ELSE 'cancelled' END, "         \
    "fired_ms = $2, late = " LATE_SQL ", attempts = attempts + 1, updated_ms = $2 WHERE " BATCH
/* PostgreSQL does both in one statement: the outbox rows' update returns
 * the ones it made done, and only those get an inbox row. The update is
 * what keeps the inbox free of duplicates there, not a unique index on
 * notifications.delivery_id (dropped by migration 7: it was a third of
 * the inbox INSERT's cost): a row changes from pending once, since a
 * second transaction updating it waits for the first's row lock and then
 * finds it no longer pending (and a claim inserts a row done only when
 * its INSERT won). SQLite runs one writer at a time and keeps the index. */
#define INAPP_DELIVER_PG(TAIL)                                                                             \
    "WITH d AS (" INAPP_FINISH(NOTIFY_BATCH_PG) " RETURNING user_id, id, event_id, summary, occurrence_ms, "     \
    "due_ms, late, state) INSERT INTO notifications (user_id, delivery_id, event_id, summary, "            \
    "original_start_ms, due_ms, fired_ms, late, method, read, created_ms) SELECT user_id, id, event_id, "  \
    "summary, occurrence_ms, due_ms, $2, late, 'push', 0, $2 FROM d WHERE state = 'done' ORDER BY due_ms" TAIL

/* In-app, a whole batch in set statements: under the skip policy late
 * ones become missed; the rest get their inbox row (unless their
 * reminder is gone: event deleted, attendee declined) and leave the
 * outbox as done, or cancelled. Only rows still pending are touched, so a
 * batch that overlaps another node's takeover changes nothing twice. */
/* Runs the inbox INSERT; with out, reads back the rows it wrote. */
static int inbox_exec(store *db, const char *sql, const char *ids, int64_t now, int64_t grace, notify_inbox_item **out,
                      size_t *n, size_t *cap)
{
    if (!out) return notify_batch_exec(db, sql, ids, now, &grace);
    store_stmt *st = store_prepare(db, sql);
    store_bind_str(st, 1, ids);
    store_bind_int64(st, 2, now);
    store_bind_int64(st, 3, grace);
    int rc;
    while ((rc = store_step(st)) == STORE_ROW) {
        if (*n == *cap) {
            notify_inbox_item *grown = base_grow(*out, sizeof *grown, cap);
            if (!grown) break;
            *out = grown;
        }
        if (notify_inbox_item_read(st, 0, &(*out)[*n])) ++*n;
    }
    store_reset(st);
    return rc == STORE_DONE ? STORE_OK : rc < 0 ? rc : STORE_ERROR;
}

int notify_deliver_inapp_items(store *db, const char *ids, int64_t now_ms, notify_late_policy policy,
                               int64_t grace_ms, notify_inbox_item **out, size_t *n, size_t *cap)
{
    bool pg = store_backend_of(db) == STORE_PG;
    int rc;
    const char *missed = pg ? NOTIFY_LATE_MISSED(NOTIFY_BATCH_PG) : NOTIFY_LATE_MISSED(NOTIFY_BATCH_SQLITE);
    if (policy == NOTIFY_LATE_SKIP && (rc = notify_batch_exec(db, missed, ids, now_ms, &grace_ms)) != STORE_OK)
        return rc;
    if (pg)
        return inbox_exec(db, out ? INAPP_DELIVER_PG(NOTIFY_INBOX_RETURNING_PG) : INAPP_DELIVER_PG(""), ids, now_ms, grace_ms,
                          out, n, cap);
    rc = inbox_exec(db, out ? INAPP_INBOX(NOTIFY_BATCH_SQLITE, NOTIFY_INBOX_RETURNING_SQLITE) : INAPP_INBOX(NOTIFY_BATCH_SQLITE, ""),
                    ids, now_ms, grace_ms, out, n, cap);
    if (rc != STORE_OK) return rc;
    return notify_batch_exec(db, INAPP_FINISH(NOTIFY_BATCH_SQLITE), ids, now_ms, &grace_ms);
}

int notify_deliver_inapp(store *db, const char *ids, int64_t now_ms, notify_late_policy policy, int64_t grace_ms)
{
    return notify_deliver_inapp_items(db, ids, now_ms, policy, grace_ms, NULL, NULL, NULL);
}

void notify_inbox_items_free(notify_inbox_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) notify_inbox_item_free(&items[i]);
    free(items);
}

void notify_deliver_inapp_batch(notify_engine *e, store *db, const notify_item *its, size_t n)
{
    if (n == 0) return;
    char *ids = notify_ids_json(its, n);
    if (!ids) return; /* left pending: the outbox poll retries them after the hold */
    notify_inbox_item *items = NULL;
    size_t nitems = 0, cap = 0;
    bool listen = e->o.on_inbox != NULL, done = false;
    store_gate_lock(&e->gate);
    for (int attempt = 0; attempt < 3 && !done; attempt++) {
        int rc = store_begin(db);
        if (rc == STORE_OK)
            rc = notify_deliver_inapp_items(db, ids, base_now_ms(), e->o.late_policy, e->o.grace_ms,
                                            listen ? &items : NULL, &nitems, &cap);
        done = rc == STORE_OK && store_commit(db) == STORE_OK;
        if (!done) {
            store_rollback(db);
            log_warn("reminders: in-app delivery batch failed: %s", store_errmsg(db));
            notify_inbox_items_free(items, nitems);
            items = NULL;
            nitems = cap = 0;
        }
    }
    store_gate_unlock(&e->gate);
    free(ids);
    /* Left pending on failure: the outbox poll retries them after the hold. */
    notify_inbox_announce(e, items, nitems);
    notify_inbox_items_free(items, nitems);
}

void notify_inbox_announce(notify_engine *e, notify_inbox_item *items, size_t n)
{
    if (n == 0 || !e->has_inbox_key) return; /* without the key no id can be shown */
    for (size_t i = 0; i < n; i++) items[i].id = base_id_conceal(e->inbox_key, items[i].seq);
    if (!e->visible || !notify_visible_put(e->visible, items, n)) e->o.on_inbox(e->o.on_inbox_arg, items, n);
}

