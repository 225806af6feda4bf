/* Simulated annealing over these neighbourhoods, all scored incrementally (delta.c):
 *   cover  - a short slot taken by a colleague who can, the minutes kept, or outright by one
 *            with the minutes to spare (propose_cover);
 *   gather - spare minutes passed by a cover-neutral one-day exchange to the colleague with
 *            more to spare, until one can take a short slot outright (propose_gather);
 *   change - one cell to another eligible shift or to a day off (fixes cover and counts);
 *   request pair - a broken request met by taking the asked-for cell from a colleague who
 *            holds it, the two exchanging a second day's cells so that both keep their minutes
 *            and the cover is unchanged (request_pair);
 *   swap   - two employees exchange their cells over 1..k consecutive days. Cover is
 *            unchanged, so it polishes requests and rules without breaking cover;
 *   block  - one employee's run of 2..7 days set to one shift or to off: builds or removes whole
 *            work runs, which single-cell moves cannot do without passing through min-run
 *            violations;
 *   compound swap - a broken request repaired by swapping its day with a colleague together
 *            with the best subset of the nearby days (propose_mask_swap);
 *   weekend rebuild - a split weekend made whole by such a swap, then both rows re-optimised
 *            by the row DP (weekend_rebuild).
 * Moves that would put a shift on a fixed day off or on an ineligible type are never proposed.
 * The schedule depends only on the iteration count, never on the clock, so a run with an
 * evaluation budget is reproducible. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SWAP_MAX 7
#define SWAP2_SHARE (lp->swap2)
/* proposal mix: r in [0, 100) picks cover < COVER_END <= change < CHANGE_END <= shuffle <
 * SHUFFLE_END <= swap < SWAP_END <= block */
#define COVER_END (lp->cum[0])
#define CHANGE_END (lp->cum[1])
#define SHUFFLE_END (lp->cum[2])
#define SWAP_END (lp->cum[3])
#define BLOCK_MAX 7
#define MASK_DAYS 8
#define EJECT_DEPTH 4 /* rows re-optimised by one ejection chain */
/* DP work units (states x days) that take as long as one proposal: ~2 ns against ~0.3 us
 * (Instances 5 and 11, measured) */
#define GR_DP_WORK_PER_PROPOSAL 128
/* What drawing a chain's first cell costs, in proposals (the scan for a colleague is O(E)) */
#define EJECT_BASE_COST 8
/* Seconds between offers of the walk's best to the caller's progress (the sanitizer build
 * sets it tiny, so that its reproducibility check sees many offers) */
#ifndef GR_PUBLISH_SECONDS
#define GR_PUBLISH_SECONDS 1.0
#endif
/* the same with an evaluation budget, counted in proposals (about a second's worth) */
#define GR_PUBLISH_PROPOSALS ((int64_t)1 << 20)
/* Chains in a row whose first DP was refused (row too large) before the chains stop */
#define EJECT_MAX_REFUSED 32

typedef struct {
    int32_t e1, e2, a, b, kind; /* kind: 0 change/block (one employee, cover), 1 swap */
    gr_delta d1, d2;
} move;

static int allowed(const gr_state *st, int32_t e, int32_t d, int32_t v)
{
    const int64_t c = (int64_t)e * st->D + d;
    if (gr_pinned(st->p, c))
        return v == st->p->pin[c];
    if (v < 0)
        return 1;
    return !st->p->day_off[(int64_t)e * st->D + d] && st->p->max_shifts[(int64_t)e * st->S + v] > 0;
}

/* Random value for cell (e, d) different from cur: an eligible shift or -1. */
static int pick_value(const gr_state *st, gr_rng *rng, int32_t e, int32_t d, int32_t cur,
                      int32_t *out)
{
    int32_t ne = st->n_elig[e];
    if (gr_pinned(st->p, (int64_t)e * st->D + d)) {
        *out = st->p->pin[(int64_t)e * st->D + d];
        return cur != *out;
    }
    if (st->p->day_off[(int64_t)e * st->D + d]) {
        *out = -1;
        return cur != -1;
    }
    if (ne == 0 || (ne == 1 && cur >= 0 && st->elig[(int64_t)e * st->S] == cur)) {
        *out = -1;
        return cur != -1;
    }
    for (;;) {
        int32_t k = gr_rng_below(rng, ne + 1);
        int32_t v = k == ne ? -1 : st->elig[(int64_t)e * st->S + k];
        if (v != cur) {
            *out = v;
            return 1;
        }
    }
}

/* One row's move: (e, d) takes s, and (e, d2) takes s2 when d2 >= 0; [a, b] spans both. */
static int row_move(gr_state *st, move *m, int32_t e, int32_t d, int32_t s, int32_t d2, int32_t s2,
                    int32_t a, int32_t b, int32_t *v1)
{
    const int32_t *row = st->roster + (int64_t)e * st->D;
    for (int32_t x = a; x <= b; x++)
        v1[x - a] = row[x];
    v1[d - a] = s;
    if (d2 >= 0)
        v1[d2 - a] = s2;
    m->kind = 0;
    m->e1 = e;
    m->a = a;
    m->b = b;
    m->d1 = gr_state_delta(st, e, a, b, v1, 1);
    return 1;
}

/* The two-row proposal that gives e1 the values v1 and e2 the values v2 over days [a, b],
 * scored. */
static int pair_move(gr_state *st, move *m, int32_t e1, int32_t e2, int32_t a, int32_t b,
                     const int32_t *v1, const int32_t *v2)
{
    m->kind = 1;
    m->e1 = e1;
    m->e2 = e2;
    m->a = a;
    m->b = b;
    gr_state_delta_pair(st, e1, e2, a, b, v1, v2, &m->d1, &m->d2);
    return 1;
}

/* Two employees' move on one day: e1 takes x1 and e2 takes x2 on day d. */
static int day_swap(gr_state *st, move *m, int32_t e1, int32_t e2, int32_t d, int32_t x1,
                    int32_t x2, int32_t *v1, int32_t *v2)
{
    v1[0] = x1;
    v2[0] = x2;
    return pair_move(st, m, e1, e2, d, d, v1, v2);
}

/* Two employees' move on two days d1 < d2: e1 takes x1 and y1 on them, e2 takes x2 and y2;
 * the days between are kept. */
static int two_day_swap(gr_state *st, move *m, int32_t e1, int32_t e2, int32_t d1, int32_t x1,
                        int32_t x2, int32_t d2, int32_t y1, int32_t y2, int32_t *v1, int32_t *v2)
{
    const int32_t *r1 = st->roster + (int64_t)e1 * st->D, *r2 = st->roster + (int64_t)e2 * st->D;
    for (int32_t d = d1; d <= d2; d++) {
        v1[d - d1] = r1[d];
        v2[d - d1] = r2[d];
    }
    v1[0] = x1;
    v2[0] = x2;
    v1[d2 - d1] = y1;
    v2[d2 - d1] = y2;
    return pair_move(st, m, e1, e2, d1, d2, v1, v2);
}

/* Days either side of a short slot where a relocated shift may come from */
#define COVER_SPAN 14
/* One cover proposal in this many is a gather move instead (decision 0032) */
#define GATHER_ONE_IN 4

