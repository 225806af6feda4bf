/* The cheapest rule-abiding row of one employee under given cell costs: a resource-constrained
 * shortest path over days, solved by labelling with Lagrangian bounds (docs/decisions/0013).
 *
 * Every hard rule is per employee, so this one routine makes pricing exact (column
 * generation), builds rule-abiding starts and repairs rows in the GA. The rules split in two:
 * - local ones (fixed days off, skills, rotation, run lengths with their edge exemptions) need
 *   only the state (value class of the day, length of the current run): a small DP over
 *   D x classes x R states handles them exactly;
 * - global ones (the minutes window, the weekend limit, every per-type maximum) are resources.
 *   A full state table over them does not fit (364 days x 702 minute units x 53 weekends x
 *   19 counted types), so they are labels' resources instead.
 *
 * Steps:
 * 1. Lagrangian relaxation of the resources: each is priced by a multiplier and the small DP
 *    (run backwards, so that it is also the cost-to-go of every state) is solved for the
 *    multipliers a subgradient search finds. Its value is a lower bound on the cheapest row; a
 *    relaxed row that keeps every resource is an incumbent, and when the bound meets it the row
 *    is proven cheapest without any label (most rows).
 * 2. A beam search over labels (a few per state and minutes value) finds an incumbent when the
 *    relaxed rows do not.
 * 3. Exact labelling, day by day: a label is (cost, minutes, weekends worked, count of each
 *    binding type, state). It dies when it cannot reach the minutes floor or must pass the
 *    ceiling in the days left (structural tables), and when its Lagrangian bound (cost + priced
 *    resources used + the relaxed cost-to-go of its state) cannot beat the incumbent. Among
 *    labels with the same state and minutes, one with no more cost, weekends and counts
 *    dominates. The incumbent is the answer when no label survives to the end.
 * If the labels pass a cap, the incumbent (rule-abiding, from steps 1-2) is returned and
 * flagged as not proven cheapest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#ifdef LABEL_DEBUG
#include <stdio.h>
#endif

#define LINF INT64_MAX
/* Labels one day of the beam may generate before its filter. */
#define DOMINANCE_SCAN 16
/* nodes of the feasibility dive, the last resort for an incumbent */
#define FEASIBLE_BUDGET ((int64_t)1 << 20)
#define QUICK_BUDGET ((int64_t)1 << 14)
#define DAY_CAP ((size_t)1 << 20)
/* Relaxed-DP states (days x classes x run lengths) above which no row is attempted. */
#define STATE_CAP ((size_t)1 << 23)
/* States x minute units up to which the bound tracks the minutes exactly (32 MB of doubles):
 * Instance 22 (364 days) needs 2.1 M, Instance 24 18 M (its bound prices the minutes). */
#ifndef MINUTES_CAP
#define MINUTES_CAP ((size_t)1 << 22)
#endif
/* overridable so that the tests can run the labelling with weak bounds */
#ifndef SUBGRADIENT_ITERATIONS
#define SUBGRADIENT_ITERATIONS 24
#endif
/* Multiplier steps before the beam, and after it; pricing takes more (gr_price_row): on
 * Instance 15 at its root's prices 8/24 left 21 of 45 rows capped at 2^14 labels, 30/100 16,
 * 60/200 5, 120/400 4, each round no slower (0.17, 0.17, 0.13, 0.13 s; decision 0039). */
#ifndef FIRST_ITERATIONS
#define FIRST_ITERATIONS 8
#endif
#ifndef PRICING_FIRST_ITERATIONS
#define PRICING_FIRST_ITERATIONS 60
#endif
#ifndef PRICING_SUBGRADIENT_ITERATIONS
#define PRICING_SUBGRADIENT_ITERATIONS 200
#endif
#ifndef BEAM
/* Labels kept per day by the incumbent's beam search: the best bounds. 64 rather than 128: the
 * window moves run more often (Instance 22: 29-34 M moves in 60 s against 19-22 M), and the
 * rosters are better on long horizons (60 s, seeds 1-3, side by side: 22 36 029 -> 35 396, 24
 * 48 693 -> 48 274, 20 5 114 -> 5 095; 15 and Instances 1-12 at 10 s level; decision 0030). */
#define BEAM 64
#endif

enum {
    B_NODE, B_NLEN, B_NREP, B_TIX, B_ALLOW, B_CAND, B_NCAND, B_MAXU, B_MINU, B_H, B_HBEST, B_NC,
    B_PICK, B_LAB, B_CNT, B_SORT, B_TMPLAB, B_TMPCNT, B_KEPT, B_HEAP, B_HASH, B_HKEY, B_HM, B_MAXW, B_DFS, B_DFSC, B_ORD, B_REACH, B_NOK, B_LAM, B_BLAM, B_FW, B_WANT, B_HGRP, B_GFIRST, B_GDONE, B_GTN, B_HADD, B_NF, B_N
};
_Static_assert(B_N <= GR_DP_SLOTS_LABEL, "gr_dp has too few buffers");

typedef struct {
    int64_t cost;
    int32_t parent; /* index of yesterday's label, -1 on day 0 */
    int32_t m;      /* minute units worked */
    int32_t w;      /* weekends worked */
    int32_t r;      /* length of the current run, capped at R */
    int32_t v;      /* value of the day (S = off) */
    int32_t n;      /* its node: 0 = off, 1.. = class of interchangeable types */
    double lb;      /* Lagrangian bound of the best row through it */
    int32_t d;      /* its day (best-first search) */
    int32_t next;   /* next label of the same day, state and minutes (best-first search) */
    int32_t dead;   /* dominated after it was queued */
} label;

typedef struct {
    double pri;
    int32_t idx;
} sortkey;

void *gr_dp_grow(gr_dp *dp, int slot, size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    if (bytes > dp->cap[slot]) {
        size_t want = bytes + bytes / 2;
        void *q = realloc(dp->buf[slot], want);
        if (!q)
            return NULL;
        dp->buf[slot] = q;
        dp->cap[slot] = want;
    }
    return dp->buf[slot];
}

void gr_dp_free(gr_dp *dp)
{
    for (int i = 0; i < GR_DP_BUFS; i++)
        free(dp->buf[i]);
    memset(dp, 0, sizeof *dp);
}

/* Everything one call shares between its steps. */
typedef struct {
    const gr_problem *p;
    gr_dp *dp;
    const int64_t *cell;
    int32_t e, D, S, V, NC, R, nb, M, m_lo, maxw, track_w, maxc, minc, mino;
    int32_t *node;  /* [V] node of each value (0 = off), -1 = never allowed */
    int32_t *nlen;  /* [NC] minute units of the node's types */
    int32_t *nrep;  /* [NC] a type of the node, for the rotation rules */
    int32_t *tix;   /* [S] index among the counted types, -1 = not counted */
    uint8_t *allow; /* [D * V] */
    uint8_t *nok;   /* [D * NC] node allowed on the day */
    int32_t *cand;  /* [D * V] values worth branching on (counted types, cheapest of the
                       others per class, off) */
    int32_t *ncand; /* [D] */
    int32_t *maxu, *minu; /* [D * NC * R] most / fewest units the days after can add; -1 dead */
    int32_t *maxw_u;      /* [D * 2 * R * K1] most units the days after can add with k more
                             weekends (rotation ignored: an upper bound); -1 dead */
    int32_t K1;
    int all_counted;      /* every eligible type is counted: the maxima cap the minutes */
    uint64_t *reach;      /* [D * NC * R * RW] or NULL: bit x = the days after can add exactly
                             x minute units (local rules kept) */
    int32_t RW;
    double *H, *Hbest;    /* [D * NC * R] relaxed cost of the days after (Lagrangian prices) */
    double *nc;           /* [D * NC] relaxed cost of the node on the day */
    int32_t *pick;        /* [D * NC] the type the relaxed cost picked */
    double *lam, *blam;   /* [nb + 3]: counted types, then minutes over, minutes under, weekends */
    double bconst;        /* the constant of the best multipliers */
    double *Hm;           /* [D * NG * R * (M + 1) * W1] or NULL: cost-to-go with the minutes
                             (and, when W1 > 1, the weekends worked) exact */
    int32_t W1;
    int32_t NG;           /* groups of nodes with the same successors, which share their
                             cost-to-go: the minutes table is computed and kept once a group */
    int32_t *hgrp;        /* [NC] each node's group */
    int32_t *gfirst;      /* [NC] the first node of each node's group */
    int32_t *gdone, *gtn; /* [NC] each, scratch of minutes_bound: the day's groups computed;
                             the successors of one */
    uint8_t *nf;          /* [NC * NC] node n2 may not follow node n (rotation) */
    double *hadd;         /* [NC] scratch of minutes_bound */
    int32_t *fw;          /* [2 * D] scratch of minutes_bound */
    double mconst;        /* its constant (the prices of the counts and weekends) */
    int64_t ub;           /* the incumbent's cost, LINF = none */
    int32_t *row;         /* [D] the incumbent */
    double eps;
    int capped;
    size_t label_cap; /* labels the exact search may keep; 0 = no exact search */
} ctx_t;

static inline size_t sidx(const ctx_t *c, int32_t d, int32_t n, int32_t r)
{
    return ((size_t)d * (size_t)c->NC + (size_t)n) * (size_t)c->R + (size_t)(r - 1);
}

/* Where the minutes table keeps state (d, n, r): a state's cost-to-go depends on its node
 * only through the node's successors (the rotation rules), so nodes that forbid the same
 * successors share one entry (Instance 24's rows: 13 classes, 7 groups). */
static inline size_t hidx(const ctx_t *c, int32_t d, int32_t n, int32_t r)
{
    return ((size_t)d * (size_t)c->NG + (size_t)c->hgrp[n]) * (size_t)c->R + (size_t)(r - 1);
}

/* Run length after moving from a day with status `work` and run r to day `dn` with status
 * work2; 0 = not allowed. A run ending on day dn-1 began on day 0 (and is exempt from the
 * minimum) exactly when r == dn: work runs never exceed max_consec <= R, and a capped off run
 * (r == R >= min_off) is long enough anyway. */
static inline int32_t step_run(const ctx_t *c, int work, int work2, int32_t r, int32_t dn)
{
    if (work == work2) {
        int32_t r2 = r + 1;
        if (work && r2 > c->maxc)
            return 0;
        return r2 > c->R ? c->R : r2;
    }
    if (r != dn && ((work && r < c->minc) || (!work && r < c->mino)))
        return 0;
    if (work2 && c->maxc < 1)
        return 0;
    return 1;
}

