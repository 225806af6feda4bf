/* Incremental scoring. A move rewrites one employee's days [a, b]; every rule but cover is a
 * function of that employee's row alone, so the delta needs only:
 *   - per-cell terms (requests, fixed days off) on the changed days,
 *   - aggregates (shift counts, minutes, worked weekends) adjusted by the change,
 *   - rotation pairs touching the changed days,
 *   - the runs overlapping [a-1, b+1], rescanned between the nearest unchanged run boundaries.
 * Cover needs the per-(day, shift) counts. A move therefore costs O(days it touches + the
 * length of the runs around them), never O(E*D). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int gr_state_alloc(gr_state *st, const gr_problem *p)
{
    memset(st, 0, sizeof *st);
    st->p = p;
    st->cut = INT64_MAX;
    st->E = p->n_employees;
    st->D = p->n_days;
    st->S = p->n_shifts;
    st->W = p->n_weekends;
    size_t E = (size_t)st->E, D = (size_t)st->D, S = (size_t)st->S, W = (size_t)st->W;
    st->roster = calloc(E * D, sizeof(int32_t));
    st->count = calloc(E * S, sizeof(int32_t));
    st->minutes = calloc(E, sizeof(int32_t));
    st->wk_days = calloc(E * W + 1, sizeof(int32_t));
    st->wk_worked = calloc(E, sizeof(int32_t));
    st->cover = calloc(D * S, sizeof(int32_t));
    st->elig = calloc(E * S, sizeof(int32_t));
    st->n_elig = calloc(E, sizeof(int32_t));
    st->scratch_vals = calloc(D, sizeof(int32_t));
    st->scratch_cnt = calloc(S, sizeof(int32_t));
    st->scratch_types = calloc(2 * D + 2, sizeof(int32_t));
    st->scratch_wk = calloc(W + 1, sizeof(int32_t));
    st->req_cell = calloc((size_t)p->n_on + (size_t)p->n_off + 1, sizeof(int32_t));
    st->vrep = calloc(S, sizeof(int32_t));
    st->pen_any = calloc(E * D + 1, 1);
    const int64_t n_cpen = (int64_t)E * (int64_t)D * (int64_t)(S + 1);
    if (n_cpen <= GR_CPEN_MAX && !(st->cpen = malloc((size_t)n_cpen * sizeof(int32_t)))) {
        gr_state_free(st);
        return GR_ERR_NOMEM;
    }
    if (!st->roster || !st->count || !st->minutes || !st->wk_days || !st->wk_worked ||
        !st->cover || !st->elig || !st->n_elig || !st->scratch_vals || !st->scratch_cnt ||
        !st->scratch_types ||
        !st->scratch_wk || !st->req_cell || !st->vrep || !st->pen_any) {
        gr_state_free(st);
        return GR_ERR_NOMEM;
    }
    st->min_give = INT32_MAX;
    for (int32_t s = 0; s < st->S; s++)
        for (int32_t t = -1; t < st->S; t++) {
            int32_t give = p->length[s] - (t >= 0 ? p->length[t] : 0);
            if (give > 0 && give < st->min_give)
                st->min_give = give;
        }
    for (int64_t c = 0; c < (int64_t)E * (int64_t)D; c++) {
        st->pen_any[c] = gr_pinned(p, c) || p->on_ptr[c] < p->on_ptr[c + 1] ||
                         p->off_ptr[c] < p->off_ptr[c + 1];
        for (int32_t v = -1; st->cpen && v < st->S; v++) {
            int64_t pen = gr_cell_pen_csr(p, c, v);
            if (pen > INT32_MAX) { /* thousands of requests on one cell: keep to the CSR */
                free(st->cpen);
                st->cpen = NULL;
                break;
            }
            st->cpen[c * (st->S + 1) + v + 1] = (int32_t)pen;
        }
        for (int32_t i = p->on_ptr[c]; i < p->on_ptr[c + 1]; i++)
            st->req_cell[i] = (int32_t)c;
        for (int32_t i = p->off_ptr[c]; i < p->off_ptr[c + 1]; i++)
            st->req_cell[p->n_on + i] = (int32_t)c;
    }
    /* Types that differ only by name for the row rules (length, what may follow them, what
     * they may follow) are interchangeable inside the row DP, which then works on one
     * representative per class (Instance 12: 10 types, 4 classes). */
    for (int32_t v = 0; v < st->S; v++) {
        st->vrep[v] = v;
        for (int32_t u = 0; u < v; u++) {
            int same = st->vrep[u] == u && p->length[u] == p->length[v];
            for (int32_t x = 0; same && x < st->S; x++)
                same = p->forbidden[(int64_t)u * st->S + x] == p->forbidden[(int64_t)v * st->S + x] &&
                       p->forbidden[(int64_t)x * st->S + u] == p->forbidden[(int64_t)x * st->S + v];
            /* u -> u and v -> v are compared with u -> v and v -> u through x = u, v */
            if (same) {
                st->vrep[v] = u;
                break;
            }
        }
    }
    for (int32_t e = 0; e < st->E; e++) {
        int32_t n = 0;
        for (int32_t s = 0; s < st->S; s++)
            if (p->max_shifts[(int64_t)e * st->S + s] > 0)
                st->elig[(int64_t)e * st->S + n++] = s;
        st->n_elig[e] = n;
    }
    return GR_OK;
}