/* Cover move: a short slot (d, s) taken by an employee whose minutes stay about where they
 * are. On 364 days every employee's minutes window is 720 minutes wide and most rows sit at
 * an edge of it, so a single cell added or dropped breaks it (hard); on Instance 13 the
 * staff's minutes cannot cover the demand. A random fill (the taker drawn at random, the
 * short horizons' move until decision 0027) rarely finds the one colleague who could take
 * the slot. Here the taker is drawn among those allowed s on d, preferring one who works an
 * over-covered slot that day (a type change: cover moves from a surplus to the gap) and else
 * one who is off and gives up a shift of the same length on a nearby day, an over-covered
 * one when there is such a day (the shift is relocated: minutes kept). Instance 24 at 20 s:
 * 3 086 short 480-minute slots against 460 over, 4 070 over 600-minute ones against 844
 * short. An employee off that day with the minutes to spare for the slot takes it outright
 * half of the time: where nothing is over-covered, the only taker that closes a gap without
 * opening another (decision 0032). */
static int propose_cover(gr_state *st, gr_rng *rng, move *m, int32_t *v1)
{
    const int32_t E = st->E, D = st->D, S = st->S;
    const gr_problem *p = st->p;
    int32_t d = -1, s = -1;
    for (int tries = 0; tries < 8 && d < 0; tries++) {
        int32_t dd = gr_rng_below(rng, D), ss = gr_rng_below(rng, S);
        int64_t k = (int64_t)dd * S + ss;
        if (st->cover[k] < p->cover_req[k]) {
            d = dd;
            s = ss;
        }
    }
    if (d < 0)
        return 0;
    /* takers: from an over-covered slot that day (class 1), or off that day (class 0) and
     * free to work its weekend (most employees of Instance 24 have spent their weekends, and
     * most of its short slots are on weekends) */
    const int32_t w = p->weekend[d];
    int32_t pick1 = -1, n1 = 0, pick0 = -1, n0 = 0, pick2 = -1, n2 = 0;
    for (int32_t x = 0; x < E; x++) {
        int32_t v = st->roster[(int64_t)x * D + d];
        if (v == s || !allowed(st, x, d, s))
            continue;
        if (v >= 0) {
            if (st->cover[(int64_t)d * S + v] > p->cover_req[(int64_t)d * S + v] &&
                !gr_pinned(p, (int64_t)x * D + d) && gr_rng_below(rng, ++n1) == 0)
                pick1 = x;
        } else if (w < 0 || st->wk_days[(int64_t)x * st->W + w] > 0 ||
                   st->wk_worked[x] < p->max_weekends[x]) {
            if (gr_rng_below(rng, ++n0) == 0)
                pick0 = x;
            if ((int64_t)st->minutes[x] + p->length[s] <= p->max_minutes[x] &&
                gr_rng_below(rng, ++n2) == 0)
                pick2 = x;
        }
    }
    /* one off that day with the minutes to spare takes the slot outright: the only taker
     * that fills a gap without opening another where no slot is over-covered */
    if (pick2 >= 0 && gr_rng_below(rng, 2))
        return row_move(st, m, pick2, d, s, -1, -1, d, d, v1);
    int32_t e = pick1 >= 0 && (pick0 < 0 || gr_rng_below(rng, 2)) ? pick1 : pick0;
    if (e < 0)
        return 0;
    const int32_t *row = st->roster + (int64_t)e * D;
    int32_t a = d, b = d, d2 = -1;
    if (row[d] < 0) {
        /* the day given up: same length and over-covered best, then same length, then any
         * over-covered worked day */
        int32_t lo = d - COVER_SPAN < 0 ? 0 : d - COVER_SPAN;
        int32_t hi = d + COVER_SPAN >= D ? D - 1 : d + COVER_SPAN;
        int best = -1, ties = 0;
        for (int32_t x = lo; x <= hi; x++) {
            int32_t v = row[x];
            if (x == d || v < 0 || gr_pinned(p, (int64_t)e * D + x))
                continue;
            int score = 2 * (p->length[v] == p->length[s]) +
                        (st->cover[(int64_t)x * S + v] > p->cover_req[(int64_t)x * S + v]);
            if (score == 0)
                continue;
            if (score > best) {
                best = score;
                ties = 1;
                d2 = x;
            } else if (score == best && gr_rng_below(rng, ++ties) == 0) {
                d2 = x;
            }
        }
        if (d2 >= 0 && d2 < a)
            a = d2;
        else if (d2 > b)
            b = d2;
    }
    return row_move(st, m, e, d, s, d2, -1, a, b, v1);
}

/* Gather move: spare minutes pass from one employee to another who has more to spare, by a
 * cover-neutral exchange on one day: the one with more to spare hands a shift to the other
 * for the other's shorter one or day off. Spare minutes below the shortest shift
 * are of no use to cover; gathered, they let one employee take a short slot outright (the
 * cover move). Instance 13: 37 employees each 120-360 minutes short of their maximum, none
 * by a whole shift, while 13 slots stay short. */
static int propose_gather(gr_state *st, gr_rng *rng, move *m, int32_t *v1, int32_t *v2)
{
    const int32_t E = st->E, D = st->D;
    const gr_problem *p = st->p;
    if (E < 2)
        return 0;
    int32_t ea = gr_rng_below(rng, E), eb = gr_rng_below(rng, E - 1);
    eb += eb >= ea;
    int64_t sa = (int64_t)p->max_minutes[ea] - st->minutes[ea];
    int64_t sb = (int64_t)p->max_minutes[eb] - st->minutes[eb];
    if (sa <= 0 || sb <= 0)
        return 0;
    if (sb > sa) { /* ea gathers: the one with more to spare */
        int32_t t = ea;
        ea = eb;
        eb = t;
        int64_t u = sa;
        sa = sb;
        sb = u;
    }
    const int32_t *ra = st->roster + (int64_t)ea * D, *rb = st->roster + (int64_t)eb * D;
    int32_t start = gr_rng_below(rng, D);
    /* the scan below would find nothing: on Instance 22 (every shift 480 minutes) most rows
     * are within a shift of their maximum, and a fruitless scan of all 364 days was a
     * twentieth of the walk. Checked after `start` is drawn, so that the walk draws the same
     * numbers as before the check and an evaluation budget gives the same roster (0045) */
    if (sb < st->min_give)
        return 0;
    for (int32_t i = 0; i < D; i++) {
        int32_t d = start + i < D ? start + i : start + i - D;
        int32_t x = ra[d], y = rb[d];
        if (x < 0)
            continue;
        int32_t give = p->length[x] - (y >= 0 ? p->length[y] : 0);
        if (give <= 0 || give > sb || !allowed(st, ea, d, y) || !allowed(st, eb, d, x))
            continue;
        return day_swap(st, m, ea, eb, d, y, x, v1, v2);
    }
    return 0;
}

/* Days either side of a request's day where its pair move looks for the second day */
#define REQUEST_PAIR_SPAN 28

/* A broken request mended by a two-day swap that keeps both employees' minutes and the cover:
 * e takes `want` on day d from a colleague e2 who holds it there (e2 takes e's `cur`), and on
 * a second day d2 near d the two exchange cells of lengths that even out the minutes. Where
 * rows sit near the bottom of their minutes windows (Instance 20: all within a shift), a
 * same-day swap leaves the colleague below its minimum, and a change adds a shift the cover
 * does not need (decision 0043). */
