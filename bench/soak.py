"""Soak: 100,000 tiny greedy jobs through the pipeline; Redis memory stays within a stated bound.

    python bench/soak.py                      # 100,000 jobs
    python bench/soak.py --jobs 20000 --stream-maxlen 5000
    python bench/soak.py --jobs 2000 --large 5      # and 5 rosters of 1,000 x 366 (~2 MB each)

Starts its own Redis and the five services under the dev runner's supervisor (greedy solver,
tiny requests), submits through the public stream like a foreign producer (pipelined XADD with a
window of jobs in flight; every tenth job `priority high`, every tenth `low`, the rest normal
without the field) and, once every job has its terminal event, checks that every job of every
priority ended exactly once and compares Redis `used_memory` with the bound that the retention
settings allow:

    bound = baseline
          + Σ over events, dead letters  (maxlen + 100) × bytes per entry   (MAXLEN ~ trims
                                                                    whole nodes of up to 100)
          + Σ over every hop's input  what it holds              (its backlog: what its group
                                                                    consumed is trimmed)
          + jobs inside the TTLs × bytes of their keys            (record, idempotency key,
                                                                    terminal guard)
          all × 1.25 for allocator and hash-table overhead

With `--large N`, N requests of `--large-employees` x 366 days follow the tiny ones: their
requests and rosters are megabytes each. Every hop's input (the intake stream, the solver's
and the fallback's three priority streams, `solver.failures`, `solver.outcomes`) must be empty
at the end: what their groups consumed is removed, a roster is kept once, in `solver-events`.
With a small `--stream-maxlen` every job must still end: no hop's input is capped.

Bytes per entry and per key are measured (MEMORY USAGE) at the end; what makes it a bound is
that the stream terms do not grow with the number of jobs. The keys do grow until their TTLs
(JOB_TTL_SECONDS, IDEMPOTENCY_TTL_SECONDS) pass: that is the retention a user chose. Also
printed: what the streams alone would hold with nothing trimmed.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from shared.cli.devrunner import EmbeddedServer, Supervisor, service_env  # noqa: E402
from shared.names import Names  # noqa: E402
from shared.roster.generator import generate  # noqa: E402
from shared.settings import Settings  # noqa: E402

NODE_SLACK = 100  # stream-node-max-entries: MAXLEN ~ only drops whole nodes
TERMINAL = ("solver.completed", "solver.failed")
PRIORITIES = ("high", "normal", "low")


def priority_of(i: int) -> str:
    """Job i's priority: 10 % high, 10 % low, the rest normal (without the field)."""
    return {0: "high", 1: "low"}.get(i % 10, "normal")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--stream-maxlen", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=2_000, help="jobs in flight at most")
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--solvers", type=int, default=1, help="solver processes")
    parser.add_argument("--large", type=int, default=0, help="large jobs after the tiny ones")
    parser.add_argument("--large-employees", type=int, default=1000)
    args = parser.parse_args(argv)

    env = {
        "SOLVER_IMPLEMENTATION": "greedy",
        "STREAM_MAXLEN": str(args.stream_maxlen),
        "EVENTS_MAXLEN": str(args.stream_maxlen),
        "DEAD_MAXLEN": str(args.stream_maxlen),
        "TRIM_INTERVAL_SECONDS": "1",
        "WORKER_CONCURRENCY": "4",
        # Two JSON log lines per message per hop would dominate a tiny job's CPU.
        "LOG_LEVEL": "WARNING",
    }
    server = EmbeddedServer().start()
    settings = Settings(redis_url=server.url, **{k.lower(): v for k, v in env.items()})
    names = Names.from_settings(settings)
    r = redis.Redis.from_url(server.url, decode_responses=True)
    sup = Supervisor(service_env(server.url, env), {"solver": args.solvers}, grace=15)
    stop = threading.Event()

    def supervise() -> None:
        while not stop.wait(0.5):
            sup.check()

    request = generate(employees=1, shifts=1, seed=0, days=1)
    payload = json.loads(request.model_dump_json())
    payload["solver"] = {"implementation": "greedy", "time_limit_seconds": 1, "seed": 0}
    body = json.dumps(payload)
    try:
        sup.start()
        threading.Thread(target=supervise, daemon=True).start()
        _wait_groups(r, names)
        baseline = int(r.info("memory")["used_memory"])
        started = time.monotonic()
        ends, last = _run(r, names, body, args)
        elapsed = time.monotonic() - started
        large_done = _run_large(r, names, args)
        time.sleep(2 * settings.trim_interval_seconds + 1)  # each service trims its inputs
        _read_ends(r, names, last, ends, block_ms=None)  # a late second end counts too
        figures = _measure(r, names, settings, args.jobs, baseline)
        left = {s: int(r.xlen(s)) for s in _inputs(names)}
        # Large results wait for their event under keys of their own (RESULT_KEY_MIN_BYTES);
        # each must be gone once its event is out.
        results_left = len(r.keys(names.result("*", "*")))
    finally:
        stop.set()
        sup.stop()
        server.stop()
    done = sum(1 for i in range(args.jobs) if f"soak-{i}" in ends)
    print(f"jobs: {args.jobs} tiny greedy jobs ({len(body)} B requests), {done} ended, "
          f"{elapsed:.1f} s, {args.jobs / elapsed:.0f} jobs/s")
    once = collections.Counter(
        priority_of(i) for i in range(args.jobs) if ends.get(f"soak-{i}") == 1
    )
    sent = collections.Counter(priority_of(i) for i in range(args.jobs))
    print("ended exactly once, by priority: "
          + ", ".join(f"{p} {once[p]} of {sent[p]}" for p in PRIORITIES))
    for line in figures["lines"]:
        print(line)
    if args.large:
        print(f"large: {args.large} jobs of {args.large_employees} x 366 days, "
              f"{large_done} terminal")
    print("consumed entries left: " + ", ".join(f"{s} {n}" for s, n in left.items())
          + f"; results waiting under keys: {results_left}")
    ok = (
        once == sent
        and large_done == args.large
        and figures["used"] <= figures["bound"]
        and not any(left.values())
        and results_left == 0
    )
    print("OK" if ok else "OVER THE BOUND or jobs missing")
    return 0 if ok else 1