void gr_state_free(gr_state *st)
{
    free(st->roster);
    free(st->count);
    free(st->minutes);
    free(st->wk_days);
    free(st->wk_worked);
    free(st->cover);
    free(st->elig);
    free(st->n_elig);
    free(st->scratch_vals);
    free(st->scratch_cnt);
    free(st->scratch_types);
    free(st->scratch_wk);
    free(st->req_cell);
    free(st->vrep);
    free(st->cpen);
    free(st->pen_any);
    gr_dp_free(&st->dp);
    gr_tdp_free(&st->tdp);
    memset(st, 0, sizeof *st);
}

static inline int64_t pos(int64_t x) { return x > 0 ? x : 0; }

static inline int64_t cover_cost(const gr_problem *p, int64_t k, int32_t z)
{
    int64_t req = p->cover_req[k];
    return req > z ? p->cover_under[k] * (req - z) : p->cover_over[k] * (z - req);
}

static inline int64_t minute_dev(const gr_state *st, int32_t e, int64_t m)
{
    int64_t dev = pos(m - st->p->max_minutes[e]);
    if (!st->relax_min)
        dev += pos(st->p->min_minutes[e] - m);
    return dev;
}

static inline int64_t run_cost(const gr_state *st, int32_t e, int32_t start, int32_t len, int work)
{
    const gr_problem *p = st->p;
    int inner = start > 0 && start + len < st->D; /* runs touching the horizon edge are exempt */
    if (work) {
        int64_t c = pos((int64_t)len - p->max_consec[e]);
        if (!st->relax_min && inner)
            c += pos((int64_t)p->min_consec[e] - len);
        return c;
    }
    return (!st->relax_min && inner) ? pos((int64_t)p->min_off[e] - len) : 0;
}

/* Cost of the runs inside [L, R]; L and R must be run boundaries of row. */
static int64_t runs_in(const gr_state *st, int32_t e, const int32_t *row, int32_t L, int32_t R)
{
    int64_t c = 0;
    int32_t d = L;
    while (d <= R) {
        int32_t start = d;
        int work = row[d] >= 0;
        while (d <= R && (row[d] >= 0) == work)
            d++;
        c += run_cost(st, e, start, d - start, work);
    }
    return c;
}

static int64_t rot_in(const gr_state *st, const int32_t *row, int32_t lo, int32_t hi)
{
    int64_t c = 0;
    for (int32_t d = lo; d <= hi; d++)
        if (row[d] >= 0 && row[d + 1] >= 0 &&
            st->p->forbidden[(int64_t)row[d] * st->S + row[d + 1]])
            c++;
    return c;
}

static inline int64_t wk_excess(const gr_state *st, int32_t e, int64_t n)
{
    return pos(n - st->p->max_weekends[e]);
}

/* Early rejection. When the roster is feasible every hard term is zero, so a move can only
 * add to each: once the penalty change (known after the cell loop) plus the hard terms summed
 * so far exceeds the caller's acceptance threshold st->cut, the rest (rotation and runs, the
 * costly part) cannot bring it back. At low temperature most proposals end here. */
