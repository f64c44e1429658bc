/* hot_rank.h -- the hot list's ranking, pure: the two formulas, the
 * weighted points they start from, the option parsers, and the bounded
 * top-K min-heap the recompute keeps (hot_rank.c; tests/unit/test-hot-rank.c
 * and test-hot-heap.c).
 *
 * Points = views * w.views + likes * w.likes + comments * w.comments +
 * shares * w.shares (the design notes' "weight factors").
 *
 * hn: Hacker News (news.arc, `frontpage-rank`, gravity* 1.8, timebase*
 *   120 minutes), in the hour form the issue gives:
 *       base = points - 1;  (base > 0 ? base^0.8 : base) / (age_hours + 2)^gravity
 *   The penalties of news.arc (no url, lightweight, controversy) have no
 *   meaning here and are left out.
 * reddit: Reddit's `hot` (r2/r2/lib/db/_sorts.pyx):
 *       sign(s) * log10(max(|s|, 1)) + (created_seconds - 1134028003) / 45000
 *   with s = points (there are no downvotes, so s >= 0). Reddit rounds to 7
 *   places; we keep the double (the order is the same but for rounding
 *   ties, which the tie rule below settles anyway).
 *
 * A post dated in the future counts as posted now (age 0, created = now):
 * a wrong clock must not pin a post on top (Lemmy #2877). Ties break by
 * the newer post (larger created time, then larger id), so the order is
 * total and the list stable between recomputes (Lemmy #4383). */
#ifndef CHIME_HOT_RANK_H
#define CHIME_HOT_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { HOT_FORMULA_HN, HOT_FORMULA_REDDIT } hot_formula;

typedef struct hot_weights {
    double views, likes, comments, shares;
} hot_weights;

typedef struct hot_rank_opts {
    hot_formula formula;
    hot_weights w;
    double gravity; /* hn only */
} hot_rank_opts;

typedef struct hot_counts {
    int64_t likes, comments, shares, views;
} hot_counts;

/* Parses --hot-formula, --hot-weights ("views=1,likes=5", any subset, the
 * rest keep their defaults; each a decimal from 0 to 1e6) and --hot-gravity
 * (0 to 10) into *out. 0, or -1 with a message naming the option and the
 * reason in err. */
int hot_rank_config(const char *formula, const char *weights, const char *gravity, hot_rank_opts *out, char *err,
                    size_t errlen);

double hot_rank_points(const hot_weights *w, const hot_counts *c);
double hot_rank_hn(double points, double age_hours, double gravity);
double hot_rank_reddit(double points, int64_t created_s);
/* The score of a post created at created_ms, at now_ms. */
double hot_rank_score(const hot_rank_opts *o, const hot_counts *c, int64_t created_ms, int64_t now_ms);

/* ---- the bounded top-K ------------------------------------------------------- */

typedef struct hot_entry {
    int64_t post_id;
    int64_t created_ms; /* as ranked: a future date is now */
    double score;
    hot_counts counts;
} hot_entry;

/* Whether a ranks above b: higher score, then newer, then larger id. */
bool hot_rank_above(const hot_entry *a, const hot_entry *b);

/* A min-heap of the best k entries offered so far: the root is the worst
 * kept, so an offer costs O(1) when it loses to the root and O(log k)
 * when it replaces it: O(n log k) for n offers, k entries of memory. The
 * caller owns v (k entries). */
typedef struct hot_heap {
    hot_entry *v;
    size_t n, k;
} hot_heap;

void hot_heap_init(hot_heap *h, hot_entry *storage, size_t k);
void hot_heap_offer(hot_heap *h, const hot_entry *e);
/* Sorts the kept entries best first, in place (the heap is spent). */
void hot_heap_sort(hot_heap *h);

#endif