static inline int node_forbidden(const ctx_t *c, int32_t n, int32_t n2)
{
    return c->nf[(size_t)n * (size_t)c->NC + (size_t)n2];
}

/* The minute units worked [*lo, *hi] from which a row in state j can still keep the minutes
 * window; empty for a state with no rule-abiding completion. */
static inline void live_minutes(const ctx_t *c, size_t j, int32_t *lo, int32_t *hi)
{
    *lo = c->maxu[j] < 0 ? 1 : c->m_lo - c->maxu[j];
    *hi = c->maxu[j] < 0 ? 0 : c->M - c->minu[j];
}

/* Can a row in state j with m minute units worked still keep the minutes window? (The
 * exact-minutes table holds values only for such states.) */
static inline int hm_live(const ctx_t *c, size_t j, int32_t m)
{
    int32_t lo, hi;
    live_minutes(c, j, &lo, &hi);
    return m >= lo && m <= hi;
}

/* Does working day d (after a day with status `work`) start a new worked weekend? */
static inline int new_weekend(const ctx_t *c, int32_t d, int work)
{
    const int32_t wk = c->p->weekend[d];
    return wk >= 0 && !(work && d > 0 && c->p->weekend[d - 1] == wk);
}

/* Most and fewest minute units the days after each state can add (any costs, no resource
 * but the local rules); -1: no rule-abiding completion at all. */
static void structural(ctx_t *c)
{
    const int32_t D = c->D, NC = c->NC, R = c->R;
    for (int32_t n = 0; n < NC; n++)
        for (int32_t r = 1; r <= R; r++) {
            c->maxu[sidx(c, D - 1, n, r)] = 0;
            c->minu[sidx(c, D - 1, n, r)] = 0;
        }
    for (int32_t d = D - 2; d >= 0; d--)
        for (int32_t n = 0; n < NC; n++) {
            if (c->gfirst[n] != n) { /* the same successors: the same values */
                memcpy(&c->maxu[sidx(c, d, n, 1)], &c->maxu[sidx(c, d, c->gfirst[n], 1)],
                       (size_t)R * sizeof *c->maxu);
                memcpy(&c->minu[sidx(c, d, n, 1)], &c->minu[sidx(c, d, c->gfirst[n], 1)],
                       (size_t)R * sizeof *c->minu);
                continue;
            }
            for (int32_t r = 1; r <= R; r++) {
                int32_t hi = -1, lo = INT32_MAX;
                for (int32_t n2 = 0; n2 < NC; n2++) {
                    if (!c->nok[(size_t)(d + 1) * NC + n2] || node_forbidden(c, n, n2))
                        continue;
                    int32_t r2 = step_run(c, n > 0, n2 > 0, r, d + 1);
                    if (!r2)
                        continue;
                    size_t j = sidx(c, d + 1, n2, r2);
                    if (c->maxu[j] < 0)
                        continue;
                    int32_t u = n2 > 0 ? c->nlen[n2] : 0;
                    if (c->maxu[j] + u > hi)
                        hi = c->maxu[j] + u;
                    if (c->minu[j] + u < lo)
                        lo = c->minu[j] + u;
                }
                c->maxu[sidx(c, d, n, r)] = hi;
                c->minu[sidx(c, d, n, r)] = hi < 0 ? 0 : lo;
            }
        }
    c->dp->work += (int64_t)D * NC * R * NC;
}

/* Most minute units the days after can add with at most k more worked weekends, from a state
 * (worked or not, run length). Without it, a cheap prefix that spends every weekend early
 * cannot reach the minutes floor later (Instance 22: 26 weekends gone by day 265, 65 shifts
 * still to work), and the beam below dies. Rotation is ignored (an upper bound suffices). */
static void structural_weekends(ctx_t *c)
{
    const int32_t D = c->D, R = c->R, K1 = c->K1, V = c->V, S = c->S;
#define MW(d, wk, r, k) c->maxw_u[(((size_t)(d) * 2 + (size_t)(wk)) * (size_t)R + (size_t)((r) - 1)) * (size_t)K1 + (size_t)(k)]
    for (int32_t wk = 0; wk < 2; wk++)
        for (int32_t r = 1; r <= R; r++)
            for (int32_t k = 0; k < K1; k++)
                MW(D - 1, wk, r, k) = 0;
    for (int32_t d = D - 2; d >= 0; d--) {
        int32_t best_len = -1;
        for (int32_t v = 0; v < S; v++)
            if (c->allow[(size_t)(d + 1) * V + v] && c->nlen[c->node[v]] > best_len)
                best_len = c->nlen[c->node[v]];
        const int off_ok = c->allow[(size_t)(d + 1) * V + S];
        for (int32_t wk = 0; wk < 2; wk++) {
            const int nw = c->track_w && new_weekend(c, d + 1, wk);
            for (int32_t r = 1; r <= R; r++)
                for (int32_t k = 0; k < K1; k++) {
                    int32_t hi = -1;
                    if (off_ok) {
                        int32_t r2 = step_run(c, wk, 0, r, d + 1);
                        if (r2 && MW(d + 1, 0, r2, k) >= 0)
                            hi = MW(d + 1, 0, r2, k);
                    }
                    if (best_len >= 0 && (!nw || k > 0)) {
                        int32_t r2 = step_run(c, wk, 1, r, d + 1);
                        int32_t k2 = nw ? k - 1 : k;
                        if (r2 && MW(d + 1, 1, r2, k2) >= 0 && MW(d + 1, 1, r2, k2) + best_len > hi)
                            hi = MW(d + 1, 1, r2, k2) + best_len;
                    }
                    MW(d, wk, r, k) = hi;
                }
        }
    }
#undef MW
}

/* Exactly which amounts of minute units the days after each state can add: with mixed shift
 * lengths and a narrow window (Instance 24: 883-889 units of 120 minutes from shifts of 4, 5 and
 * 6), the most/fewest bounds leave prefixes that can only miss the window, and the dive
 * backtracks through them for seconds. Computed only when a quick dive fails. */
static int reachable(ctx_t *c)
{
    const int32_t D = c->D, NC = c->NC, R = c->R, RW = (c->M + 64) / 64;
    const size_t n = (size_t)D * NC * R * (size_t)RW;
    uint64_t *b = gr_dp_grow(c->dp, B_REACH, n * sizeof *b);
    if (!b)
        return 0;
    c->RW = RW;
    memset(b, 0, n * sizeof *b);
#define RB(d, k, r) (b + sidx(c, (d), (k), (r)) * (size_t)RW)
    for (int32_t k = 0; k < NC; k++)
        for (int32_t r = 1; r <= R; r++)
            RB(D - 1, k, r)[0] = 1;
    const uint64_t last_mask = (c->M + 1) % 64 ? ((uint64_t)1 << ((c->M + 1) % 64)) - 1 : ~(uint64_t)0;
    for (int32_t d = D - 2; d >= 0; d--)
        for (int32_t k = 0; k < NC; k++) {
            if (c->gfirst[k] != k) {
                memcpy(RB(d, k, 1), RB(d, c->gfirst[k], 1), (size_t)R * RW * sizeof *b);
                continue;
            }
            for (int32_t r = 1; r <= R; r++) {
                uint64_t *dst = RB(d, k, r);
                for (int32_t k2 = 0; k2 < NC; k2++) {
                    if (!c->nok[(size_t)(d + 1) * NC + k2] || node_forbidden(c, k, k2))
                        continue;
                    int32_t r2 = step_run(c, k > 0, k2 > 0, r, d + 1);
                    if (!r2)
                        continue;
                    const uint64_t *src = RB(d + 1, k2, r2);
                    const int32_t u = k2 > 0 ? c->nlen[k2] : 0, ws = u / 64, bs = u % 64;
                    /* dst |= src << u */
                    for (int32_t i = RW - 1; i >= ws; i--) {
                        uint64_t x = src[i - ws] << bs;
                        if (bs && i - ws - 1 >= 0)
                            x |= src[i - ws - 1] >> (64 - bs);
                        dst[i] |= x;
                    }
                }
                dst[RW - 1] &= last_mask;
            }
        }
#undef RB
    c->dp->work += (int64_t)D * NC * R * NC * RW;
    c->reach = b;
    return 1;
}

/* Does the state at index j admit an amount in [lo, hi]? */
static inline int reach_any(const ctx_t *c, size_t j, int32_t lo, int32_t hi)
{
    const uint64_t *b = c->reach + j * (size_t)c->RW;
    if (lo < 0)
        lo = 0;
    for (int32_t x = lo; x <= hi;) {
        if ((x & 63) == 0 && x + 63 <= hi) {
            if (b[x >> 6])
                return 1;
            x += 64;
            continue;
        }
        if (b[x >> 6] >> (x & 63) & 1)
            return 1;
        x++;
    }
    return 0;
}

/* Can a label still reach the minutes floor (weekends left, counted types' capacity)? */
static inline int can_reach(const ctx_t *c, int32_t d, int work, int32_t r, int32_t m, int32_t w,
                            const int32_t *c0, int32_t t, size_t j)
{
    if (c->reach && !reach_any(c, j, c->m_lo - m, c->M - m))
        return 0;
    const int32_t k = c->track_w ? c->maxw - w : 0;
    const int32_t left = c->maxw_u[(((size_t)d * 2 + (size_t)work) * (size_t)c->R +
                                    (size_t)(r - 1)) * (size_t)c->K1 + (size_t)(k < c->K1 ? k : c->K1 - 1)];
    if (left < 0 || m + left < c->m_lo)
        return 0;
    if (c->all_counted) {
        int64_t room = 0;
        for (int32_t s = 0; s < c->S; s++) {
            int32_t i = c->tix[s];
            if (i >= 0)
                room += (int64_t)(c->p->max_shifts[(int64_t)c->e * c->S + s] - (c0 ? c0[i] : 0) -
                                  (i == t)) * c->nlen[c->node[s]];
        }
        if (m + room < c->m_lo)
            return 0;
    }
    return 1;
}

/* The relaxed DP under multipliers lam: fills c->H and returns the Lagrangian bound, writes
 * the relaxed row to row (values, S = off). Returns -INFINITY when no row keeps the local
 * rules. */