static inline int past_cut(const gr_state *st, const gr_delta *r)
{
    return st->cut != INT64_MAX && gr_delta_cost(*r, st->cut_hw) > st->cut;
}

/* The delta is computed in three stages, cheapest first, so that a cut can stop it between
 * them: the cells (requests, days off, cover, shift counts, minutes), the weekends, and the
 * sequence rules (rotation and runs). The first returns 0 when nothing changes. */
static int delta_cells(gr_state *st, int32_t e, int32_t a, int32_t b, const int32_t *vals,
                       int with_cover, gr_delta *r, int *status_changed)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D, S = st->S;
    const int32_t *row = st->roster + (int64_t)e * D;
    int any = 0;
    int64_t dmin = 0;
    int32_t *scnt = st->scratch_cnt, *touched = st->scratch_types, nt = 0;
    *status_changed = 0;

    for (int32_t d = a; d <= b; d++) {
        int32_t o = row[d], n = vals[d - a];
        if (o == n)
            continue;
        any = 1;
        int64_t c = (int64_t)e * D + d;
        r->pen += gr_cell_pen(st, c, n) - gr_cell_pen(st, c, o);
        if (p->day_off[c])
            r->hard += (n >= 0) - (o >= 0);
        if (o >= 0) {
            dmin -= p->length[o];
            if (scnt[o]-- == 0)
                touched[nt++] = o;
            if (with_cover) {
                int64_t k = (int64_t)d * S + o;
                r->pen += cover_cost(p, k, st->cover[k] - 1) - cover_cost(p, k, st->cover[k]);
            }
        }
        if (n >= 0) {
            dmin += p->length[n];
            if (scnt[n]++ == 0)
                touched[nt++] = n;
            if (with_cover) {
                int64_t k = (int64_t)d * S + n;
                r->pen += cover_cost(p, k, st->cover[k] + 1) - cover_cost(p, k, st->cover[k]);
            }
        }
        if ((o >= 0) != (n >= 0))
            *status_changed = 1;
    }
    if (!any)
        return 0;

    /* shift counts: each touched type once (a type listed twice has a zero change the second
     * time), resetting the scratch to zero as we go; a list, not a second pass over the days:
     * that pass was a sixth of the delta on Instance 22 */
    for (int32_t i = 0; i < nt; i++) {
        int32_t s = touched[i];
        if (scnt[s] == 0)
            continue;
        int64_t k = (int64_t)e * S + s, cnt = st->count[k], mx = p->max_shifts[k];
        r->hard += pos(cnt + scnt[s] - mx) - pos(cnt - mx);
        scnt[s] = 0;
    }
    if (dmin != 0)
        r->minutes = minute_dev(st, e, st->minutes[e] + dmin) - minute_dev(st, e, st->minutes[e]);
    return 1;
}

static void delta_weekends(gr_state *st, int32_t e, int32_t a, int32_t b, const int32_t *vals,
                           gr_delta *r)
{
    const gr_problem *p = st->p;
    const int32_t *row = st->roster + (int64_t)e * st->D;
    int32_t *swk = st->scratch_wk, *wkd = st->wk_days + (int64_t)e * st->W;
    int64_t worked = st->wk_worked[e], nw = worked;
    for (int32_t d = a; d <= b; d++)
        if (p->weekend[d] >= 0)
            swk[p->weekend[d]] += (vals[d - a] >= 0) - (row[d] >= 0);
    for (int32_t d = a; d <= b; d++) {
        int32_t w = p->weekend[d];
        if (w < 0 || swk[w] == 0)
            continue;
        nw += (wkd[w] + swk[w] > 0) - (wkd[w] > 0);
        swk[w] = 0;
    }
    r->hard += wk_excess(st, e, nw) - wk_excess(st, e, worked);
}

