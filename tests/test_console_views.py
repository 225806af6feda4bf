"""The pieces that compute what the console shows, and who may act, without a browser."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import redis

from services.console import actions, views
from services.console.sampler import (
    EventWindow,
    History,
    JobIndex,
    MinutePoint,
    chart_points,
    waiting_jobs,
)
from shared.cli.devrunner import EmbeddedServer
from shared.names import Names
from shared.observability.otlp_file import SpanRecord
from shared.observability.queue_stats import (
    ConsumerStats,
    GroupStats,
    QueueStats,
    Terminal,
    WindowStats,
)
from shared.roster.curtois import bench_dir, load_curtois, roster_to_tsv
from shared.roster.generator import generate
from shared.roster.limits import Limits
from shared.roster.model import Implementation, SolveRequest
from shared.settings import Settings
from shared.solving.dispatch import solve_request


def _solve(req: SolveRequest) -> dict:  # type: ignore[type-arg]
    result = solve_request(req, implementation=Implementation.GREEDY, time_limit=2.0)
    return json.loads(result.model_dump_json())


def _result(seed: int = 3) -> dict:  # type: ignore[type-arg]
    return _solve(generate(employees=6, shifts=20, seed=seed))


def test_grid_shows_every_assignment_and_marks_what_the_breakdown_names() -> None:
    result = {
        "assignments": [
            {"employee": "A", "shifts": ["E", None, "L"]},
            {"employee": "B", "shifts": [None, "E", None]},
        ],
        "breakdown": [
            {"rule": "shift_rotation", "hard": True, "matches": [
                {"employee": "A", "days": [1, 2], "message": "L may not follow E"}]},
            {"rule": "shift_on_requests", "hard": False, "matches": [
                {"employee": "B", "days": [0], "message": "asked to work E on day 0"}]},
            {"rule": "cover_under", "hard": False, "matches": [
                {"employee": None, "days": [2], "message": "day 2 shift E: 1 short"}]},
        ],
    }  # fmt: skip
    grid = views.roster_grid(result)
    assert grid.days == 3
    assert [(e, [c.shift for c in cells]) for e, cells in grid.rows] == [
        ("A", ["E", "", "L"]),
        ("B", ["", "E", ""]),
    ]
    a, b = grid.rows[0][1], grid.rows[1][1]
    assert a[1].marks == ["violation"] and a[2].marks == ["violation"] and a[0].marks == []
    assert "shift_rotation" in a[2].title
    assert b[0].marks == ["request"]
    assert grid.day_notes == [[], [], ["day 2 shift E: 1 short"]]
    assert grid.shift_counts == {"E": 2, "L": 1}


def test_grid_of_a_real_result_matches_its_assignments() -> None:
    result = _result()
    grid = views.roster_grid(result)
    assert [[c.shift or None for c in cells] for _, cells in grid.rows] == [
        a["shifts"] for a in result["assignments"]
    ]
    unmet = {
        (m["employee"], d)
        for r in result["breakdown"] if r["rule"] in views.REQUEST_RULES
        for m in r["matches"] for d in m["days"]
    }  # fmt: skip
    marked = {
        (e, d) for e, cells in grid.rows for d, c in enumerate(cells) if "request" in c.marks
    }
    assert marked == unmet


def test_tsv_is_the_benchmark_layout() -> None:
    req = load_curtois(bench_dir() / "Instance1.txt")
    result = _solve(req)
    from shared.roster.compiled import compile_request

    roster = compile_request(req).encode([a["shifts"] for a in result["assignments"]])
    assert views.roster_tsv(result) == roster_to_tsv(req, np.asarray(roster))


def test_score_rows_put_the_costly_rules_first() -> None:
    rows = views.score_rows(
        {"breakdown": [
            {"rule": "a", "hard": False, "hard_violations": 0, "penalty": 5, "matches": [{}]},
            {"rule": "b", "hard": True, "hard_violations": 2, "penalty": 0, "matches": []},
            {"rule": "c", "hard": False, "hard_violations": 0, "penalty": 0, "matches": []},
        ]}
    )  # fmt: skip
    assert [r["rule"] for r in rows] == ["b", "a", "c"]
    assert rows[1]["matches"] == 1


def test_result_summary_and_gap() -> None:
    s = views.result_summary({"score": {"penalty": 200, "hard_violations": 0}, "feasible": True})
    assert (s.penalty, s.hard, s.feasible, s.gap) == (200, 0, True, None)
    # an older result with only a bound: judged by the result's rule, the gap against the bound
    s = views.result_summary({"score": {"penalty": 200}, "stats": {"lower_bound": 150}})
    assert s.gap == pytest.approx(50 / 150) and not s.proven_optimal and s.lower_bound == 150
    s = views.result_summary({"score": {"penalty": 7}, "stats": {"lower_bound": 7}})
    assert s.gap == 0 and s.proven_optimal
    s = views.result_summary(
        {"score": {"penalty": 7}, "stats": {"lower_bound": 7, "gap": 0.0, "proven_optimal": True}}
    )
    assert (s.gap, s.lower_bound, s.proven_optimal) == (0.0, 7, True)
    assert views.result_summary({"score": {"penalty": 7}, "stats": {"gap": 0.01}}).gap == 0.01


def test_chart_scales_to_the_peak_and_leaves_gaps() -> None:
    now = 1000
    points = [MinutePoint(minute=now - 2, waiting=50, done=30),
              MinutePoint(minute=now, waiting=25_000, done=12)]  # fmt: skip
    slots = chart_points(points, now)
    assert len(slots) == 60 and slots[-1] is points[1] and slots[-3] is points[0]
    assert slots[-2] is None
    svg = views.chart_svg(slots)
    assert "50,000" in svg  # the axis reaches past the jump to 25,000
    heights = [float(h) for h in re.findall(r'class="waiting"[^>]*height="([\d.]+)"', svg)]
    assert len(heights) == 2 and heights[1] > 100 * heights[0]
    # The gap at now-1 splits the throughput line: two single points, no polyline.
    assert svg.count("<circle") == 2 and "<polyline" not in svg
    assert [views.nice_ceiling(v) for v in (0, 3, 70)] == [1, 5, 100]


def test_waiting_counts_intake_and_solver_backlogs_and_the_schedule() -> None:
    groups = [
        GroupStats(service="intake", stream="i", group="intake", exists=True, lag=10, pending=2),
        GroupStats(service="solver", stream="j", group="solver", exists=True, lag=None, pending=5),
        GroupStats(service="notifier", stream="o", group="notifier", exists=True, lag=99),
    ]
    stats = QueueStats(
        at=0, prefix="", streams=[], groups=groups, dead_letters=0, scheduled=3,
        window=WindowStats(window_s=60),
    )  # fmt: skip
    assert waiting_jobs(stats) == 20


def test_group_rows_flag_what_needs_an_operator() -> None:
    stats = QueueStats(
        at=0, prefix="", streams=[], dead_letters=0, scheduled=0,
        window=WindowStats(window_s=60),
        groups=[
            GroupStats(service="solver", stream="j", group="solver", exists=True, consumers=0,
                       lag=500, pending=1, max_idle_s=90.0,
                       consumer_list=[ConsumerStats(name="a", pending=0, idle_s=0.2),
                                      ConsumerStats(name="b", pending=1, idle_s=95.0)]),
            GroupStats(service="intake", stream="i", group="intake", exists=False),
        ],
    )  # fmt: skip
    solver, intake = views.group_rows(stats, reclaim_idle_ms=30_000)
    assert solver.warn == ["no consumer", "backlog", "stuck entry"]
    assert solver.consumer_rows == [("b", 1, "1.6 min"), ("a", 0, "0.2 s")]
    assert intake.lag == "no group" and intake.warn == []


def test_event_window_counts_per_minute_and_forgets_the_old() -> None:
    w = EventWindow(window=60)
    t0 = 10 * 60_000
    w.add(
        [Terminal(t0 + 1_000, "completed", "a", solve_ms=5.0),
         Terminal(t0 + 2_000, "failed", "b", error_class="invalid"),
         Terminal(t0 + 61_000, "completed", "c", solve_ms=7.0)],
        {"a": 3.0, "c": 4.0},
    )  # fmt: skip
    assert w.per_minute == {10: [2, 1], 11: [1, 0]}
    w.expire(t0 + 90_000)
    assert [t.job_id for t in w.terminals] == ["c"]
    assert [x for _, x in w.waits] == [4.0]


def test_job_index_is_newest_first_and_bounded() -> None:
    idx = JobIndex(size=3)
    for i, job in enumerate(["a", "b", "c", "a", "d"]):
        idx.see(job, i, "solver.accepted")
    assert [j.job_id for j in idx.newest(10)] == ["d", "a", "c"]


@pytest.mark.redis
def test_history_keeps_one_point_per_minute_for_an_hour(redis_server: EmbeddedServer) -> None:
    r = redis.Redis.from_url(redis_server.url)
    names = Names.from_settings(Settings(shiftstream_prefix="hist-test:"))
    h = History(names, minutes=60)
    r.delete(h.key)
    h.write(r, MinutePoint(minute=100, waiting=5, done=1))
    h.write(r, MinutePoint(minute=100, waiting=9, done=2))  # the same minute, updated
    h.write(r, MinutePoint(minute=170, waiting=1, done=0))  # 70 minutes later
    assert [(p.minute, p.waiting) for p in h.read(r)] == [(170, 1)]
    h.write(r, MinutePoint(minute=171, waiting=2, done=3))
    assert [p.minute for p in h.read(r)] == [170, 171]
    assert 0 < r.ttl(h.key) <= 7200


def test_waterfall_rows_place_spans_on_one_axis() -> None:
    spans = [
        SpanRecord("t", "a", None, "intake", "shiftstream-intake", 0, 10_000_000),
        SpanRecord("t", "b", "a", "solve", "shiftstream-solver", 5_000_000, 10_000_000,
                   status="error", status_message="boom"),
    ]  # fmt: skip
    total, rows = views.waterfall_rows(spans)
    assert total == 10.0
    assert [(r.depth, r.name, r.service, r.left, r.width) for r in rows] == [
        (0, "intake", "intake", 0.0, 100.0),
        (1, "solve", "solver", 50.0, 50.0),
    ]
    assert rows[1].status == "error"
    links = views.jaeger_links("http://j:16686/", "job 1", ["abc"])
    assert links[0][1] == "http://j:16686/trace/abc"
    assert "job.id" in links[1][1].replace("%22", '"').replace("%3A", ":")


# ----------------------------------------------------------------------------- who may act

TOKEN = "tok"


def _session() -> tuple[str, str]:
    cookie = actions.new_session(TOKEN)
    nonce = actions.session_nonce(TOKEN, cookie)
    assert nonce is not None
    return cookie, actions.csrf_token(TOKEN, nonce)


def test_actions_need_a_token_a_session_and_the_page_csrf() -> None:
    cookie, csrf = _session()
    ok = {"cookie": cookie, "csrf": csrf, "bearer": None, "origin": None, "host": "h:1"}
    actions.authorise(TOKEN, **ok)  # type: ignore[arg-type]
    actions.authorise(TOKEN, **{**ok, "origin": "http://h:1"})  # type: ignore[arg-type]
    cases = {
        "read-only": (None, ok),
        "sign in": (TOKEN, {**ok, "cookie": None}),
        "stale": (TOKEN, {**ok, "csrf": "x"}),
        "cross-site": (TOKEN, {**ok, "origin": "https://evil.example"}),
        "wrong token": (TOKEN, {**ok, "bearer": "nope"}),
    }
    for why, (token, kw) in cases.items():
        with pytest.raises(actions.Refused, match=why):
            actions.authorise(token, **kw)  # type: ignore[arg-type]
    # A session signed with an older token is no session.
    with pytest.raises(actions.Refused, match="sign in"):
        actions.authorise("rotated", **ok)  # type: ignore[arg-type]
    # Scripts use the header instead of a session.
    actions.authorise(TOKEN, cookie=None, csrf=None, bearer=TOKEN, origin=None, host="h")


def test_uploads_are_parsed_or_refused_with_the_reason() -> None:
    limits = Limits()
    req = generate(employees=4, shifts=10, seed=1)
    got = actions.parse_upload("r.json", req.model_dump_json().encode(), limits)
    assert got == req
    text = (bench_dir() / "Instance1.txt").read_bytes()
    assert actions.parse_upload("Instance1.txt", text, limits).employees
    for name, data, why in [
        ("r.json", b"", "empty"),
        ("r.json", b"{not json", "not valid JSON"),
        ("r.json", b'{"horizon": {"days": 0}}', "horizon"),
        ("x.txt", b"hello world", "Curtois"),
        ("x.bin", b"\xff\xfe\x00", "UTF-8"),
        ("big.json", b"{" + b" " * 200, "over the limit"),
    ]:
        small = Limits(max_json_bytes=100) if name == "big.json" else limits
        with pytest.raises(actions.BadInput, match=why):
            actions.parse_upload(name, data, small)


def test_job_ids_follow_the_contract() -> None:
    assert actions.job_id_of(" job-1 ") == "job-1"
    assert actions.job_id_of("", required=False) is None
    for bad in ("", "a b", "x" * 201, "<script>"):
        with pytest.raises(actions.BadInput):
            actions.job_id_of(bad)


def test_templates_and_static_files_ship_with_the_package() -> None:
    root = Path(__file__).resolve().parents[1] / "services" / "console"
    assert (root / "static" / "console.js").exists()
    # No CDN at run time: every script and stylesheet is served by the console itself.
    for page in (root / "templates").glob("*.html"):
        assert "http://" not in page.read_text() and "https://" not in page.read_text(), page
