"""Issue 22, against a real Redis and the running services: what a hostile or careless producer
sends is answered exactly once, under the id it sent, or dead-lettered with the raw entry."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from shared.cli.devrunner import SERVICES, Supervisor
from shared.observability.health import check
from shared.observability.queue_stats import collect
from tests.conftest import Stack, StackFactory, request_json

pytestmark = pytest.mark.redis


def dead_letters(stack: Stack) -> list[dict[str, Any]]:
    return stack.records(stack.names.dead)


def letter_with(stack: Stack, field: str, value: str) -> dict[str, Any]:
    stack.wait_for(
        lambda: any((d["raw"] or {}).get(field) == value for d in dead_letters(stack)),
        what=f"a dead letter holding {field}={value!r}",
    )
    return next(d for d in dead_letters(stack) if (d["raw"] or {}).get(field) == value)


def test_an_id_with_surrounding_whitespace_is_refused_not_taken_for_another(
    stack: Stack,
) -> None:
    plain = f"ws-{uuid.uuid4().hex[:8]}"
    padded = f" {plain} "
    stack.submit(request_json(implementation="greedy"), job_id=plain)
    assert stack.wait_terminal(plain)[plain]["type"] == "solver.completed"
    stack.submit(request_json(implementation="greedy"), job_id=padded)
    letter = letter_with(stack, "job_id", padded)
    assert letter["job_id"].startswith("anon-")
    assert "surrounding whitespace" in letter["reason"]
    failed = stack.wait_terminal(letter["job_id"])[letter["job_id"]]
    assert failed["error_class"] == "invalid"
    assert len(stack.terminal(plain)) == 1  # the padded request did not touch `plain`


def test_two_ids_that_are_not_utf8_are_two_dead_letters(stack: Stack) -> None:
    tag = uuid.uuid4().hex[:8].encode()
    ids = [b"\xffbin-" + tag, b"\xfebin-" + tag]
    for raw_id in ids:
        stack.raw.xadd(
            stack.names.intake,
            {b"type": b"solve", b"job_id": raw_id, b"payload": request_json().encode()},
        )
    letters = [letter_with(stack, "job_id", raw_id.decode("utf-8", "backslashreplace"))
               for raw_id in ids]  # fmt: skip
    assert letters[0]["job_id"] != letters[1]["job_id"]
    for letter in letters:
        assert letter["job_id"].startswith("anon-")
        assert letter["reason"] == "job_id: not valid UTF-8"
    stack.wait_terminal(*(letter["job_id"] for letter in letters))
    assert stack.pending("intake") == 0


def test_a_field_named_data_does_not_make_an_envelope(stack: Stack) -> None:
    job = f"data-{uuid.uuid4().hex[:8]}"
    stack.xadd(
        {"type": "solve", "job_id": job, "payload": request_json(implementation="greedy"),
         "__data__": "not an envelope"}
    )  # fmt: skip
    assert stack.wait_terminal(job)[job]["type"] == "solver.completed"


def test_a_broken_envelope_is_dead_lettered_with_what_was_sent(stack: Stack) -> None:
    marker = f"garbage-{uuid.uuid4().hex[:8]}"
    stack.xadd({"__data__": marker})
    stack.wait_for(
        lambda: any(marker in str(d["raw"]) for d in dead_letters(stack)),
        what="the broken envelope's dead letter",
    )
    letter = next(d for d in dead_letters(stack) if marker in str(d["raw"]))
    assert letter["job_id"].startswith("anon-") and letter["reason"] == "job_id: missing"
    time.sleep(0.3)
    assert stack.pending("intake") == 0


# ------------------------------------------------------------------ not_before and memory


def test_not_before_beyond_the_horizon_is_invalid(stack: Stack) -> None:
    job = stack.submit(request_json(), not_before="9999-12-31T00:00:00Z")
    failed = stack.wait_terminal(job)[job]
    assert failed["error_class"] == "invalid"
    assert "not_before" in failed["reason"] and "90 days" in failed["reason"]
    assert stack.redis.zcard(stack.names.schedule) == 0 or not any(
        job in str(m) for m in stack.raw.zrange(stack.names.schedule, 0, -1)
    )


def test_a_scheduled_job_lives_until_it_is_due_and_a_cancel_removes_it_at_once(
    stack: Stack,
) -> None:
    due = dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    job = stack.submit(request_json(), not_before=due.isoformat())
    stack.wait_for(lambda: stack.job(job).get("state") == "scheduled", what="scheduled")
    # The request stays in Redis until it is due, and so do its id and record.
    month = 30 * 24 * 3600
    assert stack.redis.ttl(stack.names.idempotency(job)) > month
    assert stack.redis.ttl(stack.names.job(job)) > month
    assert stack.redis.hexists(stack.names.scheduled, job)
    stack.xadd({"type": "cancel", "job_id": job})
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.failed" and done["error_class"] == "cancelled"
    assert not stack.redis.hexists(stack.names.scheduled, job)
    assert f"ref:{job}" not in stack.redis.zrange(stack.names.schedule, 0, -1)
    stack.wait_for(lambda: stack.job(job).get("state") == "failed", what="record failed")


# ------------------------------------------------------------ what the ACL cannot forbid


def intake_only(stack: Stack, log_dir: Path) -> Supervisor:
    """The intake alone, on `stack`'s prefix, started when the test wants it."""
    return Supervisor(
        stack.supervisor.env, {s: int(s == "intake") for s in SERVICES}, log_dir=log_dir, grace=10
    )


