/* The table DP (the row DP before decision 0013), kept as the first try of the constructive
 * start's rows and, where its table is small (gr_table_first), of the moves' and pricing's:
 * there it is faster than the labelling search, on larger tables slower (decision 0049). Both
 * its runs are relaxations of the full row problem, so a row from it that keeps every
 * per-type maximum is the cheapest rule-abiding row (row_dp.c checks that, else label_dp.c
 * decides).
 *
 * Exact row re-optimisation: the cheapest row for one employee with every other row fixed,
 * by dynamic programming over days. The state is (value on the previous day, length of the
 * current run, minutes so far, weekends worked so far); whether the run started on day 0 (and
 * so is exempt from the minimum) is not a state: an uncapped run of length r ending on day d
 * started on day 0 exactly when r = d + 1, and a capped off run is long enough anyway. Keeping
 * it as a state doubled the space, and the DP is most of the profile;
 * rotation, run bounds with their edge exemptions, day-off cells, skills, the minutes window
 * and the weekend limit are all enforced by construction. The per-type maximum is a state only
 * when it binds: the DP first runs without it, and if its row works more of a type than the
 * employee may, it runs again with the count of that one type in the state (x (max + 1)).
 * Without that second run most rows it offered on Instance 8 were infeasible: the night shifts
 * are short and the night-capable staff are at their night maximum, so the cheapest row takes
 * one night more, and the delta threw the move away (92 of 97 cover-chain steps on a 10 s
 * roster). A second binding type is still charged by the caller's exact delta.
 *
 * Why: a row that is one compound change away from feasible (move a pair of shifts across a
 * fixed day off, say) is a deep valley for single-cell moves and a swap neighbourhood, but one
 * step for this move. It is ~1000x the cost of a cell move, so the search calls it sparingly. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DP_MAX_STATES (1 << 21) /* per day; beyond this the move is simply not offered */
#define DP_MAX_TOTAL (1 << 25)

void gr_tdp_free(gr_tdp *dp)
{
    free(dp->cost_a);
    free(dp->cost_b);
    free(dp->back);
    free(dp->cell);
    free(dp->allowed);
    free(dp->n_allowed);
    free(dp->pick);
    memset(dp, 0, sizeof *dp);
}

static int reserve(gr_tdp *dp, size_t per_day, size_t days, size_t cells)
{
    if (per_day * days > DP_MAX_TOTAL || per_day > DP_MAX_STATES)
        return 0;
    if (per_day > dp->per_day_cap || per_day * days > dp->back_cap || cells > dp->cell_cap) {
        size_t pd = per_day > dp->per_day_cap ? per_day : dp->per_day_cap;
        size_t bk = per_day * days > dp->back_cap ? per_day * days : dp->back_cap;
        size_t cl = cells > dp->cell_cap ? cells : dp->cell_cap;
        int64_t *a = realloc(dp->cost_a, pd * sizeof *a), *b = NULL;
        if (a)
            dp->cost_a = a;
        b = realloc(dp->cost_b, pd * sizeof *b);
        if (b)
            dp->cost_b = b;
        int32_t *k = realloc(dp->back, bk * sizeof *k);
        if (k)
            dp->back = k;
        int64_t *c = realloc(dp->cell, cl * sizeof *c);
        if (c)
            dp->cell = c;
        int32_t *al = realloc(dp->allowed, cl * sizeof *al);
        if (al)
            dp->allowed = al;
        int32_t *na = realloc(dp->n_allowed, days * sizeof *na);
        if (na)
            dp->n_allowed = na;
        int32_t *pk = realloc(dp->pick, cl * sizeof *pk);
        if (pk)
            dp->pick = pk;
        if (!a || !b || !k || !c || !al || !na || !pk)
            return 0;
        dp->per_day_cap = pd;
        dp->back_cap = bk;
        dp->cell_cap = cl;
    }
    return 1;
}

