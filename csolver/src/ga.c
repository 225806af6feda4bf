/* clock_gettime(CLOCK_MONOTONIC) is POSIX, not ISO C */
#define _POSIX_C_SOURCE 200809L
/* The memetic loop: a small population of locally optimised rosters; each generation two
 * tournament-selected parents are crossed, the child is improved by simulated annealing and
 * replaces the worst member if it is better and not a duplicate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

_Static_assert(sizeof(GR_ATOMIC_I64) == sizeof(int64_t), "progress layout must match cffi's view");
_Static_assert(_Alignof(GR_ATOMIC_I64) == _Alignof(int64_t), "progress layout must match cffi's view");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

#define POLL_EVERY 512
#ifndef DEFAULT_POPULATION
#define DEFAULT_POPULATION 4
#endif
/* The first anneal's share of the time after the start, on every horizon (decision 0018 on
 * long horizons; 0027 on the others, where it was 0.75) */
#ifndef GR_FIRST_SHARE
#define GR_FIRST_SHARE 0.96
#endif
#ifndef GR_INIT_SHARE
#define GR_INIT_SHARE 0.03
#endif
#ifndef GR_CHILD_SHARE
#define GR_CHILD_SHARE 0.08
#endif
#ifndef GR_REQUEST_SHARE
#define GR_REQUEST_SHARE 30
#endif
/* This many percent of the request proposals are two-day exchanges that keep both
 * employees' minutes and the cover (request_pair). Long horizons: 50 (decision 0043; 60 s,
 * seeds 1-12, side by side: 20 5 034 -> 5 008, better in 10 of 12; 22 and 24 level). Shorter
 * horizons: 20 (decision 0050; 60 s, seeds 1-12: 13 1 515 -> 1 474, 18 4 508 -> 4 473 with
 * every seed at 43 short slots; 15 level; 1-12 at 10 s level); at 50 Instance 18 lost a cover
 * unit in 5 of 9 seeds (0043), at 35 13 was worse again. */
#ifndef GR_REQUEST_PAIR
#define GR_REQUEST_PAIR 20
#endif
#ifndef GR_LONG_REQUEST_PAIR
#define GR_LONG_REQUEST_PAIR 50
#endif
/* Every anneal ends at this temperature; a start heat below it would rise as it goes. */
#define GR_T_END 0.3
#ifndef GR_CHILD_T0
#define GR_CHILD_T0 3.0
#endif
/* Ejection chains: a quarter of the effort, half of them started from a short slot
 * (docs/decisions/0002, seventh pass) */
#ifndef GR_EJECT_COVER
#define GR_EJECT_COVER 50
#endif
#ifndef GR_EJECT_SHARE
#define GR_EJECT_SHARE 25
#endif
/* The targeted cover move's share of the proposals, the other moves scaled down in
 * proportion. It took the random fill's 10 % and 10 % more on long horizons (decision 0018)
 * and does so on every horizon since decision 0027 (Instance 13, 60 s, seeds 1-3: 1 916 ->
 * 1 631; Instances 1-12 at 10 s: mean gap 0.87 -> 0.54 %). */
#ifndef GR_COVER_SHARE
#define GR_COVER_SHARE 20
#endif
/* Long horizons (decision 0018), from 182 days: the walk keeps every rule and the first
 * anneal takes nearly all the time. Instance 18 (84 days) measured both ways with the GA
 * alone and stays with the short-horizon search. */
#ifndef GR_LONG_DAYS
#define GR_LONG_DAYS 182
#endif
/* The walk's hard weight on long horizons: the rules are kept, not traded (decision 0018).
 * With the default 100 the walk on Instance 24 left feasibility in the hot phase and, in
 * about half of the runs, did not find it again before the end: the anneal then handed back
 * its feasible start. */
#ifndef GR_LONG_HARD_WEIGHT
#define GR_LONG_HARD_WEIGHT 100000
#endif
/* Long horizons: the chains re-optimise this many days either side of their cell exactly
 * (gr_row_window), as do the other row moves on rows whose whole-row search is dear
 * (gr_row_windowed, decision 0041); this many percent of the chains start from a split
 * weekend (decisions 0022, 0023: 50 against 30, GA alone 60 s, seeds 1-3: Instance 24
 * 92.1 k -> 85.5 k, 22 and 20 level) */
