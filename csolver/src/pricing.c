/* Pricing for column generation: the labelling DP (label_dp.c) under caller-given cell costs.
 *
 * Why here and not in Python: the master problem (an LP over whole rows, solved by HiGHS in
 * csolver/column_generation.py) needs, every round, each employee's cheapest rule-abiding row
 * under the cover duals. That is exactly the row DP with a different cost table, and the DP is
 * the part that must be fast (docs/decisions/0008, 0013). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define COST_LIMIT ((int64_t)1 << 40)

int gr_price_rows_bounded(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                          int64_t *hard_out, int64_t *bound_out)
{
    return gr_price_rows_effort(p, cell_cost, rows_out, hard_out, bound_out, -1);
}

/* Employees [first, first + count) of the problem. */
static int price_range(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                       int64_t *hard_out, int64_t *bound_out, int64_t label_cap, int large_quick,
                       int32_t first, int32_t count, const int32_t *start)
{
    int rc = gr_validate(p);
    if (rc != GR_OK)
        return rc;
    if (!cell_cost || !rows_out || !hard_out)
        return GR_ERR_NULL;
    const int32_t E = p->n_employees, D = p->n_days, V = p->n_shifts + 1;
    if (first < 0 || count < 0 || first > E || count > E - first)
        return GR_ERR_CONFIG;
    const int32_t last = first + count;
    /* bounded costs keep the DP's sums (at most D of them) far from overflow */
    for (int64_t i = (int64_t)first * D * V; i < (int64_t)last * D * V; i++)
        if (cell_cost[i] != GR_FORBIDDEN && (cell_cost[i] < -COST_LIMIT || cell_cost[i] > COST_LIMIT))
            return GR_ERR_COST;
    gr_state st;
    if (gr_state_alloc(&st, p) != GR_OK)
        return GR_ERR_NOMEM;
    /* every row off: the table DP reads no cover in pricing mode */
    for (int64_t i = 0; i < (int64_t)E * D; i++)
        st.roster[i] = -1;
    gr_state_load(&st, st.roster);
    for (int32_t e = first; e < last; e++) {
        int32_t *row = rows_out + (int64_t)e * D;
        int64_t bound;
        /* the table DP first where its table is small (decision 0049); exact when its row
         * keeps every maximum */
        if (gr_table_first(p, e)) {
            st.price = cell_cost + (int64_t)e * D * V;
            const int64_t *cell = gr_row_costs(&st, e, -1, 0);
            st.price = NULL;
            if (!cell) {
                gr_state_free(&st);
                return GR_ERR_NOMEM;
            }
            if (gr_table_row(&st, e, cell, row) && gr_row_keeps_maxima(p, e, row)) {
                int64_t c = 0;
                for (int32_t d = 0; d < D; d++)
                    c += cell_cost[((int64_t)e * D + d) * V + (row[d] < 0 ? V - 1 : row[d])];
                hard_out[e] = 0;
                if (bound_out)
                    bound_out[e] = c;
                continue;
            }
        }
        const size_t cap = label_cap >= 0 && !(large_quick && gr_row_large(p, e))
                               ? (size_t)label_cap
                               : gr_row_large(p, e) ? 0 : GR_LABEL_CAP_PRICING;
        int status = gr_price_row(&st.dp, p, st.vrep, e, cell_cost + (int64_t)e * D * V, cap,
                                  start ? start + (int64_t)e * D : NULL, row, &bound);
        if (bound_out)
            bound_out[e] = bound;
        if (status == GR_ROW_NONE) {
            hard_out[e] = -1;
            for (int32_t d = 0; d < D; d++)
                row[d] = -1;
            continue;
        }
        hard_out[e] = status == GR_ROW_EXACT ? 0 : -2;
    }
    gr_state_free(&st);
    return GR_OK;
}

int gr_price_rows_effort(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                         int64_t *hard_out, int64_t *bound_out, int64_t label_cap)
{
    return price_range(p, cell_cost, rows_out, hard_out, bound_out, label_cap, 0, 0,
                       p ? p->n_employees : 0, NULL);
}

int gr_price_rows_range(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                        int64_t *hard_out, int64_t *bound_out, int64_t label_cap, int32_t first,
                        int32_t count)
{
    return price_range(p, cell_cost, rows_out, hard_out, bound_out, label_cap, 1, first, count,
                       NULL);
}

int gr_price_rows_from(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                       int64_t *hard_out, int64_t *bound_out, int64_t label_cap, int32_t first,
                       int32_t count, const int32_t *start_rows)
{
    return price_range(p, cell_cost, rows_out, hard_out, bound_out, label_cap, 1, first, count,
                       start_rows);
}

int gr_price_rows(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                  int64_t *hard_out)
{
    return gr_price_rows_bounded(p, cell_cost, rows_out, hard_out, NULL);
}
