/* hot_compute.c -- the job hot.recompute (every --hot-every, on the one
 * node holding its lease).
 *
 * 1. Scan: the counts of the posts created in the window (hot_counts'
 *    created_ms index holds the counts too, so SQLite reads one index
 *    range and nothing else), each scored and offered to a min-heap of
 *    the best K + margin: O(n log K) time, K entries of memory, however
 *    many posts had activity. Nothing is sorted by the database.
 * 2. Check: the survivors, best first, against the posts: deleted ones and
 *    reposts are passed over, and the rest give their author and text,
 *    until K are found. When too many fell out to fill K from the margin,
 *    scan again with a larger margin (rare: a margin of K covers K
 *    deletions among the top 2K).
 * 3. Publish, in the job's fenced transaction: the next version, with the
 *    list as served, in hot_lists, and the run recorded; a node that lost
 *    the lease meanwhile writes nothing. Then the local snapshot, then
 *    Redis (hot_cache.c). A failed run changes nothing: the previous list
 *    keeps serving, and /metrics counts the failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/lease.h"
#include "feed/feed.h"
#include "hot/hot_int.h"
#include "time/rfc3339.h"

#define SCAN_CHECK_EVERY 65536 /* rows between looks at jobs_run_should_stop */
#define VIEWS_PRUNE_MS 600000  /* counted-view rows an hour old go every 10 minutes */
#define VIEWS_PRUNE_BATCH 5000

/* Step 1. *seen: rows scanned. */
static int scan(jobs_run *r, const hot_service *h, int64_t now, hot_heap *heap, int64_t *seen)
{
    store *db = jobs_run_db(r);
    store_stmt *st = store_prepare(db, "SELECT post_id, created_ms, likes, comments, shares, views FROM hot_counts "
                                       "WHERE created_ms >= $1");
    store_bind_int64(st, 1, now - h->o.window_ms);
    int rc;
    *seen = 0;
    while ((rc = store_step(st)) == STORE_ROW) {
        hot_entry e = {.post_id = store_col_int64(st, 0), .created_ms = store_col_int64(st, 1)};
        e.counts = (hot_counts){.likes = store_col_int64(st, 2), .comments = store_col_int64(st, 3),
                                .shares = store_col_int64(st, 4), .views = store_col_int64(st, 5)};
        if (e.created_ms > now) e.created_ms = now; /* a future date counts as now */
        e.score = hot_rank_score(&h->o.rank, &e.counts, e.created_ms, now);
        hot_heap_offer(heap, &e);
        if (++*seen % SCAN_CHECK_EVERY == 0 && jobs_run_should_stop(r)) {
            store_reset(st);
            jobs_run_errorf(r, "stopped during the scan");
            return -1;
        }
    }
    store_reset(st);
    if (rc != STORE_DONE) jobs_run_errorf(r, "scan: %s", store_errmsg(db));
    return rc == STORE_DONE ? 0 : -1;
}

/* Step 2 for one entry: its item, or NULL in *item when it must not
 * appear. -1 on a database error. */
static int item_of(store *db, const hot_entry *e, int rank, json_t **item)
{
    *item = NULL;
    store_stmt *st = store_prepare(db, "SELECT p.author_id, u.name, p.text, p.created_ms FROM posts p JOIN users u ON "
                                       "u.id = p.author_id WHERE p.month = $1 AND p.id = $2 AND p.deleted = 0 AND "
                                       "NOT EXISTS (SELECT 1 FROM hot_shares s WHERE s.repost_id = p.id)");
    store_bind_int64(st, 1, feed_month_of(e->post_id));
    store_bind_int64(st, 2, e->post_id);
    int rc = store_step(st);
    if (rc == STORE_ROW) {
        char id[24], author[17], created[32];
        snprintf(id, sizeof id, "%lld", (long long)e->post_id);
        base_id_format(store_col_int64(st, 0), author);
        rfc3339_format_ms(store_col_int64(st, 3), created, sizeof created);
        *item = json_pack("{s:i,s:s,s:f,s:{s:s,s:s},s:s%,s:s,s:I,s:I,s:I,s:I}", "rank", rank, "id", id, "score",
                          e->score, "author", "id", author, "name", store_col_text(st, 1), "text", store_col_text(st, 2),
                          store_col_len(st, 2), "created", created, "likes", (json_int_t)e->counts.likes, "comments",
                          (json_int_t)e->counts.comments, "shares", (json_int_t)e->counts.shares, "views",
                          (json_int_t)e->counts.views);
    }
    store_reset(st);
    if (rc == STORE_ROW && !*item) return -1;
    return rc == STORE_ROW || rc == STORE_DONE ? 0 : -1;
}