#ifndef GR_LONG_WINDOW
#define GR_LONG_WINDOW 7
#endif
#ifndef GR_LONG_EJECT_WEEKEND
#define GR_LONG_EJECT_WEEKEND 50
#endif
#ifndef GR_LONG_EJECT_SHARE
#define GR_LONG_EJECT_SHARE GR_EJECT_SHARE
#endif
/* Long horizons: a split-weekend swap with both rows rebuilt every this many proposals
 * (40 times the short horizons' rate: on Instance 24, where weekends are the scarce resource,
 * GA alone 60 s, seeds 1-3: 101 k at 5 000, 92.6 k at 1 000, 86.5 k at 250, 87.0 k at 125,
 * decision 0023; once the freed row spends its weekend elsewhere, 59.1 k at 250, 56.4-57.3 k
 * at 125, 57.5 k at 60, Instance 22 level, decision 0024; once the freed row also mends the
 * day it gave up, more of the rebuilds are kept and more pay: service path, 60 s, seeds 1-3,
 * side by side, 24: 56.5 k at 125, 55.0 k at 60, 55.4 k at 30; 22: 37.6 k at 125, 37.0 k at
 * 60; 20: 5 162 at 125, 5 192 at 60, decision 0029) */
#ifndef GR_LONG_CHAIN_PERIOD
#define GR_LONG_CHAIN_PERIOD 60
#endif
/* Long horizons: a ruin-and-recreate (three rows' windows rebuilt) every this many proposals
 * instead of 20 000. Each takes ~3 ms there (three exact window DPs), and the rows it rebuilds
 * are already optimal over such regions (decision 0034): at 20 000 it took a quarter of
 * Instance 22's anneal. Without it 22 gets worse, so it stays, four times rarer (60 s, side by
 * side, seeds 1-6: 20 5 077 -> 5 012, 22 34 736 -> 34 544, 24 level; decision 0035) */
#ifndef GR_LONG_LNS_PERIOD
#define GR_LONG_LNS_PERIOD 80000
#endif
/* Long horizons: the start heat of the population's anneals (the first and the three others,
 * not the children's), twice the short horizons' 30 (tuned on Instances 1-12, decision
 * 0002). Decision 0042 measured 10 and 90 there: 90 helped 22 and hurt 24. At 60 against
 * 30, 60 s, seeds 1-12 (5-12 side by side): 22 34 058 -> 33 569 (better in 11 of 12), 24
 * 46 692 -> 46 434 (10 of 12), 20 level; 22 doubled 69 310 -> 67 830, 20 doubled level; at
 * the service's 10 s, 24 61 790 -> 60 181 and 22 36 274 -> 35 522 (decision 0051). */
#ifndef GR_LONG_T0
#define GR_LONG_T0 60.0
#endif
#ifndef GR_LONG_INIT_SHARE
#define GR_LONG_INIT_SHARE 0.01
#endif
/* A timed walk from 182 days on is a population of one: the time after its first anneal goes
 * to a quench of the best roster, from the end heat down to this one, instead of three more
 * members, none of which ever came near the first anneal there (Instance 22, 60 s: 45-47 k
 * against 33 k) while their greedy starts took the time. 60 s, seeds 1-12, side by side: 24
 * 45 798 -> 45 304 (better in all 12), 22 level, 20 level (decision 0052). */
#ifndef GR_LONG_QUENCH_END
#define GR_LONG_QUENCH_END 0.1
#endif
/* The quench ends this share of the time after the start before the limit: its closing row
 * sweeps need 0.1-0.3 s on 22 and 24. */
#define QUENCH_SWEEP_SHARE 0.01
#define CALIBRATION_ITERATIONS 200000


double gr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t ms_since(const gr_ctx *c) { return (int64_t)((gr_now() - c->start) * 1000.0); }