static double relaxed(ctx_t *c, const double *lam, int32_t *row, double *cst)
{
    const int32_t D = c->D, NC = c->NC, R = c->R, S = c->S, V = c->V, nb = c->nb;
    const double per_unit = lam[nb] - lam[nb + 1], per_wk = lam[nb + 2];
    for (int32_t d = 0; d < D; d++) {
        double *ncd = c->nc + (size_t)d * NC;
        int32_t *pk = c->pick + (size_t)d * NC;
        for (int32_t n = 0; n < NC; n++) {
            ncd[n] = INFINITY;
            pk[n] = -1;
        }
        for (int32_t v = 0; v < V; v++) {
            if (!c->allow[(size_t)d * V + v])
                continue;
            int32_t n = c->node[v];
            double x = (double)c->cell[(size_t)d * V + v];
            if (v < S) {
                x += per_unit * c->nlen[n];
                if (c->tix[v] >= 0)
                    x += lam[c->tix[v]];
            }
            if (x < ncd[n]) {
                ncd[n] = x;
                pk[n] = v;
            }
        }
    }
    double *H = c->H;
    for (int32_t n = 0; n < NC; n++)
        for (int32_t r = 1; r <= R; r++)
            H[sidx(c, D - 1, n, r)] = 0.0;
    for (int32_t d = D - 2; d >= 0; d--) {
        const double *nx = c->nc + (size_t)(d + 1) * NC;
        for (int32_t n = 0; n < NC; n++) {
            if (c->gfirst[n] != n) {
                memcpy(&H[sidx(c, d, n, 1)], &H[sidx(c, d, c->gfirst[n], 1)],
                       (size_t)R * sizeof *H);
                continue;
            }
            const double wk = new_weekend(c, d + 1, n > 0) ? per_wk : 0.0;
            for (int32_t r = 1; r <= R; r++) {
                double best = INFINITY;
                for (int32_t n2 = 0; n2 < NC; n2++) {
                    if (nx[n2] == INFINITY || node_forbidden(c, n, n2))
                        continue;
                    int32_t r2 = step_run(c, n > 0, n2 > 0, r, d + 1);
                    if (!r2)
                        continue;
                    double x = nx[n2] + H[sidx(c, d + 1, n2, r2)] + (n2 > 0 ? wk : 0.0);
                    if (x < best)
                        best = x;
                }
                H[sidx(c, d, n, r)] = best;
            }
        }
    }
    c->dp->work += (int64_t)D * NC * R * NC;
    double k = -per_wk * c->maxw - lam[nb] * c->M + lam[nb + 1] * c->m_lo;
    for (int32_t s = 0; s < S; s++)
        if (c->tix[s] >= 0)
            k -= lam[c->tix[s]] * c->p->max_shifts[(int64_t)c->e * S + s];
    *cst = k;
    /* the relaxed row: the best start, then the best successor day by day */
    double best = INFINITY;
    int32_t bn = -1;
    for (int32_t n = 0; n < NC; n++) {
        if (c->nc[n] == INFINITY || (n > 0 && c->maxc < 1))
            continue;
        double x = c->nc[n] + H[sidx(c, 0, n, 1)] + (n > 0 && new_weekend(c, 0, 0) ? per_wk : 0.0);
        if (x < best) {
            best = x;
            bn = n;
        }
    }
    if (bn < 0 || best == INFINITY)
        return -INFINITY;
    int32_t n = bn, r = 1;
    row[0] = c->pick[n];
    for (int32_t d = 1; d < D; d++) {
        const double *nx = c->nc + (size_t)d * NC;
        const double wk = new_weekend(c, d, n > 0) ? per_wk : 0.0;
        double bx = INFINITY;
        int32_t b2 = -1, br = 0;
        for (int32_t n2 = 0; n2 < NC; n2++) {
            if (nx[n2] == INFINITY || node_forbidden(c, n, n2))
                continue;
            int32_t r2 = step_run(c, n > 0, n2 > 0, r, d);
            if (!r2)
                continue;
            double x = nx[n2] + H[sidx(c, d, n2, r2)] + (n2 > 0 ? wk : 0.0);
            if (x < bx) {
                bx = x;
                b2 = n2;
                br = r2;
            }
        }
        if (b2 < 0)
            return -INFINITY; /* cannot happen: H was finite */
        n = b2;
        r = br;
        row[d] = c->pick[(size_t)d * NC + n];
    }
    return best + k;
}

/* A row's resources and cost; 1 when it keeps every resource limit. */
static int resources(const ctx_t *c, const int32_t *row, int64_t *cost, int32_t *cnt,
                     int32_t *m, int32_t *w)
{
    const int32_t D = c->D, S = c->S;
    int64_t k = 0;
    int32_t mm = 0, ww = 0;
    for (int32_t i = 0; i < c->nb; i++)
        cnt[i] = 0;
    for (int32_t d = 0; d < D; d++) {
        int32_t v = row[d];
        k += c->cell[(size_t)d * c->V + v];
        if (v < S) {
            mm += c->nlen[c->node[v]];
            if (c->tix[v] >= 0)
                cnt[c->tix[v]]++;
            if (new_weekend(c, d, d > 0 && row[d - 1] < S))
                ww++;
        }
    }
    *cost = k;
    *m = mm;
    *w = ww;
    int ok = mm >= c->m_lo && mm <= c->M && (!c->track_w || ww <= c->maxw);
    for (int32_t s = 0; s < S && ok; s++)
        if (c->tix[s] >= 0 && cnt[c->tix[s]] > c->p->max_shifts[(int64_t)c->e * S + s])
            ok = 0;
    return ok;
}

static void offer(ctx_t *c, const int32_t *row, int64_t cost)
{
    if (cost < c->ub) {
        c->ub = cost;
        memcpy(c->row, row, (size_t)c->D * sizeof *row);
    }
}

/* Subgradient search for the multipliers; returns the best bound (-INFINITY: no row keeps
 * the local rules). Leaves the best multipliers in blam, their cost-to-go in Hbest. */
static double lagrange(ctx_t *c, int32_t *tmp_row, int32_t *cnt, int iterations, double best)
{
    const int32_t nb = c->nb, K = nb + 3;
    double *lam = c->lam, *blam = c->blam, theta = 1.0;
    if (best == -INFINITY)
        for (int32_t i = 0; i < K; i++)
            lam[i] = blam[i] = 0.0;
    else
        memcpy(lam, blam, (size_t)K * sizeof *lam);
    const size_t hn = (size_t)c->D * c->NC * c->R;
    int stall = 0;
    for (int it = 0; it < iterations; it++) {
        double k;
        double L = relaxed(c, lam, tmp_row, &k);
        if (L == -INFINITY)
            return -INFINITY;
        if (L > best) {
            best = L;
            memcpy(blam, lam, (size_t)K * sizeof *lam);
            memcpy(c->Hbest, c->H, hn * sizeof *c->H);
            c->bconst = k;
            stall = 0;
        } else if (++stall >= 3) {
            theta *= 0.5;
            stall = 0;
        }
        int64_t cost;
        int32_t m, w;
        if (resources(c, tmp_row, &cost, cnt, &m, &w))
            offer(c, tmp_row, cost);
        if (c->ub != LINF && best > (double)c->ub - 1.0 + c->eps)
            break; /* proven: no row is cheaper than the incumbent */
        /* the subgradient, projected on the multipliers' sign */
        double norm = 0.0;
        double g[3];
        g[0] = (double)(m - c->M);
        g[1] = (double)(c->m_lo - m);
        g[2] = c->track_w ? (double)(w - c->maxw) : 0.0;
        for (int32_t s = 0; s < c->S; s++) {
            int32_t i = c->tix[s];
            if (i < 0)
                continue;
            double gi = (double)(cnt[i] - c->p->max_shifts[(int64_t)c->e * c->S + s]);
            if (lam[i] <= 0.0 && gi < 0.0)
                gi = 0.0;
            norm += gi * gi;
        }
        for (int j = 0; j < 3; j++) {
            if (lam[nb + j] <= 0.0 && g[j] < 0.0)
                g[j] = 0.0;
            norm += g[j] * g[j];
        }
        if (norm == 0.0)
            break; /* the relaxed row keeps every resource with complementary slackness */
        double gap = c->ub != LINF ? (double)c->ub - L : 1.0 + 0.05 * fabs(L);
        if (gap < 1.0)
            gap = 1.0;
        double t = theta * gap / norm;
        for (int32_t s = 0; s < c->S; s++) {
            int32_t i = c->tix[s];
            if (i < 0)
                continue;
            double gi = (double)(cnt[i] - c->p->max_shifts[(int64_t)c->e * c->S + s]);
            lam[i] = lam[i] + t * gi > 0.0 ? lam[i] + t * gi : 0.0;
        }
        for (int j = 0; j < 3; j++)
            lam[nb + j] = lam[nb + j] + t * g[j] > 0.0 ? lam[nb + j] + t * g[j] : 0.0;
        if (theta < 1e-3)
            break;
    }
    return best;
}

/* Depth-first search for any rule-abiding row (the cheapest value first on each day), with the
 * same dead-label tests as the labelling: the fallback when the searches above found no
 * incumbent within their caps. The tests make backtracking rare; `budget` bounds it. */
/* A label extended by one day. */
typedef struct {
    int64_t cost;
    double lb;
    size_t j;                      /* the new state's index (sidx) */
    int32_t v2, n2, r2, m2, w2, t; /* value, node, run, minutes, weekends, counted type (-1) */
} step_t;

/* The rules of extending a partial row (last value v on day d - 1, its node n, run r,
 * minutes m, weekends w, counts c0; NULL: all zero; d = 0: an empty row) by value v2 on
 * day d: 0 when the new label is dead (a forbidden succession or run, the minutes window out
 * of reach, too many weekends, a type maximum passed, no way to the floor). Shared by the
 * beam, the best-first search and the dive, so that all three prune by the same rules. */
/* inlined by force: with three callers gcc -O3 made it a call, on the search's hottest path */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline int extend_rules(const ctx_t *c, int32_t d, int32_t v, int32_t n, int32_t r,
                               int32_t m, int32_t w, const int32_t *c0, int32_t v2, step_t *x)
{
    const int32_t S = c->S, M = c->M;
    const int32_t n2 = c->node[v2], work2 = v2 < S;
    const int work = d > 0 && v < S;
    int32_t r2 = 1;
    if (d > 0) {
        if (node_forbidden(c, n, n2))
            return 0;
        r2 = step_run(c, work, work2, r, d);
        if (!r2)
            return 0;
    } else if (work2 && c->maxc < 1) {
        return 0;
    }
    const size_t j = sidx(c, d, n2, r2);
    if (c->maxu[j] < 0)
        return 0;
    const int32_t m2 = m + (work2 ? c->nlen[n2] : 0);
    if (m2 > M || !hm_live(c, j, m2))
        return 0;
    const int32_t w2 = w + (work2 && c->track_w && new_weekend(c, d, work));
    if (c->track_w && w2 > c->maxw)
        return 0;
    const int32_t t = work2 ? c->tix[v2] : -1;
    if (t >= 0 && (c0 ? c0[t] : 0) + 1 > c->p->max_shifts[(int64_t)c->e * S + v2])
        return 0;
    if (!can_reach(c, d, work2, r2, m2, w2, c0, t, j))
        return 0;
    x->j = j;
    x->v2 = v2;
    x->n2 = n2;
    x->r2 = r2;
    x->m2 = m2;
    x->w2 = w2;
    x->t = t;
    return 1;
}

