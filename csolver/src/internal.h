/* Internal declarations shared by the solver's translation units. Not part of the API. */
#ifndef GR_INTERNAL_H
#define GR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "generetic.h"

/* ---- xoshiro256**, seeded through splitmix64 (rng.c); one generator per solve. The draws
 * are inline: one or more per proposal, a call through the PLT each was ~4 % of the search. */
typedef struct {
    uint64_t s[4];
} gr_rng;

void gr_rng_seed(gr_rng *r, uint64_t seed);
static inline uint64_t gr_rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t gr_rng_next(gr_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t result = gr_rng_rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = gr_rng_rotl(s[3], 45);
    return result;
}
/* Uniform in [0, n), n > 0. Lemire's multiply-shift: the tiny bias for n << 2^32 does not
 * matter for search. */
static inline int32_t gr_rng_below(gr_rng *r, int32_t n)
{
    return (int32_t)(((gr_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}
/* Uniform in [0, 1). */
static inline double gr_rng_unit(gr_rng *r) { return (double)(gr_rng_next(r) >> 11) * 0x1.0p-53; }

/* ---- score.c: exact counting, the reference the Python evaluator must equal. ---- */
int gr_score_unchecked(const gr_problem *p, const int32_t *roster, int64_t *hard, int64_t *pen);

/* ---- delta.c: incremental search state. ----
 * The search minimises HARD_WEIGHT * hard + pen, where `hard` is a magnitude (excess shifts,
 * missing minutes, days a run is too short...) rather than the violation count: a magnitude
 * tells the search which way is "less infeasible". It is zero exactly when the count is. */
#define GR_HARD_WEIGHT 1000
/* Hard units per minute of total-minutes deviation: 480 minutes ~ 2 units. */
#define GR_MINUTE_DIV 240

typedef struct {
    int64_t hard; /* magnitude units; minutes are kept in minutes and divided at the end */
    int64_t minutes;
    int64_t pen;
} gr_delta;

/* Weighted objective in units of 1/GR_MINUTE_DIV penalty point; hw = penalty per hard unit. */
static inline int64_t gr_delta_cost(gr_delta d, int64_t hw)
{
    return (d.hard * GR_MINUTE_DIV + d.minutes) * hw + d.pen * GR_MINUTE_DIV;
}

/* Workspace of the row labelling DP (label_dp.c): growable buffers, reused across calls. */
#define GR_DP_BUFS 43
typedef struct {
    void *buf[GR_DP_BUFS];
    size_t cap[GR_DP_BUFS];
    int64_t work; /* labels and relaxed-DP transitions of every call so far: what DP moves cost */
} gr_dp;
/* Workspace of the table DP (table_dp.c), grown on demand. */
typedef struct {
    int64_t *cost_a, *cost_b, *cell;
    int32_t *back, *allowed, *n_allowed, *pick;
    size_t per_day_cap, back_cap, cell_cap;
} gr_tdp;
void gr_tdp_free(gr_tdp *dp);

/* The buffer in slot `slot`, grown to at least `bytes`; NULL when out of memory. */
void *gr_dp_grow(gr_dp *dp, int slot, size_t bytes);
#define GR_DP_SLOT_COSTS (GR_DP_BUFS - 1) /* row_dp.c's cost table */
#define GR_DP_SLOT_WCOST (GR_DP_BUFS - 2) /* gr_row_window's cost table */
#define GR_DP_SLOT_WRULE (GR_DP_BUFS - 3) /* and its rules and row */
#define GR_DP_SLOTS_LABEL (GR_DP_BUFS - 3) /* label_dp.c uses the slots below this */

typedef struct {
    const gr_problem *p;
    gr_dp dp;
    gr_tdp tdp;
    int32_t E, D, S, W;
    int32_t *roster;    /* [E*D] */
    int32_t *count;     /* [E*S] shifts of each type per employee */
    int32_t *minutes;   /* [E] */
    int32_t *wk_days;   /* [E*W] worked days inside each weekend */
    int32_t *wk_worked; /* [E] worked weekends */
    int32_t *cover;     /* [D*S] employees on shift s day d */
    int32_t *elig;      /* [E*S] eligible shifts per employee, first n_elig[e] used */
    int32_t *n_elig;    /* [E] */
    int32_t *scratch_vals; /* [D] saved row segment */
    int32_t *scratch_cnt;  /* [S] per-shift count change, kept all zero between calls */
    int32_t *scratch_types; /* [2*D] the types whose count change became nonzero */
    int32_t *scratch_wk;   /* [W] per-weekend worked-day change, kept all zero between calls */
    int32_t *req_cell;     /* [R_on + R_off] cell e*D+d of each on- then off-request */
    int32_t *vrep;         /* [S] smallest shift type with the same length and rotation rules */
    int32_t min_give;      /* fewest minutes one cell can hand over: the shortest shift or the
                              smallest positive difference of two lengths */
    int32_t *cpen;         /* [E*D*(S+1)] request penalty of each value (off first) of each
                              cell, NULL above GR_CPEN_MAX entries (then read from the CSR) */
    uint8_t *pen_any;      /* [E*D] 1 where some value of the cell has a request or a pin: most
                              cells have none, and this table stays in cache where cpen does
                              not (Instance 24: 55 KB against 7 MB) */
    /* Pricing (pricing.c): when set, the row DP prices value v on day d at
     * price[d * (S + 1) + v] (v = S: off) instead of requests plus cover marginals. */
    const int64_t *price;
    int relax_min;      /* greedy construction: ignore min-type rules (they need whole runs) */
    gr_delta total;     /* current objective parts */
    /* Rejection cut for the next gr_state_delta (see there); INT64_MAX = none. */
    int64_t cut;
    int64_t cut_hw;
} gr_state;

/* The request penalty table is a pure cache of the CSR lists: every scored move reads two
 * cells, and most cells have no request, so four pointer loads and two empty loops per cell were
 * ~10 % of the search. 2^22 entries (16 MB) covers the benchmark's largest size (1.8 M). */
#define GR_CPEN_MAX ((int64_t)1 << 22)

/* What the search pays for a cell off its pin. Pins are hard (score.c counts them), but they
 * reach the search as a cell cost: the row DP (row_dp.c) prices cells through gr_cell_pen and
 * keeps only fixed days off and skills as hard, so a cost this far above any move's gain keeps
 * the DP's rows, and every move the search accepts, on the pins. The exact scoring
 * (gr_score_unchecked) never sees it. 2^28 fits the int32 cell cache with room for requests. */
#define GR_PIN_COST ((int64_t)1 << 28)

/* Greatest common divisor: both row DPs count minutes in units of the shift lengths' gcd. */
static inline int32_t gr_gcd32(int32_t a, int32_t b)
{
    while (b) {
        int32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static inline int gr_pinned(const gr_problem *p, int64_t c)
{
    return p->pin && p->pin[c] != GR_FREE;
}

/* Request penalty of value v (-1 = off) in cell c = e*D+d, from the CSR lists, plus
 * GR_PIN_COST when the cell is pinned to another value. */
static inline int64_t gr_cell_pen_csr(const gr_problem *p, int64_t c, int32_t v)
{
    int64_t pen = gr_pinned(p, c) && p->pin[c] != v ? GR_PIN_COST : 0;
    for (int32_t i = p->on_ptr[c]; i < p->on_ptr[c + 1]; i++)
        pen += v != p->on_shift[i] ? p->on_weight[i] : 0;
    for (int32_t i = p->off_ptr[c]; i < p->off_ptr[c + 1]; i++)
        pen += v == p->off_shift[i] ? p->off_weight[i] : 0;
    return pen;
}

int gr_state_alloc(gr_state *st, const gr_problem *p);
void gr_state_free(gr_state *st);
/* Request penalty of value v (-1 = off) in cell c = e*D+d. */
static inline int64_t gr_cell_pen(const gr_state *st, int64_t c, int32_t v)
{
    if (!st->pen_any[c])
        return 0;
    if (st->cpen)
        return st->cpen[c * (st->S + 1) + v + 1];
    return gr_cell_pen_csr(st->p, c, v);
}
/* Load a roster and recompute every aggregate and the total from scratch. */
void gr_state_load(gr_state *st, const int32_t *roster);
/* The objective parts recomputed from scratch (consistency checks). */
gr_delta gr_state_full(const gr_state *st);
/* Delta of setting employee e's days [a, b] to vals[0 .. b-a]; cover changes included when
 * with_cover (swaps between employees on the same days leave cover unchanged). */
gr_delta gr_state_delta(gr_state *st, int32_t e, int32_t a, int32_t b, const int32_t *vals,
                        int with_cover);
/* The two rewrites of a swap (no cover change: the same days, exchanged). With a cut, stops
 * as soon as their sum is sure to exceed it and marks d1 (pen = GR_DELTA_CUT). */
void gr_state_delta_pair(gr_state *st, int32_t e1, int32_t e2, int32_t a, int32_t b,
                         const int32_t *v1, const int32_t *v2, gr_delta *d1, gr_delta *d2);
/* Hard magnitude of employee e's row alone (minutes included), from scratch. */
int64_t gr_state_emp_hard(const gr_state *st, int32_t e);
/* Set in .pen when gr_state_delta stopped early at st->cut: the move is rejected, its delta
 * unknown. */
#define GR_DELTA_CUT INT64_MIN
void gr_state_apply(gr_state *st, int32_t e, int32_t a, int32_t b, const int32_t *vals,
                    int with_cover, gr_delta d);

/* ---- search context: budget, clock, cancel and progress shared by all phases. ---- */
typedef struct {
    gr_progress *progress;
    double start;          /* CLOCK_MONOTONIC seconds */
    double deadline;
    int64_t max_evaluations;
    int64_t evaluations; /* moves whose delta was computed */
    int64_t attempts;    /* proposals, including the ones rejected before scoring */
    int64_t next_check;  /* in attempts */
    int stop;              /* 1 = cancelled, 2 = timed out, 3 = evaluation budget spent */
    int64_t best_hard;     /* exact counts of the best roster so far, -1 = none */
    int64_t best_pen;
    int32_t *best_roster;
    size_t cells;
    const gr_problem *p;
} gr_ctx;

double gr_now(void);
/* Called every few hundred evaluations: publishes progress, reads cancel, checks the clock. */
int gr_ctx_poll(gr_ctx *c);
/* Offer a roster as a global best candidate (exact counts computed here). */
void gr_ctx_offer(gr_ctx *c, const int32_t *roster);
/* Count one proposal (scored or not); polls every few hundred. Returns the stop reason. */
static inline int gr_ctx_tick(gr_ctx *c, int scored)
{
    c->evaluations += scored;
    if (++c->attempts >= c->next_check)
        return gr_ctx_poll(c);
    return c->stop;
}

/* ---- label_dp.c: the cheapest rule-abiding row of one employee under given cell costs. ----
 * cell[d * (S + 1) + v]: cost of value v on day d (v = S: off), GR_FORBIDDEN = not allowed
 * (fixed days off and skills are also enforced here). Writes D values (-1 = off) to out.
 * Returns GR_ROW_NONE (no rule-abiding row, or no memory), GR_ROW_EXACT (the cheapest
 * rule-abiding row) or GR_ROW_FEASIBLE (a rule-abiding row, not proven cheapest: the label
 * search hit its cap). *bound (may be NULL): a lower bound on the cheapest rule-abiding row's
 * cost (the row's cost when exact; INT64_MAX when none exists). */
#define GR_ROW_NONE 0
#define GR_ROW_EXACT 1
#define GR_ROW_FEASIBLE 2
int gr_label_row(gr_dp *dp, const gr_problem *p, const int32_t *vrep, int32_t e,
                 const int64_t *cell, size_t label_cap, int32_t *out, int64_t *bound);
/* gr_label_row as pricing runs it (column generation's cheapest row under the LP's prices):
 * - from a known row (D values, -1 = off; NULL = none): when it keeps every rule and uses only
 *   cells allowed under `cell`, it is the search's first incumbent, so the result is that row
 *   or a cheaper one, and the search prunes by its cost from the start (ignored when label_cap
 *   is 0: the quick construction would return it unchanged);
 * - with a longer multiplier search for the bound (PRICING_*_ITERATIONS).
 * At an LP's fractional prices the labelling's bound with the moves' few multiplier steps was
 * far below the cheapest row (Instance 15: 1 400 points), the beam found no incumbent, and
 * half the rows hit the cap dearer than rows the LP already had (decision 0039). */
int gr_price_row(gr_dp *dp, const gr_problem *p, const int32_t *vrep, int32_t e,
                 const int64_t *cell, size_t label_cap, const int32_t *start, int32_t *out,
                 int64_t *bound);
/* label_cap: labels the exact search may keep (~50 bytes each) before it returns its incumbent
 * as GR_ROW_FEASIBLE; 0 = no exact search (a rule-abiding row, cheapest when the bounds prove
 * it). Pricing searches longest, a GA move briefly, the constructive start not at all. */
#ifndef GR_LABEL_CAP_PRICING
#define GR_LABEL_CAP_PRICING ((size_t)1 << 17)
#endif
/* GA moves search exactly too (the moves rely on the cheapest row), with a small cap: the
 * fixed cost of the bounds (5-40 ms a row on Instances 13-20) is the GA's main cost there
 * (decision 0013). */
#ifndef GR_LABEL_CAP_MOVE
#define GR_LABEL_CAP_MOVE ((size_t)1 << 13)
#endif
/* A window of a row (gr_row_window) is short: its search is exact within this cap. */
#ifndef GR_LABEL_CAP_WINDOW
#define GR_LABEL_CAP_WINDOW ((size_t)1 << 16)
#endif
void gr_dp_free(gr_dp *dp);

/* ---- table_dp.c: the table DP (state: value, run, minutes, weekends, one counted type);
 * 1 and a row that keeps every rule but maybe other types' maxima, or 0 (too large, none). */
int gr_table_row(gr_state *st, int32_t e, const int64_t *cell, int32_t *out);
/* The row moves and pricing try the table DP before the labelling search only where its table
 * is small. By speed the line falls between 1.2 M and 2.6 M transitions (3 M GA evaluations,
 * seed 1: Instance 12, at most 1.2 M, 1.59 s with it first against 1.84 s without; Instance
 * 13, 10.5 M, 6.96 s against 3.12 s). It is set above Instance 18's 2.6 M, where the walk was
 * faster without the table DP but its 60 s rosters worse (decision 0049). */
#ifndef GR_TABLE_FIRST_WORK
#define GR_TABLE_FIRST_WORK ((double)(1 << 22))
#endif
/* Is e's table small enough for the table DP to be tried first? */
int gr_table_first(const gr_problem *p, int32_t e);

/* ---- row_dp.c: cheapest feasible row for employee e with the others fixed. ---- */
/* Writes D values to out and returns 1, or returns 0 (no feasible row). The costs are the
 * request penalties plus the cover marginals (or st->price in pricing mode). */
int gr_row_dp(gr_state *st, int32_t e, int32_t *out);
/* The same with cell (e, pin_d) held at value pin_v (-1 = off); pin_d = -1: no pin. */
int gr_row_dp_pinned(gr_state *st, int32_t e, int32_t pin_d, int32_t pin_v, int32_t *out);
/* Does the row keep every per-type maximum of e? */
int gr_row_keeps_maxima(const gr_problem *p, int32_t e, const int32_t *row);
/* Is e's row too large for the exact search by default (its minutes table passes 2^19)? */
int gr_row_large(const gr_problem *p, int32_t e);
/* Do the walk's row moves on a long horizon take a window of e's row rather than the whole
 * row (its minutes table passes 2^18; every large row is)? */
int gr_row_windowed(const gr_problem *p, int32_t e);
/* A rule-abiding row for e under the same costs, without the exact search (construction). */
int gr_row_dp_quick(gr_state *st, int32_t e, int32_t *out);
/* Employee e's days [a, b] re-optimised exactly with the rest of the row fixed: the cheapest
 * values for them (under the same costs as gr_row_dp, cell (e, pin_d) held at pin_v when pin_d
 * is in [a, b]) such that the whole row keeps every rule. Writes b - a + 1 values to out and
 * returns 1, or returns 0 (no such values, or the row outside breaks a rule). */
int gr_row_window(gr_state *st, int32_t e, int32_t a, int32_t b, int32_t pin_d, int32_t pin_v,
                  int32_t *out);
/* The cost table the row DP uses for employee e (D * (S + 1) entries, st-owned scratch). */
const int64_t *gr_row_costs(gr_state *st, int32_t e, int32_t pin_d, int32_t pin_v);

/* ---- greedy_start.c ---- */
void gr_greedy_start(gr_state *st, gr_rng *rng, gr_ctx *ctx);

/* ---- local_search.c: simulated annealing over change / swap / block moves. ---- */
typedef struct {
    int64_t iterations; /* schedule length in proposals (reproducible mode) */
    double seconds;     /* > 0: schedule length in wall seconds instead (timed mode) */
    double t_start;     /* temperature in penalty points */
    double t_end;
    int64_t hard_weight; /* penalty points per hard unit during this search */
    int64_t dp_sweeps;   /* non-zero: end with DP sweeps over all rows */
    int64_t dp_period;   /* every dp_period-th proposal is a DP row move; 0 = never */
    int64_t lns_period;  /* every lns_period-th proposal is a ruin-and-recreate; 0 = never */
    int32_t lns_rows;    /* rows cleared and rebuilt by it */
    int64_t mask_period; /* every mask_period-th proposal is a request-repair compound swap */
    int64_t chain_period; /* every chain_period-th proposal is a split-weekend swap followed by
                             row DPs of both employees */
    int32_t eject_share;  /* percent of the search effort spent on ejection chains */
    int32_t eject_cover;  /* percent of the chains started from a short slot, not a request */
    int32_t eject_weekend; /* percent of the chains started from a split weekend (long horizons) */
    int32_t window;       /* > 0: the chains re-optimise this many days either side of their
                             cell exactly (gr_row_window), and the other row moves do on
                             rows whose whole-row search costs too much (gr_row_windowed) */
    int32_t request_share; /* percent of change proposals aimed at a broken request */
    int32_t request_pair; /* percent of those mended by a two-day exchange (request_pair) */
    int32_t swap2;       /* percent of swap proposals that are two-day swaps */
    int32_t cum[4];      /* cumulative move shares out of 100: cover (propose_cover),
                            change, shuffle, swap; the rest are block moves */
} gr_ls_params;
/* Runs on st; leaves st at the best state seen. */
void gr_local_search(gr_state *st, gr_rng *rng, gr_ctx *ctx, const gr_ls_params *lp,
                     int32_t *best_buf);
/* One split-weekend rebuild of the walk (a split weekend made whole by a swap with a
 * colleague, both rows re-optimised by windows of `window` days), kept by the annealing rule
 * at temperature t; returns the change of the weighted cost kept (0: put back). */
int64_t gr_weekend_rebuild(gr_state *st, gr_rng *rng, double t, int64_t hw, int32_t window,
                           gr_ctx *ctx, int32_t *saved, int32_t *v1, int32_t *v2);

/* ---- crossover.c ---- */
void gr_crossover(const gr_problem *p, const int32_t *a, const int32_t *b, int32_t *child,
                  gr_rng *rng);

#endif
