"""cffi API-mode build of `csolver._generetic`; run by setuptools (see setup.py)."""

from __future__ import annotations

from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
SOURCES = sorted(str((HERE / "src" / n).relative_to(HERE.parent)) for n in (
    "crossover.c",
    "row_dp.c",
    "delta.c",
    "explain.c",
    "ga.c",
    "greedy_start.c",
    "label_dp.c",
    "local_search.c",
    "pricing.c",
    "rng.c",
    "score.c",
    "table_dp.c",
    "validate.c",
))
# -pedantic is left out only because cffi's generated glue casts object pointers to function
# pointers; csolver/tests/run_sanitizers.sh compiles the solver sources with -pedantic too.
# -O3 over -O2: +5-6 % evaluations per second on Instance 9 (same search path), docs/decisions/0002.
CFLAGS = ["-std=c11", "-O3", "-Wall", "-Wextra", "-Werror"]

# The cdef is the header minus the preprocessor: cffi parses plain C declarations only. The
# progress fields are _Atomic for the solver and plain int64_t here (see generetic.h).
CDEF = """
typedef struct {
    int32_t n_employees, n_days, n_shifts, n_weekends, n_on, n_off;
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
    const int32_t *pin;
} gr_problem;

typedef struct {
    double time_limit;
    uint64_t seed;
    int32_t population;
    int32_t crash_for_test;
    int64_t max_evaluations;
    const int32_t *start;
    double start_heat;
    const int32_t *fallback;
} gr_config;

typedef struct {
    int64_t generation;
    int64_t population;
    int64_t best_hard;
    int64_t best_penalty;
    int64_t evaluations;
    int64_t first_feasible_ms;
    int64_t best_ms;
    int64_t cancel;
    int64_t cancelled;
    int64_t timed_out;
} gr_progress;

int gr_validate(const gr_problem *p);
int gr_score(const gr_problem *p, const int32_t *roster, int64_t *hard_out, int64_t *penalty_out);
int gr_solve(const gr_problem *p, const gr_config *cfg, gr_progress *progress,
             int32_t *roster_out);
typedef struct {
    int32_t rule, employee, day, length, shift, other;
    int64_t hard, penalty, value;
} gr_match;
int gr_explain(const gr_problem *p, const int32_t *roster, gr_match *out, int64_t capacity,
               int64_t *n_out, int64_t *minutes_out, int32_t *shifts_out, int32_t *cover_out);
int64_t gr_render_rows(const int32_t *roster, int32_t n_rows, int32_t n_days, int32_t n_values,
                       const char *text, const int64_t *row_at, const int64_t *value_at,
                       char *out, int64_t capacity);
int gr_price_rows(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                  int64_t *hard_out);
int gr_price_rows_bounded(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                          int64_t *hard_out, int64_t *bound_out);
int gr_price_rows_effort(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                         int64_t *hard_out, int64_t *bound_out, int64_t label_cap);
int gr_price_rows_range(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                        int64_t *hard_out, int64_t *bound_out, int64_t label_cap, int32_t first,
                        int32_t count);
int gr_price_rows_from(const gr_problem *p, const int64_t *cell_cost, int32_t *rows_out,
                       int64_t *hard_out, int64_t *bound_out, int64_t label_cap, int32_t first,
                       int32_t count, const int32_t *start_rows);
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "csolver._generetic",
    '#define GR_PLAIN_FIELDS 1\n#include "generetic.h"\n',
    sources=SOURCES,
    include_dirs=[str(HERE / "include")],
    extra_compile_args=CFLAGS,
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