typedef struct {
    int32_t b, v, n, r, m, w;
    int32_t off; /* where the day off stands in the day's order when tried first, else -1 */
} dfs_frame;

/* paced: a row ahead of its pace tries each day off first. The pace spreads the row's
 * maximum minutes over its horizon as its wanted cells (those cheaper than a day off) lie:
 * cheapest first alone spends a row's minutes on the first wanted days, and rows built one
 * after another under the cover marginals then leave the end of a long horizon uncovered. */
static void feasible_dive(ctx_t *c, int64_t budget, int paced)
{
    gr_dp *dp = c->dp;
    const int32_t D = c->D, V = c->V, nb = c->nb;
    dfs_frame *f = gr_dp_grow(dp, B_DFS, (size_t)D * sizeof *f);
    int32_t *cn = gr_dp_grow(dp, B_DFSC, ((size_t)D + 1) * (size_t)(nb > 0 ? nb : 1) * sizeof *cn);
    int32_t *row = gr_dp_grow(dp, B_KEPT, (size_t)D * sizeof *row);
    int32_t *ord = gr_dp_grow(dp, B_ORD, (size_t)D * (size_t)V * sizeof *ord);
    if (!f || !cn || !row || !ord)
        return;
    /* each day's candidates by cost (insertion sort: a handful each) */
    for (int32_t d = 0; d < D; d++) {
        int32_t *o = ord + (size_t)d * V;
        const int64_t *cc = c->cell + (size_t)d * V;
        for (int32_t q = 0; q < c->ncand[d]; q++) {
            int32_t v = c->cand[(size_t)d * V + q], z = q;
            while (z > 0 && cc[o[z - 1]] > cc[v]) {
                o[z] = o[z - 1];
                z--;
            }
            o[z] = v;
        }
    }
    /* cn + d * nb: the counts after day d-1 (row 0: none yet) */
    memset(cn, 0, (size_t)(nb > 0 ? nb : 1) * sizeof *cn);
    /* before[d]: the wanted days before day d, for the pace */
    int32_t *before = paced ? gr_dp_grow(dp, B_WANT, (size_t)D * sizeof *before) : NULL;
    int64_t wanted = 0;
    if (before)
        for (int32_t d = 0; d < D; d++) {
            before[d] = (int32_t)wanted;
            const int64_t *cc = c->cell + (size_t)d * V;
            int w = 0;
            for (int32_t q = 0; q < c->ncand[d] && !w; q++) {
                const int32_t v = c->cand[(size_t)d * V + q];
                w = v < c->S && cc[v] < cc[c->S];
            }
            wanted += w;
        }
    if (wanted == 0)
        before = NULL;
    int32_t d = 0;
    f[0].b = 0;
    while (d >= 0 && budget-- > 0) {
        if (d == D) {
            int64_t cost = 0;
            for (int32_t q = 0; q < D; q++) {
                row[q] = f[q].v;
                cost += c->cell[(size_t)q * V + f[q].v];
            }
            offer(c, row, cost);
            return;
        }
        const int32_t pn = d > 0 ? f[d - 1].n : 0, pr = d > 0 ? f[d - 1].r : 0;
        const int32_t pm = d > 0 ? f[d - 1].m : 0, pw = d > 0 ? f[d - 1].w : 0;
        const int32_t pv = d > 0 ? f[d - 1].v : 0;
        const int32_t *c0 = cn + (size_t)d * (size_t)nb;
        /* the next untried value of day d, cheapest first */
        const int32_t *od = ord + (size_t)d * V;
        if (f[d].b == 0) {
            f[d].off = -1;
            if (before && (int64_t)pm * wanted > (int64_t)c->M * before[d])
                for (int32_t q = 1; q < c->ncand[d] && f[d].off < 0; q++)
                    if (od[q] == c->S)
                        f[d].off = q;
        }
        int32_t pickb = -1;
        for (;;) {
            int32_t b = f[d].b;
            if (b >= c->ncand[d])
                break;
            const int32_t o = f[d].off;
            const int32_t best = o < 0 ? od[b] : b == 0 ? od[o] : od[b - 1 + (b > o)];
            f[d].b = b + 1;
            step_t x;
            if (!extend_rules(c, d, pv, pn, pr, pm, pw, c0, best, &x))
                continue;
            f[d].v = x.v2;
            f[d].n = x.n2;
            f[d].r = x.r2;
            f[d].m = x.m2;
            f[d].w = x.w2;
            int32_t *c1 = cn + (size_t)(d + 1) * (size_t)nb;
            for (int32_t k = 0; k < nb; k++)
                c1[k] = c0[k] + (k == x.t);
            pickb = b;
            break;
        }
        dp->work++;
        if (pickb < 0) {
            d--; /* day d exhausted: back to yesterday's next value */
            continue;
        }
        d++;
        if (d < D)
            f[d].b = 0;
    }
}

/* dst[i] = min(dst[i], src[i] + add): branch-free, so that it vectorises (minpd keeps the
 * left operand exactly when it is the smaller, as the comparison does). The two tables are
 * different days' slices, never overlapping. */
static inline void relax_min(double *restrict dst, const double *restrict src, size_t n,
                             double add)
{
    for (size_t i = 0; i < n; i++) {
        const double x = src[i] + add;
        dst[i] = x < dst[i] ? x : dst[i];
    }
}

/* The cost-to-go with the minutes in the state: for every (day, state, minutes so far), the
 * cheapest completion that ends inside the minutes window, with the counted types and the
 * weekends priced by the best multipliers. Much tighter than pricing the minutes too: the
 * window is what makes most rows hard (with most cells equally cheap, the priced relaxation
 * mixes rows far under and far over the window). Returns the bound at the root. */
static double minutes_bound(ctx_t *c)
{
    const int32_t D = c->D, NC = c->NC, R = c->R, S = c->S, V = c->V, nb = c->nb, M1 = c->M + 1;
    const int32_t W1 = c->W1;
    const double *lam = c->blam, per_wk = W1 > 1 ? 0.0 : lam[nb + 2];
    double *Hm = c->Hm;
    /* the relaxed node costs without the minutes price */
    for (int32_t d = 0; d < D; d++) {
        double *ncd = c->nc + (size_t)d * NC;
        for (int32_t n = 0; n < NC; n++)
            ncd[n] = INFINITY;
        for (int32_t v = 0; v < V; v++) {
            if (!c->allow[(size_t)d * V + v])
                continue;
            int32_t n = c->node[v];
            double x = (double)c->cell[(size_t)d * V + v];
            if (v < S && c->tix[v] >= 0)
                x += lam[c->tix[v]];
            if (x < ncd[n]) {
                ncd[n] = x;
                c->pick[(size_t)d * NC + n] = v;
            }
        }
    }
    /* Only the states a row can be in are computed: a node allowed on the day, minutes a
     * row can have worked by then (fw_lo, fw_hi) and can still complete from (hm_live). The
     * rest of the table is never written and never read: the labels (extend_rules), the walk
     * and this table's own steps read only live states reached from a row's minutes. */
    int32_t *fw_lo = c->fw, *fw_hi = c->fw + D;
    for (int32_t d = 0, lo = 0, hi = 0; d < D; d++) {
        int32_t dl = INT32_MAX, dh = 0;
        for (int32_t n = 0; n < NC; n++)
            if (c->nc[(size_t)d * NC + n] != INFINITY) {
                const int32_t u = n > 0 ? c->nlen[n] : 0;
                dl = u < dl ? u : dl;
                dh = u > dh ? u : dh;
            }
        lo = dl == INT32_MAX || lo + dl > M1 - 1 ? M1 - 1 : lo + dl;
        hi = hi + dh > M1 - 1 ? M1 - 1 : hi + dh;
        fw_lo[d] = lo;
        fw_hi[d] = hi;
    }
    /* HM(d, n, r, m) points at the W1 entries of weekends worked 0..W1-1 */
#define HM(d, n, r, m) Hm[(hidx(c, (d), (n), (r)) * (size_t)M1 + (size_t)(m)) * (size_t)W1]
    int32_t *done = c->gdone, *tn = c->gtn;
    double *tadd = c->hadd;
    for (int32_t n = 0; n < NC; n++)
        for (int32_t r = 1; r <= R; r++)
            for (int32_t m = 0; m < M1; m++)
                for (int32_t w = 0; w < W1; w++)
                    (&HM(D - 1, n, r, m))[w] = m >= c->m_lo ? 0.0 : INFINITY;
    for (int32_t d = D - 2; d >= 0; d--) {
        const double *nd = c->nc + (size_t)d * NC, *nx = nd + NC;
        for (int32_t g = 0; g < c->NG; g++)
            done[g] = 0;
        for (int32_t n = 0; n < NC; n++) {
            if (nd[n] == INFINITY || done[c->hgrp[n]])
                continue;
            done[c->hgrp[n]] = 1;
            const int nw = new_weekend(c, d + 1, n > 0);
            const double wk = nw ? per_wk : 0.0;
            /* the successors, one per group and length: those read the same table at the
             * same offset, so only the cheapest of them can give the minimum */
            int32_t nt = 0;
            for (int32_t n2 = 0; n2 < NC; n2++) {
                if (nx[n2] == INFINITY || node_forbidden(c, n, n2))
                    continue;
                int32_t t = 0;
                while (t < nt && (c->hgrp[tn[t]] != c->hgrp[n2] || c->nlen[tn[t]] != c->nlen[n2]))
                    t++;
                if (t == nt) {
                    tn[nt] = n2;
                    tadd[nt++] = nx[n2];
                } else if (nx[n2] < tadd[t]) {
                    tadd[t] = nx[n2];
                }
            }
            for (int32_t r = 1; r <= R; r++) {
                int32_t m_from, m_to;
                live_minutes(c, sidx(c, d, n, r), &m_from, &m_to);
                m_from = m_from > fw_lo[d] ? m_from : fw_lo[d];
                m_to = m_to < fw_hi[d] ? m_to : fw_hi[d];
                if (m_from > m_to)
                    continue;
                double *dst = &HM(d, n, r, 0);
                for (size_t q = (size_t)m_from * W1; q < ((size_t)m_to + 1) * W1; q++)
                    dst[q] = INFINITY;
                for (int32_t t = 0; t < nt; t++) {
                    const int32_t n2 = tn[t];
                    int32_t r2 = step_run(c, n > 0, n2 > 0, r, d + 1);
                    if (!r2)
                        continue;
                    const int32_t du = n2 > 0 ? c->nlen[n2] : 0;
                    const int32_t dw = W1 > 1 && n2 > 0 && nw;
                    const double add = tadd[t] + (n2 > 0 ? wk : 0.0);
                    /* the minutes whose step lands on a live state of the next day */
                    int32_t lo, hi;
                    live_minutes(c, sidx(c, d + 1, n2, r2), &lo, &hi);
                    lo = lo - du > m_from ? lo - du : m_from;
                    hi = hi - du < m_to ? hi - du : m_to;
                    /* (m, w) reads (m + du, w + dw): one contiguous run per minutes value */
                    const double *src = &HM(d + 1, n2, r2, 0);
                    const size_t off = (size_t)du * (size_t)W1 + (size_t)dw;
                    if (lo > hi)
                        continue;
                    if (!dw) /* one run over (m, w): the loop the profile spends its time in */
                        relax_min(dst + (size_t)lo * W1, src + off + (size_t)lo * W1,
                                  (size_t)(hi - lo + 1) * W1, add);
                    else
                        for (int32_t m = lo; m <= hi; m++) {
                            const size_t base = (size_t)m * (size_t)W1;
                            relax_min(dst + base, src + base + off, (size_t)(W1 - dw), add);
                        }
                }
            }
        }
    }
    c->dp->work += (int64_t)D * NC * R * NC * M1 * W1 / 8;
    double k = -per_wk * c->maxw;
    for (int32_t s = 0; s < S; s++)
        if (c->tix[s] >= 0)
            k -= lam[c->tix[s]] * c->p->max_shifts[(int64_t)c->e * S + s];
    c->mconst = k;
    double best = INFINITY;
    for (int32_t n = 0; n < NC; n++) {
        double x = c->nc[n];
        if (x == INFINITY || (n > 0 && c->maxc < 1))
            continue;
        const int32_t u = n > 0 ? c->nlen[n] : 0;
        const int32_t w0 = n > 0 && c->track_w && new_weekend(c, 0, 0);
        if (u >= M1 || (W1 > 1 && w0 >= W1) || !hm_live(c, sidx(c, 0, n, 1), u))
            continue;
        x += (&HM(0, n, 1, u))[W1 > 1 ? w0 : 0] + (n > 0 && new_weekend(c, 0, 0) ? per_wk : 0.0);
        if (x < best)
            best = x;
    }
#undef HM
    return best + k;
}