#define INF INT64_MAX
/* the caller's cost table marks barred values GR_FORBIDDEN; the DP reads them as INF */
_Static_assert(INF == GR_FORBIDDEN, "a forbidden cell must read as unreachable");

/* One contiguous block of transitions: n states of yesterday, each into the state at the same
 * offset of today's block, at the cost cc of today's value. */
static inline void relax(const int64_t *restrict src, int64_t *restrict dst, int32_t *restrict bk,
                         size_t n, int64_t cc, int32_t src_index)
{
    for (size_t q = 0; q < n; q++) {
        const int64_t base = src[q];
        if (base == INF || base + cc >= dst[q])
            continue;
        dst[q] = base + cc;
        bk[q] = src_index + (int32_t)q;
    }
}

/* The table's dimensions for employee e, before any type is counted. */
typedef struct {
    int32_t g, maxlen; /* minutes in units of g; the longest eligible shift */
    int track_m, track_w;
    int32_t M, m_lo;   /* minutes states 0..M, the floor m_lo (units of g) */
    int32_t Wn;        /* weekends states */
    int32_t maxc, minc, mino, R; /* run bounds; run-length states 1..R */
} dims;

/* 0 when the table DP cannot take e's row (its minutes pass 4096 units, or the window is
 * empty). */
static int table_dims(const gr_problem *p, int32_t e, dims *t)
{
    const int32_t D = p->n_days, S = p->n_shifts;
    /* minutes in units of the gcd of the eligible lengths; not tracked if no bound can bind */
    t->g = 0;
    t->maxlen = 0;
    for (int32_t s = 0; s < S; s++)
        if (p->max_shifts[(int64_t)e * S + s] > 0) {
            t->g = gr_gcd32(t->g, p->length[s]);
            if (p->length[s] > t->maxlen)
                t->maxlen = p->length[s];
        }
    const int64_t max_m = p->max_minutes[e], min_m = p->min_minutes[e];
    t->track_m = t->g > 0 && (max_m < (int64_t)D * t->maxlen || min_m > 0);
    t->M = 0;
    t->m_lo = 0;
    if (t->track_m) {
        int64_t cap = max_m < (int64_t)D * t->maxlen ? max_m : (int64_t)D * t->maxlen;
        if (cap / t->g > 4096)
            return 0;
        t->M = (int32_t)(cap / t->g);
        t->m_lo = (int32_t)((min_m + t->g - 1) / t->g);
        if (t->m_lo > t->M)
            return 0;
    }
    const int32_t maxw = p->max_weekends[e];
    t->track_w = p->n_weekends > 0 && maxw < p->n_weekends;
    t->Wn = t->track_w ? maxw + 1 : 1;
    t->maxc = p->max_consec[e] < D ? p->max_consec[e] : D;
    t->minc = p->min_consec[e];
    t->mino = p->min_off[e];
    int32_t R = t->maxc;
    if (t->minc > R)
        R = t->minc;
    if (t->mino > R)
        R = t->mino;
    if (R < 1)
        R = 1;
    t->R = R > D ? D : R;
    return 1;
}

/* The table's transitions (states a day x values x days) for e's first run. */
static double table_work(const gr_problem *p, const dims *t)
{
    const double V = (double)p->n_shifts + 1.0;
    return V * (double)t->R * (double)(t->M + 1) * (double)t->Wn * V * (double)p->n_days;
}

int gr_table_first(const gr_problem *p, int32_t e)
{
    dims t;
    return table_dims(p, e, &t) && table_work(p, &t) <= GR_TABLE_FIRST_WORK;
}