/* rotation and runs: measure before, write the new values, measure after, restore */
static void delta_sequence(gr_state *st, int32_t e, int32_t a, int32_t b, const int32_t *vals,
                           int status_changed, gr_delta *r)
{
    const int32_t D = st->D;
    int32_t *row = st->roster + (int64_t)e * D;
    int32_t lo = a > 0 ? a - 1 : 0, hi = b < D - 1 ? b : D - 2;
    int32_t L = 0, R = D - 1;
    if (status_changed) {
        if (a > 0) {
            int w = row[a - 1] >= 0;
            L = a - 1;
            while (L > 0 && (row[L - 1] >= 0) == w)
                L--;
        }
        if (b < D - 1) {
            int w = row[b + 1] >= 0;
            R = b + 1;
            while (R < D - 1 && (row[R + 1] >= 0) == w)
                R++;
        }
    }
    int64_t before = rot_in(st, row, lo, hi) + (status_changed ? runs_in(st, e, row, L, R) : 0);
    int32_t *saved = st->scratch_vals;
    for (int32_t d = a; d <= b; d++) {
        saved[d - a] = row[d];
        row[d] = vals[d - a];
    }
    int64_t after = rot_in(st, row, lo, hi) + (status_changed ? runs_in(st, e, row, L, R) : 0);
    for (int32_t d = a; d <= b; d++)
        row[d] = saved[d - a];
    r->hard += after - before;
}

gr_delta gr_state_delta(gr_state *st, int32_t e, int32_t a, int32_t b, const int32_t *vals,
                        int with_cover)
{
    gr_delta r = {0, 0, 0};
    int status_changed;
    if (!delta_cells(st, e, a, b, vals, with_cover, &r, &status_changed))
        return r;
    if (past_cut(st, &r)) {
        r.pen = GR_DELTA_CUT;
        return r;
    }
    if (status_changed && st->W > 0) {
        delta_weekends(st, e, a, b, vals, &r);
        if (past_cut(st, &r)) {
            r.pen = GR_DELTA_CUT;
            return r;
        }
    }
    delta_sequence(st, e, a, b, vals, status_changed, &r);
    return r;
}

static inline gr_delta delta_sum(gr_delta x, gr_delta y)
{
    return (gr_delta){x.hard + y.hard, x.minutes + y.minutes, x.pen + y.pen};
}

/* Both rows go through each stage before either goes to the next, so that a cut sees both
 * request changes (a swap often pays in one row for what it costs in the other) before any
 * sequence rule is scanned. On a feasible roster every later term is >= 0, so a partial sum
 * past the cut is final. */
void gr_state_delta_pair(gr_state *st, int32_t e1, int32_t e2, int32_t a, int32_t b,
                         const int32_t *v1, const int32_t *v2, gr_delta *d1, gr_delta *d2)
{
    gr_delta r1 = {0, 0, 0}, r2 = {0, 0, 0};
    int sc1, sc2;
    int any1 = delta_cells(st, e1, a, b, v1, 0, &r1, &sc1);
    int any2 = delta_cells(st, e2, a, b, v2, 0, &r2, &sc2);
    gr_delta sum = delta_sum(r1, r2);
    if (past_cut(st, &sum))
        goto cut;
    if (st->W > 0 && (sc1 || sc2)) { /* a status change implies a changed cell */
        if (sc1)
            delta_weekends(st, e1, a, b, v1, &r1);
        if (sc2)
            delta_weekends(st, e2, a, b, v2, &r2);
        sum = delta_sum(r1, r2);
        if (past_cut(st, &sum))
            goto cut;
    }
    if (any1) {
        delta_sequence(st, e1, a, b, v1, sc1, &r1);
        sum = delta_sum(r1, r2);
        if (past_cut(st, &sum))
            goto cut;
    }
    if (any2)
        delta_sequence(st, e2, a, b, v2, sc2, &r2);
    *d1 = r1;
    *d2 = r2;
    return;
cut:
    *d1 = r1;
    *d2 = r2;
    d1->pen = GR_DELTA_CUT;
}