/* The row the minutes table prices cheapest (the argmin walk forward through it); 0 if none. */
static int minutes_walk(const ctx_t *c, int32_t *row)
{
    const int32_t D = c->D, NC = c->NC, M1 = c->M + 1, W1 = c->W1, nb = c->nb;
    const double per_wk = W1 > 1 ? 0.0 : c->blam[nb + 2];
    const double *Hm = c->Hm;
#define HMW(d, n, r, m, w)                                                                         \
    Hm[(hidx(c, (d), (n), (r)) * (size_t)M1 + (size_t)(m)) * (size_t)W1 + (size_t)(w)]
    int32_t n = -1, r = 1, m = 0, w = 0;
    double best = INFINITY;
    for (int32_t k = 0; k < NC; k++) {
        double x = c->nc[k];
        if (x == INFINITY || (k > 0 && c->maxc < 1))
            continue;
        const int32_t u = k > 0 ? c->nlen[k] : 0;
        const int32_t w0 = k > 0 && c->track_w && new_weekend(c, 0, 0);
        if (u >= M1 || (W1 > 1 && w0 >= W1) || !hm_live(c, sidx(c, 0, k, 1), u))
            continue;
        x += HMW(0, k, 1, u, W1 > 1 ? w0 : 0) + (k > 0 && new_weekend(c, 0, 0) ? per_wk : 0.0);
        if (x < best) {
            best = x;
            n = k;
            m = u;
            w = w0;
        }
    }
    if (n < 0 || best == INFINITY)
        return 0;
    row[0] = c->pick[n];
    for (int32_t d = 1; d < D; d++) {
        const double *nx = c->nc + (size_t)d * NC;
        const int nw = new_weekend(c, d, n > 0);
        double bx = INFINITY;
        int32_t b2 = -1, br = 0, bm = 0, bw = 0;
        for (int32_t n2 = 0; n2 < NC; n2++) {
            if (nx[n2] == INFINITY || node_forbidden(c, n, n2))
                continue;
            int32_t r2 = step_run(c, n > 0, n2 > 0, r, d);
            if (!r2)
                continue;
            const int32_t m2 = m + (n2 > 0 ? c->nlen[n2] : 0);
            const int32_t w2 = w + (n2 > 0 && nw && c->track_w);
            if (m2 >= M1 || (W1 > 1 && w2 >= W1) || !hm_live(c, sidx(c, d, n2, r2), m2))
                continue;
            double x = nx[n2] + HMW(d, n2, r2, m2, W1 > 1 ? w2 : 0) + (n2 > 0 && nw ? per_wk : 0.0);
            if (x < bx) {
                bx = x;
                b2 = n2;
                br = r2;
                bm = m2;
                bw = w2;
            }
        }
        if (b2 < 0 || bx == INFINITY)
            return 0;
        n = b2;
        r = br;
        m = bm;
        w = bw;
        row[d] = c->pick[(size_t)d * NC + n];
    }
#undef HMW
    return 1;
}

/* The bound of a label: its cost, its priced resources and the cost-to-go of its state. */
static inline double label_bound(const ctx_t *c, int64_t cost, int32_t m2, int32_t w2, size_t j,
                                 size_t hj, const int32_t *c0, int32_t t)
{
    const int32_t nb = c->nb;
    const double *lam = c->blam;
    double lb;
    if (c->Hm && c->W1 > 1)
        lb = (double)cost + c->Hm[(hj * (size_t)(c->M + 1) + (size_t)m2) * (size_t)c->W1 +
                                  (size_t)w2] +
             c->mconst;
    else if (c->Hm)
        lb = (double)cost + lam[nb + 2] * w2 + c->Hm[hj * (size_t)(c->M + 1) + (size_t)m2] +
             c->mconst;
    else
        lb = (double)cost + (lam[nb] - lam[nb + 1]) * m2 + lam[nb + 2] * w2 + c->Hbest[j] +
             c->bconst;
    for (int32_t k = 0; k < nb; k++)
        lb += lam[k] * (double)((c0 ? c0[k] : 0) + (k == t));
    return lb;
}

/* extend_rules from label L0, then its cost and bound: 0 also when the bound cannot beat
 * `cut`. */
static inline int extend(const ctx_t *c, int32_t d, const label *L0, const int32_t *c0,
                         int32_t v2, double cut, step_t *x)
{
    if (!extend_rules(c, d, L0->v, L0->n, L0->r, L0->m, L0->w, c0, v2, x))
        return 0;
    x->cost = L0->cost + c->cell[(size_t)d * c->V + v2];
    x->lb = label_bound(c, x->cost, x->m2, x->w2, x->j, c->Hm ? hidx(c, d, x->n2, x->r2) : 0, c0,
                        x->t);
    return x->lb <= cut;
}

/* Is a ahead of b: the lower bound, then the lower index? */
static inline int sk_ahead(const sortkey *a, const sortkey *b)
{
    return a->pri < b->pri || (a->pri == b->pri && a->idx < b->idx);
}

static inline void sk_sift(sortkey *h, size_t n, size_t i) /* max-heap: the one last ahead on top */
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && sk_ahead(&h[m], &h[l]))
            m = l;
        if (l + 1 < n && sk_ahead(&h[m], &h[l + 1]))
            m = l + 1;
        if (m == i)
            return;
        const sortkey t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The first k of sk[0..n) in sk_ahead order moved to sk[0..k), in that order; returns k (n
 * when fewer). A heap of k: each day of the beam keeps 64 of several hundred labels, and sorting
 * them all with qsort took a third of Instance 22's walk. */
static size_t best_of(sortkey *sk, size_t n, size_t k)
{
    if (k > n)
        k = n;
    for (size_t i = k / 2; i-- > 0;)
        sk_sift(sk, k, i);
    for (size_t i = k; i < n; i++)
        if (k > 0 && sk_ahead(&sk[i], &sk[0])) {
            sk[0] = sk[i];
            sk_sift(sk, k, 0);
        }
    for (size_t m = k; m > 1; m--) { /* heapsort: the last ahead goes to the end */
        const sortkey t = sk[0];
        sk[0] = sk[m - 1];
        sk[m - 1] = t;
        sk_sift(sk, m - 1, 0);
    }
    return k;
}

/* Forward labelling with a beam: the `beam` labels of best bound are kept day by day (a
 * heuristic for an incumbent; the exact search is best_first). Offers its best complete row;
 * returns 0 when it stopped at the cap (or ran out of memory). */
