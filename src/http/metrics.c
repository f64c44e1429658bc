/* metrics.c -- Prometheus exposition of request counts and latencies. */
#include "http/metrics.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int statuses[METRICS_NSTATUS - 1] = {101, 200, 201, 202, 204, 207, 301, 302, 304, 400,
                                                  401, 403, 404, 405, 409, 410, 412, 413,
                                                  415, 422, 429, 500, 502, 503, 504};
/* Upper bounds in microseconds; the last bucket is +Inf. */
static const int64_t bounds_us[METRICS_NBUCKETS - 1] = {100,   250,    500,    1000,   2500,
                                                        5000,  10000,  25000,  50000,  100000,
                                                        250000, 1000000, 5000000};

static int status_index(int status)
{
    for (int i = 0; i < METRICS_NSTATUS - 1; i++)
        if (statuses[i] == status) return i;
    return METRICS_NSTATUS - 1;
}

void metrics_observe(http_metrics *m, int route, int status, int64_t elapsed_ns)
{
    if (route < 0 || route > ROUTER_MAX_ROUTES) route = ROUTER_MAX_ROUTES;
    int64_t us = elapsed_ns / 1000;
    int b = 0;
    while (b < METRICS_NBUCKETS - 1 && us > bounds_us[b]) b++;
    atomic_fetch_add_explicit(&m->count[route][status_index(status)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->bucket[route][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_us[route], (uint64_t)us, memory_order_relaxed);
}

typedef struct metrics_out {
    char *buf;
    size_t len, cap;
    bool failed;
} metrics_out;

static void put(metrics_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(metrics_out *o, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0) { o->failed = true; return; }
        if ((size_t)n < o->cap - o->len) { o->len += (size_t)n; return; }
        size_t cap = o->cap * 2 + (size_t)n;
        char *nb = realloc(o->buf, cap);
        if (!nb) { o->failed = true; return; }
        o->buf = nb;
        o->cap = cap;
    }
}

static const char *route_name(const router *rt, int i)
{
    return i == ROUTER_MAX_ROUTES ? "unmatched" : rt->routes[i].pattern;
}

static void render_counts(metrics_out *o, http_metrics *m, const router *rt, int i)
{
    for (int s = 0; s < METRICS_NSTATUS; s++) {
        uint64_t c = atomic_load_explicit(&m->count[i][s], memory_order_relaxed);
        if (c == 0) continue;
        if (s == METRICS_NSTATUS - 1)
            put(o, "chime_http_requests_total{route=\"%s\",status=\"other\"} %llu\n", route_name(rt, i),
                (unsigned long long)c);
        else
            put(o, "chime_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n", route_name(rt, i),
                statuses[s], (unsigned long long)c);
    }
}

static void render_histogram(metrics_out *o, http_metrics *m, const router *rt, int i)
{
    uint64_t cum = 0;
    for (int b = 0; b < METRICS_NBUCKETS; b++) cum += atomic_load_explicit(&m->bucket[i][b], memory_order_relaxed);
    if (cum == 0) return;
    uint64_t total = cum;
    cum = 0;
    for (int b = 0; b < METRICS_NBUCKETS; b++) {
        cum += atomic_load_explicit(&m->bucket[i][b], memory_order_relaxed);
        if (b == METRICS_NBUCKETS - 1)
            put(o, "chime_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
                route_name(rt, i), (unsigned long long)cum);
        else
            put(o, "chime_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                route_name(rt, i), (double)bounds_us[b] / 1e6, (unsigned long long)cum);
    }
    put(o, "chime_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", route_name(rt, i),
        (double)atomic_load_explicit(&m->sum_us[i], memory_order_relaxed) / 1e6);
    put(o, "chime_http_request_duration_seconds_count{route=\"%s\"} %llu\n", route_name(rt, i),
        (unsigned long long)total);
}

char *metrics_render(http_metrics *m, const router *rt, int loop, size_t *len)
{
    metrics_out o = {.cap = 8192};
    o.buf = malloc(o.cap);
    if (!o.buf) return NULL;
    put(&o, "# HELP chime_http_requests_total HTTP requests by route and status.\n"
            "# TYPE chime_http_requests_total counter\n");
    for (int i = 0; i < rt->nroutes; i++) render_counts(&o, m, rt, i);
    render_counts(&o, m, rt, ROUTER_MAX_ROUTES);
    put(&o, "# HELP chime_http_request_duration_seconds Time from request to response.\n"
            "# TYPE chime_http_request_duration_seconds histogram\n");
    for (int i = 0; i < rt->nroutes; i++) render_histogram(&o, m, rt, i);
    render_histogram(&o, m, rt, ROUTER_MAX_ROUTES);
    for (int g = 0; g < m->ngauges; g++) {
        const metrics_gauge *mg = &m->gauges[g];
        /* Gauges of one family ("name{label=...}") registered one after
         * another share its HELP and TYPE lines; a "_total" family is a
         * counter. */
        size_t fam = strcspn(mg->name, "{");
        bool same = g > 0 && strncmp(m->gauges[g - 1].name, mg->name, fam) == 0 &&
                    strcspn(m->gauges[g - 1].name, "{") == fam;
        bool counter = fam > 6 && strncmp(mg->name + fam - 6, "_total", 6) == 0;
        if (!same)
            put(&o, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)fam, mg->name, mg->help, (int)fam, mg->name,
                counter ? "counter" : "gauge");
        put(&o, "%s %.17g\n", mg->name, mg->fn(mg->arg, loop));
    }
    if (o.failed) {
        free(o.buf);
        return NULL;
    }
    *len = o.len;
    return o.buf;
}