/* Steps 1 and 2: the items, best first, at most K. */
static int rank_items(jobs_run *r, const hot_service *h, int64_t now, json_t **items)
{
    size_t k = (size_t)h->o.size, margin = k;
    *items = NULL;
    for (;;) {
        hot_entry *v = malloc((k + margin) * sizeof *v);
        hot_heap heap;
        int64_t seen;
        if (!v) {
            jobs_run_errorf(r, "out of memory");
            return -1;
        }
        hot_heap_init(&heap, v, k + margin);
        if (scan(r, h, now, &heap, &seen) != 0) {
            free(v);
            return -1;
        }
        hot_heap_sort(&heap);
        json_t *out = json_array();
        int rc = out ? 0 : -1;
        for (size_t i = 0; rc == 0 && i < heap.n && json_array_size(out) < k; i++) {
            json_t *item;
            rc = item_of(jobs_run_db(r), &heap.v[i], (int)json_array_size(out) + 1, &item);
            if (item) json_array_append_new(out, item);
        }
        bool short_list = json_array_size(out) < k && heap.n == heap.k;
        free(v);
        if (rc != 0) {
            jobs_run_errorf(r, "posts: %s", store_errmsg(jobs_run_db(r)));
            json_decref(out);
            return -1;
        }
        if (!short_list) {
            *items = out;
            return 0;
        }
        /* The margin did not cover the deleted posts and reposts near the
         * top: look further. The heap grows, the scan stays one pass. */
        json_decref(out);
        margin = 4 * (k + margin);
    }
}

/* Counted-view rows an hour old no longer decide anything. */
static int prune_views(jobs_run *r, hot_service *h, int64_t now)
{
    if (now - h->views_pruned_ms < VIEWS_PRUNE_MS) return 0;
    int64_t n = 0;
    if (jobs_run_batches(r, "DELETE FROM hot_views WHERE (post_id, user_id) IN (SELECT post_id, user_id FROM "
                            "hot_views WHERE counted_ms <= $1 LIMIT $2)",
                         now - 3600000, VIEWS_PRUNE_BATCH, &n) != 0)
        return -1;
    h->views_pruned_ms = now;
    return 0;
}

/* Step 3. *body: the list as published (the caller frees). */
static int publish(jobs_run *r, const hot_service *h, int64_t now, json_t *items, char **body)
{
    store *db = jobs_run_db(r);
    int64_t epoch, version = 0;
    *body = NULL;
    int rc = jobs_run_fence_begin(r, &epoch);
    if (rc != LEASE_OK) {
        jobs_run_errorf(r, rc == LEASE_LOST ? "fenced off: the lease moved on" : "database: %s", store_errmsg(db));
        return -1;
    }
    rc = store_query_int64(db, "SELECT version FROM hot_lists WHERE id = 1", &version);
    char at[32];
    rfc3339_format_ms(now, at, sizeof at);
    json_t *list = json_pack("{s:I,s:s,s:O}", "version", (json_int_t)(version + 1), "computed_at", at, "items", items);
    *body = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    store_stmt *st = store_prepare(db, "INSERT INTO hot_lists (id, version, computed_ms, epoch, node, body) "
                                       "VALUES (1, $1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET "
                                       "version = excluded.version, computed_ms = excluded.computed_ms, "
                                       "epoch = excluded.epoch, node = excluded.node, body = excluded.body");
    store_bind_int64(st, 1, version + 1);
    store_bind_int64(st, 2, now);
    store_bind_int64(st, 3, epoch);
    store_bind_str(st, 4, jobs_run_node(r));
    store_bind_str(st, 5, *body);
    if ((rc == STORE_ROW || rc == STORE_DONE) && *body) rc = store_step(st);
    store_reset(st);
    if (rc != STORE_DONE) {
        jobs_run_errorf(r, *body ? "publish: %s" : "out of memory", store_errmsg(db));
        jobs_run_fence_abort(r);
        free(*body);
        *body = NULL;
        return -1;
    }
    if (jobs_run_fence_commit(r) != 0) {
        jobs_run_errorf(r, "publish: commit: %s", store_errmsg(db));
        free(*body);
        *body = NULL;
        return -1;
    }
    return 0;
}

int hot_compute_job(jobs_run *r, void *arg)
{
    hot_service *h = arg;
    store *db = jobs_run_db(r);
    int64_t t0 = base_mono_ns(), now;
    json_t *items = NULL;
    char *body = NULL;
    int rc = store_now_ms(db, &now) < 0 ? -1 : 0;
    if (rc != 0) jobs_run_errorf(r, "database clock: %s", store_errmsg(db));
    if (rc == 0) rc = prune_views(r, h, now);
    if (rc == 0) rc = rank_items(r, h, now, &items);
    if (rc == 0) rc = publish(r, h, now, items, &body);
    atomic_store(&h->last_run_ms, (base_mono_ns() - t0) / 1000000);
    if (rc != 0) {
        atomic_fetch_add(&h->runs_failed, 1);
        json_decref(items);
        return -1;
    }
    atomic_store(&h->last_items, (long long)json_array_size(items));
    atomic_fetch_add(&h->runs_ok, 1);
    json_decref(items);
    /* The database has it (the tier of record); now this node, then Redis. */
    if (hot_cache_install(h->cache, body, strlen(body)) < 0) log_warn("hot: cannot read back the list just published");
    hot_cache_publish(h->cache);
    free(body);
    return 0;
}
