/* Crossover keeps building blocks the rules care about intact: either whole employee rows
 * (every per-employee rule stays satisfied, only cover mixes) or whole day blocks across all
 * employees (cover stays satisfied inside each block, rows break only at the two cuts). The
 * local search that follows repairs the seams. */
#include <string.h>

#include "internal.h"

static void rows_uniform(const gr_problem *p, const int32_t *a, const int32_t *b, int32_t *child,
                         gr_rng *rng)
{
    size_t D = (size_t)p->n_days;
    for (int32_t e = 0; e < p->n_employees; e++) {
        const int32_t *src = (gr_rng_next(rng) >> 63) ? a : b;
        memcpy(child + (size_t)e * D, src + (size_t)e * D, D * sizeof(int32_t));
    }
}

static void day_block(const gr_problem *p, const int32_t *a, const int32_t *b, int32_t *child,
                      gr_rng *rng)
{
    int32_t D = p->n_days;
    int32_t c1 = gr_rng_below(rng, D), c2 = gr_rng_below(rng, D);
    if (c1 > c2) {
        int32_t t = c1;
        c1 = c2;
        c2 = t;
    }
    for (int32_t e = 0; e < p->n_employees; e++)
        for (int32_t d = 0; d < D; d++) {
            size_t i = (size_t)e * (size_t)D + (size_t)d;
            child[i] = (d >= c1 && d <= c2) ? b[i] : a[i];
        }
}

void gr_crossover(const gr_problem *p, const int32_t *a, const int32_t *b, int32_t *child,
                  gr_rng *rng)
{
    if (gr_rng_below(rng, 2) == 0)
        rows_uniform(p, a, b, child, rng);
    else
        day_block(p, a, b, child, rng);
}
