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

/* The costs of e's values on days [lo, hi] into cell (row-major from day lo). */
static void fill_costs(gr_state *st, int32_t e, int32_t lo, int32_t hi, int32_t pin_d,
                       int32_t pin_v, int64_t *cell)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D, S = st->S, V = S + 1;
    const int32_t *row = st->roster + (int64_t)e * D;
    for (int32_t d = lo; d <= hi; d++) {
        const int64_t c = (int64_t)e * D + d;
        for (int32_t v = 0; v <= S; v++) {
            int64_t *slot = &cell[(int64_t)(d - lo) * V + v];
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
}

const int64_t *gr_row_costs(gr_state *st, int32_t e, int32_t pin_d, int32_t pin_v)
{
    int64_t *cell = gr_dp_grow(&st->dp, GR_DP_SLOT_COSTS,
                               (size_t)st->D * (size_t)(st->S + 1) * sizeof *cell);
    if (cell)
        fill_costs(st, e, 0, st->D - 1, pin_d, pin_v, cell);
    return cell;
}

/* The window is searched as a short row of its own: days [a, b] free, with up to `ctx` fixed
 * days on each side so that every run crossing the window's edges is seen whole (a run longer
 * than that breaks a maximum on both rows, and an off run that long keeps every minimum), and
 * the row's totals outside (minutes, shifts of each type, weekends not worked inside) taken off
 * its limits. So its cheapest values are exact for the whole row (up to the label cap), and a
 * 364-day row is re-optimised in a few ms where the whole-row search is not exact (decision
 * 0022). */
int gr_row_window(gr_state *st, int32_t e, int32_t a, int32_t b, int32_t pin_d, int32_t pin_v,
                  int32_t *out)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D, S = st->S, V = S + 1;
    if (a < 0)
        a = 0;
    if (b >= D)
        b = D - 1;
    if (a > b)
        return 0;
    int32_t ctx = p->max_consec[e] < D ? p->max_consec[e] : D;
    if (p->min_consec[e] > ctx)
        ctx = p->min_consec[e];
    if (p->min_off[e] > ctx)
        ctx = p->min_off[e];
    ctx++;
    const int32_t *row = st->roster + (int64_t)e * D;
    int32_t lo = a - ctx < 0 ? 0 : a - ctx, hi = b + ctx >= D ? D - 1 : b + ctx;
    /* the fixed days need reach only one day past the run that crosses each edge: that run is
     * then seen whole, and the run beyond it is fixed where the search sees it begin or end */
    if (a > 0) {
        int32_t x = a - 1;
        while (x > lo && (row[x - 1] >= 0) == (row[a - 1] >= 0))
            x--;
        if (x > lo)
            lo = x - 1;
    }
    if (b < D - 1) {
        int32_t x = b + 1;
        while (x < hi && (row[x + 1] >= 0) == (row[b + 1] >= 0))
            x++;
        if (x < hi)
            hi = x + 1;
    }
    const int32_t n = hi - lo + 1;
    int64_t *cell = gr_dp_grow(&st->dp, GR_DP_SLOT_WCOST, (size_t)n * V * sizeof *cell);
    int32_t *ints = gr_dp_grow(&st->dp, GR_DP_SLOT_WRULE, ((size_t)S + (size_t)n + 8) * sizeof *ints);
    if (!cell || !ints)
        return 0;
    int32_t *ms = ints, *sub = ms + S, *rules = sub + n;
    fill_costs(st, e, a, b, pin_d, pin_v, cell + (int64_t)(a - lo) * V); /* the free days */
    for (int32_t s = 0; s < S; s++)
        ms[s] = p->max_shifts[(int64_t)e * S + s] - st->count[(int64_t)e * S + s];
    int64_t minutes = st->minutes[e];
    int32_t weekends = st->wk_worked[e], last = -1, inside = 0, seen = -1;
    for (int32_t d = lo; d <= hi; d++) {
        const int32_t v = row[d], dd = d - lo, w = p->weekend[d];
        if (w >= 0 && w != seen) {
            inside++;
            seen = w;
        }
        if (d < a || d > b) /* context: held at its value */
            for (int32_t x = 0; x < V; x++)
                cell[(int64_t)dd * V + x] = x == (v < 0 ? S : v) ? 0 : GR_FORBIDDEN;
        if (v < 0)
            continue;
        ms[v]++;
        minutes -= p->length[v];
        /* a weekend worked inside is the search's to count (one crossing an edge has its
         * days inside fixed, so the search counts it exactly when it is worked inside) */
        if (w >= 0 && w != last)
            weekends--;
        last = w;
    }
    /* minutes, weekends left for [lo, hi]; a row already breaking a maximum outside gets none */
    rules[0] = (int32_t)(p->min_minutes[e] - minutes > 0 ? p->min_minutes[e] - minutes : 0);
    rules[1] = (int32_t)(p->max_minutes[e] - minutes);
    rules[2] = p->max_consec[e];
    rules[3] = p->min_consec[e];
    rules[4] = p->min_off[e];
    rules[5] = p->max_weekends[e] - weekends;
    if (rules[1] < 0 || rules[5] < 0)
        return 0;
    /* more weekends left than [lo, hi] holds bind nothing: the search's weekend dimension
     * (its exact bound's table grows with it) need not count past those */
    if (rules[5] > inside)
        rules[5] = inside;
    for (int32_t s = 0; s < S; s++)
        if (ms[s] < 0)
            return 0;
    gr_problem q = *p;
    q.n_employees = 1;
    q.n_days = n;
    q.max_shifts = ms;
    q.min_minutes = rules;
    q.max_minutes = rules + 1;
    q.max_consec = rules + 2;
    q.min_consec = rules + 3;
    q.min_off = rules + 4;
    q.max_weekends = rules + 5;
    q.day_off = p->day_off + (int64_t)e * D + lo; /* the employee's days, as employee 0 */
    q.weekend = p->weekend + lo;
    q.pin = NULL; /* pins reach the search as cell costs (gr_cell_pen) */
    if (gr_label_row(&st->dp, &q, st->vrep, 0, cell, GR_LABEL_CAP_WINDOW, sub, NULL) == GR_ROW_NONE)
        return 0;
    memcpy(out, sub + (a - lo), (size_t)(b - a + 1) * sizeof *out);
    return 1;
}

