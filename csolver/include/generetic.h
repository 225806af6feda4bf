/*
 * generetic: a memetic genetic algorithm for workforce rostering (Curtois & Qu style).
 *
 * The array layout mirrors shared/roster/compiled.py, which is authoritative. Sizes: E
 * employees, D days, S shift types, W weekends in the horizon. Every array is C-contiguous,
 * row-major, int32_t unless noted.
 *
 * | field          | shape     | meaning                                                        |
 * |----------------|-----------|----------------------------------------------------------------|
 * | length         | [S]       | shift length in minutes                                        |
 * | forbidden      | [S, S]    | uint8; forbidden[a*S+b] = 1: b may not be worked the day after a|
 * | max_shifts     | [E, S]    | most shifts of type s for employee e; 0 = not eligible         |
 * | min_minutes    | [E]       | lower bound on total minutes (0 = none)                        |
 * | max_minutes    | [E]       | upper bound on total minutes                                   |
 * | max_consec     | [E]       | longest run of working days                                    |
 * | min_consec     | [E]       | shortest run of working days; runs touching day 0 or D-1 exempt|
 * | min_off        | [E]       | shortest run of days off; runs touching day 0 or D-1 exempt    |
 * | max_weekends   | [E]       | most worked weekends                                           |
 * | day_off        | [E, D]    | uint8; 1 = the employee must not work that day                 |
 * | weekend        | [D]       | weekend index in [0, W) of a Saturday/Sunday, -1 on weekdays   |
 * | on_ptr         | [E*D + 1] | CSR row pointers into on_shift/on_weight for cell e*D + d      |
 * | on_shift       | [R_on]    | requested shift index                                          |
 * | on_weight      | [R_on]    | penalty when the cell holds anything but that shift            |
 * | off_ptr        | [E*D + 1] | CSR row pointers into off_shift/off_weight                     |
 * | off_shift      | [R_off]   | shift index the employee asked not to work                     |
 * | off_weight     | [R_off]   | penalty when the cell holds exactly that shift                 |
 * | cover_req      | [D, S]    | required number of employees on shift s, day d                 |
 * | cover_under    | [D, S]    | penalty per missing employee                                   |
 * | cover_over     | [D, S]    | penalty per extra employee                                     |
 * | pin            | [E, D]    | optional (NULL = none): the value a cell is pinned to (-1 = off),|
 * |                |           | GR_FREE = not pinned; each cell off its pin is a hard violation |
 *
 * A roster is int32_t [E, D]: -1 for a day off, else the shift index in [0, S).
 *
 * Threading: no global mutable state; any number of gr_solve calls may run in parallel on
 * different gr_progress structs. gr_problem is only read.
 */
#ifndef GENERETIC_H
#define GENERETIC_H

#include <stdint.h>

/* Error codes (negative). gr_validate returns the first problem it finds. */
#define GR_OK 0
#define GR_ERR_NULL (-1)          /* a required pointer is NULL */
#define GR_ERR_SIZES (-2)         /* E, D or S < 1, n_weekends < 0, or R_on/R_off < 0 */
#define GR_ERR_LENGTH (-3)        /* a shift length is <= 0 or > 1440 */
#define GR_ERR_FORBIDDEN (-4)     /* forbidden holds a value other than 0/1 */
#define GR_ERR_MAX_SHIFTS (-5)    /* a negative max_shifts entry */
#define GR_ERR_MINUTES (-6)       /* negative min/max minutes */
#define GR_ERR_CONSEC (-7)        /* max_consec/min_consec/min_off < 0 */
#define GR_ERR_WEEKENDS (-8)      /* negative max_weekends */
#define GR_ERR_DAY_OFF (-9)       /* day_off holds a value other than 0/1 */
#define GR_ERR_WEEKEND (-10)      /* weekend[d] outside [-1, W) */
#define GR_ERR_ON_PTR (-11)       /* on_ptr not monotone, not starting at 0 or not ending at R_on */
#define GR_ERR_ON_SHIFT (-12)     /* on_shift outside [0, S) */
#define GR_ERR_OFF_PTR (-13)      /* off_ptr not monotone, not starting at 0 or not ending at R_off */
#define GR_ERR_OFF_SHIFT (-14)    /* off_shift outside [0, S) */
#define GR_ERR_WEIGHT (-15)       /* a request or cover weight outside [0, 2^20] */
#define GR_ERR_COVER (-16)        /* a cover requirement outside [0, 2^20] */
#define GR_ERR_ROSTER (-17)       /* a roster cell outside [-1, S) (gr_score) */
#define GR_ERR_CONFIG (-18)       /* a config value out of range */
#define GR_ERR_NOMEM (-19)        /* allocation failed */
#define GR_ERR_TOO_LARGE (-20)    /* E*D or E*S > 2^24, D*S > 2^20, S > 1024, W > D */
#define GR_ERR_COST (-21)         /* a pricing cost outside [-2^40, 2^40] and not GR_FORBIDDEN */
#define GR_ERR_PIN (-22)          /* pin holds a value outside [GR_FREE, S) */