static int request_pair(gr_state *st, gr_rng *rng, move *m, int32_t e, int32_t d, int32_t cur,
                        int32_t want, int32_t *v1, int32_t *v2)
{
    const int32_t E = st->E, D = st->D;
    const gr_problem *p = st->p;
    const int32_t *r1 = st->roster + (int64_t)e * D;
    int32_t e2 = -1;
    for (int32_t i = 0, x0 = gr_rng_below(rng, E); i < E && e2 < 0; i++) {
        int32_t x = x0 + i < E ? x0 + i : x0 + i - E;
        if (x != e && st->roster[(int64_t)x * D + d] == want && allowed(st, x, d, cur))
            e2 = x;
    }
    if (e2 < 0)
        return 0;
    const int32_t *r2 = st->roster + (int64_t)e2 * D;
    /* e's minutes change by `need` on day d; day d2 must give it back */
    const int32_t need = (want >= 0 ? p->length[want] : 0) - (cur >= 0 ? p->length[cur] : 0);
    const int32_t lo = d - REQUEST_PAIR_SPAN > 0 ? d - REQUEST_PAIR_SPAN : 0;
    const int32_t hi = d + REQUEST_PAIR_SPAN < D - 1 ? d + REQUEST_PAIR_SPAN : D - 1;
    const int32_t n = hi - lo + 1;
    int32_t d2 = -1;
    for (int32_t i = 0, x0 = gr_rng_below(rng, n); i < n && d2 < 0; i++) {
        int32_t x = lo + (x0 + i < n ? x0 + i : x0 + i - n);
        int32_t a1 = r1[x], a2 = r2[x];
        if (x == d || a1 == a2)
            continue;
        int32_t give = (a1 >= 0 ? p->length[a1] : 0) - (a2 >= 0 ? p->length[a2] : 0);
        if (give == need && allowed(st, e, x, a2) && allowed(st, e2, x, a1))
            d2 = x;
    }
    if (d2 < 0)
        return 0;
    return d < d2 ? two_day_swap(st, m, e, e2, d, want, cur, d2, r2[d2], r1[d2], v1, v2)
                  : two_day_swap(st, m, e, e2, d2, r2[d2], r1[d2], d, want, cur, v1, v2);
}

static int propose(gr_state *st, gr_rng *rng, const gr_ls_params *lp, move *m, int32_t *v1,
                   int32_t *v2)
{
    const int32_t E = st->E, D = st->D;
    int32_t r = gr_rng_below(rng, 100);
    if (r < COVER_END)
        return gr_rng_below(rng, GATHER_ONE_IN) == 0 ? propose_gather(st, rng, m, v1, v2)
                                                     : propose_cover(st, rng, m, v1);
    if (r < CHANGE_END && st->p->n_on + st->p->n_off > 0 &&
        gr_rng_below(rng, 100) < lp->request_share) {
        /* request: pick a request at random; if it is broken, give the employee the asked-for
         * shift (on-request) or another value (off-request) on that day, by a same-day swap
         * with a colleague half the time (keeps cover), else by a change */
        const gr_problem *p = st->p;
        int32_t i = gr_rng_below(rng, p->n_on + p->n_off);
        int32_t c = st->req_cell[i], e = c / D, d = c % D;
        int32_t cur = st->roster[c], want;
        if (i < p->n_on) {
            want = p->on_shift[i];
            if (cur == want)
                return 0;
        } else {
            if (cur != p->off_shift[i - p->n_on])
                return 0;
            if (!pick_value(st, rng, e, d, cur, &want))
                return 0;
        }
        if (!allowed(st, e, d, want))
            return 0;
        if (lp->request_pair > 0 && E >= 2 && gr_rng_below(rng, 100) < lp->request_pair)
            return request_pair(st, rng, m, e, d, cur, want, v1, v2);
        if (E >= 2 && gr_rng_below(rng, 2)) {
            int32_t e2 = gr_rng_below(rng, E - 1);
            e2 += e2 >= e;
            if (st->roster[(int64_t)e2 * D + d] != want || !allowed(st, e2, d, cur))
                return 0;
            return day_swap(st, m, e, e2, d, want, cur, v1, v2);
        }
        v1[0] = want;
        m->kind = 0;
        m->e1 = e;
        m->a = m->b = d;
        m->d1 = gr_state_delta(st, e, d, d, v1, 1);
        return 1;
    }
    if (r < CHANGE_END) { /* change */
        int32_t e = gr_rng_below(rng, E), d = gr_rng_below(rng, D);
        if (!pick_value(st, rng, e, d, st->roster[(int64_t)e * D + d], v1))
            return 0;
        m->kind = 0;
        m->e1 = e;
        m->a = m->b = d;
        m->d1 = gr_state_delta(st, e, d, d, v1, 1);
        return 1;
    }
    if (r >= CHANGE_END && r < SHUFFLE_END) { /* shuffle: one employee exchanges two days' cells */
        int32_t e = gr_rng_below(rng, E), d1 = gr_rng_below(rng, D);
        int32_t span = D < 8 ? D : 8;
        int32_t d2 = d1 - span + 1 + gr_rng_below(rng, 2 * span - 1);
        if (d2 < 0 || d2 >= D || d2 == d1)
            return 0;
        const int32_t *row = st->roster + (int64_t)e * D;
        if (row[d1] == row[d2] || !allowed(st, e, d1, row[d2]) || !allowed(st, e, d2, row[d1]))
            return 0;
        int32_t a = d1 < d2 ? d1 : d2, b = d1 < d2 ? d2 : d1;
        return row_move(st, m, e, d1, row[d2], d2, row[d1], a, b, v1);
    }
    if (r < SWAP_END && E >= 2 && gr_rng_below(rng, 100) < SWAP2_SHARE) {
        /* two-day swap: two employees exchange their cells on two separate days. Cover is kept
         * and, for equal lengths, so are both employees' minutes: "I take your Tuesday, you
         * take my Friday", which a one-block swap cannot express */
        int32_t e1 = gr_rng_below(rng, E), e2 = gr_rng_below(rng, E - 1);
        e2 += e2 >= e1;
        int32_t d1 = gr_rng_below(rng, D), d2 = gr_rng_below(rng, D);
        if (d1 == d2)
            return 0;
        int32_t a = d1 < d2 ? d1 : d2, b = d1 < d2 ? d2 : d1;
        const int32_t *r1 = st->roster + (int64_t)e1 * D, *r2 = st->roster + (int64_t)e2 * D;
        if (r1[a] == r2[a] || r1[b] == r2[b])
            return 0;
        if (!allowed(st, e1, a, r2[a]) || !allowed(st, e2, a, r1[a]) ||
            !allowed(st, e1, b, r2[b]) || !allowed(st, e2, b, r1[b]))
            return 0;
        return two_day_swap(st, m, e1, e2, a, r2[a], r1[a], b, r2[b], r1[b], v1, v2);
    }
    if (r < SWAP_END && E >= 2) { /* swap */
        int32_t e1 = gr_rng_below(rng, E), e2 = gr_rng_below(rng, E - 1);
        e2 += e2 >= e1;
        int32_t k = 1 + gr_rng_below(rng, SWAP_MAX < D ? SWAP_MAX : D);
        int32_t a = gr_rng_below(rng, D - k + 1), b = a + k - 1;
        const int32_t *r1 = st->roster + (int64_t)e1 * D, *r2 = st->roster + (int64_t)e2 * D;
        int diff = 0;
        for (int32_t d = a; d <= b; d++) {
            v1[d - a] = r2[d];
            v2[d - a] = r1[d];
            diff |= r1[d] != r2[d];
            if (!allowed(st, e1, d, r2[d]) || !allowed(st, e2, d, r1[d]))
                return 0;
        }
        if (!diff)
            return 0;
        return pair_move(st, m, e1, e2, a, b, v1, v2);
    }
    /* block */
    int32_t e = gr_rng_below(rng, E);
    int32_t k = 2 + gr_rng_below(rng, BLOCK_MAX - 1);
    if (k > D)
        k = D;
    int32_t a = gr_rng_below(rng, D - k + 1), b = a + k - 1;
    int32_t ne = st->n_elig[e];
    int32_t v = (ne == 0 || gr_rng_below(rng, 2) == 0) ? -1
                                                       : st->elig[(int64_t)e * st->S +
                                                                  gr_rng_below(rng, ne)];
    const int32_t *row = st->roster + (int64_t)e * D;
    int diff = 0;
    for (int32_t d = a; d <= b; d++) {
        v1[d - a] = allowed(st, e, d, v) ? v : gr_pinned(st->p, (int64_t)e * D + d) ? row[d] : -1;
        diff |= v1[d - a] != row[d];
    }
    if (!diff)
        return 0;
    m->kind = 0;
    m->e1 = e;
    m->a = a;
    m->b = b;
    m->d1 = gr_state_delta(st, e, a, b, v1, 1);
    return 1;
}