static int labelling(ctx_t *c, int32_t beam)
{
    gr_dp *dp = c->dp;
    const int32_t D = c->D, V = c->V, nb = c->nb;
    const double cut = c->ub == LINF ? INFINITY : (double)c->ub - 1.0 + c->eps;
    const size_t cb = (size_t)(nb > 0 ? nb : 1) * sizeof(int32_t);
    size_t cap = 4096, n_lab = 0;
    label *lab = gr_dp_grow(dp, B_LAB, cap * sizeof *lab);
    int32_t *cnt = gr_dp_grow(dp, B_CNT, cap * cb);
    if (!lab || !cnt)
        return 0;
    size_t start = 0, end = 0; /* yesterday's labels */
    for (int32_t d = 0; d < D; d++) {
        const size_t first = n_lab;
        const int32_t *cd = c->cand + (size_t)d * V;
        const size_t from = d == 0 ? 0 : start, to = d == 0 ? 1 : end;
        for (size_t i = from; i < to; i++) {
            label L0;
            if (d == 0) {
                memset(&L0, 0, sizeof L0);
                L0.parent = -1;
            } else {
                L0 = lab[i];
            }
            for (int32_t b = 0; b < c->ncand[d]; b++) {
                /* read again after every label: growing cnt below moves it */
                const int32_t *c0 = d == 0 ? NULL : cnt + i * (size_t)nb;
                step_t x;
                if (!extend(c, d, &L0, c0, cd[b], cut, &x))
                    continue;
                if (n_lab - first >= DAY_CAP) {
                    c->capped = 1;
                    return 0;
                }
                if (n_lab == cap) {
                    cap *= 2;
                    label *nl = gr_dp_grow(dp, B_LAB, cap * sizeof *lab);
                    int32_t *ncn = gr_dp_grow(dp, B_CNT, cap * cb);
                    if (!nl || !ncn)
                        return 0;
                    lab = nl;
                    cnt = ncn;
                }
                label *L = &lab[n_lab];
                L->cost = x.cost;
                L->parent = d == 0 ? -1 : (int32_t)i;
                L->m = x.m2;
                L->w = x.w2;
                L->r = x.r2;
                L->v = x.v2;
                L->n = x.n2;
                L->lb = x.lb;
                int32_t *cn = cnt + n_lab * (size_t)nb;
                for (int32_t k = 0; k < nb; k++)
                    cn[k] = (d == 0 ? 0 : cnt[i * (size_t)nb + (size_t)k]) + (k == x.t);
                n_lab++;
            }
        }
        dp->work += (int64_t)(n_lab - first);
        if (n_lab == first) {
#ifdef LABEL_DEBUG
            fprintf(stderr, "   labelling(beam %d) died on day %d\n", beam, d);
            for (size_t i = start; i < end && i < start + 5; i++) {
                fprintf(stderr, "     label m %d w %d r %d v %d cnt", lab[i].m, lab[i].w, lab[i].r, lab[i].v);
                for (int32_t k = 0; k < nb; k++) fprintf(stderr, " %d", cnt[i * (size_t)nb + (size_t)k]);
                fprintf(stderr, "\n");
            }
#endif
            return 1; /* every label died: nothing beats the incumbent */
        }
        /* the `beam` best bounds of the day */
        const size_t nn = n_lab - first;
        sortkey *sk = gr_dp_grow(dp, B_SORT, nn * sizeof *sk);
        label *tl = gr_dp_grow(dp, B_TMPLAB, (size_t)beam * sizeof *tl);
        int32_t *tc = gr_dp_grow(dp, B_TMPCNT, (size_t)beam * cb);
        if (!sk || !tl || !tc)
            return 0;
        for (size_t i = 0; i < nn; i++) {
            sk[i].pri = lab[first + i].lb;
            sk[i].idx = (int32_t)(first + i);
        }
        const size_t nl = best_of(sk, nn, (size_t)beam);
        for (size_t i = 0; i < nl; i++) {
            tl[i] = lab[sk[i].idx];
            memcpy(tc + i * (size_t)nb, cnt + (size_t)sk[i].idx * (size_t)nb,
                   (size_t)nb * sizeof *cnt);
        }
        memcpy(lab + first, tl, nl * sizeof *lab);
        memcpy(cnt + first * (size_t)nb, tc, nl * cb);
        n_lab = first + nl;
        start = first;
        end = n_lab;
    }
    /* the last run ends on day D-1 and is exempt; the minutes floor was kept by the bounds */
    int64_t best = LINF;
    size_t bi = 0;
    for (size_t i = start; i < end; i++)
        if (lab[i].m >= c->m_lo && lab[i].cost < best) {
            best = lab[i].cost;
            bi = i;
        }
    if (best < c->ub) {
        int32_t *row = gr_dp_grow(dp, B_TMPCNT, (size_t)D * sizeof *row);
        if (!row)
            return 0;
        /* B_TMPCNT is free again; lab stays valid */
        int64_t at = (int64_t)bi;
        for (int32_t d = D - 1; d >= 0; d--) {
            row[d] = lab[at].v;
            at = lab[at].parent;
        }
        offer(c, row, best);
    }
    return 1;
}

/* Best-first search (exact): labels are expanded in order of their Lagrangian bound, deepest
 * first among equal bounds, so that on ties (most cells cost the same) it dives to a complete
 * row at once; it ends when the best open bound cannot beat the incumbent. Labels with the same
 * day, state and minutes are kept in one bucket (a hash table) for dominance. Returns 0 when
 * it stopped at the cap or ran out of memory. */
static inline int heap_less(const label *lab, int32_t a, int32_t b)
{
    if (lab[a].lb != lab[b].lb)
        return lab[a].lb < lab[b].lb;
    return lab[a].d > lab[b].d;
}

static int best_first(ctx_t *c)
{
    gr_dp *dp = c->dp;
    const int32_t D = c->D, V = c->V, nb = c->nb, R = c->R, M = c->M, NC = c->NC;
    const size_t cb = (size_t)(nb > 0 ? nb : 1) * sizeof(int32_t);
    size_t cap = 4096, n_lab = 0, n_heap = 0, hsize = 4096;
    label *lab = gr_dp_grow(dp, B_LAB, cap * sizeof *lab);
    int32_t *cnt = gr_dp_grow(dp, B_CNT, cap * cb);
    int32_t *heap = gr_dp_grow(dp, B_HEAP, cap * sizeof *heap);
    int32_t *hash = gr_dp_grow(dp, B_HASH, hsize * sizeof *hash);
    uint64_t *hkey = gr_dp_grow(dp, B_HKEY, hsize * sizeof *hkey);
    if (!lab || !cnt || !heap || !hash || !hkey)
        return 0;
    for (size_t i = 0; i < hsize; i++)
        hash[i] = -1;
    size_t n_keys = 0;
    label root;
    memset(&root, 0, sizeof root);
    root.parent = -1;
    root.d = -1;
    int32_t *zero = gr_dp_grow(dp, B_TMPCNT, cb);
    if (!zero)
        return 0;
    memset(zero, 0, cb);
    int at_root = 1;
    for (;;) {
        label L0;
        const int32_t *c0;
        int32_t i0 = -1;
        if (at_root) {
            L0 = root;
            c0 = zero;
            at_root = 0;
        } else {
            /* pop the best open label */
            for (;;) {
                if (n_heap == 0)
                    return 1;
                i0 = heap[0];
                heap[0] = heap[--n_heap];
                for (size_t k = 0;;) {
                    size_t a = 2 * k + 1, b = a + 1, m = k;
                    if (a < n_heap && heap_less(lab, heap[a], heap[m]))
                        m = a;
                    if (b < n_heap && heap_less(lab, heap[b], heap[m]))
                        m = b;
                    if (m == k)
                        break;
                    int32_t t = heap[k];
                    heap[k] = heap[m];
                    heap[m] = t;
                    k = m;
                }
                if (!lab[i0].dead)
                    break;
            }
            if (lab[i0].lb > (c->ub == LINF ? INFINITY : (double)c->ub - 1.0 + c->eps))
                return 1; /* nothing open can beat the incumbent */
            L0 = lab[i0];
            c0 = cnt + (size_t)i0 * (size_t)nb;
            if (L0.d == D - 1) {
                /* complete (the minutes floor was kept by the bounds): a new incumbent */
                int32_t *row = gr_dp_grow(dp, B_KEPT, (size_t)D * sizeof *row);
                if (!row)
                    return 0;
                int64_t at = i0;
                for (int32_t d = D - 1; d >= 0; d--) {
                    row[d] = lab[at].v;
                    at = lab[at].parent;
                }
                offer(c, row, L0.cost);
                continue;
            }
        }
        const int32_t d = L0.d + 1;
        const int32_t *cd = c->cand + (size_t)d * V;
        const double cut = c->ub == LINF ? INFINITY : (double)c->ub - 1.0 + c->eps;
        for (int32_t b = 0; b < c->ncand[d]; b++) {
            step_t x;
            if (!extend(c, d, &L0, c0, cd[b], cut, &x))
                continue;
            const int32_t n2 = x.n2, r2 = x.r2, m2 = x.m2, w2 = x.w2, t = x.t;
            const int64_t cost = x.cost;
            /* dominance within the bucket of (day, state, minutes) */
            const uint64_t key =
                (((uint64_t)d * (uint64_t)NC + (uint64_t)n2) * (uint64_t)R + (uint64_t)(r2 - 1)) *
                    (uint64_t)(M + 1) +
                (uint64_t)m2;
            size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (hsize - 1);
            while (hash[h] >= 0 && hkey[h] != key)
                h = (h + 1) & (hsize - 1);
            int dominated = 0;
            int32_t *link = &hash[h];
            if (hash[h] >= 0) {
                link = &hash[h];
                /* hash[h] heads the bucket's chain */
                int32_t *pp = &hash[h];
                /* dominance only saves work, so a long bucket is checked in part (newest
                 * first): a full scan made each label cost ~50 us on Instance 22 */
                int32_t scan = 0;
                while (*pp >= 0 && scan++ < DOMINANCE_SCAN) {
                    label *K = &lab[*pp];
                    const int32_t *kc = cnt + (size_t)*pp * (size_t)nb;
                    int k_le = K->cost <= cost && K->w <= w2, n_le = cost <= K->cost && w2 <= K->w;
                    for (int32_t k = 0; k < nb && (k_le || n_le); k++) {
                        int32_t mine = c0[k] + (k == t);
                        k_le &= kc[k] <= mine;
                        n_le &= mine <= kc[k];
                    }
                    if (k_le) {
                        dominated = 1;
                        break;
                    }
                    if (n_le) { /* the new label dominates this one: unlink it */
                        K->dead = 1;
                        *pp = K->next;
                        continue;
                    }
                    pp = &K->next;
                }
                if (hash[h] < 0)
                    hash[h] = -2; /* emptied bucket: keep the slot's key (probing) */
            }
            dp->work++;
            if (dominated)
                continue;
            if (n_lab >= c->label_cap) {
                c->capped = 1;
                return 0;
            }
            if (n_lab == cap) {
                cap *= 2;
                label *nl = gr_dp_grow(dp, B_LAB, cap * sizeof *lab);
                int32_t *ncn = gr_dp_grow(dp, B_CNT, cap * cb);
                int32_t *nh = gr_dp_grow(dp, B_HEAP, cap * sizeof *heap);
                if (!nl || !ncn || !nh)
                    return 0;
                lab = nl;
                cnt = ncn;
                heap = nh;
                if (i0 >= 0)
                    c0 = cnt + (size_t)i0 * (size_t)nb;
                else
                    c0 = zero;
            }
            label *L = &lab[n_lab];
            L->cost = cost;
            L->parent = i0;
            L->m = m2;
            L->w = w2;
            L->r = r2;
            L->v = x.v2;
            L->n = n2;
            L->lb = x.lb;
            L->d = d;
            L->dead = 0;
            int32_t *cn = cnt + n_lab * (size_t)nb;
            for (int32_t k = 0; k < nb; k++)
                cn[k] = c0[k] + (k == t);
            if (hash[h] == -1)
                n_keys++;
            L->next = hash[h] >= 0 ? hash[h] : -1;
            hash[h] = (int32_t)n_lab;
            hkey[h] = key;
            (void)link;
            /* push */
            size_t k = n_heap++;
            heap[k] = (int32_t)n_lab;
            while (k > 0) {
                size_t up = (k - 1) / 2;
                if (!heap_less(lab, heap[k], heap[up]))
                    break;
                int32_t tmp = heap[k];
                heap[k] = heap[up];
                heap[up] = tmp;
                k = up;
            }
            n_lab++;
            /* grow the hash table at half load */
            if (2 * n_keys > hsize) {
                size_t nsize = hsize * 4;
                int32_t *nh = malloc(nsize * sizeof *nh);
                uint64_t *nk = malloc(nsize * sizeof *nk);
                if (!nh || !nk) {
                    free(nh);
                    free(nk);
                    return 0;
                }
                for (size_t q = 0; q < nsize; q++)
                    nh[q] = -1;
                for (size_t q = 0; q < hsize; q++) {
                    if (hash[q] == -1)
                        continue;
                    size_t g = (size_t)((hkey[q] * 0x9E3779B97F4A7C15ull) >> 20) & (nsize - 1);
                    while (nh[g] != -1)
                        g = (g + 1) & (nsize - 1);
                    nh[g] = hash[q];
                    nk[g] = hkey[q];
                }
                hash = gr_dp_grow(dp, B_HASH, nsize * sizeof *hash);
                hkey = gr_dp_grow(dp, B_HKEY, nsize * sizeof *hkey);
                if (!hash || !hkey) {
                    free(nh);
                    free(nk);
                    return 0;
                }
                memcpy(hash, nh, nsize * sizeof *hash);
                memcpy(hkey, nk, nsize * sizeof *hkey);
                free(nh);
                free(nk);
                hsize = nsize;
            }
        }
    }
}

