"""Pure helpers of the pipeline benchmark: statistics, ratios, schedules, output parsing.

Standard library only, because both the orchestrator (project venv) and the per-system drivers
(the peers' venvs) import it, and the tests check it without Redis.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from typing import TypedDict


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside [0, 100]")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(values: Iterable[float | None]) -> float | None:
    """Median of the measured values; None (a failed or skipped round) does not count."""
    got = [v for v in values if v is not None and not math.isnan(v)]
    if not got:
        return None
    return percentile(got, 50)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def interleaved(systems: Sequence[str], rounds: int) -> list[tuple[int, str]]:
    """A B C … A B C …: every round visits every system once, in the same order.

    Noise on these shared machines comes in waves (someone's build, a solver run); interleaving
    spreads a wave over all systems instead of letting it land on one.
    """
    return [(r, s) for r in range(rounds) for s in systems]


class RedisBenchmarkRow(TypedDict):
    test: str
    rps: float
    avg_ms: float | None
    p50_ms: float | None
    p99_ms: float | None


_QUIET_LINE = re.compile(
    r"^(?P<test>.+?):\s+(?P<rps>[\d.]+)\s+requests per second(?:,\s*p50=(?P<p50>[\d.]+)\s*msec)?"
)


def parse_redis_benchmark(output: str) -> list[RedisBenchmarkRow]:
    """Rows of `redis-benchmark --csv` (Redis 7: test, rps, avg, min, p50, p95, p99, max) or
    of `-q` lines (`XADD s * f v: 81234.5 requests per second, p50=0.3 msec`).

    The -q form prints progress with carriage returns before each final line; only the text after
    the last one counts.
    """
    text = output.replace("\r\n", "\n")
    lines = [line.rsplit("\r", 1)[-1].strip() for line in text.split("\n")]
    lines = [line for line in lines if line]
    if lines and lines[0].startswith('"test"'):
        rows: list[RedisBenchmarkRow] = []
        for rec in csv.DictReader(io.StringIO("\n".join(lines))):

            def num(key: str, rec: dict[str, str] = rec) -> float | None:
                value = rec.get(key)
                return float(value) if value not in (None, "") else None

            rows.append(
                {
                    "test": rec["test"],
                    "rps": float(rec["rps"]),
                    "avg_ms": num("avg_latency_ms"),
                    "p50_ms": num("p50_latency_ms"),
                    "p99_ms": num("p99_latency_ms"),
                }
            )
        return rows
    rows = []
    for line in lines:
        m = _QUIET_LINE.match(line)
        if m:
            p50 = m.group("p50")
            rows.append(
                {
                    "test": m.group("test"),
                    "rps": float(m.group("rps")),
                    "avg_ms": None,
                    "p50_ms": float(p50) if p50 else None,
                    "p99_ms": None,
                }
            )
    return rows


def throughput(total: int, first_count: int, t_first: float, t_last: float) -> float | None:
    """Jobs per second between the first observed completion and the last one.

    Counting from the first completion leaves out worker start-up (import time, connecting),
    which differs a lot between frameworks and says nothing about moving jobs; the jobs seen in
    that first read are not counted because their time is before t_first.
    """
    span = t_last - t_first
    if span <= 0 or total <= first_count:
        return None
    return (total - first_count) / span