/* The days within `window` of day d, or the whole row when window is 0. */
static void window_days(int32_t D, int32_t window, int32_t d, int32_t *a, int32_t *b)
{
    *a = window > 0 && d - window > 0 ? d - window : 0;
    *b = window > 0 && d + window < D ? d + window : D - 1;
}

/* The days of e's row a row move re-optimises: the whole row, or with a window (long horizons)
 * and a row whose whole-row search costs too much (gr_row_windowed), the days within `window`
 * of day d.
 * Returns 1 for a window. */
static int row_range(const gr_state *st, int32_t e, int32_t window, int32_t d, int32_t *a,
                     int32_t *b)
{
    const int win = window > 0 && gr_row_windowed(st->p, e);
    window_days(st->D, win ? window : 0, d, a, b);
    return win;
}

/* The row DP over the days row_range gives for day d (gr_row_window for a window), cell
 * (e, pin_d) held at pin_v (pin_d = -1: none). Writes the days to *a, *b and their values to
 * buf; returns 0 when there are none. */
static int row_dp_near(gr_state *st, int32_t e, int32_t window, int32_t d, int32_t pin_d,
                       int32_t pin_v, int32_t *buf, int32_t *a, int32_t *b)
{
    if (row_range(st, e, window, d, a, b))
        return gr_row_window(st, e, *a, *b, pin_d, pin_v, buf);
    return gr_row_dp_pinned(st, e, pin_d, pin_v, buf);
}

/* Row move: one employee's whole row replaced by the DP optimum. While the roster is
 * infeasible it goes to an employee who breaks a rule, else to a random one; a feasible walk
 * on a long horizon re-optimises a window of a large row instead (row_range). */
static int propose_row(gr_state *st, gr_rng *rng, int32_t window, move *m, int32_t *v1)
{
    int32_t e = gr_rng_below(rng, st->E), a = 0, b = st->D - 1;
    int ok;
    if (st->total.hard != 0 || st->total.minutes != 0) {
        int32_t seen = 0;
        for (int32_t x = 0; x < st->E; x++)
            if (gr_state_emp_hard(st, x) > 0 && gr_rng_below(rng, ++seen) == 0)
                e = x;
        ok = gr_row_dp(st, e, v1);
    } else {
        const int32_t mid = window > 0 ? gr_rng_below(rng, st->D) : 0; /* no draw: as before */
        ok = row_dp_near(st, e, window, mid, -1, 0, v1, &a, &b);
    }
    const int32_t *row = st->roster + (int64_t)e * st->D + a;
    if (!ok || memcmp(row, v1, (size_t)(b - a + 1) * sizeof *v1) == 0)
        return 0;
    m->kind = 0;
    m->e1 = e;
    m->a = a;
    m->b = b;
    m->d1 = gr_state_delta(st, e, a, b, v1, 1);
    return 1;
}

/* Rows e1 (r1) and e2 (r2) over [a, b] with day d and the free days picked by mask swapped. */
static void mask_pattern(const int32_t *r1, const int32_t *r2, int32_t a, int32_t b, int32_t d,
                         const int32_t *free_day, int32_t nf, uint32_t mask, int32_t *v1,
                         int32_t *v2)
{
    for (int32_t x = a; x <= b; x++) {
        v1[x - a] = r1[x];
        v2[x - a] = r2[x];
    }
    v1[d - a] = r2[d];
    v2[d - a] = r1[d];
    for (int32_t j = 0; j < nf; j++)
        if (mask >> j & 1) {
            v1[free_day[j] - a] = r2[free_day[j]];
            v2[free_day[j] - a] = r1[free_day[j]];
        }
}

/* Request repair by a compound swap. Employee e has a broken request on day d and a colleague
 * e2 holds what e wants there. Swapping day d alone usually breaks a run, a rotation or the
 * minutes of one of them, and the single swaps that would repair it are each uphill, so the
 * annealing rarely chains them. Here every subset of the other days of a MASK_DAYS window
 * around d is swapped along (at most 2^(MASK_DAYS-1) patterns, each scored and counted as one
 * evaluation) and the best pattern is proposed. Cover is unchanged by construction. */
static int mask_swap(gr_state *st, gr_rng *rng, move *m, int32_t *v1, int32_t *v2, int64_t hw,
                     gr_ctx *ctx, int32_t e, int32_t e2, int32_t d)
{
    const int32_t D = st->D;
    const int32_t w = D < MASK_DAYS ? D : MASK_DAYS;
    int32_t a = d - gr_rng_below(rng, w);
    if (a < 0)
        a = 0;
    if (a > D - w)
        a = D - w;
    const int32_t b = a + w - 1;
    const int32_t *r1 = st->roster + (int64_t)e * D, *r2 = st->roster + (int64_t)e2 * D;
    /* only days where a swap changes something and both may take the other's cell */
    int32_t free_day[MASK_DAYS], nf = 0;
    for (int32_t x = a; x <= b; x++)
        if (x != d && r1[x] != r2[x] && allowed(st, e, x, r2[x]) && allowed(st, e2, x, r1[x]))
            free_day[nf++] = x;
    int64_t best_cost = INT64_MAX;
    uint32_t best_mask = 0;
    for (uint32_t mask = 0; mask < (1u << nf); mask++) {
        mask_pattern(r1, r2, a, b, d, free_day, nf, mask, v1, v2);
        gr_delta d1 = gr_state_delta(st, e, a, b, v1, 0), d2 = gr_state_delta(st, e2, a, b, v2, 0);
        gr_delta sum = {d1.hard + d2.hard, d1.minutes + d2.minutes, d1.pen + d2.pen};
        int64_t cost = gr_delta_cost(sum, hw);
        ctx->evaluations += mask > 0; /* the caller counts the first */
        if (cost < best_cost) {
            best_cost = cost;
            best_mask = mask;
            m->d1 = d1;
            m->d2 = d2;
        }
    }
    mask_pattern(r1, r2, a, b, d, free_day, nf, best_mask, v1, v2);
    m->kind = 1;
    m->e1 = e;
    m->e2 = e2;
    m->a = a;
    m->b = b;
    return 1;
}

