"""Where ShiftStream's pipeline spends its CPU: py-spy on every service under a steady load.

Starts a Redis of its own and the services as `python -m services.<name>` processes (as
bench_pipeline.py does), attaches `py-spy record --format raw` to each for `--seconds`, feeds
tiny greedy jobs through the public stream meanwhile, and prints per service the functions with
the most samples (inclusive and self). py-spy is a developer tool, not a project dependency:
`.venv/bin/pip install py-spy`.

    python bench/profile_pipeline.py --seconds 15 --out bench/results/profile
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH / "peers")]

from bench_pipeline import redis_server  # noqa: E402
from redis.asyncio import Redis  # noqa: E402

REPO = BENCH.parent
SERVICES = ("intake", "solver", "notifier")


# Where a sample goes: the leaf-most frame that matches one of these (in this order of test).
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("socket I/O (asyncio streams, syscalls)", ("asyncio/streams.py", "asyncio/selector")),
    ("solve: greedy + evaluator", ("shared/roster/greedy.py", "shared/roster/evaluator.py",
                                   "shared/roster/rules.py", "shared/roster/compiled.py",
                                   "numpy/")),
    ("pydantic (request parse, models, JSON)", ("pydantic", "shared/roster/parse.py",
                                                "json/")),
    ("logging", ("logging/", "shared/observability/logs.py")),
    ("OpenTelemetry", ("opentelemetry",)),
    ("redis-py client", ("redis/",)),
    ("threads (anyio/to_thread, executor)", ("anyio/", "threading.py", "concurrent/futures",
                                             "queue.py")),
    ("FastStream + fast_depends", ("faststream/", "fast_depends/")),
    ("ShiftStream code", ("shared/", "services/")),
    ("event loop (uvloop)", ("asyncio/", "uvloop", "runners.py")),
]


def categorise(raw: Path) -> dict[str, float]:
    """Share of samples per category (see CATEGORIES), start-up imports left out."""
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or "_find_and_load" in stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        for frame in reversed(frames):
            cat = next((c for c, pats in CATEGORIES if any(x in frame for x in pats)), None)
            if cat:
                counts[cat] += n
                break
        else:
            counts["other"] += n
    return {c: round(100 * n / max(total, 1), 1) for c, n in counts.most_common()}


def summarise(raw: Path, top: int) -> str:
    """Top frames of a py-spy raw (collapsed) file: `frame;frame;... count` per line."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        # A recursive frame counts once per sample, or inclusive shares would pass 100 %.
        for f in set(frames):
            inclusive[f] += n
        own[frames[-1]] += n
    out = [f"  {total} samples"]
    out.append("  inclusive:")
    for f, n in inclusive.most_common(top):
        out.append(f"    {100 * n / max(total, 1):5.1f}%  {f}")
    out.append("  self:")
    for f, n in own.most_common(top):
        out.append(f"    {100 * n / max(total, 1):5.1f}%  {f}")
    return "\n".join(out)


async def wait_ready(url: str, payload: str, timeout: float = 120) -> float:
    """Seconds until one probe job comes out completed: every service has imported and joined."""
    r = Redis.from_url(url, decode_responses=True)
    t0 = time.monotonic()
    await r.xadd("workforce-solver", {"type": "solve", "job_id": "probe", "payload": payload})
    last = "0"
    try:
        while time.monotonic() - t0 < timeout:
            # redis-py types replies loosely; this is [[stream, [(id, {field: value})]]].
            got: Any = await r.xread({"solver-events": last}, block=1000)
            for _, entries in got or []:
                for entry_id, fields in entries:
                    last = entry_id
                    if fields.get("job_id") == "probe" and fields.get("type") == "solver.completed":
                        return time.monotonic() - t0
        raise RuntimeError("the probe job did not complete; are the services starting?")
    finally:
        await r.aclose()


async def feed(url: str, seconds: float, payload: str, rate: float) -> int:
    """Keep the intake stream non-empty for `seconds` (or paced at `rate` jobs/s when > 0)."""
    r = Redis.from_url(url)
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        groups = await r.xinfo_groups("workforce-solver") if sent else []
        backlog = next((int(g.get("lag") or 0) for g in groups if g["name"] == b"intake"), 0)
        # Bounded backlog: enough to keep every hop busy, not so much that the run is all queue.
        if rate <= 0 and backlog > 2_000:
            await asyncio.sleep(0.05)
            continue
        pipe = r.pipeline(transaction=False)
        batch = 100 if rate <= 0 else 1
        for _ in range(batch):
            pipe.xadd(
                "workforce-solver",
                {"type": "solve", "job_id": f"p{sent}", "payload": payload},
            )
            sent += 1
        await pipe.execute()
        if rate > 0:
            await asyncio.sleep(1 / rate)
    await r.aclose()
    return sent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--rate", type=float, default=0, help="jobs/s; 0 = as fast as it goes")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=str(BENCH / "results" / "profile"))
    ap.add_argument(
        "--worker-env", action="append", default=[],
        help="K=V for the services, repeatable (e.g. SHIFTSTREAM_TRACE_FILE=/tmp/t.jsonl)",
    )
    args = ap.parse_args()
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    from driver import tiny_roster_payload

    payload = tiny_roster_payload()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with redis_server() as (url, _port, _version):
        env = {**os.environ, "REDIS_URL": url, "SOLVER_IMPLEMENTATION": "greedy"}
        env |= dict(item.split("=", 1) for item in args.worker_env)
        procs = {
            svc: subprocess.Popen(
                [sys.executable, "-m", f"services.{svc}"], cwd=REPO, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            for svc in (*SERVICES, "fallback", "triage")
        }
        try:
            print(f"services ready in {asyncio.run(wait_ready(url, payload)):.1f} s", flush=True)
            spies = {
                svc: subprocess.Popen(
                    [pyspy, "record", "--pid", str(procs[svc].pid), "--duration",
                     str(int(args.seconds)), "--format", "raw", "--rate", "200",
                     "--nonblocking", "-o", str(out / f"{svc}.txt")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
                for svc in SERVICES
            }
            sent = asyncio.run(feed(url, args.seconds, payload, args.rate))
            for p in spies.values():
                p.wait(timeout=60)
            done = subprocess.run(
                ["redis-cli", "-p", str(_port), "XLEN", "solver-events"],
                capture_output=True, text=True,
            ).stdout.strip()
            print(f"sent {sent} jobs in {args.seconds:.0f} s; solver-events has {done} entries")
        finally:
            for p in procs.values():
                p.terminate()
            for p in procs.values():
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
    for svc in SERVICES:
        f = out / f"{svc}.txt"
        print(f"\n== {svc}")
        if not f.exists():
            print("  (no profile)")
            continue
        print("  by category (% of samples):")
        for cat, share in categorise(f).items():
            print(f"    {share:5.1f}%  {cat}")
        print(summarise(f, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