/* The DP with the count of type ts (-1: none) in the state. */
static int row_dp(gr_state *st, int32_t e, const int64_t *cell, int32_t ts, int32_t *out)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D, S = st->S, V = S + 1; /* value index S = day off */
    gr_tdp *dp = &st->tdp;

    dims t;
    if (!table_dims(p, e, &t))
        return 0;
    const int32_t g = t.g, maxlen = t.maxlen, M = t.M, m_lo = t.m_lo, Wn = t.Wn, R = t.R;
    const int32_t maxc = t.maxc, minc = t.minc, mino = t.mino;
    const int track_m = t.track_m, track_w = t.track_w;
    /* Minutes reachable by the end of day d are at most (d + 1) * unit: the states above are
     * never written, so the loops below skip them (on long horizons most of the minutes
     * dimension early on). Skipping only unreachable states keeps the result identical. */
    const int32_t unit = track_m ? maxlen / g : 0;
#define MCAP(d) (track_m && (int64_t)((d) + 1) * unit < M ? ((d) + 1) * unit : M)
    /* Symmetrically, a state whose minutes cannot reach the floor even with the longest shift
     * on every remaining day is dead: it only feeds dead states. Skipping those too keeps the
     * result identical (Instance 8: 40 % fewer minutes rows over the horizon for most staff). */
#define MLO(d) (track_m && (int64_t)m_lo > (int64_t)(D - 1 - (d)) * unit                            \
                    ? (int32_t)((int64_t)m_lo - (int64_t)(D - 1 - (d)) * unit)                      \
                    : 0)
    /* shifts of the tracked type so far, 0..max: the innermost digit K of q = w * K + k */
    const int32_t K = ts >= 0 ? p->max_shifts[(int64_t)e * S + ts] + 1 : 1, Q = Wn * K;
    /* state = (((v * R + (r-1)) * (M+1) + m) * Q + q) */
    const size_t per_day = (size_t)V * (size_t)R * (size_t)(M + 1) * (size_t)Q;
    /* bound the work (~20 ms), so that cancellation stays prompt on large instances */
    if ((double)per_day * (double)V * (double)D > (double)(1 << 24))
        return 0;
    if (!reserve(dp, per_day, (size_t)D, (size_t)D * (size_t)V))
        return 0;
    st->dp.work += (int64_t)per_day * D;

    /* the class of ts without ts: represented by its next smallest member */
    int32_t ts_alt = -1;
    for (int32_t u = 0; ts >= 0 && u < S && ts_alt < 0; u++)
        if (u != ts && st->vrep[u] == st->vrep[ts])
            ts_alt = u;
    /* the caller's cell costs (gr_row_costs), copied: the classes below rewrite them */
    memcpy(dp->cell, cell, (size_t)D * (size_t)V * sizeof *dp->cell);
    for (int32_t d = 0; d < D; d++) {
        /* one representative per class of interchangeable types, priced by its cheapest member;
         * a tracked type is counted, so it is a class of its own */
        for (int32_t v = 0; v < S; v++) {
            int32_t r = v == ts ? v : st->vrep[v] == ts ? ts_alt : st->vrep[v];
            int64_t i = (int64_t)d * V + v, rep = (int64_t)d * V + r;
            dp->pick[i] = v;
            if (rep == i)
                continue;
            if (dp->cell[i] < dp->cell[rep]) {
                dp->cell[rep] = dp->cell[i];
                dp->pick[rep] = v;
            }
            dp->cell[i] = INF;
        }
    }

    int64_t *cur = dp->cost_a, *nxt = dp->cost_b;
#define IDX(v, r, m, q)                                                                            \
    ((((size_t)(v) * (size_t)R + (size_t)((r) - 1)) * (size_t)(M + 1) + (size_t)(m)) *            \
         (size_t)Q +                                                                               \
     (size_t)(q))
    /* values allowed on each day (skills, fixed days off, one per class of interchangeable
     * types): iterating these lists instead of all S+1 values cuts the work several times */
    int32_t *allowed = dp->allowed, *n_allowed = dp->n_allowed;
    for (int32_t d = 0; d < D; d++) {
        n_allowed[d] = 0;
        for (int32_t v = 0; v <= S; v++)
            if (dp->cell[(int64_t)d * V + v] != INF)
                allowed[(int64_t)d * V + n_allowed[d]++] = v;
    }
    /* the reachable, live rows (MLO(d) <= m <= MCAP(d)) of every run length of a value's slice */