/* A broken request of e on day d, and a colleague e2 who holds what e wants there. */
static int propose_mask_swap(gr_state *st, gr_rng *rng, move *m, int32_t *v1, int32_t *v2,
                             int64_t hw, gr_ctx *ctx)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D, E = st->E;
    if (p->n_on + p->n_off == 0 || E < 2)
        return 0;
    int32_t i = gr_rng_below(rng, p->n_on + p->n_off);
    int32_t c = st->req_cell[i], e = c / D, d = c % D, cur = st->roster[c];
    if (i < p->n_on ? cur == p->on_shift[i] : cur != p->off_shift[i - p->n_on])
        return 0;
    int32_t e2 = -1, seen = 0;
    for (int32_t x = 0; x < E; x++) {
        int32_t v = st->roster[(int64_t)x * D + d];
        if (x == e || (i < p->n_on ? v != p->on_shift[i] : v == cur))
            continue;
        if (allowed(st, e, d, v) && allowed(st, x, d, cur) && gr_rng_below(rng, ++seen) == 0)
            e2 = x;
    }
    if (e2 < 0)
        return 0;
    return mask_swap(st, rng, m, v1, v2, hw, ctx, e, e2, d);
}

/* A split weekend: e works one day of weekend w and not the other. A colleague e2 works that
 * other day and not e's: swapping day d (either of the two) gives one of them the whole
 * weekend and frees the other's. When weekends are scarce (Instance 5: every employee at the
 * limit, most under-cover on weekends) the number of split weekends sets the number of
 * uncovered weekend shifts. Writes e, e2 and d for weekend_rebuild. */
static int pick_split_weekend(gr_state *st, gr_rng *rng, int32_t *pe, int32_t *pe2, int32_t *pd)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D, E = st->E;
    if (st->W == 0 || E < 2)
        return 0;
    int32_t e = gr_rng_below(rng, E), w = gr_rng_below(rng, st->W);
    if (st->wk_days[(int64_t)e * st->W + w] != 1)
        return 0;
    /* the weekend's days: the first day of w and those after it with the same index */
    int32_t first = -1;
    for (int32_t x = 0; x < D && first < 0; x++)
        if (p->weekend[x] == w)
            first = x;
    if (first < 0)
        return 0;
    const int32_t *row = st->roster + (int64_t)e * D;
    int32_t on = -1, off = -1, d;
    for (int32_t x = first; x < D && p->weekend[x] == w; x++) {
        if (row[x] >= 0)
            on = x;
        else if (off < 0 || gr_rng_below(rng, 2))
            off = x;
    }
    if (on < 0 || off < 0)
        return 0;
    int32_t e2 = -1, seen = 0;
    for (int32_t x = 0; x < E; x++) {
        const int32_t *r2 = st->roster + (int64_t)x * D;
        if (x == e || r2[off] < 0 || r2[on] >= 0)
            continue;
        if (gr_rng_below(rng, ++seen) == 0)
            e2 = x;
    }
    if (e2 < 0)
        return 0;
    d = gr_rng_below(rng, 2) ? off : on;
    const int32_t *r2 = st->roster + (int64_t)e2 * D;
    if (!allowed(st, e, d, r2[d]) || !allowed(st, e2, d, row[d]))
        return 0;
    *pe = e;
    *pe2 = e2;
    *pd = d;
    return 1;
}

/* The end of a multi-row move: rows emps[0..k-1] were rewritten for a weighted change of
 * `total`; keep them by the annealing rule, else put back the saved rows (saved[i] is the old
 * row of emps[i]). Returns the change kept (0 when restored). */
static int64_t keep_or_restore(gr_state *st, gr_rng *rng, int64_t total, double t, int32_t k,
                               const int32_t *emps, const int32_t *saved)
{
    const int32_t D = st->D;
    if (total <= 0 || (total / t < 30.0 && gr_rng_unit(rng) < exp(-(double)total / t)))
        return total;
    for (int32_t i = 0; i < k; i++) {
        const int32_t *old = saved + (size_t)i * (size_t)D;
        gr_delta dl = gr_state_delta(st, emps[i], 0, D - 1, old, 1);
        gr_state_apply(st, emps[i], 0, D - 1, old, 1, dl);
    }
    return 0;
}

/* The days row_range gives for day d of e's row re-optimised in place, cell (e, pin_d) held at
 * pin_v (pin_d = -1: none). Returns the change of the weighted cost, or 0 with nothing
 * changed. */
static int64_t rebuild_row(gr_state *st, int32_t e, int32_t window, int32_t d, int32_t pin_d,
                           int32_t pin_v, int64_t hw, int32_t *buf)
{
    int32_t a, b;
    if (!row_dp_near(st, e, window, d, pin_d, pin_v, buf, &a, &b))
        return 0;
    gr_delta dl = gr_state_delta(st, e, a, b, buf, 1);
    gr_state_apply(st, e, a, b, buf, 1, dl);
    return gr_delta_cost(dl, hw);
}

/* Each short slot of day x that e may take drawn into *pv with probability 1 / ++*seen (and
 * x into *pd): with *seen shared over several days, the pick is uniform over all their slots.
 * Returns whether this day's slots made the pick. */
static int draw_short_slot(const gr_state *st, gr_rng *rng, int32_t e, int32_t x, int32_t *seen,
                           int32_t *pd, int32_t *pv)
{
    const int32_t S = st->S;
    int picked = 0;
    for (int32_t s = 0; s < S; s++)
        if (st->cover[(int64_t)x * S + s] < st->p->cover_req[(int64_t)x * S + s] &&
            allowed(st, e, x, s) && gr_rng_below(rng, ++*seen) == 0) {
            *pd = x;
            *pv = s;
            picked = 1;
        }
    return picked;
}

/* A short slot on a day off of e's that lies on a weekend other than `skip` which e works
 * on at most one day, drawn uniformly: where a weekend e was freed of can be used. */
static int short_weekend_slot(const gr_state *st, gr_rng *rng, int32_t e, int32_t skip,
                              int32_t *pd, int32_t *pv)
{
    const int32_t D = st->D, *row = st->roster + (int64_t)e * D;
    const int32_t *wk = st->wk_days + (int64_t)e * st->W;
    int32_t seen = 0;
    for (int32_t x = 0; x < D; x++) {
        const int32_t w = st->p->weekend[x];
        if (w >= 0 && w != skip && row[x] < 0 && wk[w] <= 1)
            draw_short_slot(st, rng, e, x, &seen, pd, pv);
    }
    return seen > 0;
}

/* A split weekend repaired in three steps: day d swapped between e and e2 together with the
 * best subset of the nearby days (mask_swap), then a row DP for each of the two (on a large
 * row, a window: around d, or for the one freed of the weekend, around a short weekend slot
 * elsewhere). The swap alone covers nothing more, so annealing rarely takes it; the gain
 * comes when the employee whose weekend was freed works an under-covered weekend instead,
 * which the DP finds.
 * Instance 5, 25M evaluations, 12 seeds: the roster with one uncovered shift fewer (gap
 * 0.3-0.9 % instead of 8-9 %) came out 7 times instead of 2-3. Accepted by the annealing rule
 * on the whole chain, else both rows are put back. Returns the change of the weighted cost.
 * `saved` holds two rows (the old ones, for the put-back), v1 and v2 one row each. */