/* pin[c] of a cell that is not pinned */
#define GR_FREE (-2)

typedef struct {
    int32_t n_employees;  /* E */
    int32_t n_days;       /* D */
    int32_t n_shifts;     /* S */
    int32_t n_weekends;   /* W */
    int32_t n_on;         /* R_on: length of on_shift/on_weight */
    int32_t n_off;        /* R_off: length of off_shift/off_weight */
    const int32_t *length;
    const uint8_t *forbidden;
    const int32_t *max_shifts;
    const int32_t *min_minutes;
    const int32_t *max_minutes;
    const int32_t *max_consec;
    const int32_t *min_consec;
    const int32_t *min_off;
    const int32_t *max_weekends;
    const uint8_t *day_off;
    const int32_t *weekend;
    const int32_t *on_ptr;
    const int32_t *on_shift;
    const int32_t *on_weight;
    const int32_t *off_ptr;
    const int32_t *off_shift;
    const int32_t *off_weight;
    const int32_t *cover_req;
    const int32_t *cover_under;
    const int32_t *cover_over;
    const int32_t *pin; /* may be NULL: nothing pinned */
} gr_problem;

typedef struct {
    double time_limit;        /* seconds of wall time (CLOCK_MONOTONIC), > 0 */
    uint64_t seed;            /* same seed + same problem + same max_evaluations -> same roster */
    int32_t population;       /* individuals in the population; 0 = default (4) */
    int32_t crash_for_test;   /* non-zero: dereference NULL on purpose (reliability tests) */
    int64_t max_evaluations;  /* stop after this many move evaluations; 0 = unlimited.
                                 The search never reads the clock to make a decision, so with
                                 this budget (and a generous time limit) a run is reproducible. */
    const int32_t *start;     /* E*D roster the first individual starts from instead of the
                                 greedy start (re-rostering: the previous roster), or NULL;
                                 a cell outside [-1, S) is GR_ERR_CONFIG */
    double start_heat;        /* with `start`: the starting temperature of the first
                                 individual's anneal (after the fixed repair), 0 = as from a
                                 greedy start (30), else in [0.3, 1000] (not below the anneal's
                                 end: the temperature would rise). A start that is already a
                                 good roster (the column phase's dive) is kept near by a low
                                 one; a hot anneal walks away from it first. */
    const int32_t *fallback;  /* E*D roster that keeps every hard rule and pin (the column
                                 phase's best), or NULL: where the first start still breaks a
                                 rule or a pin after its repair, the first individual starts
                                 from this one instead (pinned long horizons: a walk that must
                                 repair a greedy start around the pins may not get back to them
                                 within the limit); a cell outside [-1, S) is GR_ERR_CONFIG */
} gr_config;

/*
 * Live progress. The solver writes it (relaxed atomics) while it runs; another thread may read
 * it at any time and may set `cancel` to non-zero to stop the solve.
 *
 * The cffi glue translation unit defines GR_PLAIN_FIELDS and so sees plain int64_t fields;
 * the solver sees _Atomic int64_t. Both have the same size and alignment (static-asserted in
 * ga.c and 64-bit atomics are lock-free on the targets we build for), so the layouts agree and
 * an aligned 8-byte load from Python never tears.
 */
#if defined(GR_PLAIN_FIELDS)
#define GR_ATOMIC_I64 int64_t
#else
#include <stdatomic.h>
#define GR_ATOMIC_I64 _Atomic int64_t
#endif