int gr_ctx_poll(gr_ctx *c)
{
    gr_progress *pr = c->progress;
    atomic_store_explicit(&pr->evaluations, c->evaluations, memory_order_relaxed);
    c->next_check = c->attempts + POLL_EVERY;
    /* checked at attempt counts that do not depend on timing, so the stop point is reproducible */
    if (c->max_evaluations > 0 && c->evaluations >= c->max_evaluations) {
        c->stop = 3;
        return c->stop;
    }
    if (atomic_load_explicit(&pr->cancel, memory_order_relaxed) != 0)
        c->stop = 1;
    else if (gr_now() >= c->deadline)
        c->stop = 2;
    return c->stop;
}

void gr_ctx_offer(gr_ctx *c, const int32_t *roster)
{
    int64_t h, pen;
    if (gr_score_unchecked(c->p, roster, &h, &pen) != GR_OK)
        return;
    if (c->best_hard >= 0 && (h > c->best_hard || (h == c->best_hard && pen >= c->best_pen)))
        return;
    memcpy(c->best_roster, roster, c->cells * sizeof(int32_t));
    int64_t now = ms_since(c);
    gr_progress *pr = c->progress;
    if (h == 0 && c->best_hard != 0)
        atomic_store_explicit(&pr->first_feasible_ms, now, memory_order_relaxed);
    c->best_hard = h;
    c->best_pen = pen;
    atomic_store_explicit(&pr->best_ms, now, memory_order_relaxed);
    atomic_store_explicit(&pr->best_hard, h, memory_order_relaxed);
    atomic_store_explicit(&pr->best_penalty, pen, memory_order_relaxed);
}

typedef struct {
    int32_t *roster;
    int64_t cost; /* search objective (gr_delta_cost) */
} member;

/* Population rank: any feasible roster beats any infeasible one, then the penalty (feasible) or
 * the weighted magnitude (infeasible). */
static int64_t rank_of(gr_delta t)
{
    if (t.hard == 0 && t.minutes == 0)
        return t.pen;
    return ((int64_t)1 << 60) + gr_delta_cost(t, GR_HARD_WEIGHT);
}

static int32_t tournament(gr_rng *rng, const member *pop, int32_t n)
{
    int32_t a = gr_rng_below(rng, n), b = gr_rng_below(rng, n);
    return pop[a].cost <= pop[b].cost ? a : b;
}

static int is_duplicate(const member *pop, int32_t n, const int32_t *r, int64_t cost, size_t cells)
{
    for (int32_t i = 0; i < n; i++)
        if (pop[i].cost == cost && memcmp(pop[i].roster, r, cells * sizeof(int32_t)) == 0)
            return 1;
    return 0;
}

static void crash_now(void)
{
    /* deliberate segfault for the reliability tests. Both the pointer and the pointee are
     * volatile: with only the pointer volatile, GCC -O2 dropped the store as dead. */
    volatile int *volatile np = NULL;
    *np = 1;
}

/* Does the state break a hard rule or a pin? Pins are a cost in the walk's totals, so with
 * pins the exact scorer (which counts a broken pin as hard) says. */
static int broken(const gr_state *st)
{
    if (st->total.hard != 0 || st->total.minutes != 0)
        return 1;
    int64_t hard = 0, pen = 0;
    return st->p->pin && (gr_score_unchecked(st->p, st->roster, &hard, &pen) != GR_OK || hard);
}

