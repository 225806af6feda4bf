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

/* The default effort: the exact search where the minutes table of the row is small (up to
 * Instance 20: ~35 ms a row), the quick search (rule-abiding, exact when the table proves it)
 * on long horizons (a table of D x (S + 1) x minute units above 2^19), where the exact
 * search takes ~0.3 s a row (Instance 22) and a pricing round of 50 rows took the whole of a
 * 10 s solve. */
#define EXACT_TABLE_MAX ((int64_t)1 << 19)

static size_t default_cap(const gr_problem *p, int32_t e)
{
    const int32_t S = p->n_shifts;
    int32_t g = 0, maxlen = 0;
    for (int32_t s = 0; s < S; s++)
        if (p->max_shifts[(int64_t)e * S + s] > 0) {
            int32_t a = g, b = p->length[s];
            while (b) {
                int32_t t = a % b;
                a = b;
                b = t;
            }
            g = a;
            if (p->length[s] > maxlen)
                maxlen = p->length[s];
        }
    if (g == 0)
        return GR_LABEL_CAP_PRICING;
    int64_t units = p->max_minutes[e] / g, top = (int64_t)p->n_days * (maxlen / g);
    units = units < top ? units : top;
    int64_t table = (int64_t)p->n_days * (S + 1) * (units + 1);
    return table > EXACT_TABLE_MAX ? 0 : GR_LABEL_CAP_PRICING;
}

int gr_price_rows_bounded(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                          int64_t *hard_out, int64_t *bound_out)
{
    return gr_price_rows_effort(p, cell_cost, rows_out, hard_out, bound_out, -1);
}

int gr_price_rows_effort(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                         int64_t *hard_out, int64_t *bound_out, int64_t label_cap)
{
    int rc = gr_validate(p);
    if (rc != GR_OK)
        return rc;
    if (!cell_cost || !rows_out || !hard_out)
        return GR_ERR_NULL;
    const int32_t E = p->n_employees, D = p->n_days, V = p->n_shifts + 1;
    const int64_t n_cost = (int64_t)E * D * V;
    /* bounded costs keep the DP's sums (at most D of them) far from overflow */
    for (int64_t i = 0; i < n_cost; i++)
        if (cell_cost[i] != GR_FORBIDDEN && (cell_cost[i] < -COST_LIMIT || cell_cost[i] > COST_LIMIT))
            return GR_ERR_COST;
    gr_state st;
    if (gr_state_alloc(&st, p) != GR_OK)
        return GR_ERR_NOMEM;
    for (int32_t e = 0; e < E; e++) {
        int32_t *row = rows_out + (int64_t)e * D;
        int64_t bound;
        const size_t cap = label_cap < 0 ? default_cap(p, e) : (size_t)label_cap;
        int status = gr_label_row(&st.dp, p, st.vrep, e, cell_cost + (int64_t)e * D * V, cap, row,
                                  &bound);
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

int gr_price_rows(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                  int64_t *hard_out)
{
    return gr_price_rows_bounded(p, cell_cost, rows_out, hard_out, NULL);
}