static int label_row(gr_dp *dp, const gr_problem *p, const int32_t *vrep, int32_t e,
                     const int64_t *cell, size_t label_cap, const int32_t *start, int first_its,
                     int more_its, int32_t *out, int64_t *bound);

int gr_label_row(gr_dp *dp, const gr_problem *p, const int32_t *vrep, int32_t e,
                 const int64_t *cell, size_t label_cap, int32_t *out, int64_t *bound)
{
    return label_row(dp, p, vrep, e, cell, label_cap, NULL, FIRST_ITERATIONS,
                     SUBGRADIENT_ITERATIONS, out, bound);
}

int gr_price_row(gr_dp *dp, const gr_problem *p, const int32_t *vrep, int32_t e,
                 const int64_t *cell, size_t label_cap, const int32_t *start, int32_t *out,
                 int64_t *bound)
{
    return label_row(dp, p, vrep, e, cell, label_cap, start, PRICING_FIRST_ITERATIONS,
                     PRICING_SUBGRADIENT_ITERATIONS, out, bound);
}

/* Offers `start` as the first incumbent when it keeps every rule and uses only allowed cells. */
static void offer_start(ctx_t *c, const int32_t *start, int32_t *tmp_row, int32_t *tmp_cnt)
{
    const int32_t D = c->D, S = c->S;
    for (int32_t d = 0; d < D; d++) {
        if (start[d] < -1 || start[d] >= S)
            return;
        const int32_t v = start[d] < 0 ? S : start[d];
        if (!c->allow[(size_t)d * c->V + v])
            return;
        tmp_row[d] = v;
    }
    if (!gr_row_keeps_maxima(c->p, c->e, start))
        return;
    int64_t cost;
    int32_t m, w;
    if (resources(c, tmp_row, &cost, tmp_cnt, &m, &w))
        offer(c, tmp_row, cost);
}