/* The exact search where the row's minutes table is small (up to Instance 20: ~35 ms a row),
 * the quick one (rule-abiding, exact when the table proves it) above: on 364 days the exact
 * search takes 0.3-1 s a row, so a pricing round of 50 rows took the whole of a 10 s solve
 * and the GA's row moves left it ~1 000 move evaluations a second (Instance 24). */
#define EXACT_TABLE_MAX ((int64_t)1 << 19)
/* The walk's row moves search a whole long row only up to this table: a whole-row move costs
 * ~2 ms on Instance 20's rows (75-150 k entries), which pay for it, and ~9 ms on the five rows
 * of Instance 22 just under EXACT_TABLE_MAX (516 k), which took half of the walk's time there
 * for moves a window makes in a tenth of a millisecond (decision 0041). */
#define WALK_TABLE_MAX ((int64_t)1 << 18)

/* Entries of e's minutes table for the whole row: days x values x minute units. */
static int64_t row_table(const gr_problem *p, int32_t e)
{
    const int32_t S = p->n_shifts;
    int32_t g = 0, maxlen = 0;
    for (int32_t s = 0; s < S; s++)
        if (p->max_shifts[(int64_t)e * S + s] > 0) {
            g = gr_gcd32(g, p->length[s]);
            if (p->length[s] > maxlen)
                maxlen = p->length[s];
        }
    if (g == 0)
        return 0;
    int64_t units = p->max_minutes[e] / g, top = (int64_t)p->n_days * (maxlen / g);
    units = units < top ? units : top;
    return (int64_t)p->n_days * (S + 1) * (units + 1);
}

int gr_row_large(const gr_problem *p, int32_t e)
{
    return row_table(p, e) > EXACT_TABLE_MAX;
}

int gr_row_windowed(const gr_problem *p, int32_t e)
{
    return row_table(p, e) > WALK_TABLE_MAX;
}

/* Every per-employee rule, checked on one row (the same counting as score.c): the table DP's
 * row is trusted only when it passes, since it does not model every rule on every input. */
int gr_row_keeps_maxima(const gr_problem *p, int32_t e, const int32_t *row)
{
    const int32_t S = p->n_shifts, D = p->n_days;
    int64_t minutes = 0;
    for (int32_t s = 0; s < S; s++) {
        int32_t n = 0;
        for (int32_t d = 0; d < D; d++)
            n += row[d] == s;
        if (n > p->max_shifts[(int64_t)e * S + s])
            return 0;
    }
    int32_t weekends = 0, last_wk = -1;
    for (int32_t d = 0; d < D; d++) {
        const int32_t v = row[d];
        if (v < 0)
            continue;
        if (p->day_off[(int64_t)e * D + d])
            return 0;
        if (d + 1 < D && row[d + 1] >= 0 && p->forbidden[(int64_t)v * S + row[d + 1]])
            return 0;
        minutes += p->length[v];
        const int32_t wk = p->weekend[d];
        if (wk >= 0 && wk != last_wk) {
            weekends++;
            last_wk = wk;
        }
    }
    if (minutes > p->max_minutes[e] || minutes < p->min_minutes[e] ||
        weekends > p->max_weekends[e])
        return 0;
    for (int32_t d = 0; d < D;) {
        const int work = row[d] >= 0;
        int32_t a = d;
        while (d < D && (row[d] >= 0) == work)
            d++;
        const int32_t len = d - a;
        const int edge = a == 0 || d == D;
        if (work && len > p->max_consec[e])
            return 0;
        if (!edge && len < (work ? p->min_consec[e] : p->min_off[e]))
            return 0;
    }
    return 1;
}

int gr_row_dp(gr_state *st, int32_t e, int32_t *out) { return gr_row_dp_pinned(st, e, -1, 0, out); }

int gr_row_dp_pinned(gr_state *st, int32_t e, int32_t pin_d, int32_t pin_v, int32_t *out)
{
    const int64_t *cell = gr_row_costs(st, e, pin_d, pin_v);
    if (!cell)
        return 0;
    /* the table DP first where its table is small (decision 0049); its rows are exact when
     * they keep every type's maximum */
    if (gr_table_first(st->p, e) && gr_table_row(st, e, cell, out) &&
        gr_row_keeps_maxima(st->p, e, out))
        return 1;
    /* quick on large rows; not offering them at all (as the table DP, which gave up there)
     * ended Instances 22 and 24 worse at 60 s: 88 k and 238 k against 46 k and 208 k */
    const size_t cap = gr_row_large(st->p, e) ? 0 : GR_LABEL_CAP_MOVE;
    return gr_label_row(&st->dp, st->p, st->vrep, e, cell, cap, out, NULL) != GR_ROW_NONE;
}

int gr_row_dp_quick(gr_state *st, int32_t e, int32_t *out)
{
    int64_t *cell = (int64_t *)gr_row_costs(st, e, -1, 0);
    if (!cell)
        return 0;
    if (gr_table_row(st, e, cell, out) && gr_row_keeps_maxima(st->p, e, out))
        return 1;
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