int64_t gr_weekend_rebuild(gr_state *st, gr_rng *rng, double t, int64_t hw, int32_t window,
                           gr_ctx *ctx, int32_t *saved, int32_t *v1, int32_t *v2)
{
    const int32_t D = st->D;
    int32_t e, e2, d;
    move m;
    if (!pick_split_weekend(st, rng, &e, &e2, &d) ||
        !mask_swap(st, rng, &m, v1, v2, hw, ctx, e, e2, d))
        return 0;
    const int32_t emps[2] = {e2, e};
    for (int i = 0; i < 2; i++)
        memcpy(saved + (size_t)i * (size_t)D, st->roster + (int64_t)emps[i] * D,
               (size_t)D * sizeof *saved);
    gr_state_apply(st, e, m.a, m.b, v1, 0, m.d1);
    gr_state_apply(st, e2, m.a, m.b, v2, 0, m.d2);
    int64_t total = gr_delta_cost(m.d1, hw) + gr_delta_cost(m.d2, hw);
    const int32_t w = st->p->weekend[d];
    for (int i = 0; i < 2; i++) {
        /* The one the swap freed of weekend w: a window around d cannot spend the weekend it
         * got back, which only a short weekend elsewhere needs (a whole row can: the row DP
         * moves weekends anywhere). So on a large row its window goes to such a weekend. GA
         * alone, 60 s, seeds 1-3, side by side: Instance 24 84.2 k -> 60.5 k, 22 36.9 k ->
         * 35.8 k (decision 0024). Its window around d is then rebuilt too: the day it gave
         * up leaves a rule broken there (a one-day run, a short rest) in most swaps, which the
         * far window cannot mend, and the move was thrown away for it (Instance 24, 30 s:
         * 3 369 of 7 384 swaps ended infeasible, 21 of 5 606 with both windows; decision
         * 0029). */
        int32_t d2 = -1, v = -1;
        if (window > 0 && gr_row_windowed(st->p, emps[i]) &&
            st->wk_days[(int64_t)emps[i] * st->W + w] == 0 &&
            short_weekend_slot(st, rng, emps[i], w, &d2, &v))
            total += rebuild_row(st, emps[i], window, d2, d2, v, hw, v1);
        total += rebuild_row(st, emps[i], window, d, -1, 0, hw, v1);
    }
    return keep_or_restore(st, rng, total, t, 2, emps, saved);
}

/* A short slot (under = 1) or an over-covered one (under = 0) that row `e` moved: a day where
 * the row now differs from `old` and the cover it left is short or the cover it took is over.
 * Starts at a random day. Returns the day, or -1; writes the shift type to *s. */
static int32_t moved_slot(const gr_state *st, gr_rng *rng, int32_t e, const int32_t *old,
                          int32_t *s, int *under)
{
    const int32_t D = st->D, S = st->S, *row = st->roster + (int64_t)e * D;
    const int32_t *req = st->p->cover_req;
    int32_t start = gr_rng_below(rng, D);
    for (int32_t i = 0; i < D; i++) {
        int32_t d = (start + i) % D, o = old[d], n = row[d];
        if (o == n)
            continue;
        if (o >= 0 && st->cover[(int64_t)d * S + o] < req[(int64_t)d * S + o]) {
            *s = o;
            *under = 1;
            return d;
        }
        if (n >= 0 && st->cover[(int64_t)d * S + n] > req[(int64_t)d * S + n]) {
            *s = n;
            *under = 0;
            return d;
        }
    }
    return -1;
}

/* A random employee, none of emps[0..k-1], who may take shift s on day d (under) or who works
 * it (!under); -1 if none. */
static int32_t random_holder(const gr_state *st, gr_rng *rng, int32_t d, int32_t s, int under,
                             const int32_t *emps, int32_t k)
{
    int32_t pick = -1, seen = 0;
    for (int32_t x = 0; x < st->E; x++) {
        int32_t v = st->roster[(int64_t)x * st->D + d];
        int taken = 0;
        for (int32_t j = 0; j < k; j++)
            taken |= emps[j] == x;
        if (taken || (under ? v == s || !allowed(st, x, d, s) : v != s))
            continue;
        if (gr_rng_below(rng, ++seen) == 0)
            pick = x;
    }
    return pick;
}

/* The first cell of a chain from a request: a broken one, and a value that grants it. */
static int request_start(const gr_state *st, gr_rng *rng, int32_t *pe, int32_t *pd, int32_t *pv)
{
    const gr_problem *p = st->p;
    if (p->n_on + p->n_off == 0)
        return 0;
    int32_t i = gr_rng_below(rng, p->n_on + p->n_off);
    int32_t c = st->req_cell[i], e = c / st->D, d = c % st->D, cur = st->roster[c], want;
    if (i < p->n_on) {
        want = p->on_shift[i];
        if (cur == want)
            return 0;
    } else if (cur != p->off_shift[i - p->n_on] || !pick_value(st, rng, e, d, cur, &want)) {
        return 0;
    }
    *pe = e;
    *pd = d;
    *pv = want;
    return allowed(st, e, d, want);
}

/* The first cell of a chain from the cover: a short slot, and someone who may take it. */
static int cover_start(const gr_state *st, gr_rng *rng, int32_t *pe, int32_t *pd, int32_t *pv)
{
    for (int tries = 0; tries < 8; tries++) {
        int32_t d = gr_rng_below(rng, st->D), s = gr_rng_below(rng, st->S);
        int64_t k = (int64_t)d * st->S + s;
        if (st->cover[k] >= st->p->cover_req[k])
            continue;
        int32_t e = random_holder(st, rng, d, s, 1, NULL, 0);
        if (e < 0)
            return 0;
        *pe = e;
        *pd = d;
        *pv = s;
        return 1;
    }
    return 0;
}

/* The first cell of a chain from a split weekend: an employee working one day of a weekend
 * takes a short slot on its other day. When weekends are scarce (Instance 24: 95 % of every
 * employee's weekends are needed, both days worked) each split weekend is a shift uncovered;
 * the window around it can move the shift's minutes to a weekday the chain then fills. */
static int weekend_start(const gr_state *st, gr_rng *rng, int32_t *pe, int32_t *pd, int32_t *pv)
{
    const gr_problem *p = st->p;
    const int32_t D = st->D;
    if (st->W == 0)
        return 0;
    for (int tries = 0; tries < 8; tries++) {
        const int32_t e = gr_rng_below(rng, st->E), d = gr_rng_below(rng, D);
        const int32_t w = p->weekend[d];
        if (w < 0 || st->roster[(int64_t)e * D + d] >= 0 || st->wk_days[(int64_t)e * st->W + w] == 0)
            continue;
        int32_t seen = 0;
        if (!draw_short_slot(st, rng, e, d, &seen, pd, pv))
            continue;
        *pe = e;
        return 1;
    }
    return 0;
}

/* Ejection chain. A broken request is granted, or a short slot filled, by re-optimising one
 * employee's row with the row DP, that cell pinned. The new row usually leaves a slot short
 * elsewhere (the employee gave up a weekend or a run for it) or over-covers one; a colleague
 * who may take the short slot, or who works the over-covered one, is then re-optimised with
 * that cell pinned, and so on along the chain, up to EJECT_DEPTH rows. Single-cell moves cannot
 * do this: every first step leaves a shift uncovered (100 points) or over-covers one, and the
 * walk undoes it before the rest follows. The whole chain is kept or put back by the annealing
 * rule. Generated 80 x 14-day instances: the wishes left broken at 1 s were such chains
 * (docs/decisions/0002, seventh pass). */
