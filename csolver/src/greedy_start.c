/* Constructive start: fill cover slots most-constrained-first (fewest employees who could take
 * them), each with the cheapest employee whose assignment breaks no "max"-type hard rule.
 * Min-type rules (minimum runs, days off runs, minimum minutes) only make sense for a finished
 * row, so they are relaxed while building; then every row that still breaks a rule is rebuilt
 * by the row DP under the cover the others leave, which keeps every hard rule by construction.
 * So the start is feasible whenever each employee has a rule-abiding row (decision 0013): on
 * 182-364 days the local search alone never repaired the minimum minutes and days-off runs
 * the greedy left (Instances 20 and 22 ended infeasible after 60 s). */
#include <stdlib.h>

#include "internal.h"

/* staff x cover slots above which the start is built row by row (Instance 24: 1.7 M) */
#define ROWS_INSTEAD ((int64_t)1 << 20)

typedef struct {
    uint64_t key;
    int32_t d, s;
} slot;

static int slot_cmp(const void *x, const void *y)
{
    uint64_t a = ((const slot *)x)->key, b = ((const slot *)y)->key;
    return (a > b) - (a < b);
}

/* Rebuild each rule-breaking row (from a random employee on) by the quick row DP. */
static void repair_rows(gr_state *st, gr_rng *rng, gr_ctx *ctx, int all)
{
    const int32_t E = st->E, D = st->D;
    int32_t *row = malloc((size_t)D * sizeof *row);
    if (!row)
        return;
    const int32_t first = gr_rng_below(rng, E);
    for (int32_t i = 0; i < E; i++) {
        const int32_t e = (first + i) % E;
        if (!all && gr_state_emp_hard(st, e) == 0)
            continue;
        /* the cancel and the time limit are honoured between rows (a few ms each; a row
         * the quick DP cannot build, ~0.5 s on a few rows of Instance 24, is left to the
         * local search) */
        if (gr_ctx_poll(ctx) == 1 || gr_now() >= ctx->deadline)
            break;
        const int ok = gr_row_dp_quick(st, e, row);
        ctx->evaluations++; /* a row built is a move scored (progress counts it) */
        if (!ok)
            continue;
        gr_delta dl = gr_state_delta(st, e, 0, D - 1, row, 1);
        gr_state_apply(st, e, 0, D - 1, row, 1, dl);
    }
    free(row);
}

void gr_greedy_start(gr_state *st, gr_rng *rng, gr_ctx *ctx)
{
    const gr_problem *p = st->p;
    const int32_t E = st->E, D = st->D, S = st->S;
    int64_t n_slots = 0;
    for (int64_t k = 0; k < (int64_t)D * S; k++)
        n_slots += p->cover_req[k] > 0;
    slot *slots = malloc(((size_t)n_slots + 1) * sizeof *slots);
    int32_t *empty = malloc((size_t)E * (size_t)D * sizeof *empty);
    if (!slots || !empty) {
        free(slots);
        free(empty);
        return; /* the caller starts from whatever st holds */
    }
    /* pinned cells start (and stay) at their pins */
    for (int64_t i = 0; i < (int64_t)E * D; i++)
        empty[i] = gr_pinned(p, i) ? p->pin[i] : -1;
    if ((int64_t)E * n_slots > ROWS_INSTEAD) {
        /* too many slots x staff for the slot greedy (Instance 24: 10 s before its first
         * roster): each row by the quick row DP under the cover the rows before it leave */
        gr_state_load(st, empty);
        free(slots);
        free(empty);
        repair_rows(st, rng, ctx, 1);
        return;
    }
    st->relax_min = 1;
    gr_state_load(st, empty);

    int64_t n = 0;
    for (int32_t d = 0; d < D; d++)
        for (int32_t s = 0; s < S; s++) {
            if (p->cover_req[(int64_t)d * S + s] <= 0)
                continue;
            uint64_t avail = 0;
            for (int32_t e = 0; e < E; e++)
                avail += p->max_shifts[(int64_t)e * S + s] > 0 &&
                         !p->day_off[(int64_t)e * D + d] && !gr_pinned(p, (int64_t)e * D + d);
            slots[n].key = (avail << 32) | (gr_rng_next(rng) >> 32);
            slots[n].d = d;
            slots[n].s = s;
            n++;
        }
    qsort(slots, (size_t)n, sizeof *slots, slot_cmp);

    /* one pass per unit of requirement, so scarce slots get their first worker before
     * plentiful ones get their third */
    int progress = 1;
    while (progress && !ctx->stop) {
        progress = 0;
        for (int64_t i = 0; i < n && !ctx->stop; i++) {
            int32_t d = slots[i].d, s = slots[i].s;
            int64_t k = (int64_t)d * S + s;
            if (st->cover[k] >= p->cover_req[k])
                continue;
            int32_t best_e = -1, ties = 0;
            int64_t best_cost = 0;
            for (int32_t e = 0; e < E; e++) {
                int64_t c = (int64_t)e * D + d;
                if (st->roster[c] >= 0 || p->day_off[c] || gr_pinned(p, c) ||
                    p->max_shifts[(int64_t)e * S + s] <= 0)
                    continue;
                gr_delta dl = gr_state_delta(st, e, d, d, &s, 1);
                if (gr_ctx_tick(ctx, 1))
                    break;
                if (dl.hard > 0 || dl.minutes > 0)
                    continue;
                int64_t cost = gr_delta_cost(dl, GR_HARD_WEIGHT);
                if (best_e < 0 || cost < best_cost) {
                    best_e = e;
                    best_cost = cost;
                    ties = 1;
                } else if (cost == best_cost && gr_rng_below(rng, ++ties) == 0) {
                    best_e = e;
                }
            }
            if (best_e >= 0 && !ctx->stop) {
                gr_delta dl = gr_state_delta(st, best_e, d, d, &s, 1);
                gr_state_apply(st, best_e, d, d, &s, 1, dl);
                progress = 1;
            }
        }
    }
    st->relax_min = 0;
    free(empty);
    /* aggregates do not depend on relax_min: only the totals need recomputing */
    st->total = gr_state_full(st);
    free(slots);
    repair_rows(st, rng, ctx, 0);
}
