"""The solver's choices for one job, as pure functions: which implementation solves it, and
whether it is small enough to solve inline on the event loop."""

from __future__ import annotations

import math

from shared.roster.model import Implementation, SolveRequest

# The C solver's constructive start looks at every employee for every head of cover: 0.25 us
# a pair measured on a 366-day horizon (300 employees: 4 s; 1,000: no start within 15 s;
# 5,000: none within a minute, the roster returned all but empty). Counted at twice that.
C_START_SECONDS_PER_PAIR = 5e-7
# The start must fit in the share of the limit the genetic phase gets (csolver.COLUMN_SHARE
# goes to column generation first).
C_START_SHARE = 0.25


def c_start_seconds(request: SolveRequest) -> float:
    heads = sum(c.required for c in request.cover)
    return heads * len(request.employees) * C_START_SECONDS_PER_PAIR


def implementation_for(
    request: SolveRequest, default: Implementation, max_time_limit: float = math.inf
) -> Implementation:
    """A request that names its solver gets it; otherwise the deployment decides
    (`SOLVER_IMPLEMENTATION`), except that a request too large for the C solver to find any
    roster in its time limit goes to the greedy, which does (docs/decisions/0015)."""
    if request.solver.implementation is not None:
        return request.solver.implementation
    limit = min(request.solver.time_limit_seconds, max_time_limit)
    if default is Implementation.GENERETIC and c_start_seconds(request) > C_START_SHARE * limit:
        return Implementation.GREEDY
    return default


def solves_inline(request: SolveRequest, used: Implementation, max_cells: int) -> bool:
    """A greedy solve of a tiny roster runs on the event loop, its outcome batched.

    For such a roster the solve takes less time than the thread hop, the progress polling and
    the job record writes that guard a long solve; anything bigger (more than `max_cells`
    employee x day x shift cells, `SOLVER_INLINE_MAX_CELLS`), and every C solve (it may crash,
    so it runs isolated), takes the guarded path.
    """
    cells = len(request.employees) * request.horizon.days * len(request.shift_types)
    return used is Implementation.GREEDY and cells <= max_cells