static int64_t eject_chain(gr_state *st, gr_rng *rng, double t, int64_t hw, int32_t window,
                           int32_t e, int32_t pin_d, int32_t pin_v, int32_t *saved,
                           int32_t *emps, int32_t *buf)
{
    const int32_t D = st->D;
    int64_t total = 0;
    int32_t k = 0;
    for (;;) {
        /* on a long horizon a chain takes windows of every row, not only of large ones: they
         * cost less, so more chains run (Instance 20, whose rows the whole-row search does
         * exactly: 5 167 against 5 268 with whole rows, decision 0022) */
        int32_t a, b;
        window_days(D, window, pin_d, &a, &b);
        if (!(window > 0 ? gr_row_window(st, e, a, b, pin_d, pin_v, buf)
                         : gr_row_dp_pinned(st, e, pin_d, pin_v, buf)))
            break;
        int32_t *old = saved + (size_t)k * (size_t)D;
        memcpy(old, st->roster + (int64_t)e * D, (size_t)D * sizeof *old);
        emps[k++] = e;
        gr_delta dl = gr_state_delta(st, e, a, b, buf, 1);
        gr_state_apply(st, e, a, b, buf, 1, dl);
        total += gr_delta_cost(dl, hw);
        int32_t s;
        int under;
        if (k == EJECT_DEPTH || total <= 0 || (pin_d = moved_slot(st, rng, e, old, &s, &under)) < 0)
            break;
        /* the next row: someone who may take the short slot, or who works the over one */
        if ((e = random_holder(st, rng, pin_d, s, under, emps, k)) < 0)
            break;
        pin_v = under ? s : -1;
    }
    return keep_or_restore(st, rng, total, t, k, emps, saved);
}

/* Proposals until the next chain, so that the chains take share % of the effort: a chain that
 * cost `work` DP units waits for its own cost scaled by the rest of the effort. */
static inline int64_t eject_wait(int64_t work, int32_t share)
{
    return (EJECT_BASE_COST + work / GR_DP_WORK_PER_PROPOSAL) * (100 - share) / share;
}

/* Ruin and recreate: clear k rows (with a window: the same days of each, see row_range), then
 * rebuild them one by one with the row DP (each against everything else, including the rows
 * already rebuilt). Accepted by the annealing rule, else the old rows are put back. Returns the
 * change of the weighted cost (0 when reverted). */
static int64_t ruin_recreate(gr_state *st, gr_rng *rng, int32_t k, int32_t window, double t,
                             int64_t hw, int32_t *saved, int32_t *emps, int32_t *buf)
{
    const int32_t D = st->D, d = window > 0 ? gr_rng_below(rng, D) : 0; /* no draw: as before */
    if (k > st->E)
        k = st->E;
    for (int32_t i = 0; i < k; i++) {
        int32_t e;
        int dup;
        do {
            e = gr_rng_below(rng, st->E);
            dup = 0;
            for (int32_t j = 0; j < i; j++)
                dup |= emps[j] == e;
        } while (dup);
        emps[i] = e;
        memcpy(saved + (size_t)i * (size_t)D, st->roster + (int64_t)e * D, (size_t)D * sizeof *saved);
    }
    int64_t total = 0;
    for (int32_t x = 0; x < D; x++)
        buf[x] = -1;
    for (int32_t i = 0; i < k; i++) {
        int32_t a, b;
        row_range(st, emps[i], window, d, &a, &b);
        gr_delta dl = gr_state_delta(st, emps[i], a, b, buf, 1);
        gr_state_apply(st, emps[i], a, b, buf, 1, dl);
        total += gr_delta_cost(dl, hw);
    }
    for (int32_t i = 0; i < k; i++) {
        const int32_t e = emps[k - 1 - i];
        const int32_t *old = saved + (size_t)(k - 1 - i) * (size_t)D;
        int32_t a, b;
        if (!row_dp_near(st, e, window, d, -1, 0, buf, &a, &b))
            memcpy(buf, old + a, (size_t)(b - a + 1) * sizeof *buf);
        gr_delta dl = gr_state_delta(st, e, a, b, buf, 1);
        gr_state_apply(st, e, a, b, buf, 1, dl);
        total += gr_delta_cost(dl, hw);
    }
    return keep_or_restore(st, rng, total, t, k, emps, saved);
}