typedef struct {
    GR_ATOMIC_I64 generation;        /* children produced so far */
    GR_ATOMIC_I64 population;        /* individuals alive */
    GR_ATOMIC_I64 best_hard;         /* hard violation count of the best roster, -1 = none */
    GR_ATOMIC_I64 best_penalty;      /* soft penalty of the best roster, -1 = none */
    GR_ATOMIC_I64 evaluations;       /* move evaluations so far */
    GR_ATOMIC_I64 first_feasible_ms; /* ms from start to the first hard-feasible roster, -1 */
    GR_ATOMIC_I64 best_ms;           /* ms from start to the current best roster, -1 */
    GR_ATOMIC_I64 cancel;            /* written by the caller: non-zero = stop now */
    GR_ATOMIC_I64 cancelled;         /* set by the solver: it stopped because of cancel */
    GR_ATOMIC_I64 timed_out;         /* set by the solver: it stopped at the time limit */
} gr_progress;

/* Bounds-check every array and size. GR_OK or the first GR_ERR_* found. */
int gr_validate(const gr_problem *p);

/*
 * Full evaluation. hard_out = number of hard violations (the counting rules documented in
 * score.c), penalty_out = the Curtois objective. Validates the problem and the roster first.
 */
int gr_score(const gr_problem *p, const int32_t *roster, int64_t *hard_out, int64_t *penalty_out);

/*
 * The score with its reasons (explain.c): one gr_match per broken rule instance, in the
 * rule numbering below (shared/roster/rules.py's RULES order; `changes` is left to the caller,
 * which holds the previous roster). Per rule:
 *   ROTATION     day d, length 2, shift = the value on d+1, other = the value on d
 *   MAX_SHIFTS   shift s, value = shifts of type s worked
 *   MAX_MINUTES, MIN_MINUTES   value = minutes worked
 *   MAX_CONSEC, MIN_CONSEC, MIN_OFF   day = the run's first day, length = value = its days
 *   MAX_WEEKENDS value = weekends worked
 *   DAYS_OFF     day d, shift = the shift worked
 *   PINNED       day d, shift = the value held, other = the pinned value (-1 = off)
 *   SHIFT_ON, SHIFT_OFF   day d, shift = the requested shift, other = the value held,
 *                penalty = the weight (weight-0 requests are not listed)
 *   COVER_UNDER, COVER_OVER   employee -1, day d, shift s, value = employees missing/extra
 * Hard records have hard = 1. At most `capacity` records are written to `out`; *n_out is the
 * number found (more than `capacity`: call again with room for all). minutes_out (E int64),
 * shifts_out (E int32: days worked) and cover_out (D*S int32: employees per day and type) are
 * always filled. The problem must have passed gr_validate (it is not checked again: the
 * caller validates once and explains many rosters); the roster is checked.
 */
enum {
    GR_RULE_ROTATION, GR_RULE_MAX_SHIFTS, GR_RULE_MAX_MINUTES, GR_RULE_MIN_MINUTES,
    GR_RULE_MAX_CONSEC, GR_RULE_MIN_CONSEC, GR_RULE_MIN_OFF, GR_RULE_MAX_WEEKENDS,
    GR_RULE_DAYS_OFF, GR_RULE_PINNED, GR_RULE_SHIFT_ON, GR_RULE_SHIFT_OFF, GR_RULE_COVER_UNDER,
    GR_RULE_COVER_OVER
};
typedef struct {
    int32_t rule, employee, day, length, shift, other;
    int64_t hard, penalty, value;
} gr_match;
int gr_explain(const gr_problem *p, const int32_t *roster, gr_match *out, int64_t capacity,
               int64_t *n_out, int64_t *minutes_out, int32_t *shifts_out, int32_t *cover_out);

/*
 * A roster as JSON text (explain.c): "[" + per row, row_text + the row's values joined by ","
 * + "]}", the rows joined by "," + "]". The caller gives every piece already escaped, in
 * `text`: row e's opening (e.g. {"employee":"A","shifts":[) at [row_at[e], row_at[e+1]), the
 * cell value v's text (v = -1 first, e.g. null) at [value_at[v+1], value_at[v+2]).
 * Returns the length written, or, when more than `capacity` is needed, that length with
 * nothing written; GR_ERR_NULL or GR_ERR_ROSTER (a cell outside [-1, n_values - 1)).
 */
