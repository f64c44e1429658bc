/* hot_rank.c -- see hot_rank.h. */
#include "hot/hot_rank.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reddit's epoch: 2005-12-08 07:46:43 UTC, the constant of _sorts.pyx. */
#define REDDIT_EPOCH_S 1134028003

static int parse_number(const char *text, size_t len, double lo, double hi, double *out)
{
    char buf[64], *end;
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (!((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '.')) return -1;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || errno == ERANGE || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_weights(const char *text, hot_weights *w, char *err, size_t errlen)
{
    static const char *const names[] = {"views", "likes", "comments", "shares"};
    double *slots[] = {&w->views, &w->likes, &w->comments, &w->shares};
    const char *p = text;
    if (!*p) {
        snprintf(err, errlen, "hot-weights: empty; give NAME=NUMBER pairs, e.g. likes=5,views=1");
        return -1;
    }
    while (*p) {
        size_t len = strcspn(p, ","), nlen = strcspn(p, "=");
        if (nlen >= len) {
            snprintf(err, errlen, "hot-weights: '%.*s' is not NAME=NUMBER", (int)(len > 40 ? 40 : len), p);
            return -1;
        }
        int k = -1;
        for (int i = 0; i < 4; i++)
            if (strlen(names[i]) == nlen && memcmp(names[i], p, nlen) == 0) k = i;
        if (k < 0) {
            snprintf(err, errlen, "hot-weights: unknown action '%.*s' (views, likes, comments or shares)",
                     (int)(nlen > 40 ? 40 : nlen), p);
            return -1;
        }
        if (parse_number(p + nlen + 1, len - nlen - 1, 0, 1e6, slots[k]) != 0) {
            snprintf(err, errlen, "hot-weights: %s must be a number from 0 to 1000000", names[k]);
            return -1;
        }
        p += len;
        if (*p == ',') {
            p++;
            if (!*p) {
                snprintf(err, errlen, "hot-weights: trailing comma");
                return -1;
            }
        }
    }
    return 0;
}

int hot_rank_config(const char *formula, const char *weights, const char *gravity, hot_rank_opts *out, char *err,
                    size_t errlen)
{
    *out = (hot_rank_opts){.formula = HOT_FORMULA_HN, .w = {1, 5, 10, 20}, .gravity = 1.8};
    if (strcmp(formula, "hn") == 0) out->formula = HOT_FORMULA_HN;
    else if (strcmp(formula, "reddit") == 0) out->formula = HOT_FORMULA_REDDIT;
    else {
        snprintf(err, errlen, "hot-formula must be hn or reddit, not '%.40s'", formula);
        return -1;
    }
    if (parse_weights(weights, &out->w, err, errlen) != 0) return -1;
    if (parse_number(gravity, strlen(gravity), 0, 10, &out->gravity) != 0) {
        snprintf(err, errlen, "hot-gravity must be a number from 0 to 10, not '%.40s'", gravity);
        return -1;
    }
    return 0;
}

double hot_rank_points(const hot_weights *w, const hot_counts *c)
{
    return (double)c->views * w->views + (double)c->likes * w->likes + (double)c->comments * w->comments +
           (double)c->shares * w->shares;
}

double hot_rank_hn(double points, double age_hours, double gravity)
{
    double base = points - 1;
    if (age_hours < 0) age_hours = 0;
    return (base > 0 ? pow(base, 0.8) : base) / pow(age_hours + 2, gravity);
}

double hot_rank_reddit(double points, int64_t created_s)
{
    double order = log10(fabs(points) > 1 ? fabs(points) : 1);
    double sign = points > 0 ? 1 : points < 0 ? -1 : 0;
    return sign * order + (double)(created_s - REDDIT_EPOCH_S) / 45000.0;
}

double hot_rank_score(const hot_rank_opts *o, const hot_counts *c, int64_t created_ms, int64_t now_ms)
{
    if (created_ms > now_ms) created_ms = now_ms;
    double points = hot_rank_points(&o->w, c);
    if (o->formula == HOT_FORMULA_REDDIT) return hot_rank_reddit(points, created_ms / 1000);
    return hot_rank_hn(points, (double)(now_ms - created_ms) / 3600000.0, o->gravity);
}

/* ---- the heap ----------------------------------------------------------------- */

bool hot_rank_above(const hot_entry *a, const hot_entry *b)
{
    if (a->score != b->score) return a->score > b->score;
    if (a->created_ms != b->created_ms) return a->created_ms > b->created_ms;
    return a->post_id > b->post_id;
}

void hot_heap_init(hot_heap *h, hot_entry *storage, size_t k)
{
    h->v = storage;
    h->n = 0;
    h->k = k;
}

/* The root is the entry every other ranks above (the worst kept). */
static void sift_down(hot_entry *v, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && hot_rank_above(&v[m], &v[l])) m = l;
        if (r < n && hot_rank_above(&v[m], &v[r])) m = r;
        if (m == i) return;
        hot_entry t = v[i];
        v[i] = v[m];
        v[m] = t;
        i = m;
    }
}

void hot_heap_offer(hot_heap *h, const hot_entry *e)
{
    if (h->k == 0) return;
    if (h->n < h->k) {
        size_t i = h->n++;
        h->v[i] = *e;
        while (i > 0 && hot_rank_above(&h->v[(i - 1) / 2], &h->v[i])) {
            hot_entry t = h->v[i];
            h->v[i] = h->v[(i - 1) / 2];
            h->v[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
        return;
    }
    if (!hot_rank_above(e, &h->v[0])) return;
    h->v[0] = *e;
    sift_down(h->v, h->n, 0);
}

void hot_heap_sort(hot_heap *h)
{
    /* Repeatedly move the worst to the end: best first when done. */
    for (size_t n = h->n; n > 1; n--) {
        hot_entry t = h->v[0];
        h->v[0] = h->v[n - 1];
        h->v[n - 1] = t;
        sift_down(h->v, n - 1, 0);
    }
}
