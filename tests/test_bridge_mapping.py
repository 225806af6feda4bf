"""The BullMQ bridge's decisions as pure functions (services/bridge/mapping.py): queue names,
BullMQ priority → ShiftStream priority, delay → not_before, the intake entry a BullMQ job
becomes, and what a terminal event does to the BullMQ job."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from services.bridge.bridge import split
from services.bridge.mapping import (
    Complete,
    ConfigError,
    Fail,
    HandOver,
    Refusal,
    Rules,
    conflict_reason,
    ending,
    ending_from_record,
    hand_over,
    not_before,
    parse_queues,
    priority_name,
    trace_fields,
)
from services.intake.verdict import judge, parse_not_before
from shared.jobs.events import MAX_JOB_ID, SolveEntry
from shared.jobs.messages import IntakeEntry
from shared.roster.limits import Limits
from tests.conftest import request_json

RULES = Rules(("workforce-solver",))
TS = 1_767_600_000_000  # 2026-01-05T08:00:00Z in ms
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


# ------------------------------------------------------------------------------ settings


def test_queues_are_a_comma_list_and_empty_means_off() -> None:
    assert parse_queues("") == ()
    assert parse_queues("  ") == ()
    assert parse_queues("workforce-solver") == ("workforce-solver",)
    assert parse_queues(" a , b ") == ("a", "b")


@pytest.mark.parametrize(
    ("raw", "names"),
    [("a,,b", "empty"), ("a:b", "':'"), ("a,a", "twice")],
)
def test_bad_queue_lists_are_refused_in_one_line_naming_the_setting(raw: str, names: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_queues(raw)
    assert str(err.value).startswith("BULLMQ_QUEUES:") and names in str(err.value)
    assert "\n" not in str(err.value)


def test_priority_bands_must_not_overlap() -> None:
    with pytest.raises(ConfigError, match="BULLMQ_PRIORITY_LOW_MIN"):
        Rules.parse("q", high_max=5, low_min=5)
    with pytest.raises(ConfigError, match="BULLMQ_PRIORITY_UNSET"):
        Rules.parse("q", unset="urgent")
    assert Rules.parse("q", high_max=2, low_min=3, unset="high") == Rules(("q",), 2, 3, "high")


# ------------------------------------------------------------------------------ priority


@pytest.mark.parametrize(
    ("priority", "name"),
    [
        (None, "normal"),  # no priority option
        (0, "normal"),  # BullMQ's "no priority"
        (1, "high"),  # the snippet: priority: 1
        (2, "normal"),
        (9, "normal"),
        (10, "low"),
        (2_097_152, "low"),  # BullMQ's largest
        (-3, "normal"),
    ],
)
def test_bullmq_priority_maps_onto_three_names(priority: int | None, name: str) -> None:
    assert priority_name(priority, RULES) == name


def test_priority_bands_follow_the_settings() -> None:
    rules = Rules(("q",), high_max=3, low_min=4, unset="high")
    assert [priority_name(p, rules) for p in (0, 1, 3, 4, 50)] == [
        "high", "high", "high", "low", "low",
    ]  # fmt: skip


def test_lower_bullmq_numbers_never_map_to_a_lower_priority() -> None:
    order = {"low": 0, "normal": 1, "high": 2}
    ranks = [order[priority_name(p, RULES)] for p in range(1, 200)]
    assert ranks == sorted(ranks, reverse=True)


# ------------------------------------------------------------------------------ delay, trace


def test_delay_becomes_not_before_that_the_intake_reads_back() -> None:
    assert not_before(TS, 0) is None
    at = not_before(TS, 90_000)
    assert at == "2026-01-05T08:01:30.000+00:00"
    assert parse_not_before(at) == (TS + 90_000) / 1000
    SolveEntry.model_validate(
        {"type": "solve", "job_id": "j", "payload": "{}", "not_before": at}
    )  # the published contract's pattern


def test_trace_context_comes_from_bullmq_otel_metadata_only_when_well_formed() -> None:
    tm = json.dumps({"traceparent": PARENT, "tracestate": "k=v"})
    assert trace_fields({"tm": tm}) == {"traceparent": PARENT, "tracestate": "k=v"}
    assert trace_fields({}) == {}
    assert trace_fields({"tm": "not json"}) == {}
    assert trace_fields({"tm": json.dumps({"traceparent": "00-xyz"})}) == {}
    assert trace_fields({"tm": json.dumps(["x"])}) == {}


# ------------------------------------------------------------------------------ hand-over


def test_a_bullmq_job_becomes_a_valid_intake_entry() -> None:
    data = json.loads(request_json())
    plan = hand_over(
        "workforce-solver", "roster-42", TS, data, {"attempts": 3, "delay": 0}, 1, RULES
    )
    assert isinstance(plan, HandOver)
    assert plan.job_id == "roster-42"
    assert plan.identity == f"workforce-solver:{TS}"
    assert plan.fields == {
        "type": "solve",
        "job_id": "roster-42",
        "payload": plan.fields["payload"],
        "priority": "high",
    }
    assert json.loads(plan.fields["payload"]) == data
    # The intake takes it as it is: a valid request under the BullMQ job id.
    entry = IntakeEntry.model_validate(plan.fields)
    assert judge(entry, Limits()).reason is None
    SolveEntry.model_validate(plan.fields)


def test_data_sent_as_json_text_passes_unchanged_and_delay_sets_not_before() -> None:
    text = request_json()
    plan = hand_over("q", "7", TS, text, {"delay": 5000}, 0, RULES)
    assert isinstance(plan, HandOver)
    assert plan.fields["payload"] == text
    assert plan.fields["priority"] == "normal"
    assert plan.fields["not_before"] == "2026-01-05T08:00:05.000+00:00"


def test_job_ids_the_contract_cannot_carry_are_refused() -> None:
    too_long = "r" * (MAX_JOB_ID + 1)
    refused = hand_over("q", too_long, TS, {}, {}, 0, RULES)
    assert isinstance(refused, Refusal) and str(MAX_JOB_ID) in refused.reason
    assert isinstance(hand_over("q", "r" * MAX_JOB_ID, TS, {}, {}, 0, RULES), HandOver)
    assert isinstance(hand_over("q", "", TS, {}, {}, 0, RULES), Refusal)


def test_the_same_id_from_another_queue_or_time_is_another_job() -> None:
    a = hand_over("a", "1", TS, {}, {}, 0, Rules(("a", "b")))
    b = hand_over("b", "1", TS, {}, {}, 0, Rules(("a", "b")))
    later = hand_over("a", "1", TS + 1, {}, {}, 0, Rules(("a", "b")))
    assert isinstance(a, HandOver) and isinstance(b, HandOver) and isinstance(later, HandOver)
    assert len({a.identity, b.identity, later.identity}) == 3
    reason = conflict_reason("1", a.identity, 86400)
    assert "'a'" in reason and "2026-01-05T08:00:00" in reason and "jobId" in reason


# ------------------------------------------------------------------------------ the ending


def test_completed_returns_the_roster_object() -> None:
    roster = {"version": 1, "assignments": [], "score": {"hard_violations": 0}}
    end = ending(
        {
            "type": "solver.completed",
            "job_id": "j",
            "result": json.dumps(roster),
            "solver_used": "generetic",
            "solve_time_ms": "1200",
            "attempts": "1",
        }
    )
    assert isinstance(end, Complete) and end.value == roster
    assert "generetic" in end.summary and "1200 ms" in end.summary


def test_a_cancelled_solve_with_a_roster_completes_and_says_so() -> None:
    end = ending({"type": "solver.completed", "result": "{}", "cancelled": "true"})
    assert isinstance(end, Complete) and "cancelled" in end.summary


def test_failed_carries_error_class_and_reason() -> None:
    end = ending(
        {
            "type": "solver.failed",
            "error_class": "invalid",
            "reason": "employees.0.max_minutes: must be >= 0 (got -5)",
            "attempts": "0",
            "dead_letter_id": "dl-7",
        }
    )
    assert isinstance(end, Fail)
    assert end.message == (
        "invalid: employees.0.max_minutes: must be >= 0 (got -5) (dead letter dl-7)"
    )
    cancelled = ending({"type": "solver.failed", "error_class": "cancelled", "reason": ""})
    assert isinstance(cancelled, Fail) and cancelled.message == "cancelled"


def test_an_ending_whose_event_is_gone_comes_from_the_job_record() -> None:
    failed = ending_from_record(
        "j", {"state": "failed", "error_class": "exhausted", "last_error": "boom"}
    )
    assert isinstance(failed, Fail) and failed.message == "exhausted: boom"
    lost = ending_from_record("j", {"state": "completed"})
    assert isinstance(lost, Fail) and "EVENTS_MAXLEN" in lost.message
    assert "completed job 'j'" in lost.message
    # The guard says it ended, the record had no time to say how (a notifier crash between).
    unknown = ending_from_record("j", {"state": "running"})
    assert isinstance(unknown, Fail) and "ended job 'j'" in unknown.message


# ------------------------------------------------------------------------------ capacity


@pytest.mark.parametrize(("total", "workers"), [(1, 1), (50, 1), (51, 2), (1000, 20)])
def test_held_jobs_are_spread_over_workers_of_at_most_50(total: int, workers: int) -> None:
    parts = split(total)
    assert len(parts) == workers and sum(parts) == total
    assert max(parts) <= 50 and max(parts) - min(parts) <= 1


def test_not_before_is_utc() -> None:
    at = not_before(TS, 1)
    assert at is not None and dt.datetime.fromisoformat(at).utcoffset() == dt.timedelta(0)
