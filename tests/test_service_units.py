"""Unit tests of the services' pure parts: backoff, progress, the intake parser, the records."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from faststream.redis.message import bDATA_KEY
from faststream.redis.parser import BinaryMessageFormatV1
from faststream.redis.parser.parsers import RedisBatchStreamParser, SimpleParserConfig

from services.intake.parser import intake_body, intake_parser, lift_flat_fields, normalize
from services.intake.verdict import parse_not_before
from services.triage.backoff import backoff_ceiling, backoff_delay
from shared.jobs.messages import ErrorClass, IntakeEntry, Outcome, OutcomeKind
from shared.names import Names
from shared.roster.solving import Progress
from shared.settings import Settings
from shared.solving.progress import ProgressReporter
from shared.streaming.codec import batch_decoder, batch_parser, envelope

# --------------------------------------------------------------------------- backoff


def test_backoff_grows_exponentially_up_to_the_cap() -> None:
    ceilings = [backoff_ceiling(a, base=1, factor=2, cap=10) for a in range(1, 7)]
    assert ceilings == [1, 2, 4, 8, 10, 10]


def test_backoff_jitter_stays_between_half_and_the_ceiling() -> None:
    rng = random.Random(7)
    delays = [backoff_delay(3, base=1, factor=2, cap=60, rng=rng) for _ in range(500)]
    assert all(2 <= d <= 4 for d in delays)
    assert len({round(d, 3) for d in delays}) > 100  # jittered, not lock-step


# --------------------------------------------------------------------------- progress


def test_progress_is_throttled_to_the_interval() -> None:
    r = ProgressReporter("j", time_limit=10, interval=1.0)
    p = Progress(generation=3, total_generations=0, population=20, best_hard=0, best_penalty=12)
    sent = [r.outcome(p, t / 10) for t in range(0, 35)]  # 3.5 s polled every 100 ms
    assert sum(o is not None for o in sent) == 4  # at 0, 1, 2, 3 s


def test_progress_fields() -> None:
    r = ProgressReporter("j", time_limit=10)
    p = Progress(generation=5, total_generations=50, population=30, best_hard=1, best_penalty=7)
    o = r.outcome(p, 0.0)
    assert o is not None and o.kind is OutcomeKind.PROGRESS
    fields = o.event_fields()
    assert fields["phase"] == "genetic"
    assert fields["generation"] == "5/50"
    assert fields["best_score"] == "1hard/7soft"
    assert fields["population"] == "30"
    assert fields["lower_bound"] == ""
    assert 0 <= float(fields["progress"]) <= 100
    assert float(fields["eta_seconds"]) <= 10
    assert (
        fields["message"] == "Genetic search: generation 5 of ~50, best roster: penalty 7, "
        "1 hard rule broken"
    )


def test_first_anneal_names_the_roster_not_generation_zero() -> None:
    """On long horizons the first anneal (generation 0) is nearly the whole solve: its message
    leads with the best roster, which moves, not with a count that stays at 0."""
    r = ProgressReporter("j", time_limit=60)
    p = Progress(generation=0, population=0, best_hard=0, best_penalty=126473, phase="genetic")
    o = r.outcome(p, 0.0)
    assert o is not None
    assert o.message == "Genetic search: best roster: penalty 126473"


def test_column_phase_reports_its_bound_and_best_roster_not_generations() -> None:
    """The column phase has no generations or population: it says so with empty fields and
    gives what it has, the best roster and the LP bound (the solver's own `phase` when set)."""
    r = ProgressReporter("j", time_limit=10, implementation="generetic")
    p = Progress(best_hard=0, best_penalty=1330, lower_bound=1235.4)
    fields = r.outcome(p, 0.0).event_fields()  # type: ignore[union-attr]
    assert fields["phase"] == "columns"
    assert fields["generation"] == "" and fields["population"] == "0"
    assert fields["lower_bound"] == "1236"  # penalties are whole: the bound rounds up
    assert fields["message"] == (
        "Column generation: best roster: penalty 1330, LP bound 1236 (gap 7.6%)"
    )
    told = ProgressReporter("j", time_limit=10, implementation="generetic")
    said = told.outcome(Progress(phase="genetic", generation=0), 0.0)
    assert said is not None and said.phase == "genetic"


def test_genetic_phase_estimates_the_generations_its_time_holds() -> None:
    """A time-limited GA knows no total: the event's `g/expected` comes from its pace so far
    and the time left, and is empty until a pace is known (never `g/0`)."""
    r = ProgressReporter("j", time_limit=10, interval=1.0, implementation="generetic")
    p = Progress(generation=100, population=30, best_hard=0, best_penalty=50)
    p.started -= 4.0  # four seconds into the solve
    first = r.outcome(p, 100.0)
    assert first is not None and first.generation == ""
    p.generation = 300  # 200 generations a second
    p.started -= 1.0
    second = r.outcome(p, 101.0)
    assert second is not None
    g, expected = second.generation.split("/")  # type: ignore[union-attr]
    assert int(g) == 300
    # five seconds left at 200 a second: about 1300 in all
    assert 1250 <= int(expected) <= 1350, second.generation


def test_before_the_solver_says_anything_the_solve_is_starting() -> None:
    """An isolated solver's process is still starting, or the column phase is sizing the
    request up (a 364-day one it gives up at once): no phase is named, none is guessed."""
    r = ProgressReporter("j", time_limit=10, implementation="generetic")
    first = r.outcome(Progress(), 0.0).event_fields()  # type: ignore[union-attr]
    assert first["phase"] == "" and first["best_score"] == ""
    assert first["message"] == "Starting: no roster yet"
    # the greedy is one construction from the start
    greedy = ProgressReporter("j", time_limit=10, implementation="greedy")
    said = greedy.outcome(Progress(), 0.0)
    assert said is not None and said.message == "Greedy construction: no roster yet"


def test_without_a_phase_from_the_solver_the_clock_tells_it() -> None:
    """A roster from a solver that names no phase: the generetic solver gives column
    generation at most COLUMN_SHARE of its limit; a solver that reports its phase is
    believed instead."""
    import csolver
    from shared.solving.progress import COLUMN_SHARE

    assert COLUMN_SHARE == csolver.COLUMN_SHARE
    r = ProgressReporter("j", time_limit=10, interval=0, implementation="generetic")
    p = Progress(best_hard=0, best_penalty=1330)
    assert r.outcome(p, 0.0).phase == "columns"  # type: ignore[union-attr]
    p.started -= 8.0
    assert r.outcome(p, 1.0).phase == "genetic"  # type: ignore[union-attr]
    p.phase = "columns"
    assert r.outcome(p, 2.0).phase == "columns"  # type: ignore[union-attr]


def test_a_step_that_holds_the_best_roster_still_is_named_in_the_message() -> None:
    """A long solve's weekend plan (a third of its limit, the best penalty still): the message
    leads with the step and says what it does, the phase stays the v1 enum's; each of the
    solver's steps has words, and a step the reporter does not know is not shown."""
    from shared.roster.solving import STEP_PLAN, STEP_PLANNED, STEP_WEEKEND_MIP
    from shared.solving.progress import STEPS

    assert {STEP_PLAN, STEP_PLANNED, STEP_WEEKEND_MIP} == set(STEPS)
    r = ProgressReporter("j", time_limit=60, interval=0, implementation="generetic")
    p = Progress(phase="genetic", step="plan", best_hard=0, best_penalty=7665)
    o = r.outcome(p, 0.0)
    assert o is not None and o.phase == "genetic"
    assert o.message == (
        "Weekend plan: the weekends planned on the shift types merged; best roster: penalty 7665"
    )
    p.step, p.generation, p.lower_bound = "weekend_mip", 3, 7000.0
    assert r.outcome(p, 1.0).message == (  # type: ignore[union-attr]
        "Weekend MIP: the weekend days re-planned exactly; generation 3, best roster: penalty "
        "7665, LP bound 7000 (gap 9.5%)"
    )
    p.step = "something new"
    said = r.outcome(p, 2.0)
    assert said is not None and said.message.startswith("Genetic search: generation 3")


def test_phase_bound_and_step_cross_the_process_boundary() -> None:
    from shared.solving.isolation import _SLOTS, _pack, _unpack

    shared = [0] * _SLOTS
    _pack(Progress(phase="columns", lower_bound=1235.2, best_hard=0, best_penalty=9), shared)
    back = Progress()
    _unpack(shared, back)
    assert (back.phase, back.lower_bound, back.best_penalty) == ("columns", 1236.0, 9)
    assert back.step == ""
    _pack(Progress(phase="genetic", step="planned"), shared)
    _unpack(shared, back)
    assert (back.phase, back.step) == ("genetic", "planned")
    _pack(Progress(), shared)
    _unpack(shared, back)
    assert (back.phase, back.lower_bound, back.best_hard, back.step) == ("", None, -1, "")


def test_greedy_progress_says_greedy() -> None:
    r = ProgressReporter("j", time_limit=10, implementation="greedy")
    o = r.outcome(Progress(best_hard=0, best_penalty=9), 0.0)
    assert o is not None and o.phase == "greedy"
    assert o.message == "Greedy construction: best roster: penalty 9"


# --------------------------------------------------------------------------- intake parser


def test_flat_fields_are_lifted_into_body_and_headers() -> None:
    body, headers = lift_flat_fields(
        {
            b"type": b"solve",
            b"job_id": b"j1",
            b"payload": b"{}",
            b"traceparent": b"00-abc-def-01",
            b"colour": b"blue",
        }
    )
    assert body == {"type": "solve", "job_id": "j1", "payload": "{}", "other": {"colour": "blue"}}
    assert headers == {"traceparent": "00-abc-def-01"}


def test_envelope_from_flat_fields_parses_back() -> None:
    data, headers = BinaryMessageFormatV1.parse(
        asyncio.run(normalize({b"type": b"solve", b"job_id": b"x", b"tracestate": b"k=v"}))[
            bDATA_KEY
        ]
    )
    assert json.loads(data) == {"type": "solve", "job_id": "x"}
    assert headers["tracestate"] == "k=v"


class _Parsed:
    def __init__(self, body: bytes) -> None:
        self.body = body
        self.content_type: str | None = None


def _run_parser(data: dict[bytes, bytes]) -> Any:
    seen: dict[str, Any] = {}

    async def original(msg: Any) -> Any:
        seen["msg"] = msg
        body, _ = BinaryMessageFormatV1.parse(msg["data"][bDATA_KEY])
        return _Parsed(body)

    parsed = asyncio.run(intake_parser({"type": "stream", "data": data}, original))
    return parsed, seen["msg"]


def test_parser_keeps_faststream_envelopes_body_and_headers() -> None:
    envelope = asyncio.run(
        BinaryMessageFormatV1.encode(
            message=b'{"type": "solve", "job_id": "p1"}',
            reply_to=None,
            headers={"traceparent": "00-abc-def-01"},
            correlation_id="c",
        )
    )
    parsed, msg = _run_parser({bDATA_KEY: envelope})
    _, headers = BinaryMessageFormatV1.parse(msg["data"][bDATA_KEY])
    assert headers["traceparent"] == "00-abc-def-01"
    assert json.loads(parsed.body)["job_id"] == "p1"


def test_a_batch_read_decodes_every_entry_into_the_model() -> None:
    """One garbage entry must not make the whole batch undecodable (it would stay pending)."""
    good = {b"type": b"solve", b"job_id": b"a", b"traceparent": b"00-abc-def-01"}
    garbage = {bDATA_KEY: b"\xff\xfe not json"}
    raw = {
        "type": "bstream",
        "channel": "workforce-solver",
        "data": [good, garbage],
        "message_ids": [b"1-0", b"1-1"],
    }
    original = RedisBatchStreamParser(config=SimpleParserConfig(BinaryMessageFormatV1))

    async def decode() -> tuple[Any, list[IntakeEntry]]:
        msg = await batch_parser(intake_body)(raw, original.parse_message)
        return msg, await batch_decoder(IntakeEntry)(msg, original.decode_message)

    msg, entries = asyncio.run(decode())
    assert entries[0] == IntakeEntry(type="solve", job_id="a")
    assert entries[1].job_id is None
    assert entries[1].other == {"__data__": "\\xff\\xfe not json"}  # for the dead letter
    assert msg.batch_headers[0]["traceparent"] == "00-abc-def-01"
    assert msg.headers["traceparent"] == "00-abc-def-01"  # the batch span's parent
    assert msg.raw_message["message_ids"] == [b"1-0", b"1-1"]  # what the ack sends


def test_a_batch_of_internal_entries_decodes_their_envelopes() -> None:
    outcomes = [Outcome(kind=OutcomeKind.ACCEPTED, job_id=f"j{i}") for i in range(3)]
    data = [
        {bDATA_KEY: asyncio.run(envelope(o.model_dump_json().encode(), {"traceparent": f"t{i}"}))}
        for i, o in enumerate(outcomes)
    ]
    raw = {"type": "bstream", "channel": "c", "data": data, "message_ids": [b"1-0"] * 3}
    original = RedisBatchStreamParser(config=SimpleParserConfig(BinaryMessageFormatV1))

    async def decode() -> tuple[Any, list[Outcome]]:
        msg = await batch_parser()(raw, original.parse_message)
        return msg, await batch_decoder(Outcome)(msg, original.decode_message)

    msg, decoded = asyncio.run(decode())
    assert decoded == outcomes
    assert [h["traceparent"] for h in msg.batch_headers] == ["t0", "t1", "t2"]


def test_a_flat_entry_with_a_data_field_stays_flat() -> None:
    body, _ = intake_body({b"type": b"solve", b"job_id": b"j1", bDATA_KEY: b"x"})
    entry = IntakeEntry.model_validate_json(body)
    assert entry.job_id == "j1" and entry.other == {"__data__": "x"}


def test_fields_that_are_not_utf8_are_named_and_kept_escaped() -> None:
    a, _ = intake_body({b"type": b"solve", b"job_id": b"\xffbin"})
    b, _ = intake_body({b"type": b"solve", b"job_id": b"\xfebin"})
    ea, eb = IntakeEntry.model_validate_json(a), IntakeEntry.model_validate_json(b)
    assert ea.defect == eb.defect == "job_id: not valid UTF-8"
    assert ea.job_id != eb.job_id and ea.job_id == "\\xffbin"
    ok, _ = intake_body({b"type": b"solve", b"job_id": "é".encode()})
    assert IntakeEntry.model_validate_json(ok).defect is None
    # Any other field that is not UTF-8 makes the request invalid under its own id.
    bad, _ = intake_body({b"type": b"solve", b"job_id": b"j1", b"payload": b"{\xff}"})
    entry = IntakeEntry.model_validate_json(bad)
    assert entry.defect is None and entry.unreadable == "payload: not valid UTF-8"


def test_parser_turns_garbage_into_an_object() -> None:
    envelope = asyncio.run(
        BinaryMessageFormatV1.encode(
            message=b"\xff\xfe not json", reply_to=None, headers={}, correlation_id="c"
        )
    )
    parsed, _ = _run_parser({bDATA_KEY: envelope})
    entry = IntakeEntry.model_validate_json(parsed.body)
    assert entry.job_id is None and entry.type is None


# --------------------------------------------------------------------------- records


def test_intake_entry_accepts_objects_and_odd_scalars() -> None:
    e = IntakeEntry.model_validate({"type": "solve", "job_id": 42, "payload": {"a": 1}})
    assert e.job_id == "42"
    assert json.loads(e.payload or "") == {"a": 1}


def test_failed_event_fields_are_flat_strings() -> None:
    o = Outcome(
        kind=OutcomeKind.FAILED,
        job_id="j",
        error_class=ErrorClass.INVALID,
        reason="employees: field required",
        attempts=0,
        dead_letter_id="dl-j-0",
    )
    f = o.event_fields()
    assert f["type"] == "solver.failed"
    assert f["error_class"] == "invalid" and f["attempts"] == "0"
    assert all(isinstance(v, str) for v in f.values())


def test_completed_event_fields() -> None:
    o = Outcome(
        kind=OutcomeKind.COMPLETED,
        job_id="j",
        result="{}",
        solve_time_ms=12.4,
        solver_used="greedy",
        attempts=2,
    )
    f = o.event_fields()
    assert (f["solve_time_ms"], f["solver_used"], f["attempts"]) == ("12", "greedy", "2")
    assert "cancelled" not in f


def test_not_before_without_zone_is_utc() -> None:
    assert parse_not_before("1970-01-01T00:01:00") == 60.0
    assert parse_not_before("1970-01-01T00:01:00Z") == 60.0
    with pytest.raises(ValueError):
        parse_not_before("tomorrow")


def test_names_take_the_prefix_and_share_hash_tags() -> None:
    n = Names.from_settings(Settings(shiftstream_prefix="acme:"))
    assert n.jobs == "acme:solver.jobs" and n.events == "acme:solver-events"
    # The tag of each side key is exactly the stream it is scripted with (one Cluster slot).
    assert n.schedule.startswith("{" + n.jobs + "}")
    assert n.terminal("j1").startswith("{" + n.events + "}")
    assert n.job("j1") == "acme:job:{j1}"


# --------------------------------------------------------------------------- gc tuning


def test_gc_tuning_still_reclaims_reference_cycles_on_its_own() -> None:
    """A service collects less often (shared/streaming/gc_tuning.py); cycles must not pile up."""
    import gc
    import weakref

    from shared.streaming.gc_tuning import YOUNG_THRESHOLD, tune_for_service

    before = gc.get_threshold()
    try:
        tune_for_service()
        assert gc.get_freeze_count() > 0  # start-up objects are out of the collector's walk

        class Node:
            def __init__(self) -> None:
                self.me = self

        freed = []
        for _ in range(1_000):
            weakref.finalize(Node(), freed.append, 1)
        assert len(freed) < 1_000  # cycles: reference counting alone cannot free them
        # Enough allocations to cross the young threshold, as a busy service does: the
        # collector runs by itself, no explicit gc.collect().
        keep = [[i] for i in range(2 * YOUNG_THRESHOLD)]
        assert keep and len(freed) == 1_000
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


# --------------------------------------------------------------------------- command packing


def test_hiredis_packing_sends_the_bytes_redis_py_would() -> None:
    from redis.asyncio.connection import Connection

    from shared.connection.packing import HiredisConnection

    commands: list[tuple[Any, ...]] = [
        ("XADD", "solver.jobs", "MAXLEN", "~", 10_000, "*", b"__data__", b"\x00\xff" * 900),
        ("HSET", "job:{ä}", "state", "queued", "attempts", 0, "not_before", 1764484800.123456),
        ("XINFO GROUPS", "solver.jobs"),  # a two-word name goes out as two arguments
        (b"SCRIPT LOAD", "return 1"),
        ("SET", "k", memoryview(b"view"), "EX", 60),
        ("SET", "k", bytearray(b"array")),
    ]
    ours, theirs = HiredisConnection(), Connection()
    for cmd in commands:
        assert ours.pack_command(*cmd) == [b"".join(theirs.pack_command(*cmd))]
    assert ours.pack_commands(commands) == [b"".join(theirs.pack_commands(commands))]


def test_a_large_argument_goes_out_as_it_is_beside_the_packed_rest() -> None:
    # A 12 MB roster copied into hiredis's growing buffer took 90 ms in a new process.
    from redis.asyncio.connection import Connection

    from shared.connection.packing import LARGE_ARG_BYTES, HiredisConnection

    big = bytes(range(256)) * (LARGE_ARG_BYTES // 256 + 1)
    commands: list[tuple[Any, ...]] = [
        ("SET", "{solver-events}:result:j:1", big, "EX", 86400),
        ("XADD", "s", "*", "result", big, "n", 3.5, "again", memoryview(big)),
        ("SET", "k", bytearray(big)),
    ]
    ours, theirs = HiredisConnection(), Connection()
    for cmd in commands:
        pieces = ours.pack_command(*cmd)
        assert b"".join(bytes(p) for p in pieces) == b"".join(theirs.pack_command(*cmd))
        large = [a for a in cmd if isinstance(a, bytes | bytearray | memoryview)]
        assert all(any(p is a for p in pieces) for a in large), "a large argument was copied"


@pytest.mark.parametrize("bad", [None, True, [1], {"a": 1}])
def test_hiredis_packing_refuses_what_redis_py_refuses(bad: Any) -> None:
    from redis.asyncio.connection import Connection
    from redis.exceptions import DataError

    from shared.connection.packing import HiredisConnection

    for conn in (HiredisConnection(), Connection()):
        with pytest.raises(DataError):
            conn.pack_command("SET", "k", bad)
        with pytest.raises(DataError):  # beside a large argument too
            conn.pack_command("SET", "k", b"x" * 100_000, bad)


def test_connection_class_follows_the_url_scheme() -> None:
    from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection

    from shared.connection.packing import connection_class

    assert issubclass(connection_class("rediss://h:6380/0"), SSLConnection)
    assert issubclass(connection_class("unix:///run/redis.sock"), UnixDomainSocketConnection)
    plain = connection_class("redis://127.0.0.1:6379/0")
    assert not issubclass(plain, SSLConnection | UnixDomainSocketConnection)


def test_a_payload_over_the_limit_is_not_carried_only_its_size() -> None:
    from services.intake.parser import MAX_PAYLOAD_BYTES
    from services.intake.verdict import judge
    from shared.roster.limits import Limits

    huge = b"x" * (MAX_PAYLOAD_BYTES + 1)
    body, _ = intake_body({b"type": b"solve", b"job_id": b"big", b"payload": huge})
    assert len(body) < 1000
    entry = IntakeEntry.model_validate_json(body)
    assert entry.job_id == "big" and entry.payload_bytes == MAX_PAYLOAD_BYTES + 1
    reason = judge(entry, Limits()).reason
    assert (
        reason
        == f"payload: {MAX_PAYLOAD_BYTES + 1} bytes is over the limit of {MAX_PAYLOAD_BYTES} bytes"
    )
    # A job id that large cannot be used: refused under an anon- id, not rewritten.
    body, _ = intake_body({b"type": b"solve", b"job_id": huge})
    assert IntakeEntry.model_validate_json(body).defect == (
        f"job_id: {MAX_PAYLOAD_BYTES + 1} bytes is over the limit of {MAX_PAYLOAD_BYTES}"
    )
    # Any other field that large: invalid under the job id.
    body, _ = intake_body({b"type": b"solve", b"job_id": b"j2", b"blob": huge})
    entry = IntakeEntry.model_validate_json(body)
    assert entry.defect is None and entry.unreadable is not None
    assert judge(entry, Limits()).reason == entry.unreadable


# --------------------------------------------------------------------------- where a solve runs


def test_every_c_solve_and_the_solvers_large_greedy_ones_run_in_a_child_process() -> None:
    from shared.roster.model import Implementation
    from shared.solving.run import ISOLATED_GREEDY_MIN_CELLS, runs_isolated

    big, small = ISOLATED_GREEDY_MIN_CELLS, ISOLATED_GREEDY_MIN_CELLS - 1
    generetic, greedy = Implementation.GENERETIC, Implementation.GREEDY
    assert runs_isolated(generetic, 10, "solver", "process")
    assert runs_isolated(generetic, 10, "fallback", "process")
    assert runs_isolated(greedy, big, "solver", "process")
    assert not runs_isolated(greedy, small, "solver", "process")
    # The fallback is the last resort: its greedy runs in-process at any size.
    assert not runs_isolated(greedy, big, "fallback", "process")
    # A deployment that runs solves in threads gets threads.
    assert not runs_isolated(generetic, big, "solver", "thread")
    assert not runs_isolated(greedy, big, "solver", "thread")
