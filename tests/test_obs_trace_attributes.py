"""Spans carry the job: `job.id` on every hop, the attempt, the error class, the solve figures.

Needs the handlers to call `shared.observability.tracing.job_scope` / `solve_span`
(docs/observability.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import StackFactory, request_json
from tests.test_obs_tracing import Receiver, _dump, _stack, _traceparent, _wait_trace
from tests.test_services import _broken_csolver

pytestmark = pytest.mark.redis


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.stop()


def test_every_hop_carries_the_job_and_the_solve_its_figures(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    stack = _stack(make_stack, receiver)
    trace_id, parent, header = _traceparent()
    job = stack.submit(request_json(time_limit=1.5), traceparent=header)
    stack.wait_terminal(job)
    spans = _wait_trace(
        receiver, trace_id, parent, stack, [("solver", "intake"), ("notifier", "solver")]
    )
    for service in ("intake", "solver", "notifier"):
        own = [s for s in spans if s.service == f"shiftstream-{service}"]
        # A trace search by job id (Jaeger tags, `shiftstream trace`) finds every hop.
        assert any(s.attributes.get("job.id") == job for s in own), (service, _dump(spans))
    [solve] = [s for s in spans if s.name == "solve"]
    assert solve.service == "shiftstream-solver"
    assert solve.attributes["job.id"] == job and solve.attributes["job.attempt"] == 1
    assert solve.attributes["solver.used"] == "generetic"
    for key in ("solver.generations", "solver.evaluations", "solver.best_score.soft"):
        assert key in solve.attributes, _dump(spans)
    assert "solver.time_to_first_feasible_ms" in solve.attributes
    # The job's spans are all in the monolith's trace, none scattered over other traces.
    elsewhere = [
        s for s in receiver.spans if s.attributes.get("job.id") == job and s.trace_id != trace_id
    ]
    assert not elsewhere, _dump(elsewhere)


def test_attempts_and_error_class_are_on_the_spans(
    make_stack: StackFactory, receiver: Receiver, tmp_path: Path
) -> None:
    stack = _stack(
        make_stack,
        receiver,
        env={"SOLVER_ALLOW_FALLBACK": "false", "RETRY_MAX_ATTEMPTS": "2"},
        cwd=_broken_csolver(tmp_path),
    )
    trace_id, parent, header = _traceparent()
    job = stack.submit(request_json(), traceparent=header)
    stack.wait_terminal(job)
    hops = [
        ("solver", "intake"),
        ("triage", "solver"),
        ("solver", "triage"),
        ("notifier", "triage"),
    ]
    spans = _wait_trace(receiver, trace_id, parent, stack, hops, attempts=2)
    solver = [
        s for s in spans if s.service == "shiftstream-solver" and s.attributes.get("job.id") == job
    ]
    assert {s.attributes.get("job.attempt") for s in solver} >= {1, 2}, _dump(spans)
    failed = [s for s in solver if s.attributes.get("error.class")]
    assert failed and all(s.status_code == 2 for s in failed), _dump(spans)
    assert {s.attributes["error.class"] for s in failed} == {"crash"}
