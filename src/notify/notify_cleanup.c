/* notify_cleanup.c -- the reminders' scheduled job: the inbox cap,
 * finished deliveries past --deliveries-keep-days, and the budget rows of
 * days gone.
 *
 * The inbox is capped per user (--inbox-max-per-user, issue 25): the
 * newest rows stay, and of the older ones those read go. Unread rows stay
 * whatever their number -- the user has not seen them -- and the delivery
 * budget bounds how fast they can come. Deleting a row never moves a
 * cursor: cursors are seqs, and the rows after one are still there. Each
 * user's pruning is one fenced transaction, so a node that lost the lease
 * stops deleting. */
#include "notify/notify_cleanup.h"

#include <stdint.h>

#include "base/base.h"

#define NOTIFY_CLEANUP_USERS 500

/* Up to NOTIFY_CLEANUP_USERS users over the cap after user `after`, in
 * order, into users. */
static int over_cap(store *db, int64_t cap, int64_t after, int64_t *users, int *n)
{
    store_stmt *st = store_prepare(db, "SELECT user_id FROM notifications WHERE user_id > $3 GROUP BY user_id "
                                       "HAVING count(*) > $1 ORDER BY user_id LIMIT $2");
    store_bind_int64(st, 1, cap);
    store_bind_int64(st, 2, NOTIFY_CLEANUP_USERS);
    store_bind_int64(st, 3, after);
    int rc;
    *n = 0;
    while ((rc = store_step(st)) == STORE_ROW && *n < NOTIFY_CLEANUP_USERS) users[(*n)++] = store_col_int64(st, 0);
    store_reset(st);
    return rc == STORE_DONE || rc == STORE_ROW ? STORE_OK : rc;
}

/* One user's read rows older than its newest cap rows go: one fenced
 * statement ($1 the user, $2 the cap; should it delete exactly cap rows,
 * jobs_run_batches runs it again, which deletes nothing). */
static int prune_user(jobs_run *r, int64_t user, int64_t cap, int64_t *pruned)
{
    return jobs_run_batches(r, "DELETE FROM notifications WHERE user_id = $1 AND read = 1 AND seq < "
                               "(SELECT min(seq) FROM (SELECT seq FROM notifications WHERE user_id = $1 "
                               "ORDER BY seq DESC LIMIT $2) newest)", user, cap, pruned);
}

/* Every user over the cap, pruned in user order. */
static int prune_inboxes(jobs_run *r, int64_t cap, int64_t *pruned)
{
    int64_t users[NOTIFY_CLEANUP_USERS], after = INT64_MIN;
    for (;;) {
        int n;
        if (over_cap(jobs_run_db(r), cap, after, users, &n) != STORE_OK) {
            jobs_run_errorf(r, "database: %s", store_errmsg(jobs_run_db(r)));
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (jobs_run_should_stop(r) || prune_user(r, users[i], cap, pruned) != 0) return -1;
        if (n < NOTIFY_CLEANUP_USERS) return 0;
        after = users[n - 1];
    }
}

int notify_cleanup_job(jobs_run *r, void *arg)
{
    const notify_cleanup_opts *o = arg;
    int64_t now, pruned = 0, budgets = 0;
    if (store_now_ms(jobs_run_db(r), &now) < 0) {
        jobs_run_errorf(r, "database clock: %s", store_errmsg(jobs_run_db(r)));
        return -1;
    }
    int rc = o->inbox_max > 0 ? prune_inboxes(r, o->inbox_max, &pruned) : 0;
    notify_count(o->counters, NOTIFY_SUPPRESS_INBOX_CAP, (uint64_t)pruned);
    if (rc != 0) return -1;
    /* Finished deliveries: their outcome stays visible (GET
     * /v1/me/deliveries, the admin's view) for keep_ms, then goes. A
     * delivery's id only guards its claim, which is long over by then;
     * the inbox row (its own table) is the cap's business. */
    int64_t deliveries = 0;
    if (o->keep_ms > 0 && jobs_run_batches(r, "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE "
                                              "state IN ('done', 'dead', 'missed', 'cancelled', 'dropped_quota') AND "
                                              "updated_ms < $1 LIMIT $2)",
                                           now - o->keep_ms, 1000, &deliveries) != 0)
        return -1;
    /* A budget row of a day gone counts nothing any more. */
    if (jobs_run_batches(r, "DELETE FROM delivery_budget WHERE (user_id, invited) IN (SELECT user_id, invited "
                            "FROM delivery_budget WHERE day_ms < $1 LIMIT $2)", now - 86400000, 1000, &budgets) != 0)
        return -1;
    if (pruned || deliveries || budgets)
        log_info("job %s: pruned %lld read inbox row(s) over the cap, %lld finished deliveries, %lld budget row(s) "
                 "of days gone", jobs_run_job(r), (long long)pruned, (long long)deliveries, (long long)budgets);
    return 0;
}
