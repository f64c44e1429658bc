/* notify_inbox.c -- an inbox row as the API shows it: read from the
 * columns the inbox page and the delivering INSERTs' RETURNING share, and
 * written as JSON for GET /v1/notifications and the WebSocket "reminder"
 * frame alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "notify/notify.h"
#include "time/rfc3339.h"

bool notify_inbox_item_read(store_stmt *st, int at, notify_inbox_item *it)
{
    memset(it, 0, sizeof *it);
    it->user_id = store_col_int64(st, at);
    it->seq = store_col_int64(st, at + 1);
    snprintf(it->delivery_id, sizeof it->delivery_id, "%s", store_col_text(st, at + 2));
    it->event_id = store_col_int64(st, at + 3);
    it->summary = strdup(store_col_text(st, at + 4));
    it->original_ms = store_col_int64(st, at + 5);
    it->due_ms = store_col_int64(st, at + 6);
    it->fired_ms = store_col_int64(st, at + 7);
    it->late = store_col_int64(st, at + 8) != 0;
    snprintf(it->method, sizeof it->method, "%s", store_col_text(st, at + 9));
    it->read = store_col_int64(st, at + 10) != 0;
    it->xid = store_col_int64(st, at + 11);
    return it->summary != NULL;
}

void notify_inbox_item_free(notify_inbox_item *it)
{
    free(it->summary);
    it->summary = NULL;
}

static json_t *time_json(int64_t ms)
{
    char buf[32];
    rfc3339_format_ms(ms, buf, sizeof buf);
    return json_string(buf);
}

json_t *notify_inbox_item_json(const notify_inbox_item *it)
{
    char id[17], ev[17];
    base_id_format(it->id, id);
    base_id_format(it->event_id, ev);
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:b,s:s,s:b}", "id", id, "delivery_id", it->delivery_id, "event_id",
                     ev, "summary", it->summary, "original_start", time_json(it->original_ms), "due",
                     time_json(it->due_ms), "fired", time_json(it->fired_ms), "late", it->late, "method", it->method,
                     "read", it->read);
}

int notify_inbox_key(store *db, unsigned char key[BASE_ID_KEY_LEN])
{
    store_stmt *st = store_prepare(db, "SELECT value FROM server_keys WHERE name = 'inbox_ids'");
    int rc = store_step(st);
    bool ok = rc == STORE_ROW && store_col_len(st, 0) == 2 * BASE_ID_KEY_LEN;
    const char *hex = ok ? store_col_text(st, 0) : "";
    for (int i = 0; ok && i < BASE_ID_KEY_LEN; i++) {
        unsigned v;
        ok = sscanf(hex + 2 * i, "%2x", &v) == 1;
        key[i] = (unsigned char)v;
    }
    store_reset(st);
    return ok ? STORE_OK : rc == STORE_ROW || rc == STORE_DONE ? STORE_ERROR : rc;
}
