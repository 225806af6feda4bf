"""The pipeline benchmark's own parts: statistics, parsing, ordering, and the raw-streams floor.

The peers are not installed here (that needs the network); the floor needs only redis-py and a
server, so it runs for real on a few hundred jobs and shows the driver protocol end to end.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import bench_pipeline  # noqa: E402
from benchstats import (  # noqa: E402
    interleaved,
    median,
    parse_redis_benchmark,
    percentile,
    ratio,
    throughput,
)


def test_percentile_interpolates_like_numpy() -> None:
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 3.0
    assert percentile(values, 100) == 5.0
    # numpy.percentile([1..5], 99) == 4.96
    assert percentile(values, 99) == pytest.approx(4.96)
    assert percentile([1.0, 2.0], 50) == 1.5
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_median_skips_failed_rounds() -> None:
    assert median([3.0, None, 1.0, 2.0]) == 2.0
    assert median([2.0, 4.0]) == 3.0
    assert median([None, None]) is None
    assert median([float("nan"), 7.0]) == 7.0


def test_ratio_is_none_without_both_figures() -> None:
    assert ratio(3000, 1500) == 2.0
    assert ratio(None, 10) is None
    assert ratio(10, None) is None
    assert ratio(10, 0) is None


def test_throughput_counts_from_first_completion() -> None:
    # 1,000 jobs, 10 already done in the first read at t=1 s, the last at t=2 s.
    assert throughput(1000, 10, 1.0, 2.0) == pytest.approx(990.0)
    assert throughput(10, 10, 1.0, 2.0) is None
    assert throughput(100, 1, 2.0, 2.0) is None


def test_interleaving_visits_every_system_once_per_round() -> None:
    order = interleaved(["a", "b", "c"], 3)
    assert [s for _, s in order] == ["a", "b", "c"] * 3
    assert [r for r, _ in order] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert interleaved(["a"], 0) == []


CSV_OUTPUT = (
    '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",'
    '"p99_latency_ms","max_latency_ms"\n'
    '"XADD s * f v","51282.05","0.018","0.008","0.023","0.023","0.031","0.103"\n'
)
QUIET_OUTPUT = (
    "XADD s * f v: rps=0.0 (overall: 0.0) avg_msec=-nan (overall: -nan)\r"
    "                                                   \r"
    "XADD s * f v: 34482.76 requests per second, p50=0.519 msec\n"
)


def test_parse_redis_benchmark_csv() -> None:
    [row] = parse_redis_benchmark(CSV_OUTPUT)
    assert row == {
        "test": "XADD s * f v",
        "rps": 51282.05,
        "avg_ms": 0.018,
        "p50_ms": 0.023,
        "p99_ms": 0.031,
    }


def test_parse_redis_benchmark_quiet_keeps_only_the_final_line() -> None:
    [row] = parse_redis_benchmark(QUIET_OUTPUT)
    assert row["test"] == "XADD s * f v"
    assert row["rps"] == 34482.76
    assert row["p50_ms"] == 0.519
    assert parse_redis_benchmark("") == []


def _summary(thr: float | None, p50: float | None, p99: float | None) -> dict[str, Any]:
    return {"throughput_jobs_s": thr, "p50_ms": p50, "p99_ms": p99}


def test_ratios_and_targets() -> None:
    summary = {
        "shiftstream": _summary(3000, 2.0, 8.0),
        "celery": _summary(1500, 1.0, 4.0),
        "bullmq": _summary(6000, 0.5, 2.0),
    }
    rat = bench_pipeline.ratios(summary)["shiftstream"]
    assert rat["celery"] == {"throughput": 2.0, "p50": 2.0, "p99": 2.0}
    assert rat["bullmq"]["throughput"] == 0.5
    assert rat["anchor:bullmq"]["throughput"] == pytest.approx(3000 / 10_500)
    assert rat["anchor:arq"]["p50"] is None
    check = bench_pipeline.target_check(summary)["shiftstream"]
    assert check["throughput_ge_python_peers"]["celery"] is True
    assert check["throughput_ge_python_peers"]["arq"] is None  # not measured
    assert check["throughput_ge_bullmq"] is False
    assert check["p50_ok"] and check["p99_ok"]


def test_summary_takes_medians_over_rounds_and_keeps_errors() -> None:
    runs = [
        {"system": "x", "round": 0, "throughput_jobs_s": 100.0, "complete": True,
         "latency_ms": {"n": 5, "p50": 1.0, "p99": 3.0}},
        {"system": "x", "round": 1, "throughput_jobs_s": 300.0, "complete": True,
         "latency_ms": {"n": 5, "p50": 2.0, "p99": 9.0}},
        {"system": "x", "round": 2, "error": "boom"},
    ]
    s = bench_pipeline.summarise(runs, ["x"])["x"]
    assert s["throughput_jobs_s"] == 200.0
    assert s["p50_ms"] == 1.5
    assert s["p99_ms"] == 6.0
    assert (s["rounds_ok"], s["rounds"]) == (2, 3)
    assert s["errors"] == ["boom"]


def test_cli_quick_defaults_and_unknown_system() -> None:
    cfg = bench_pipeline.parse_args(["--quick", "--systems", "floor-streams,celery"])
    assert (cfg.jobs, cfg.latency_jobs, cfg.rounds) == (1_000, 100, 1)
    assert cfg.systems == ["floor-streams", "celery"]
    full = bench_pipeline.parse_args([])
    assert (full.jobs, full.latency_jobs, full.rounds) == (10_000, 500, 3)
    with pytest.raises(SystemExit):
        bench_pipeline.parse_args(["--systems", "kafka"])


@pytest.mark.redis
def test_floor_driver_moves_jobs_through_a_real_redis(redis_server: Any, tmp_path: Path) -> None:
    # A database of its own: the driver's stream names are fixed, other tests use prefixes.
    url = redis_server.url.rsplit("/", 1)[0] + "/9"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "peers" / "driver.py"), "floor-streams", "--url", url,
         "--jobs", "300", "--latency-jobs", "30", "--warmup", "2",
         "--log", str(tmp_path / "floor.log")],
        capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "REDIS_URL": url},
    )
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    result = json.loads(line[len("RESULT "):])
    assert result["system"] == "floor-streams"
    assert result["complete"] and result["done"] == 300
    assert result["duplicates"] == 0
    assert result["throughput_jobs_s"] > 0
    assert result["latency_ms"]["n"] == 30
    assert 0 < result["latency_ms"]["p50"] <= result["latency_ms"]["p99"]
