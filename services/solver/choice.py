"""The solver's choices for one job, as pure functions: which implementation solves it, and
whether it is small enough to solve inline on the event loop."""

from __future__ import annotations

from shared.roster.model import Implementation, SolveRequest


def implementation_for(request: SolveRequest, default: Implementation) -> Implementation:
    """A request that names its solver gets it; otherwise the deployment decides
    (`SOLVER_IMPLEMENTATION`)."""
    return request.solver.implementation or default


def solves_inline(request: SolveRequest, used: Implementation, max_cells: int) -> bool:
    """A greedy solve of a tiny roster runs on the event loop, its outcome batched.

    For such a roster the solve takes less time than the thread hop, the progress polling and
    the job record writes that guard a long solve; anything bigger (more than `max_cells`
    employee x day x shift cells, `SOLVER_INLINE_MAX_CELLS`), and every C solve (it may crash,
    so it runs isolated), takes the guarded path.
    """
    cells = len(request.employees) * request.horizon.days * len(request.shift_types)
    return used is Implementation.GREEDY and cells <= max_cells