def test_requests_trimmed_away_by_a_producer_are_detected_and_lag_recovers(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack = make_stack(env={"TRIM_INTERVAL_SECONDS": "0.3"}, scale={"intake": 0})
    stream, group = stack.names.groups["intake"]
    stack.redis.xgroup_create(stream, group, id="0", mkstream=True)  # as the intake does
    # An intake that ran before: the group has read and acked an entry.
    stack.xadd({"type": "cancel", "job_id": "before"})
    for _, entries in stack.redis.xreadgroup(group, "earlier", {stream: ">"}):
        stack.redis.xack(stream, group, *(i for i, _ in entries))
    for i in range(50):
        stack.submit(request_json(), job_id=f"lost-{i}")
    # What the monolith user may do and the ACL cannot refuse.
    stack.redis.xadd(stream, {"type": "cancel", "job_id": "nothing"}, maxlen=0, approximate=False)
    info = next(g for g in stack.redis.xinfo_groups(stream) if g["name"] == group)
    assert info["lag"] == 51  # Redis's own figure, stuck: what a health check or KEDA sees
    intake = intake_only(stack, tmp_path)
    intake.start()
    try:
        stack.wait_for(
            lambda: bool(collect(stack.redis, stack.names).alerts), what="an intake alert"
        )
        (alert,) = collect(stack.redis, stack.names).alerts
        assert alert.startswith("51 requests left") and "MAXLEN" in alert  # MAXLEN 0: its own too
        # The group's lag is repaired: KEDA and the liveness probe see no phantom backlog.
        info = next(g for g in stack.redis.xinfo_groups(stream) if g["name"] == group)
        assert info["lag"] == 0
        probe = dict(names=stack.names, prefix="nobody-", max_idle_ms=1)
        assert check(stack.redis, "intake", "live", **probe).ok  # type: ignore[arg-type]
        ready = check(stack.redis, "intake", "ready", **probe)  # type: ignore[arg-type]
        assert not ready.ok and "vanished" in ready.reason
        # The intake goes on: a request after the trim is answered.
        job = stack.submit(request_json(implementation="greedy"))
        stack.wait_for(lambda: bool(stack.events(job)), what="the next request accepted")
        assert stack.redis.hget(stack.names.alerts, "intake_vanished") == "51"
    finally:
        intake.stop()


def test_a_stream_id_from_the_far_future_raises_an_alert(make_stack: StackFactory) -> None:
    stack = make_stack(env={"TRIM_INTERVAL_SECONDS": "0.3"})
    job = stack.submit(request_json(implementation="greedy"))
    stack.wait_terminal(job)
    stack.redis.xadd(
        stack.names.intake, {"type": "cancel", "job_id": "x"}, id="18446744073709551615-1"
    )
    stack.wait_for(
        lambda: any("ahead of the clock" in a for a in collect(stack.redis, stack.names).alerts),
        what="the alert",
    )
    probe = dict(names=stack.names, prefix="nobody-", max_idle_ms=1)
    ready = check(stack.redis, "intake", "ready", **probe)  # type: ignore[arg-type]
    assert not ready.ok and "18446744073709551615-1" in ready.reason
    assert check(stack.redis, "intake", "live", **probe).ok  # type: ignore[arg-type]
