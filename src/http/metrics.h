/* metrics.h -- request counters and latency histograms for /metrics, in the
 * Prometheus text format. Lock-free: loop threads bump relaxed atomics. */
#ifndef CHIME_HTTP_METRICS_H
#define CHIME_HTTP_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "http/router.h"

#define METRICS_NSTATUS 26
#define METRICS_NBUCKETS 14
#define METRICS_MAX_GAUGES 32

typedef struct metrics_gauge {
    char name[64];
    char help[128];
    http_gauge_fn fn;
    void *arg;
} metrics_gauge;

typedef struct http_metrics {
    /* Row ROUTER_MAX_ROUTES counts requests that matched no route. */
    _Atomic uint64_t count[ROUTER_MAX_ROUTES + 1][METRICS_NSTATUS];
    _Atomic uint64_t bucket[ROUTER_MAX_ROUTES + 1][METRICS_NBUCKETS];
    _Atomic uint64_t sum_us[ROUTER_MAX_ROUTES + 1];
    metrics_gauge gauges[METRICS_MAX_GAUGES];
    int ngauges;
} http_metrics;

void metrics_observe(http_metrics *m, int route, int status, int64_t elapsed_ns);
/* The whole exposition as a malloc'd string (caller frees), or NULL. */
char *metrics_render(http_metrics *m, const router *rt, int loop, size_t *len);

#endif