int gr_solve(const gr_problem *p, const gr_config *cfg, gr_progress *progress, int32_t *roster_out)
{
    int rc = gr_validate(p);
    if (rc != GR_OK)
        return rc;
    if (!cfg || !progress || !roster_out)
        return GR_ERR_NULL;
    if (!(cfg->time_limit > 0.0) || !isfinite(cfg->time_limit) || cfg->population < 0 ||
        cfg->population > 1000 || cfg->max_evaluations < 0 ||
        !(cfg->start_heat == 0.0 || (cfg->start_heat >= GR_T_END && cfg->start_heat <= 1000.0)))
        return GR_ERR_CONFIG;
    for (int64_t i = 0; i < (int64_t)p->n_employees * p->n_days; i++)
        if ((cfg->start && (cfg->start[i] < -1 || cfg->start[i] >= p->n_shifts)) ||
            (cfg->fallback && (cfg->fallback[i] < -1 || cfg->fallback[i] >= p->n_shifts)))
            return GR_ERR_CONFIG;
    if (cfg->crash_for_test)
        crash_now();

    const size_t cells = (size_t)p->n_employees * (size_t)p->n_days;
    const int32_t P = cfg->population > 0 ? cfg->population : DEFAULT_POPULATION;
    gr_state st;
    if (gr_state_alloc(&st, p) != GR_OK)
        return GR_ERR_NOMEM;
    member *pop = calloc((size_t)P, sizeof *pop);
    int32_t *child = malloc(cells * sizeof *child);
    int32_t *best_buf = malloc(cells * sizeof *best_buf);
    int32_t *global = malloc(cells * sizeof *global);
    int ok = pop && child && best_buf && global;
    for (int32_t i = 0; ok && i < P; i++)
        ok = (pop[i].roster = malloc(cells * sizeof(int32_t))) != NULL;
    if (!ok) {
        rc = GR_ERR_NOMEM;
        goto done;
    }

    gr_rng rng;
    gr_rng_seed(&rng, cfg->seed);
    gr_ctx ctx = {0};
    ctx.progress = progress;
    ctx.start = gr_now();
    ctx.deadline = ctx.start + cfg->time_limit;
    ctx.max_evaluations = cfg->max_evaluations;
    ctx.next_check = 0;
    ctx.best_hard = -1;
    ctx.best_pen = -1;
    ctx.best_roster = global;
    ctx.cells = cells;
    ctx.p = p;
    atomic_store_explicit(&progress->generation, 0, memory_order_relaxed);
    atomic_store_explicit(&progress->population, 0, memory_order_relaxed);
    atomic_store_explicit(&progress->best_hard, -1, memory_order_relaxed);
    atomic_store_explicit(&progress->best_penalty, -1, memory_order_relaxed);
    atomic_store_explicit(&progress->evaluations, 0, memory_order_relaxed);
    atomic_store_explicit(&progress->first_feasible_ms, -1, memory_order_relaxed);
    atomic_store_explicit(&progress->best_ms, -1, memory_order_relaxed);
    atomic_store_explicit(&progress->cancelled, 0, memory_order_relaxed);
    atomic_store_explicit(&progress->timed_out, 0, memory_order_relaxed);
    gr_ctx_poll(&ctx); /* a cancel set before the call still stops it */

    const int64_t size = (int64_t)cells;
    /* Tuned on Curtois Instances 1-12 with fixed evaluation budgets (docs/decisions/0002). */
    /* cover 20 %, then change, shuffle, swap and block as tuned around a fill of 10 %: 25,
     * 25, 28 and 12, scaled to the 80 % left */
    const int32_t tuned[4] = {10, 35, 60, 88};
    int32_t cum[4] = {GR_COVER_SHARE};
    for (int i = 1; i < 4; i++)
        cum[i] = GR_COVER_SHARE +
                 (tuned[i] - tuned[0]) * (100 - GR_COVER_SHARE) / (100 - tuned[0]);
    gr_ls_params ls = {.iterations = CALIBRATION_ITERATIONS < 100 * size ? CALIBRATION_ITERATIONS
                                                                          : 100 * size,
                       .t_start = 30.0,
                       .t_end = GR_T_END,
                       .hard_weight = 100,
                       .dp_period = 10000,
                       .dp_sweeps = 1,
                       .swap2 = 30,
                       .request_share = GR_REQUEST_SHARE,
                       .lns_period = 20000,
                       .lns_rows = 3,
                       .mask_period = 200,
                       .chain_period = 5000,
                       .eject_share = GR_EJECT_SHARE,
                       .eject_cover = GR_EJECT_COVER,
                       .request_pair = GR_REQUEST_PAIR};
    memcpy(ls.cum, cum, sizeof cum);
    const int long_horizon = p->n_days >= GR_LONG_DAYS;
    if (long_horizon) {
        ls.hard_weight = GR_LONG_HARD_WEIGHT;
        ls.window = GR_LONG_WINDOW;
        ls.eject_weekend = GR_LONG_EJECT_WEEKEND;
        ls.eject_share = GR_LONG_EJECT_SHARE;
        ls.chain_period = GR_LONG_CHAIN_PERIOD;
        ls.lns_period = GR_LONG_LNS_PERIOD;
        ls.request_pair = GR_LONG_REQUEST_PAIR;
        ls.t_start = GR_LONG_T0;
    }

    /* The annealing schedules are lengths in proposals, never clock readings, so that a run
     * with an evaluation budget is reproducible. Without a budget the total is planned from
     * the speed measured on the first (fixed-length) anneal. A given start (a re-roster's
     * previous roster) replaces the first greedy start: the search then repairs it, and the
     * change costs keep it close. */
    if (cfg->start)
        gr_state_load(&st, cfg->start);
    else
        gr_greedy_start(&st, &rng, &ctx);
    gr_ctx_offer(&ctx, st.roster);
    /* The first anneal is a cold repair (high hard weight, frequent row DPs): a feasible
     * roster early matters to callers. Its length is fixed in proposals in both modes. */
    gr_ls_params repair = ls;
    repair.t_start = 2.0;
    repair.hard_weight = 1000;
    repair.dp_period = 1000;
    repair.lns_period = 0;
    repair.chain_period = 0;
    repair.eject_share = 0;
    /* A roster is offered again only after a search changed it: each offer scores every cell
     * (~9 ms at 5,000 x 366), and a cancel during the greedy start used to score its roster
     * three times before returning it (decision 0036). */
    if (!ctx.stop) {
        gr_local_search(&st, &rng, &ctx, &repair, best_buf);
        gr_ctx_offer(&ctx, st.roster);
    }
    /* A start the repair left broken (a hard rule, or a pin: pins are priced, not hard, in
     * the walk) goes on from the caller's feasible roster instead. With dense pins on a long
     * horizon the walk from the greedy start may never get back to them within the limit
     * (Instance 22 with 52 weekends' days off pinned: 282 pins broken after the repair, the
     * column phase's roster of 427 800 returned after 60 s), while the column phase's rows,
     * each built by the exact row search, keep every pin and rule. Loaded only if it is
     * whole here too, so a caller's mistake cannot make the start worse; then repaired as a
     * start is (the repair's row moves mend its cover). */
    if (cfg->fallback && !ctx.stop && broken(&st)) {
        memcpy(best_buf, st.roster, cells * sizeof(int32_t));
        gr_state_load(&st, cfg->fallback);
        if (broken(&st)) {
            gr_state_load(&st, best_buf);
        } else {
            gr_local_search(&st, &rng, &ctx, &repair, best_buf);
            gr_ctx_offer(&ctx, st.roster);
        }
    }
    /* Reproducible mode (evaluation budget): anneal lengths are shares of the budget counted in
     * proposals. Timed mode: shares of the remaining wall time, followed by the clock. */
    const int timed = cfg->max_evaluations == 0;
    const double remaining = cfg->time_limit - (gr_now() - ctx.start);
    double planned = timed ? 0.0 : (double)cfg->max_evaluations;
    if (!timed && planned < 20000.0)
        planned = 20000.0;
    /* The first individual gets nearly all of the plan (96 %), the other three 3 % each (1 %
     * on long horizons; a timed walk there quenches its best instead), and each child 8 %.
     * Measured: the anneal length is what buys quality; equal shares (4 x 10 % + 20 %
     * children) lost 2-4 % to a single anneal, and in timed benchmark runs no child ever beat
     * the first long anneal (decision 0002), so the population is kept cheap: it supplies
     * diversity for recombination, not the main search effort. On Instance 24 each further
     * greedy start costs 1-2 s and its short anneal ended near 490 k against the first
     * anneal's 250-290 k (decision 0018); on Instance 13 the best roster came at the end of
     * the first anneal in every run, and 96 % against 75 % gave 1 603 against 1 647 over six
     * seeds (decision 0027). */
    const double init_share = long_horizon ? GR_LONG_INIT_SHARE : GR_INIT_SHARE,
                 child_share = GR_CHILD_SHARE;
    /* A start that is already a good roster (a dive's) anneals cool: from the greedy start's
     * heat the walk leaves it first and may not get back below it (decision 0026). */
    const double heat = ls.t_start;
    const int quench = long_horizon && timed;
    int32_t n = 0;
    for (; n < (quench ? 1 : P); n++) {
        ls.t_start = n == 0 && cfg->start && cfg->start_heat > 0.0 ? cfg->start_heat : heat;
        if (n > 0) {
            gr_greedy_start(&st, &rng, &ctx);
            gr_ctx_offer(&ctx, st.roster);
        }
        double share = n == 0 ? GR_FIRST_SHARE : init_share;
        ls.iterations = (int64_t)(share * planned);
        ls.seconds = timed ? share * remaining : 0.0;
        const int searched = !ctx.stop;
        if (searched)
            gr_local_search(&st, &rng, &ctx, &ls, best_buf);
        memcpy(pop[n].roster, st.roster, cells * sizeof(int32_t));
        pop[n].cost = rank_of(st.total);
        if (searched)
            gr_ctx_offer(&ctx, st.roster);
        atomic_store_explicit(&progress->population, n + 1, memory_order_relaxed);
        if (ctx.stop) {
            n++;
            break;
        }
    }

    gr_ls_params child_ls = ls;
    child_ls.t_start = GR_CHILD_T0; /* children start near good parents: a cooler restart */
    child_ls.t_end = GR_T_END;
    child_ls.iterations = (int64_t)(child_share * planned);
    child_ls.seconds = timed ? child_share * remaining : 0.0;
    int64_t generation = 0;
    while (!ctx.stop && n >= 2) {
        int32_t a = tournament(&rng, pop, n), b = tournament(&rng, pop, n);
        if (a == b)
            b = (a + 1 + gr_rng_below(&rng, n - 1)) % n;
        gr_crossover(p, pop[a].roster, pop[b].roster, child, &rng);
        gr_state_load(&st, child);
        gr_local_search(&st, &rng, &ctx, &child_ls, best_buf);
        int64_t cost = rank_of(st.total);
        gr_ctx_offer(&ctx, st.roster);
        int32_t worst = 0;
        for (int32_t i = 1; i < n; i++)
            if (pop[i].cost > pop[worst].cost)
                worst = i;
        if (cost < pop[worst].cost && !is_duplicate(pop, n, st.roster, cost, cells)) {
            memcpy(pop[worst].roster, st.roster, cells * sizeof(int32_t));
            pop[worst].cost = cost;
        }
        generation++;
        atomic_store_explicit(&progress->generation, generation, memory_order_relaxed);
    }
    /* a population of one (or a huge instance) still uses the whole budget: from the best
     * roster, as a child (cooler restarts) or, on long horizons, as the quench; what its
     * closing sweeps leave of the quench's reserve goes to a second quench, cut by the clock
     * (the best is kept, so it can only lower it) */
    gr_ls_params last_ls = child_ls;
    if (quench) {
        last_ls.t_start = GR_T_END;
        last_ls.t_end = GR_LONG_QUENCH_END;
        last_ls.iterations = 0;
        last_ls.seconds =
            cfg->time_limit - (gr_now() - ctx.start) - QUENCH_SWEEP_SHARE * remaining;
    }
    while (!ctx.stop && !(quench && last_ls.seconds <= 0.0)) {
        gr_state_load(&st, ctx.best_roster);
        gr_local_search(&st, &rng, &ctx, &last_ls, best_buf);
        gr_ctx_offer(&ctx, st.roster);
    }

    memcpy(roster_out, global, cells * sizeof(int32_t));
    atomic_store_explicit(&progress->evaluations, ctx.evaluations, memory_order_relaxed);
    atomic_store_explicit(&progress->cancelled, ctx.stop == 1, memory_order_relaxed);
    atomic_store_explicit(&progress->timed_out, ctx.stop == 2, memory_order_relaxed);
    rc = GR_OK;
done:
    if (pop)
        for (int32_t i = 0; i < P; i++)
            free(pop[i].roster);
    free(pop);
    free(child);
    free(best_buf);
    free(global);
    gr_state_free(&st);
    return rc;
}