void gr_state_apply(gr_state *st, int32_t e, int32_t a, int32_t b, const int32_t *vals,
                    int with_cover, gr_delta dl)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D, S = st->S;
    int32_t *row = st->roster + (int64_t)e * D;
    for (int32_t d = a; d <= b; d++) {
        int32_t o = row[d], n = vals[d - a];
        if (o == n)
            continue;
        if (o >= 0) {
            st->count[(int64_t)e * S + o]--;
            st->minutes[e] -= p->length[o];
            if (with_cover)
                st->cover[(int64_t)d * S + o]--;
        }
        if (n >= 0) {
            st->count[(int64_t)e * S + n]++;
            st->minutes[e] += p->length[n];
            if (with_cover)
                st->cover[(int64_t)d * S + n]++;
        }
        int32_t w = p->weekend[d];
        if (w >= 0 && (o >= 0) != (n >= 0)) {
            int32_t *k = st->wk_days + (int64_t)e * st->W + w;
            int32_t before = *k > 0;
            *k += n >= 0 ? 1 : -1;
            st->wk_worked[e] += (*k > 0) - before;
        }
        row[d] = n;
    }
    st->total.hard += dl.hard;
    st->total.minutes += dl.minutes;
    st->total.pen += dl.pen;
}

int64_t gr_state_emp_hard(const gr_state *st, int32_t e)
{
    const gr_problem *p = st->p;
    const int32_t *row = st->roster + (int64_t)e * st->D;
    int64_t h = minute_dev(st, e, st->minutes[e]) + wk_excess(st, e, st->wk_worked[e]);
    for (int32_t d = 0; d < st->D; d++)
        h += p->day_off[(int64_t)e * st->D + d] && row[d] >= 0;
    for (int32_t s = 0; s < st->S; s++) {
        int64_t k = (int64_t)e * st->S + s;
        h += pos((int64_t)st->count[k] - p->max_shifts[k]);
    }
    if (st->D > 1)
        h += rot_in(st, row, 0, st->D - 2);
    return h + runs_in(st, e, row, 0, st->D - 1);
}

gr_delta gr_state_full(const gr_state *st)
{
    const gr_problem *p = st->p;
    gr_delta t = {0, 0, 0};
    for (int32_t e = 0; e < st->E; e++) {
        const int32_t *row = st->roster + (int64_t)e * st->D;
        for (int32_t d = 0; d < st->D; d++) {
            int64_t c = (int64_t)e * st->D + d;
            t.pen += gr_cell_pen(st, c, row[d]);
            t.hard += p->day_off[c] && row[d] >= 0;
        }
        for (int32_t s = 0; s < st->S; s++) {
            int64_t k = (int64_t)e * st->S + s;
            t.hard += pos((int64_t)st->count[k] - p->max_shifts[k]);
        }
        t.minutes += minute_dev(st, e, st->minutes[e]);
        t.hard += wk_excess(st, e, st->wk_worked[e]);
        if (st->D > 1)
            t.hard += rot_in(st, row, 0, st->D - 2);
        t.hard += runs_in(st, e, row, 0, st->D - 1);
    }
    for (int64_t k = 0; k < (int64_t)st->D * st->S; k++)
        t.pen += cover_cost(p, k, st->cover[k]);
    return t;
}

void gr_state_load(gr_state *st, const int32_t *roster)
{
    const gr_problem *p = st->p;
    size_t E = (size_t)st->E, D = (size_t)st->D, S = (size_t)st->S, W = (size_t)st->W;
    memcpy(st->roster, roster, E * D * sizeof(int32_t));
    memset(st->count, 0, E * S * sizeof(int32_t));
    memset(st->minutes, 0, E * sizeof(int32_t));
    memset(st->wk_days, 0, (E * W + 1) * sizeof(int32_t));
    memset(st->wk_worked, 0, E * sizeof(int32_t));
    memset(st->cover, 0, D * S * sizeof(int32_t));
    for (int32_t e = 0; e < st->E; e++)
        for (int32_t d = 0; d < st->D; d++) {
            int32_t s = roster[(int64_t)e * st->D + d];
            if (s < 0)
                continue;
            st->count[(int64_t)e * st->S + s]++;
            st->minutes[e] += p->length[s];
            st->cover[(int64_t)d * st->S + s]++;
            int32_t w = p->weekend[d];
            if (w >= 0 && st->wk_days[(int64_t)e * st->W + w]++ == 0)
                st->wk_worked[e]++;
        }
    st->total = gr_state_full(st);
}
