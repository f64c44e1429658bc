/* hot.c -- the hot list's service: its parts' life and its job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "hot/hot_int.h"

hot_service *hot_new(const hot_opts *o, int loops)
{
    hot_service *h = calloc(1, sizeof *h);
    if (!h || loops < 1) {
        free(h);
        return NULL;
    }
    h->o = *o;
    snprintf(h->db_url, sizeof h->db_url, "%s", o->db_url);
    snprintf(h->node_id, sizeof h->node_id, "%s", o->node_id ? o->node_id : "");
    h->o.db_url = h->db_url;
    h->o.redis_host = NULL; /* the cache keeps its own copy */
    h->o.node_id = h->node_id;
    if (!(h->cache = hot_cache_new(loops, h->db_url, o->redis_host, o->redis_port)) || !(h->writer = hot_writer_new(h->db_url, hot_answer_action, h))) {
        hot_free(h);
        return NULL;
    }
    return h;
}

int hot_register_job(hot_service *h, jobs_registry *reg, char *err, size_t errlen)
{
    /* Later than one period: run once now, not once per missed period. */
    jobs_def d = {.name = "hot.recompute", .every_ms = h->o.every_ms, .time_zone = "UTC",
                  .handler = hot_compute_job, .arg = h, .enabled = true, .misfire = JOBS_MISFIRE_RUN_ONCE,
                  .misfire_after_ms = h->o.every_ms, .max_run_ms = 5 * 60000};
    return jobs_register(reg, &d, err, errlen);
}

int hot_start(hot_service *h)
{
    if (hot_cache_preload(h->cache) != 0) log_warn("hot: no shared tier answered at start; serving an empty list");
    if (hot_cache_start(h->cache) != 0 || hot_writer_start(h->writer) != 0) {
        log_error("hot: cannot start its threads");
        return -1;
    }
    return 0;
}

void hot_free(hot_service *h)
{
    if (!h) return;
    hot_writer_free(h->writer);
    hot_cache_free(h->cache);
    free(h);
}
