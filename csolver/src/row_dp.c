/* Exact row re-optimisation: the cheapest rule-abiding row for one employee with every other
 * row fixed. The costs of each value on each day are the employee's request penalties plus the
 * cover marginals against the other rows (or the caller's prices in pricing mode); the row
 * itself comes from the labelling DP (label_dp.c), which keeps every per-employee hard rule at
 * once, so a row from here is rule-abiding by construction.
 *
 * Why: a row that is one compound change away from feasible (move a pair of shifts across a
 * fixed day off, say) is a deep valley for single-cell moves and a swap neighbourhood, but one
 * step for this move. It costs far more than a cell move, so the search calls it sparingly. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static inline int64_t cover_cost(const gr_problem *p, int64_t k, int32_t z)
{
    int64_t req = p->cover_req[k];
    return req > z ? p->cover_under[k] * (req - z) : p->cover_over[k] * (z - req);
}

const int64_t *gr_row_costs(gr_state *st, int32_t e, int32_t pin_d, int32_t pin_v)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D, S = st->S, V = S + 1;
    const int32_t *row = st->roster + (int64_t)e * D;
    int64_t *cell = gr_dp_grow(&st->dp, GR_DP_SLOT_COSTS, (size_t)D * V * sizeof *cell);
    if (!cell)
        return NULL;
    for (int32_t d = 0; d < D; d++) {
        const int64_t c = (int64_t)e * D + d;
        for (int32_t v = 0; v <= S; v++) {
            int64_t *slot = &cell[(int64_t)d * V + v];
            const int32_t val = v == S ? -1 : v;
            if ((d == pin_d && val != pin_v) ||
                (val >= 0 && (p->day_off[c] || p->max_shifts[(int64_t)e * S + val] <= 0))) {
                *slot = GR_FORBIDDEN;
                continue;
            }
            if (st->price) {
                *slot = st->price[(int64_t)d * V + v];
                continue;
            }
            int64_t cost = gr_cell_pen(st, c, val);
            if (val >= 0) {
                const int64_t k = (int64_t)d * S + val;
                const int32_t z = st->cover[k] - (row[d] == val); /* without this employee */
                cost += cover_cost(p, k, z + 1) - cover_cost(p, k, z);
            }
            *slot = cost;
        }
    }
    return cell;
}

int gr_row_dp(gr_state *st, int32_t e, int32_t *out) { return gr_row_dp_pinned(st, e, -1, 0, out); }

int gr_row_dp_pinned(gr_state *st, int32_t e, int32_t pin_d, int32_t pin_v, int32_t *out)
{
    const int64_t *cell = gr_row_costs(st, e, pin_d, pin_v);
    if (!cell)
        return 0;
    return gr_label_row(&st->dp, st->p, st->vrep, e, cell, GR_LABEL_CAP_MOVE, out, NULL) !=
           GR_ROW_NONE;
}

int gr_row_dp_quick(gr_state *st, int32_t e, int32_t *out)
{
    int64_t *cell = (int64_t *)gr_row_costs(st, e, -1, 0);
    if (!cell)
        return 0;
    if (gr_label_row(&st->dp, st->p, st->vrep, e, cell, 0, out, NULL) != GR_ROW_NONE)
        return 1;
    /* Under the cover marginals the quick search takes the cheap shifts early and can fail to
     * fit the rules later (25 of 150 rows of Instance 24 from an empty roster); under the
     * requests alone the same rules are met at once */
    const int32_t D = st->D, V = st->S + 1;
    for (int32_t d = 0; d < D; d++)
        for (int32_t v = 0; v < V; v++)
            if (cell[(int64_t)d * V + v] != GR_FORBIDDEN)
                cell[(int64_t)d * V + v] = gr_cell_pen(st, (int64_t)e * D + d, v == V - 1 ? -1 : v);
    return gr_label_row(&st->dp, st->p, st->vrep, e, cell, 0, out, NULL) != GR_ROW_NONE;
}