static int label_row(gr_dp *dp, const gr_problem *p, const int32_t *vrep, int32_t e,
                     const int64_t *cell, size_t label_cap, const int32_t *start, int first_its,
                     int more_its, int32_t *out, int64_t *bound)
{
    ctx_t c;
    memset(&c, 0, sizeof c);
    const int32_t D = p->n_days, S = p->n_shifts, V = S + 1;
    const int32_t *ms = p->max_shifts + (int64_t)e * S;
    c.p = p;
    c.dp = dp;
    c.cell = cell;
    c.e = e;
    c.D = D;
    c.S = S;
    c.V = V;
    c.ub = LINF;
    c.label_cap = label_cap;
    if (bound)
        *bound = INT64_MIN; /* nothing known until proven otherwise */
    c.maxc = p->max_consec[e] < D ? p->max_consec[e] : D;
    c.minc = p->min_consec[e];
    c.mino = p->min_off[e];
    int32_t R = c.maxc;
    if (c.minc > R)
        R = c.minc;
    if (c.mino > R)
        R = c.mino;
    if (R < 1)
        R = 1;
    c.R = R > D ? D : R;
    /* minutes in units of the gcd of the eligible lengths */
    int32_t g = 0, maxlen = 0;
    for (int32_t s = 0; s < S; s++)
        if (ms[s] > 0) {
            g = gr_gcd32(g, p->length[s]);
            if (p->length[s] > maxlen)
                maxlen = p->length[s];
        }
    int64_t cap = g > 0 ? (int64_t)D * (maxlen / g) : 0;
    int64_t top = g > 0 ? p->max_minutes[e] / g : 0;
    c.M = (int32_t)(top < cap ? top : cap);
    int64_t lo = g > 0 ? ((int64_t)p->min_minutes[e] + g - 1) / g
                       : (p->min_minutes[e] > 0 ? (int64_t)INT32_MAX : 0);
    if (lo > c.M) {
        if (bound)
            *bound = LINF;
        return GR_ROW_NONE;
    }
    c.m_lo = (int32_t)lo;
    c.maxw = p->max_weekends[e];
    c.track_w = c.maxw < p->n_weekends;

    int32_t *node = gr_dp_grow(dp, B_NODE, (size_t)V * sizeof *node);
    int32_t *nlen = gr_dp_grow(dp, B_NLEN, (size_t)V * sizeof *nlen);
    int32_t *nrep = gr_dp_grow(dp, B_NREP, (size_t)V * sizeof *nrep);
    int32_t *tix = gr_dp_grow(dp, B_TIX, (size_t)V * sizeof *tix);
    uint8_t *allow = gr_dp_grow(dp, B_ALLOW, (size_t)D * V);
    if (!node || !nlen || !nrep || !tix || !allow)
        return GR_ROW_NONE;
    /* nodes: off, then one per class of eligible interchangeable types */
    int32_t NC = 1;
    node[S] = 0;
    nlen[0] = 0;
    nrep[0] = -1;
    for (int32_t s = 0; s < S; s++) {
        node[s] = -1;
        if (ms[s] <= 0)
            continue;
        for (int32_t u = 0; u < s && node[s] < 0; u++)
            if (node[u] >= 0 && vrep[u] == vrep[s])
                node[s] = node[u];
        if (node[s] < 0) {
            node[s] = NC;
            nlen[NC] = p->length[s] / g;
            nrep[NC] = s;
            NC++;
        }
    }
    c.NC = NC;
    c.node = node;
    c.nlen = nlen;
    c.nrep = nrep;
    c.tix = tix;
    c.allow = allow;
    if ((size_t)D * (size_t)NC * (size_t)c.R > STATE_CAP)
        return GR_ROW_NONE;
    c.hgrp = gr_dp_grow(dp, B_HGRP, (size_t)NC * sizeof *c.hgrp);
    c.gfirst = gr_dp_grow(dp, B_GFIRST, (size_t)NC * sizeof *c.gfirst);
    c.gdone = gr_dp_grow(dp, B_GDONE, (size_t)NC * sizeof *c.gdone);
    c.gtn = gr_dp_grow(dp, B_GTN, (size_t)NC * sizeof *c.gtn);
    c.hadd = gr_dp_grow(dp, B_HADD, (size_t)NC * sizeof *c.hadd);
    c.nf = gr_dp_grow(dp, B_NF, (size_t)NC * (size_t)NC);
    if (!c.hgrp || !c.gfirst || !c.gdone || !c.gtn || !c.hadd || !c.nf)
        return GR_ROW_NONE;
    for (int32_t n = 0; n < NC; n++)
        for (int32_t n2 = 0; n2 < NC; n2++)
            c.nf[(size_t)n * NC + n2] =
                n > 0 && n2 > 0 && p->forbidden[(int64_t)nrep[n] * S + nrep[n2]];
    c.hgrp[0] = c.gfirst[0] = 0;
    c.NG = 1;
    for (int32_t n = 1; n < NC; n++) {
        c.hgrp[n] = -1;
        c.gfirst[n] = n;
        for (int32_t u = 1; u < n && c.hgrp[n] < 0; u++)
            if (!memcmp(c.nf + (size_t)n * NC, c.nf + (size_t)u * NC, (size_t)NC)) {
                c.hgrp[n] = c.hgrp[u];
                c.gfirst[n] = c.gfirst[u];
            }
        if (c.hgrp[n] < 0)
            c.hgrp[n] = c.NG++;
    }
    /* allowed values, and the days each type could be worked: a type whose maximum is at
     * least that (or than the minutes ceiling allows) need not be counted */
    double maxabs = 0.0;
    for (int32_t s = 0; s < S; s++)
        tix[s] = 0;
    for (int32_t d = 0; d < D; d++)
        for (int32_t v = 0; v < V; v++) {
            int64_t x = cell[(size_t)d * V + v];
            uint8_t ok = x != GR_FORBIDDEN &&
                         (v == S || (!p->day_off[(int64_t)e * D + d] && ms[v] > 0));
            allow[(size_t)d * V + v] = ok;
            if (ok) {
                if (v < S)
                    tix[v]++;
                if (fabs((double)x) > maxabs)
                    maxabs = fabs((double)x);
            }
        }
    c.nb = 0;
    for (int32_t s = 0; s < S; s++) {
        int32_t days = tix[s];
        int32_t by_minutes = g > 0 && ms[s] > 0 ? c.M / nlen[node[s]] : 0;
        int32_t most = days < by_minutes ? days : by_minutes;
        tix[s] = ms[s] > 0 && ms[s] < most ? c.nb++ : -1;
    }
    /* doubles carry the bounds: allow for their rounding (costs are integers) */
    c.eps = 1e-6 + maxabs * (double)D * 1e-13;
    const int32_t nb = c.nb;
    const size_t hn = (size_t)D * NC * c.R;
    c.nok = gr_dp_grow(dp, B_NOK, (size_t)D * NC);
    c.cand = gr_dp_grow(dp, B_CAND, (size_t)D * V * sizeof *c.cand);
    c.ncand = gr_dp_grow(dp, B_NCAND, (size_t)D * sizeof *c.ncand);
    c.maxu = gr_dp_grow(dp, B_MAXU, hn * sizeof *c.maxu);
    c.minu = gr_dp_grow(dp, B_MINU, hn * sizeof *c.minu);
    c.H = gr_dp_grow(dp, B_H, hn * sizeof *c.H);
    c.Hbest = gr_dp_grow(dp, B_HBEST, hn * sizeof *c.Hbest);
    c.nc = gr_dp_grow(dp, B_NC, (size_t)D * NC * sizeof *c.nc);
    c.pick = gr_dp_grow(dp, B_PICK, (size_t)D * NC * sizeof *c.pick);
    c.lam = gr_dp_grow(dp, B_LAM, (size_t)(nb + 3) * sizeof *c.lam);
    c.blam = gr_dp_grow(dp, B_BLAM, (size_t)(nb + 3) * sizeof *c.blam);
    /* the incumbent and the relaxed rows live in the caller's out (D) and here */
    int32_t *tmp_row = malloc((size_t)D * sizeof *tmp_row);
    int32_t *tmp_cnt = malloc((size_t)(nb + 1) * sizeof *tmp_cnt);
    if (!c.nok || !c.cand || !c.ncand || !c.maxu || !c.minu || !c.H || !c.Hbest || !c.nc ||
        !c.pick || !c.lam || !c.blam || !tmp_row || !tmp_cnt) {
        free(tmp_row);
        free(tmp_cnt);
        return GR_ROW_NONE;
    }
    c.row = out;
    if (start && label_cap > 0)
        offer_start(&c, start, tmp_row, tmp_cnt);
    /* branching values per day: off, every counted type, the cheapest of the others per node
     * (they differ only by cost) */
    for (int32_t d = 0; d < D; d++) {
        uint8_t *nk = c.nok + (size_t)d * NC;
        int32_t *cd = c.cand + (size_t)d * V, n = 0;
        memset(nk, 0, (size_t)NC);
        int32_t *first_of = c.pick + (size_t)d * NC; /* scratch: cheapest uncounted per node */
        for (int32_t k = 0; k < NC; k++)
            first_of[k] = -1;
        for (int32_t v = 0; v < V; v++) {
            if (!allow[(size_t)d * V + v])
                continue;
            int32_t k = node[v];
            nk[k] = 1;
            if (v < S && tix[v] < 0) {
                int32_t f = first_of[k];
                if (f < 0 || cell[(size_t)d * V + v] < cell[(size_t)d * V + f])
                    first_of[k] = v;
                continue;
            }
            cd[n++] = v;
        }
        for (int32_t k = 0; k < NC; k++)
            if (first_of[k] >= 0)
                cd[n++] = first_of[k];
        c.ncand[d] = n;
    }
    structural(&c);
    c.K1 = c.track_w ? c.maxw + 1 : 1;
    c.maxw_u = gr_dp_grow(dp, B_MAXW, (size_t)D * 2 * (size_t)c.R * (size_t)c.K1 * sizeof *c.maxw_u);
    if (!c.maxw_u) {
        free(tmp_row);
        free(tmp_cnt);
        return GR_ROW_NONE;
    }
    structural_weekends(&c);
    c.all_counted = 1;
    for (int32_t s = 0; s < S; s++)
        if (ms[s] > 0 && tix[s] < 0)
            c.all_counted = 0;
    int status = GR_ROW_NONE;
#ifdef LABEL_DEBUG
    double t0 = gr_now();
#endif
    /* a few multiplier steps, an incumbent from the beam, then the multipliers with the
     * incumbent as the Polyak target, then (when the bound does not yet meet it) the exact
     * labelling */
    /* Fast path (small rows, most of Instances 1-18): the table with the minutes and the
     * weekends exact is the whole problem but the type maxima. Its cheapest row is proven
     * optimal when it keeps them (or when none binds). */
    const size_t with_m = hn * (size_t)(c.M + 1);
    c.W1 = c.track_w && with_m * (size_t)(c.maxw + 1) <= MINUTES_CAP ? c.maxw + 1 : 1;
    double *hm = with_m * (size_t)c.W1 <= MINUTES_CAP
                     ? gr_dp_grow(dp, B_HM, (size_t)D * (size_t)c.NG * (size_t)c.R *
                                                (size_t)(c.M + 1) * (size_t)c.W1 * sizeof *c.Hm)
                     : NULL;
    c.fw = hm ? gr_dp_grow(dp, B_FW, 2 * (size_t)D * sizeof *c.fw) : NULL;
    if (!c.fw)
        hm = NULL;
    double lb0 = -INFINITY;
    if (hm && (c.W1 > 1 || !c.track_w)) {
        for (int32_t i = 0; i < nb + 3; i++)
            c.lam[i] = c.blam[i] = 0.0;
        c.Hm = hm;
        lb0 = minutes_bound(&c);
        if (lb0 == INFINITY) {
            free(tmp_row);
            free(tmp_cnt);
            if (bound)
                *bound = LINF;
            return GR_ROW_NONE; /* proven: no row keeps the minutes and weekends */
        }
        int64_t cost;
        int32_t m, w;
        if (minutes_walk(&c, tmp_row) && resources(&c, tmp_row, &cost, tmp_cnt, &m, &w))
            offer(&c, tmp_row, cost);
        if (c.ub != LINF && lb0 > (double)c.ub - 1.0 + c.eps) {
            for (int32_t d = 0; d < D; d++)
                out[d] = out[d] == S ? -1 : out[d];
            free(tmp_row);
            free(tmp_cnt);
            if (bound)
                *bound = c.ub;
            return GR_ROW_EXACT;
        }
        c.Hm = NULL;
    }
    if (label_cap == 0 && c.ub == LINF)
        feasible_dive(&c, QUICK_BUDGET, 1);
    if (label_cap == 0 && c.ub == LINF)
        feasible_dive(&c, QUICK_BUDGET, 0);
    if (label_cap == 0 && c.ub == LINF && reachable(&c))
        feasible_dive(&c, QUICK_BUDGET, 0);
    if (label_cap == 0 && c.ub == LINF) {
        /* fail fast: the caller may retry under other costs (greedy_start.c) */
        free(tmp_row);
        free(tmp_cnt);
        return GR_ROW_NONE;
    }
    if (label_cap == 0 && c.ub != LINF) {
        /* construction: any rule-abiding row, cheap cells first, in about a millisecond on
         * 364 days (the beam and the bounds take ~100 ms there); when the dive backtracks too
         * long (a few rows of Instance 24), the beam below finds one */
        if (c.ub != LINF)
            for (int32_t d = 0; d < D; d++)
                out[d] = out[d] == S ? -1 : out[d];
        free(tmp_row);
        free(tmp_cnt);
        if (bound)
            *bound = c.ub != LINF && lb0 > (double)c.ub - 1.0 + c.eps ? c.ub
                     : lb0 > -INFINITY                               ? (int64_t)ceil(lb0 - c.eps)
                                                                      : INT64_MIN;
        return c.ub == LINF ? GR_ROW_NONE : GR_ROW_FEASIBLE;
    }
    double lb = lagrange(&c, tmp_row, tmp_cnt, first_its, -INFINITY);
    if (lb0 > lb)
        lb = lb0;
#ifdef LABEL_DEBUG
    fprintf(stderr, "e %d nb %d NC %d R %d M %d lo %d: lagrange %.1f ms lb %.1f ub %lld\n", e, nb,
            NC, c.R, c.M, c.m_lo, (gr_now() - t0) * 1e3, lb, (long long)c.ub);
#endif
    if (lb == -INFINITY) {
        free(tmp_row);
        free(tmp_cnt);
        if (bound)
            *bound = LINF;
        return GR_ROW_NONE; /* the local rules alone admit no row */
    }
    if (c.ub == LINF || lb <= (double)c.ub - 1.0 + c.eps) {
#ifdef LABEL_DEBUG
        t0 = gr_now();
        int64_t w0 = dp->work;
#endif
        /* the bound with the minutes (and weekends) exact guides the beam too */
        if (hm) {
            c.Hm = hm;
            double lbm = minutes_bound(&c);
            if (lbm > lb)
                lb = lbm;
        }
        if (lb <= (double)c.ub - 1.0 + c.eps)
            labelling(&c, BEAM);
        if (c.ub != LINF && lb <= (double)c.ub - 1.0 + c.eps && c.label_cap > 0) {
            double before = lb;
            c.Hm = NULL; /* the multipliers' search runs on the small relaxation */
            double lbl = lagrange(&c, tmp_row, tmp_cnt, more_its, lb);
            if (lbl > lb)
                lb = lbl;
            if (hm) {
                c.Hm = hm;
                if (lbl > before) { /* the multipliers moved: their table */
                    double lbm = minutes_bound(&c);
                    if (lbm > lb)
                        lb = lbm;
                }
            }
        }
#ifdef LABEL_DEBUG
        fprintf(stderr, "   beam+lagrange %.1f ms ub %lld lb %.1f work %lld\n",
                (gr_now() - t0) * 1e3, (long long)c.ub, lb, (long long)(dp->work - w0));
        t0 = gr_now();
        w0 = dp->work;
#endif
        c.capped = 0;
        int done = lb > (double)c.ub - 1.0 + c.eps || best_first(&c);
#ifdef LABEL_DEBUG
        fprintf(stderr, "   exact %.1f ms ub %lld work %lld capped %d\n", (gr_now() - t0) * 1e3,
                (long long)c.ub, (long long)(dp->work - w0), c.capped);
#endif
        c.capped |= !done;
        if (c.capped && c.ub == LINF)
            feasible_dive(&c, FEASIBLE_BUDGET, 0);
        status = !c.capped ? GR_ROW_EXACT : c.ub != LINF ? GR_ROW_FEASIBLE : GR_ROW_NONE;
    } else {
        status = GR_ROW_EXACT;
    }
    int proven_none = status == GR_ROW_EXACT && c.ub == LINF;
    if (proven_none)
        status = GR_ROW_NONE; /* proven: no row keeps every rule */
    if (bound) {
        if (status == GR_ROW_EXACT)
            *bound = c.ub;
        else if (proven_none)
            *bound = LINF;
        else
            *bound = (int64_t)ceil(lb - c.eps);
    }
    if (status != GR_ROW_NONE)
        for (int32_t d = 0; d < D; d++)
            out[d] = out[d] == S ? -1 : out[d];
    free(tmp_row);
    free(tmp_cnt);
    return status;
}