def _wait_groups(r: redis.Redis, names: Names) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if all(
                any(g["name"] == grp for g in r.xinfo_groups(stream))
                for stream, grp in names.groups.values()
            ):
                return
        except redis.ResponseError:
            pass
        time.sleep(0.2)
    raise RuntimeError("services did not start")


def _run(
    r: redis.Redis, names: Names, body: str, args: argparse.Namespace
) -> tuple[collections.Counter[str], str]:
    """Submit every job (a window in flight) until each has ended; terminal events per job id
    and the last event read."""
    sent = 0
    ends: collections.Counter[str] = collections.Counter()
    last = str(r.xinfo_stream(names.events)["last-generated-id"]) if r.exists(names.events) else "0"
    report = time.monotonic()
    while len(ends) < args.jobs:
        if sent < args.jobs and sent - len(ends) < args.window:
            pipe = r.pipeline(transaction=False)
            n = min(args.batch, args.jobs - sent)
            for i in range(sent, sent + n):
                fields = {"type": "solve", "job_id": f"soak-{i}", "payload": body}
                if priority_of(i) != "normal":
                    fields["priority"] = priority_of(i)
                pipe.xadd(names.intake, fields)
            pipe.execute()
            sent += n
        last = _read_ends(r, names, last, ends, block_ms=50)
        if time.monotonic() - report > 10:
            report = time.monotonic()
            print(f"  {len(ends)} / {args.jobs} done", flush=True)
    return ends, last


def _read_ends(
    r: redis.Redis, names: Names, last: str, ends: collections.Counter[str], block_ms: int | None
) -> str:
    """Count the terminal events after `last` into `ends` (one read; with `block_ms` None,
    every event there is now); the last event id read."""
    while True:
        rows: Any = r.xread({names.events: last}, count=5000, block=block_ms)
        for _, entries in rows:
            for entry_id, fields in entries:
                last = entry_id
                if fields.get("type") in TERMINAL and fields["job_id"].startswith("soak-"):
                    ends[fields["job_id"]] += 1
        if block_ms is not None or not rows:
            return last