#define CLEAR(buf, v, d)                                                                           \
    for (int32_t r_ = 1; r_ <= R; r_++) {                                                          \
        int64_t *row_ = (buf) + IDX((v), r_, MLO(d), 0);                                          \
        const size_t n_ = (size_t)(MCAP(d) + 1 - MLO(d)) * (size_t)Q;                             \
        for (size_t i_ = 0; i_ < n_; i_++)                                                         \
            row_[i_] = INF;                                                                        \
    }
    for (int32_t b = 0; b < n_allowed[0]; b++)
        CLEAR(cur, allowed[b], 0)
    for (int32_t v = 0; v <= S; v++) {
        int64_t cc = dp->cell[v];
        if (cc == INF)
            continue;
        int work = v < S;
        int32_t m = work && track_m ? p->length[v] / g : 0;
        int32_t w = work && track_w && p->weekend[0] >= 0 ? 1 : 0;
        if (m > M || m < MLO(0) || w >= Wn || (work && maxc < 1))
            continue;
        size_t i = IDX(v, 1, m, w * K + (v == ts));
        cur[i] = cc;
        dp->back[i] = -1;
    }
    for (int32_t d = 1; d < D; d++) {
        /* only the slices of values allowed today can be written, and only those are read
         * tomorrow */
        for (int32_t b = 0; b < n_allowed[d]; b++)
            CLEAR(nxt, allowed[(int64_t)d * V + b], d)
        const int32_t m_prev = MCAP(d - 1), m_alive = MLO(d);
        int32_t *back = dp->back + (size_t)d * per_day;
        const int32_t wk = p->weekend[d];
        const int same_weekend = wk >= 0 && p->weekend[d - 1] == wk;
        const int32_t *here = allowed + (int64_t)d * V, n_here = n_allowed[d];
        /* Loops ordered (previous value, next value, run length, minutes, weekends): every
         * check that depends on the pair of values only is made once per pair, and the two
         * innermost loops walk contiguous slices of the state arrays. */
        for (int32_t a = 0; a < n_allowed[d - 1]; a++) {
            const int32_t v = allowed[(int64_t)(d - 1) * V + a];
            const int work = v < S;
            for (int32_t b = 0; b < n_here; b++) {
                const int32_t v2 = here[b];
                const int work2 = v2 < S;
                if (work && work2 && p->forbidden[(int64_t)v * S + v2])
                    continue;
                const int64_t cc = dp->cell[(int64_t)d * V + v2];
                const int32_t dm = work2 && track_m ? p->length[v2] / g : 0;
                const int32_t dw = work2 && track_w && wk >= 0 && !(same_weekend && work) ? 1 : 0;
                const int32_t dk = v2 == ts;
                if (dm > M || dw >= Wn)
                    continue;
                for (int32_t r = 1; r <= R; r++) {
                    int32_t r2;
                    if (work2 == work) {
                        r2 = r + 1;
                        if (work && r2 > maxc)
                            break;
                        if (r2 > R)
                            r2 = R; /* off runs: only "long enough" matters */
                    } else {
                        /* the run ending on day d-1 began on day 0 (edge-exempt) iff r == d */
                        if (r != d && ((work && r < minc) || (!work && r < mino)))
                            continue;
                        r2 = 1;
                    }
                    const size_t src0 = IDX(v, r, 0, 0), dst0 = IDX(v2, r2, 0, 0);
                    const int64_t *src = cur + src0;
                    int64_t *dst = nxt + dst0;
                    int32_t *bk = back + dst0;
                    /* q = w * K + k moves by dw * K + dk. Without a tracked shift today the
                     * slice moves as one block; with one, a count at its maximum (k = K - 1)
                     * cannot take it, so each weekend row is one shorter. */
                    const int32_t m_first = m_alive > dm ? m_alive - dm : 0;
                    if (K == 1) { /* no type counted: the hot loop, kept as tight as it was */
                        for (int32_t m = m_first; m + dm <= M && m <= m_prev; m++) {
                            const size_t row_s = (size_t)m * (size_t)Wn;
                            const size_t row_d = (size_t)(m + dm) * (size_t)Wn + (size_t)dw;
                            for (int32_t w = 0; w + dw < Wn; w++) {
                                const int64_t base = src[row_s + (size_t)w];
                                if (base == INF || base + cc >= dst[row_d + (size_t)w])
                                    continue;
                                dst[row_d + (size_t)w] = base + cc;
                                bk[row_d + (size_t)w] = (int32_t)(src0 + row_s + (size_t)w);
                            }
                        }
                        continue;
                    }
                    const int32_t n_rows = dk ? Wn - dw : 1;
                    const size_t block = dk ? (size_t)(K - 1) : (size_t)(Wn - dw) * (size_t)K;
                    for (int32_t m = m_first; m + dm <= M && m <= m_prev; m++)
                        for (int32_t w = 0; w < n_rows; w++) {
                            const size_t row_s = (size_t)m * (size_t)Q + (size_t)w * (size_t)K;
                            const size_t row_d = row_s + (size_t)dm * (size_t)Q +
                                                 (size_t)dw * (size_t)K + (size_t)dk;
                            relax(src + row_s, dst + row_d, bk + row_d, block, cc,
                                  (int32_t)(src0 + row_s));
                        }
                }
            }
        }
        int64_t *t = cur;
        cur = nxt;
        nxt = t;
    }
    /* the last run ends on day D-1 and is exempt; only the minutes floor is left to check */
    size_t best = (size_t)-1;
    int64_t best_cost = INF;
    for (int32_t b = 0; b < n_allowed[D - 1]; b++) {
        const int32_t v = allowed[(int64_t)(D - 1) * V + b];
        for (int32_t r = 1; r <= R; r++)
                for (int32_t m = track_m ? m_lo : 0; m <= MCAP(D - 1); m++)
                    for (int32_t q = 0; q < Q; q++) {
                        size_t i = IDX(v, r, m, q);
                        if (cur[i] < best_cost) {
                            best_cost = cur[i];
                            best = i;
                        }
                    }
    }
    if (best_cost == INF)
        return 0;
    size_t i = best;
    for (int32_t d = D - 1; d >= 0; d--) {
        int32_t v = (int32_t)(i / ((size_t)R * (size_t)(M + 1) * (size_t)Q));
        out[d] = v == S ? -1 : dp->pick[(int64_t)d * V + v];
        if (d > 0)
            i = (size_t)dp->back[(size_t)d * per_day + i];
    }
#undef CLEAR
#undef MLO
#undef MCAP
#undef IDX
    return 1;
}

int gr_table_row(gr_state *st, int32_t e, const int64_t *cell, int32_t *out)
{
    if (!row_dp(st, e, cell, -1, out))
        return 0;
    /* the type whose maximum the row exceeds most, if any: then once more with it counted */
    const gr_problem *p = st->p;
    const int32_t S = st->S;
    int32_t *cnt = st->scratch_cnt; /* kept all zero between calls */
    for (int32_t d = 0; d < st->D; d++)
        if (out[d] >= 0)
            cnt[out[d]]++;
    int32_t ts = -1, worst = 0;
    for (int32_t s = 0; s < S; s++) {
        int32_t excess = cnt[s] - p->max_shifts[(int64_t)e * S + s];
        if (excess > worst) {
            worst = excess;
            ts = s;
        }
        cnt[s] = 0;
    }
    /* on failure (no such row, or too large a space) out keeps the first row, whose excess the
     * caller's delta charges: a row that breaks one rule can still lead a chain */
    if (ts >= 0)
        row_dp(st, e, cell, ts, out);
    return 1;
}