int64_t gr_render_rows(const int32_t *roster, int32_t n_rows, int32_t n_days, int32_t n_values,
                       const char *text, const int64_t *row_at, const int64_t *value_at,
                       char *out, int64_t capacity);

/*
 * Solve. Returns GR_OK or a negative error code. On GR_OK roster_out (E*D int32) always holds
 * the best roster found, also when cancelled or timed out. `progress` must not be NULL; its
 * `cancel` field is read, the other fields are overwritten.
 */
int gr_solve(const gr_problem *p, const gr_config *cfg, gr_progress *progress, int32_t *roster_out);

/*
 * Pricing for column generation (csolver/column_generation.py): for every employee e, the
 * cheapest row that keeps all of e's rules at once (fixed days off, skills, shift rotation,
 * run lengths, the minutes window, weekends, every per-type maximum), where value v on day d
 * costs cell_cost[(e * D + d) * (S + 1) + v] (v = S: the day off) and the other rows play no
 * part. Layout: cell_cost is E*D*(S+1) int64, each in [-2^40, 2^40] or GR_FORBIDDEN (the value
 * may not be used there); rows_out is E*D int32; hard_out is E int64.
 *
 * hard_out[e] = 0: rows_out's row e is rule-abiding and the cheapest such row (exact, at every
 * size: a labelling DP, docs/decisions/0013). -2: the row is rule-abiding but not proven
 * cheapest (the label search hit its cap; gr_price_rows_bounded gives a lower bound). -1: no
 * rule-abiding row exists (or, on a row too large for the DP or out of memory, none was
 * found); rows_out's row e is then all -1.
 * Returns GR_OK or a negative error code (the problem is validated first).
 */
#define GR_FORBIDDEN INT64_MAX
int gr_price_rows(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                  int64_t *hard_out);

/*
 * gr_price_rows plus, in bound_out (E int64, may be NULL), a lower bound on the cost of
 * employee e's cheapest rule-abiding row: the row's cost when hard_out[e] = 0, INT64_MAX when
 * no such row exists (proven), INT64_MIN when nothing is known (too large, out of memory).
 * Column generation's Lagrangian bound stays valid with capped rows through it.
 */
int gr_price_rows_bounded(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                          int64_t *hard_out, int64_t *bound_out);

/*
 * gr_price_rows_bounded with the search effort chosen: label_cap = labels the exact search may
 * keep per row (~50 bytes each) before it returns its rule-abiding incumbent (hard_out -2);
 * 0 = no exact search (rows are rule-abiding, exact only when the bounds prove it: a few ms
 * on 364 days); -1 = the default of gr_price_rows: 2^17, but 0 on rows whose minutes table
 * passes 2^19 entries (364 days: the exact search takes ~0.3 s a row there).
 */
int gr_price_rows_effort(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                         int64_t *hard_out, int64_t *bound_out, int64_t label_cap);

/*
 * gr_price_rows_effort for employees [first, first + count) only (same layouts, the full
 * problem's arrays; nothing outside the range is read from cell_cost or written), except that
 * a label_cap >= 0 applies only to rows that are not large (large rows stay quick). A caller
 * prices a round in such slices to stop between them: a whole round of Instance 15 takes
 * ~0.5-1 s, and a call cannot be interrupted (decision 0019). GR_ERR_CONFIG: a bad range.
 */
int gr_price_rows_range(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                        int64_t *hard_out, int64_t *bound_out, int64_t label_cap, int32_t first,
                        int32_t count);

/*
 * gr_price_rows_range from known rows: start_rows (E*D int32, -1 = off; may be NULL) holds a
 * row per employee that the search starts from as its incumbent, when it keeps every rule and
 * uses only cells cell_cost allows; a row whose first value is -2 gives none. Each result is
 * that row or a cheaper one. Column generation passes each employee's row in the LP's
 * support, whose reduced cost is zero, so the search looks only for rows that price out
 * (Instance 15 near its root's optimum: 5 rows of 45 capped at 2^14 labels instead of 21;
 * decision 0039). Ignored on large rows, which stay quick.
 */
int gr_price_rows_from(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                       int64_t *hard_out, int64_t *bound_out, int64_t label_cap, int32_t first,
                       int32_t count, const int32_t *start_rows);

#endif