def _run_large(r: redis.Redis, names: Names, args: argparse.Namespace) -> int:
    """Submit the large jobs one after the other (a solve each), until each has ended."""
    if not args.large:
        return 0
    request = generate(employees=args.large_employees, shifts=args.large_employees * 183,
                       seed=1, days=366)
    payload = json.loads(request.model_dump_json())
    payload["solver"] = {"implementation": "greedy", "time_limit_seconds": 5, "seed": 0}
    body = json.dumps(payload)
    last = str(r.xinfo_stream(names.events)["last-generated-id"])
    ids = {f"soak-large-{i}" for i in range(args.large)}
    for job_id in sorted(ids):
        r.xadd(names.intake, {"type": "solve", "job_id": job_id, "payload": body})
    ended: set[str] = set()
    deadline = time.monotonic() + 60 + 30 * args.large
    while ended != ids and time.monotonic() < deadline:
        rows: Any = r.xread({names.events: last}, count=100, block=500)
        for _, entries in rows:
            for entry_id, fields in entries:
                last = entry_id
                if fields.get("type") in ("solver.completed", "solver.failed"):
                    ended.add(fields["job_id"])
    return len(ended & ids)


def _url(r: redis.Redis) -> str:
    kw = r.connection_pool.connection_kwargs
    return f"redis://{kw.get('host', '127.0.0.1')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"


def _inputs(names: Names) -> list[str]:
    """Every hop's input stream: trimmed of what its group consumed, never capped."""
    return [s for service in names.groups for s, _ in names.inputs(service)]


def _measure(
    r: redis.Redis, names: Names, s: Settings, jobs: int, baseline: int
) -> dict[str, Any]:
    used = int(r.info("memory")["used_memory"])
    # XINFO STREAM returns the first and last entries, binary envelopes: read it undecoded.
    raw = redis.Redis(connection_pool=redis.ConnectionPool.from_url(
        r.connection_pool.connection_kwargs.get("url") or _url(r)))
    # A hop's input holds its backlog only (None: no cap); the intake stream also has our
    # own writers' MAXLEN ~, the events and dead letters only theirs.
    streams: dict[str, int | None] = {name: None for name in _inputs(names)}
    streams |= {names.events: s.events_maxlen, names.dead: s.dead_maxlen}
    lines = []
    stream_bound = stream_held = 0
    per_job_untrimmed = 0.0
    for name, maxlen in streams.items():
        if not r.exists(name):
            continue
        length = int(r.xlen(name))
        size = int(r.memory_usage(name, samples=0) or 0)
        per_entry = size / length if length else 0
        stream_held += size
        stream_bound += size if maxlen is None else int((maxlen + NODE_SLACK) * per_entry)
        entries_written = int(raw.xinfo_stream(name)["entries-added"])
        per_job_untrimmed += per_entry * entries_written / jobs
        cap = "consumed trimmed" if maxlen is None else f"maxlen {maxlen}"
        lines.append(f"  {name}: {length} entries (of {entries_written} written, {cap}), "
                     f"{size / 1e6:.2f} MB, {per_entry:.0f} B/entry")
    key_bytes = 0.0
    for pattern in (names.job("soak-*"), names.idempotency("soak-*"), names.terminal("soak-*")):
        sample = []
        for key in r.scan_iter(match=pattern.replace("{", "\\{").replace("}", "\\}"), count=1000):
            sample.append(int(r.memory_usage(key, samples=0) or 0))
            if len(sample) >= 200:
                break
        key_bytes += sum(sample) / max(1, len(sample))
    keys = int(r.dbsize())
    bound = int((baseline + stream_bound + jobs * key_bytes) * 1.25)
    lines += [
        f"keys: {keys} ({key_bytes:.0f} B of keys per job: record + idempotency key + guard, "
        f"expiring after {s.job_ttl_seconds} s / {s.idempotency_ttl_seconds} s)",
        f"redis used_memory: {used / 1e6:.1f} MB at the end (baseline {baseline / 1e6:.1f} MB); "
        f"streams hold {stream_held / 1e6:.1f} MB",
        f"bound from the retention settings: {bound / 1e6:.1f} MB = 1.25 × (baseline "
        f"{baseline / 1e6:.1f} + streams ≤ {stream_bound / 1e6:.1f} + {jobs} jobs × "
        f"{key_bytes:.0f} B of keys = {jobs * key_bytes / 1e6:.1f}) MB",
        f"streams with nothing trimmed would hold ≈ {per_job_untrimmed * jobs / 1e6:.0f} MB "
        f"for these {jobs} jobs, and grow with every job",
    ]
    return {"used": used, "bound": bound, "lines": lines}


if __name__ == "__main__":
    sys.exit(main())