void gr_local_search(gr_state *st, gr_rng *rng, gr_ctx *ctx, const gr_ls_params *lp,
                     int32_t *best_buf)
{
    const size_t cells = (size_t)st->E * (size_t)st->D;
    int32_t *v1 = malloc((size_t)st->D * sizeof *v1), *v2 = malloc((size_t)st->D * sizeof *v2);
    /* saved rows and their employees for the multi-row moves: ruin-and-recreate, the weekend
     * rebuild (2) and the ejection chain (EJECT_DEPTH) */
    int32_t rows = lp->lns_rows > EJECT_DEPTH ? lp->lns_rows : EJECT_DEPTH;
    int32_t *lns_saved = malloc((size_t)st->D * (size_t)(rows + 2) * sizeof *lns_saved);
    int32_t *lns_emps = malloc((size_t)(rows + 1) * sizeof *lns_emps);
    if (!v1 || !v2 || !lns_saved || !lns_emps) {
        free(v1);
        free(v2);
        free(lns_saved);
        free(lns_emps);
        return;
    }
    /* Strategic oscillation: the hard weight rises while the walk stays infeasible and decays
     * back towards lp->hard_weight while it is feasible, so the walk may cut through
     * infeasible regions without settling there. */
    double hwf = (double)lp->hard_weight;
    int64_t hw = lp->hard_weight;
    const double hw_max = 64.0 * (double)lp->hard_weight;
    int64_t cur = gr_delta_cost(st->total, hw);
    /* The best state is ranked feasible-first, then by penalty (feasible) or weighted cost
     * (infeasible): with a moderate hard weight the walk may trade a little infeasibility for
     * cover, and must not hand back such a state when it has seen a feasible one. */
    int best_infeasible = st->total.hard != 0 || st->total.minutes != 0;
    int64_t best_value = best_infeasible ? gr_delta_cost(st->total, GR_HARD_WEIGHT) : st->total.pen;
    int cur_is_best = 1;
    double t = lp->t_start * GR_MINUTE_DIV;
    const double t_end = lp->t_end * GR_MINUTE_DIV;
    /* geometric cooling, applied every 64 iterations to keep pow() out of the loop */
    const double steps = lp->iterations > 64 ? (double)lp->iterations / 64.0 : 1.0;
    const double factor = pow(t_end / t, 1.0 / steps);
    /* Timed mode (lp->seconds > 0): the schedule follows the clock instead, so that a slowdown
     * of the machine mid-run (shared CI, parallel solves) still ends the anneal cold. */
    const double t_first = t, t_ratio = t_end / t;
    const double t0_clock = lp->seconds > 0 ? gr_now() : 0.0;
    int64_t it = 0, eject_debt = 0;
    double published = gr_now();
    int32_t ej_refused = 0;
    move m = {0};
    while (lp->seconds > 0 || it < lp->iterations) {
        it++;
        if ((it & 63) == 0) {
            if (lp->seconds > 0) {
                double frac = (gr_now() - t0_clock) / lp->seconds;
                if (frac >= 1.0)
                    break;
                t = t_first * pow(t_ratio, frac);
            } else {
                t *= factor;
            }
        }
        if ((it & 4095) == 0) {
            int feasible_now = st->total.hard == 0 && st->total.minutes == 0;
            hwf = feasible_now ? hwf * 0.97 : hwf * 1.06;
            if (hwf < (double)lp->hard_weight)
                hwf = (double)lp->hard_weight;
            if (hwf > hw_max)
                hwf = hw_max;
            hw = (int64_t)hwf;
            cur = gr_delta_cost(st->total, hw);
            /* the walk's best reaches the caller's progress (and a cancel's roster) while it
             * runs: one anneal is nearly all of a long-horizon solve. Offers change nothing
             * the walk decides, but an offer decides which of two rosters of equal cost the
             * solve keeps; so with an evaluation budget they come at proposal counts, not on
             * the clock, or two runs of one budget return different rosters (seen under
             * valgrind, where the clock is slow). */
            const double now = gr_now();
            if (ctx->max_evaluations > 0 ? it % GR_PUBLISH_PROPOSALS == 0
                                         : now - published >= GR_PUBLISH_SECONDS) {
                gr_ctx_offer(ctx, cur_is_best ? st->roster : best_buf);
                published = now;
            }
        }
        int lns = lp->lns_period > 0 && it % lp->lns_period == 0;
        int chain = lp->chain_period > 0 && it % lp->chain_period == lp->chain_period / 2;
        /* a chain's first cell is found before anything is copied: on a large roster most
         * draws find none, and the copy of the best below is the size of the roster */
        int32_t ej_e = -1, ej_d = -1, ej_v = -1;
        int64_t ej_work = st->dp.work;
        int eject = lp->eject_share > 0 && eject_debt-- <= 0 && st->E >= 2;
        if (eject) {
            const int32_t r = gr_rng_below(rng, 100);
            eject = (r < lp->eject_weekend                    ? weekend_start
                     : r < lp->eject_weekend + lp->eject_cover ? cover_start
                                                               : request_start)(
                st, rng, &ej_e, &ej_d, &ej_v);
            eject_debt = eject_wait(0, lp->eject_share);
        }
        if (lns || chain || eject) {
            if (gr_ctx_tick(ctx, 1))
                break;
            if (cur_is_best) { /* the rebuild may leave the best; keep a copy */
                memcpy(best_buf, st->roster, cells * sizeof(int32_t));
                cur_is_best = 0;
            }
            if (lns)
                cur += ruin_recreate(st, rng, lp->lns_rows, lp->window, t, hw, lns_saved,
                                     lns_emps, v2);
            else if (chain)
                cur += gr_weekend_rebuild(st, rng, t, hw, lp->window, ctx, lns_saved, v1, v2);
            else {
                cur += eject_chain(st, rng, t, hw, lp->window, ej_e, ej_d, ej_v, lns_saved,
                                   lns_emps, v2);
                int64_t work = st->dp.work - ej_work;
                eject_debt = eject_wait(work, lp->eject_share);
                /* a row too large for the DP is refused before any work: then no chain can
                 * run on this roster, and the draws would only take time from the walk */
                ej_refused = work == 0 ? ej_refused + 1 : 0;
                if (ej_refused >= EJECT_MAX_REFUSED)
                    eject_debt = INT64_MAX;
            }
            gr_ctx_poll(ctx);
            int infeasible = st->total.hard != 0 || st->total.minutes != 0;
            int64_t value = infeasible ? gr_delta_cost(st->total, GR_HARD_WEIGHT) : st->total.pen;
            if (infeasible < best_infeasible || (infeasible == best_infeasible && value <= best_value)) {
                best_infeasible = infeasible;
                best_value = value;
                cur_is_best = 1;
            }
            continue;
        }
        int scored;
        int64_t threshold = -1; /* >= 0: drawn before the proposal (feasible walk) */
        if (lp->dp_period > 0 && it % lp->dp_period == 0) {
            scored = propose_row(st, rng, lp->window, &m, v1);
            if (gr_ctx_poll(ctx))
                break;
        } else if (lp->mask_period > 0 && it % lp->mask_period == lp->mask_period / 3) {
            scored = propose_mask_swap(st, rng, &m, v1, v2, hw, ctx);
        } else if (st->total.hard == 0 && st->total.minutes == 0) {
            /* feasible: draw the acceptance threshold first, so that the delta may stop as
             * soon as the move is sure to exceed it (accept iff dc <= -t ln u, the same
             * rule as u < exp(-dc / t)) */
            double u = gr_rng_unit(rng);
            double thr = u > 0.0 ? -t * log(u) : 30.0 * t;
            if (thr > 30.0 * t)
                thr = 30.0 * t;
            threshold = (int64_t)thr;
            st->cut = threshold;
            st->cut_hw = hw;
            scored = propose(st, rng, lp, &m, v1, v2);
            st->cut = INT64_MAX;
        } else {
            scored = propose(st, rng, lp, &m, v1, v2);
        }
        if (gr_ctx_tick(ctx, scored))
            break;
        if (!scored)
            continue;
        if (threshold >= 0 && m.d1.pen == GR_DELTA_CUT) /* a cut pair marks its d1 */
            continue;
        gr_delta dl = m.d1;
        if (m.kind == 1) {
            dl.hard += m.d2.hard;
            dl.minutes += m.d2.minutes;
            dl.pen += m.d2.pen;
        }
        int64_t dc = gr_delta_cost(dl, hw);
        if (threshold >= 0) {
            if (dc > threshold)
                continue;
        } else if (dc > 0) {
            double x = (double)dc / t;
            if (x > 30.0 || gr_rng_unit(rng) >= exp(-x))
                continue;
        }
        int infeasible = st->total.hard + dl.hard != 0 || st->total.minutes + dl.minutes != 0;
        gr_delta nt = {st->total.hard + dl.hard, st->total.minutes + dl.minutes,
                       st->total.pen + dl.pen};
        int64_t value = infeasible ? gr_delta_cost(nt, GR_HARD_WEIGHT) : nt.pen;
        int better = infeasible < best_infeasible ||
                     (infeasible == best_infeasible && value < best_value);
        int equal = infeasible == best_infeasible && value == best_value;
        if (cur_is_best && !better && !equal) { /* leaving the best: copy it first (lazily) */
            memcpy(best_buf, st->roster, cells * sizeof(int32_t));
            cur_is_best = 0;
        }
        if (m.kind == 1) {
            gr_state_apply(st, m.e1, m.a, m.b, v1, 0, m.d1);
            gr_state_apply(st, m.e2, m.a, m.b, v2, 0, m.d2);
        } else {
            gr_state_apply(st, m.e1, m.a, m.b, v1, 1, m.d1);
        }
        cur += dc;
        if (better || (equal && !cur_is_best)) {
            if (!infeasible && best_infeasible && ctx->best_hard != 0)
                gr_ctx_offer(ctx, st->roster); /* first feasible roster: publish it now */
            best_infeasible = infeasible;
            best_value = value;
            cur_is_best = 1;
        }
    }
    if (!cur_is_best)
        gr_state_load(st, best_buf);
    cur_is_best = 1;
    /* finish with DP sweeps: every row re-optimised against the others until none improves */
    for (int pass = 0; lp->dp_sweeps && pass < 3 && !ctx->stop; pass++) {
        int improved = 0;
        int32_t start = gr_rng_below(rng, st->E);
        for (int32_t k = 0; k < st->E && !ctx->stop; k++) {
            int32_t e = (start + k) % st->E;
            ctx->evaluations++;
            ctx->attempts++;
            if (gr_ctx_poll(ctx)) /* a DP is costly: check cancel and clock after every one */
                break;
            if (!gr_row_dp(st, e, v1))
                continue;
            gr_delta dl = gr_state_delta(st, e, 0, st->D - 1, v1, 1);
            if (gr_delta_cost(dl, GR_HARD_WEIGHT) < 0) {
                gr_state_apply(st, e, 0, st->D - 1, v1, 1, dl);
                improved = 1;
            }
        }
        if (!improved)
            break;
    }
    free(v1);
    free(v2);
    free(lns_saved);
    free(lns_emps);
}
