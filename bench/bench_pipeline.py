"""`task bench:pipeline`: ShiftStream end to end against the job queues people already use.

Every system runs against one Redis server that this script starts on a free loopback port,
in the same run, interleaved A B C … over the rounds, and the median of the rounds is reported
(issue #8). Each system is measured by its own driver process (bench/peers/driver.py, or
bench/peers/bullmq/driver.js), started with the interpreter that has its framework; the peers'
frameworks live in venvs under bench/.peers/, built here from the pinned files and never in the
project's environment. bench/README.md describes the protocol and the results.

    python bench/bench_pipeline.py                 # full: 10,000 jobs, 500 latency jobs, 3 rounds
    python bench/bench_pipeline.py --quick         # smoke: small N, 1 round
    python bench/bench_pipeline.py --systems floor-streams,faststream,shiftstream
    python bench/bench_pipeline.py --systems shiftstream,shiftstream-sentinel   # price of WAIT

`shiftstream-sentinel` runs the same services on a Sentinel deployment this script starts (a
primary, a replica, three sentinels; no persistence, like the single server) with the
notifier's replication gate on (REDIS_WAIT_REPLICAS=1, docs/decisions/0012): its throughput and
p50/p99 against `shiftstream`'s are the measured price of "nothing a client saw is lost in a
failover". `shiftstream-sentinel-nowait` (not run by default) turns the gate off, to tell the
cost of WAIT from the cost of going through the sentinels.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PEERS = BENCH / "peers"
PEERS_ENV = BENCH / ".peers"
RESULTS = BENCH / "results"
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(REPO))

from benchstats import (  # noqa: E402
    interleaved,
    median,
    parse_redis_benchmark,
    ratio,
)

# The figures issue #8 gives for this machine kind (one worker process each, trivial jobs).
ANCHORS: dict[str, dict[str, float]] = {
    "bullmq": {"throughput_jobs_s": 10_500, "p50_ms": 0.8, "p99_ms": 5.0},
    "taskiq": {"throughput_jobs_s": 3_000},
    "faststream": {"throughput_jobs_s": 2_500},
    "dramatiq": {"throughput_jobs_s": 2_500},
    "celery": {"throughput_jobs_s": 1_200},
    "arq": {"throughput_jobs_s": 200},
    "floor-streams": {"throughput_jobs_s": 50_000, "p50_ms": 0.4},
}
TARGETS = {
    "throughput_at_least_every_python_peer": ["celery", "arq", "dramatiq", "taskiq", "faststream"],
    "stretch_throughput_at_least": "bullmq",
    "p50_ms_max": 3.0,
    "p99_ms_max": 10.0,
}
KEEP_LOG_RUNS = 3
PYTHON_PEERS = ("celery", "arq", "dramatiq", "taskiq", "faststream")
SHIFTSTREAM = ("shiftstream", "shiftstream-traced", "shiftstream-dev", "shiftstream-x2")
# Tracing at production cost (issue #24): every job traced must keep this share of the untraced
# pipeline's throughput.
TRACED = ("shiftstream-traced", "shiftstream-dev")
TRACED_MIN_RATIO = 0.8
# A BullMQ monolith switched to ShiftStream through the bridge, next to BullMQ alone.
BRIDGED = ("bullmq-shiftstream",)
# On a Sentinel deployment: name -> the services' extra environment.
SENTINEL: dict[str, list[str]] = {
    "shiftstream-sentinel": [],
    "shiftstream-sentinel-nowait": ["REDIS_WAIT_REPLICAS=0"],
}
FLOORS = ("redis-benchmark", "floor-streams")
DEFAULT_SYSTEMS = (
    *FLOORS, *SHIFTSTREAM, "shiftstream-sentinel", *PYTHON_PEERS, "bullmq", *BRIDGED
)
_FS_ALL = ["FS_MAX_RECORDS=1", "FS_MSG_PARAM=1", "FS_DELIVERY_COUNT=1", "FS_TELEMETRY=1"]
# Not run by default: each isolates one cost named in README "Where the time goes".
# name -> (driver adapter, worker environment)
EXPERIMENTS: dict[str, tuple[str, list[str]]] = {
    "shiftstream-quiet": ("shiftstream", ["LOG_LEVEL=WARNING"]),
    "shiftstream-msglog": ("shiftstream", ["MESSAGE_LOG_LEVEL=INFO"]),
    "shiftstream-b16": ("shiftstream", ["SOLVER_BATCH=16"]),
    "fs+max1": ("faststream-like", ["FS_MAX_RECORDS=1"]),
    "fs+msg": ("faststream-like", ["FS_MSG_PARAM=1"]),
    "fs+count": ("faststream-like", ["FS_MSG_PARAM=1", "FS_DELIVERY_COUNT=1"]),
    "fs+msg-ctx": ("faststream-like", ["FS_MSG_PARAM=1", "FS_CTX_LOCAL=1"]),
    "fs+otel": ("faststream-like", ["FS_TELEMETRY=1"]),
    "fs+all": ("faststream-like", _FS_ALL),
    "fs+all-quiet": ("faststream-like", [*_FS_ALL, "FS_QUIET=1"]),
}
ALL_SYSTEMS = (*DEFAULT_SYSTEMS, "shiftstream-sentinel-nowait", *EXPERIMENTS)

DONE_HOW = {
    "redis-benchmark": "no job: redis-benchmark's own count of XADD replies (-c 50 for rate, "
    "-c 1 for latency)",
    "floor-streams": "worker XADDs id to bench:done (pipelined with its XACK); driver XREAD BLOCK",
    "celery": "task XADDs id to bench:done; driver XREAD BLOCK (no result backend)",
    "arq": "job XADDs id to bench:done via ctx['redis']; driver XREAD BLOCK (keep_result=0)",
    "dramatiq": "actor XADDs id to bench:done; driver XREAD BLOCK (no results middleware)",
    "taskiq": "task XADDs id to bench:done; driver XREAD BLOCK (no result backend)",
    "faststream": "handler XADDs id to bench:done; driver XREAD BLOCK",
    "bullmq": "processor XADDs id to bench:done (ioredis); driver XREAD BLOCK (not QueueEvents)",
    "shiftstream": "notifier's type=solver.completed on solver-events; driver XREAD BLOCK",
    "shiftstream-x2": "as shiftstream, with intake and solver at 2 processes each",
    "bullmq-shiftstream": "BullMQ's own event=completed on bull:workforce-solver:events (what "
    "QueueEvents reads), written when the bridge returns the roster; driver XREAD BLOCK",
    "shiftstream-traced": "as shiftstream, every job traced: spans to an OTLP JSON-lines file "
    "(SHIFTSTREAM_TRACE_FILE, the dev mode's exporter), default sampler (parent-based, always on),"
    " no metrics (OTEL_METRICS_EXPORTER=none, as untraced)",
    "shiftstream-dev": "as shiftstream, started the way a user does: `shiftstream dev` (dev "
    "mode: traces to .shiftstream/traces.jsonl, rotated at its default size, metrics to "
    "metrics.jsonl, the console running beside the services)",
    "shiftstream-sentinel": "as shiftstream, on Sentinel (primary + replica), the notifier "
    "WAITing for the replica before each batch's events (REDIS_WAIT_REPLICAS=1)",
    "shiftstream-sentinel-nowait": "as shiftstream-sentinel with REDIS_WAIT_REPLICAS=0",
}


@dataclass
class Config:
    jobs: int
    latency_jobs: int
    rounds: int
    systems: list[str]
    throughput_budget: float
    latency_budget: float
    runner: str
    install: bool
    quick: bool
    extra: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- environments


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def _base_python() -> str:
    # The peers' venvs must not inherit the project's venv: build them from the interpreter it
    # was made from (the "system" python3).
    return getattr(sys, "_base_executable", None) or shutil.which("python3") or sys.executable


def ensure_python_env(venv: Path, requirements: Path, install: bool) -> Path:
    """Create or reuse a venv whose packages match `requirements` (stamp = its hash)."""
    python = venv / "bin" / "python"
    stamp = venv / ".requirements.sha256"
    want = _digest(requirements)
    if python.exists() and stamp.exists() and stamp.read_text() == want:
        return python
    if not install:
        raise RuntimeError(f"{venv} is missing or stale and --no-install was given")
    print(f"· building {venv.relative_to(REPO)} from {requirements.relative_to(REPO)}", flush=True)
    if not python.exists():
        subprocess.run([_base_python(), "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "-r", str(requirements)],
        check=True,
    )
    stamp.write_text(want)
    return python


def ensure_node_env(install: bool) -> Path:
    root = PEERS / "bullmq"
    stamp = root / "node_modules" / ".lock.sha256"
    want = _digest(root / "package-lock.json")
    if stamp.exists() and stamp.read_text() == want:
        return root
    if not install:
        raise RuntimeError("bench/peers/bullmq/node_modules is missing or stale (--no-install)")
    print("· npm ci in bench/peers/bullmq", flush=True)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=root, check=True)
    stamp.write_text(want)
    return root


def shiftstream_available() -> str | None:
    """None when the services can be started, else why not (they are being built in parallel)."""
    for svc in ("intake", "solver", "notifier", "fallback", "triage"):
        if importlib.util.find_spec(f"services.{svc}.__main__") is None:
            return f"services.{svc} has no __main__"
    return None


# ----------------------------------------------------------------------------- redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[tuple[str, int, str]]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on PATH (apt-get install redis-server)")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-redis-")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", workdir, "--daemonize", "no", "--loglevel", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        version = ""
        for _ in range(200):
            try:
                out = subprocess.run(
                    ["redis-cli", "-p", str(port), "INFO", "server"],
                    capture_output=True, text=True, timeout=2,
                ).stdout
            except (OSError, subprocess.TimeoutExpired):
                out = ""
            if "redis_version:" in out:
                version = out.split("redis_version:", 1)[1].split()[0]
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("redis-server did not answer")
        yield f"redis://127.0.0.1:{port}/0", port, version
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def redis_cli(port: int, *args: str) -> str:
    return subprocess.run(
        ["redis-cli", "-p", str(port), *args], capture_output=True, text=True, check=True
    ).stdout


# ----------------------------------------------------------------------------- one run


def run_redis_benchmark(port: int, cfg: Config) -> dict[str, Any]:
    n = 20_000 if cfg.quick else 100_000
    common = ["redis-benchmark", "-p", str(port), "--csv"]
    # Many clients for the rate (as redis-benchmark is normally quoted), one client for idle
    # latency, which is what the pipeline's latency figure is.
    rate = subprocess.run(
        [*common, "-n", str(n), "-c", "50", "XADD", "bench:rb", "*", "f", "v"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    idle = subprocess.run(
        [*common, "-n", str(n // 5), "-c", "1", "XADD", "bench:rb", "*", "f", "v"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    r = parse_redis_benchmark(rate)[0]
    i = parse_redis_benchmark(idle)[0]
    return {
        "system": "redis-benchmark",
        "notes": f"redis-benchmark XADD bench:rb * f v, -n {n} -c 50 (rate), -n {n // 5} -c 1 "
        "(latency); a single command, not a job round trip",
        "jobs": n,
        "done": n,
        "complete": True,
        "throughput_jobs_s": r["rps"],
        "latency_ms": {"n": n // 5, "p50": i["p50_ms"], "p99": i["p99_ms"], "mean": i["avg_ms"]},
        "rate_run_latency_ms": {"p50": r["p50_ms"], "p99": r["p99_ms"]},
    }


def driver_cmd(system: str, url: str, rnd: int, cfg: Config, log: Path) -> list[str]:
    common = [
        "--url", url, "--round", str(rnd), "--jobs", str(cfg.jobs),
        "--latency-jobs", str(cfg.latency_jobs),
        "--throughput-budget", str(cfg.throughput_budget),
        "--latency-budget", str(cfg.latency_budget), "--log", str(log),
    ]
    driver = str(PEERS / "driver.py")
    if system in EXPERIMENTS:
        adapter, env = EXPERIMENTS[system]
        python = sys.executable if adapter == "shiftstream" else str(PEERS_ENV / "venv/bin/python")
        cmd = [python, driver, adapter, *common, "--name", system]
        if adapter == "shiftstream":
            cmd += ["--runner", cfg.runner]
        for item in env:
            cmd += ["--worker-env", item]
        return cmd
    if system == "bullmq":
        return ["node", str(PEERS / "bullmq" / "driver.js"), *common]
    if system == "arq":
        return [str(PEERS_ENV / "venv-arq" / "bin" / "python"), driver, "arq", *common]
    if system in PYTHON_PEERS:
        return [str(PEERS_ENV / "venv" / "bin" / "python"), driver, system, *common]
    if system == "floor-streams":
        return [sys.executable, driver, "floor-streams", *common]
    if system in BRIDGED:
        return [sys.executable, driver, system, *common, "--runner", cfg.runner]
    if system in SENTINEL:
        cmd = [sys.executable, driver, "shiftstream", *common, "--runner", cfg.runner,
               "--name", system]  # fmt: skip
        for item in [*cfg.extra["sentinel_env"], *SENTINEL[system]]:
            cmd += ["--worker-env", item]
        return cmd
    if system in SHIFTSTREAM:
        cmd = [sys.executable, driver, "shiftstream", *common, "--runner", cfg.runner]
        if system == "shiftstream-x2":
            cmd += ["--scale", "solver=2", "--scale", "intake=2", "--name", system]
        elif system == "shiftstream-traced":
            # Big enough never to rotate within a run, so every job's spans can be counted.
            # Tracing alone: the trace file also turns on the metrics file (dev mode's), which
            # the untraced run does not pay either; shiftstream-dev pays both.
            cmd += ["--name", system, "--worker-env", f"SHIFTSTREAM_TRACE_FILE={trace_path(log)}",
                    "--worker-env", "SHIFTSTREAM_TRACE_FILE_MAX_BYTES=4000000000",
                    "--worker-env", "OTEL_METRICS_EXPORTER=none"]
        elif system == "shiftstream-dev":
            cmd = [*cmd[:-1], "dev", "--name", system]
        return cmd
    raise ValueError(system)


def trace_path(log: Path) -> Path:
    return log.with_suffix(".traces.jsonl")


def traced_jobs(path: Path) -> dict[str, Any]:
    """Spans and distinct `job.id`s in a run's trace file: is every job really traced?"""
    spans = 0
    jobs: set[str] = set()
    if not path.exists():
        return {"spans": 0, "jobs": 0, "file_bytes": 0}
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            for rs in doc.get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    for span in ss.get("spans", []):
                        spans += 1
                        for kv in span.get("attributes", []):
                            if kv.get("key") == "job.id":
                                jobs.add(str(kv.get("value", {}).get("stringValue")))
    size = path.stat().st_size
    path.unlink()  # hundreds of MB over a full benchmark
    return {"spans": spans, "jobs": len(jobs), "file_bytes": size}


def commandstats(port: int) -> dict[str, int]:
    """Calls per command since the last CONFIG RESETSTAT (`cmdstat_xadd:calls=12,...`)."""
    calls: dict[str, int] = {}
    for line in redis_cli(port, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, _, rest = line[len("cmdstat_"):].partition(":")
            fields = dict(kv.split("=", 1) for kv in rest.strip().split(",") if "=" in kv)
            calls[name] = int(fields.get("calls", 0))
    return calls


def per_job(calls: dict[str, int], jobs: int) -> dict[str, Any]:
    """Redis commands per job: the round trips a system pays, which is most of its cost."""
    ignore = {"flushall", "config|resetstat", "info", "ping", "client|setname", "client|setinfo",
              "hello", "select", "config|get"}
    useful = {k: v for k, v in calls.items() if k not in ignore}
    top = sorted(useful.items(), key=lambda kv: -kv[1])
    return {
        "total": round(sum(useful.values()) / max(jobs, 1), 2),
        "by_command": {k: round(v / max(jobs, 1), 2) for k, v in top[:15]},
    }


def run_one(
    system: str, rnd: int, url: str, port: int, cfg: Config, logdir: Path
) -> dict[str, Any]:
    if system in SENTINEL:  # its own deployment: the driver talks to the primary directly
        url, port = cfg.extra["sentinel_url"], cfg.extra["sentinel_port"]
    redis_cli(port, "FLUSHALL")
    redis_cli(port, "CONFIG", "RESETSTAT")
    load_before = os.getloadavg()
    t0 = time.monotonic()
    try:
        if system == "redis-benchmark":
            res = run_redis_benchmark(port, cfg)
        else:
            log = logdir / f"{system}-r{rnd}.log"
            proc = subprocess.run(
                driver_cmd(system, url, rnd, cfg, log),
                capture_output=True, text=True,
                env={**os.environ, "REDIS_URL": url},
                timeout=cfg.throughput_budget + cfg.latency_budget + 120,
            )
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
                raise RuntimeError(f"driver exit {proc.returncode}: " + " | ".join(tail))
            res = json.loads(lines[-1][len("RESULT "):])
            res["log"] = str(log.relative_to(REPO)) if log.is_relative_to(REPO) else str(log)
            if system == "shiftstream-traced":
                res["trace_file"] = traced_jobs(trace_path(log))
    except Exception as exc:
        res = {"system": system, "error": str(exc)[:2000]}
    else:
        if system != "redis-benchmark":
            # Over the whole run (throughput and latency phases, polling while idle included).
            jobs = int(res.get("done") or 0) + int((res.get("latency_ms") or {}).get("n") or 0)
            res["redis_commands_per_job"] = per_job(commandstats(port), jobs)
    res["round"] = rnd
    res["wall_s"] = round(time.monotonic() - t0, 2)
    res["loadavg_before"] = load_before
    res["loadavg_after"] = os.getloadavg()
    return res


# ----------------------------------------------------------------------------- summary


def summarise(runs: list[dict[str, Any]], systems: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for s in systems:
        mine = [r for r in runs if r.get("system") == s]
        ok = [r for r in mine if "error" not in r]
        lat = [r.get("latency_ms") or {} for r in ok]
        out[s] = {
            "rounds_ok": len(ok),
            "rounds": len(mine),
            "throughput_jobs_s": median(r.get("throughput_jobs_s") for r in ok),
            "p50_ms": median(x.get("p50") for x in lat),
            "p99_ms": median(x.get("p99") for x in lat),
            "latency_samples_per_round": [x.get("n") for x in lat],
            "complete_every_round": all(r.get("complete") for r in ok) if ok else False,
            "redis_commands_per_job": median(
                (r.get("redis_commands_per_job") or {}).get("total") for r in ok
            ),
            "worker_cpu_ms_per_job": median(r.get("worker_cpu_ms_per_job_total") for r in ok),
            "errors": [r["error"] for r in mine if "error" in r],
            "notes": next((r.get("notes") for r in ok if r.get("notes")), None),
            "done_observed_by": DONE_HOW.get(s),
        }
    return out


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, float | None]]]:
    """ShiftStream ÷ each other system: >1 is better for throughput, <1 is better for latency."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for s in (*SHIFTSTREAM, *BRIDGED):
        if s not in summary:
            continue
        me = summary[s]
        per: dict[str, dict[str, float | None]] = {}
        for other, o in summary.items():
            if other in (*SHIFTSTREAM, *BRIDGED):
                continue
            per[other] = {
                "throughput": ratio(me["throughput_jobs_s"], o["throughput_jobs_s"]),
                "p50": ratio(me["p50_ms"], o["p50_ms"]),
                "p99": ratio(me["p99_ms"], o["p99_ms"]),
            }
        for other, a in ANCHORS.items():
            per[f"anchor:{other}"] = {
                "throughput": ratio(me["throughput_jobs_s"], a.get("throughput_jobs_s")),
                "p50": ratio(me["p50_ms"], a.get("p50_ms")),
                "p99": ratio(me["p99_ms"], a.get("p99_ms")),
            }
        out[s] = per
    return out


def target_check(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for s in SHIFTSTREAM:
        me = summary.get(s)
        if not me or me["throughput_jobs_s"] is None:
            continue
        thr = me["throughput_jobs_s"]
        beats: dict[str, bool | None] = {}
        for p in PYTHON_PEERS:
            other = summary.get(p, {}).get("throughput_jobs_s")
            beats[p] = None if other is None else thr >= other
        bull = summary.get("bullmq", {}).get("throughput_jobs_s")
        out[s] = {
            "throughput_ge_python_peers": beats,
            "throughput_ge_bullmq": None if bull is None else thr >= bull,
            "p50_ok": None if me["p50_ms"] is None else me["p50_ms"] <= TARGETS["p50_ms_max"],
            "p99_ok": None if me["p99_ms"] is None else me["p99_ms"] <= TARGETS["p99_ms_max"],
        }
    return out


def tracing_check(summary: dict[str, dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Traced throughput ÷ untraced, against the 80 % target, and whether every job had spans."""
    base = summary.get("shiftstream", {}).get("throughput_jobs_s")
    out: dict[str, Any] = {"target_min_ratio": TRACED_MIN_RATIO}
    for s in TRACED:
        thr = summary.get(s, {}).get("throughput_jobs_s")
        r = ratio(thr, base)
        out[s] = {"ratio": r, "met": None if r is None else r >= TRACED_MIN_RATIO}
    files = [r["trace_file"] for r in runs if r.get("trace_file")]
    if files:
        jobs = [int(r.get("done") or 0) + int((r.get("latency_ms") or {}).get("n") or 0)
                for r in runs if r.get("trace_file")]
        out["shiftstream-traced"]["trace_files"] = files
        # The latency phase's warm-up jobs are traced too, hence >=.
        out["shiftstream-traced"]["every_job_traced"] = all(
            f["jobs"] >= j for f, j in zip(files, jobs, strict=True)
        )
    return out


def _fmt(v: float | None, digits: int = 0, sign: str = "") -> str:
    if v is None:
        return "—"
    return f"{v:{sign},.{digits}f}"


def sentinel_cost(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Each Sentinel variant against the one-server run: the price of the deployment and of
    the notifier's WAIT, as measured in the same run."""
    base = summary.get("shiftstream")
    out: dict[str, dict[str, float | None]] = {}
    if not base:
        return out
    for name in SENTINEL:
        me = summary.get(name)
        if not me:
            continue

        def delta(key: str, me: dict[str, Any] = me) -> float | None:
            a, b = me.get(key), base.get(key)
            return None if a is None or b is None else round(a - b, 3)

        out[name] = {
            "throughput_ratio": ratio(me["throughput_jobs_s"], base["throughput_jobs_s"]),
            "p50_delta_ms": delta("p50_ms"),
            "p99_delta_ms": delta("p99_ms"),
        }
    return out


def wait_round_trip(port: int, n: int = 2000) -> dict[str, Any]:
    """What one WAIT adds, alone: a write's round trip with and without `WAIT 1` behind it on
    the same connection (the notifier's fence is exactly this, once per batch)."""
    import redis
    from benchstats import percentile

    r = redis.Redis(port=port)
    out: dict[str, Any] = {"n": n}
    for label, wait in (("set", False), ("set_wait1", True)):
        took = []
        for i in range(n):
            pipe = r.pipeline(transaction=False)
            pipe.set("bench:fence", i)
            if wait:
                pipe.wait(1, 1000)
            t0 = time.perf_counter()
            pipe.execute()
            took.append((time.perf_counter() - t0) * 1000)
        out[label] = {"p50": round(percentile(took, 50), 3),
                      "p99": round(percentile(took, 99), 3)}  # fmt: skip
    r.close()
    return out


@contextlib.contextmanager
def sentinel_set(cfg: Config) -> Iterator[str | None]:
    """A Sentinel deployment for the `shiftstream-sentinel*` systems, if any is to run."""
    if not any(s in SENTINEL for s in cfg.systems):
        yield None
        return
    from shared.cli.topology import SentinelSet

    topo = SentinelSet(replicas=1, sentinels=3, aof=False).start()
    try:
        env = topo.env()
        primary = topo.primary()
        cfg.extra["sentinel_url"] = f"redis://127.0.0.1:{primary.port}/0"
        cfg.extra["sentinel_port"] = primary.port
        cfg.extra["sentinel_env"] = [f"{k}={v}" for k, v in env.items() if k != "REDIS_URL"]
        cfg.extra["wait_round_trip_ms"] = wait_round_trip(primary.port)
        yield f"primary 127.0.0.1:{primary.port}, sentinels {env['REDIS_SENTINELS']}"
    finally:
        topo.stop()


def render(summary: dict[str, dict[str, Any]], rat: dict[str, Any]) -> str:
    lines = [
        f"{'system':<16} {'jobs/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'rounds':>7} "
        f"{'cmds/job':>8} {'cpu ms/job':>10}  anchor jobs/s",
        "-" * 86,
    ]
    for s, v in summary.items():
        anchor = ANCHORS.get(s, {}).get("throughput_jobs_s")
        rounds = f"{v['rounds_ok']}/{v['rounds']}"
        if v["errors"]:
            rounds += "!"
        lines.append(
            f"{s:<16} {_fmt(v['throughput_jobs_s']):>10} {_fmt(v['p50_ms'], 2):>8} "
            f"{_fmt(v['p99_ms'], 2):>8} {rounds:>7} {_fmt(v['redis_commands_per_job'], 1):>8}"
            f" {_fmt(v.get('worker_cpu_ms_per_job'), 3):>10}  {_fmt(anchor)}"
        )
    for s, per in rat.items():
        lines += ["", f"{s} ÷ other (throughput >1 better; latency <1 better)",
                  f"{'vs':<24} {'thr':>7} {'p50':>7} {'p99':>7}"]
        for other, r in per.items():
            lines.append(
                f"{other:<24} {_fmt(r['throughput'], 2):>7} {_fmt(r['p50'], 2):>7} "
                f"{_fmt(r['p99'], 2):>7}"
            )
    return "\n".join(lines)


def _versions(url_port: int, redis_version: str) -> dict[str, Any]:
    def out(cmd: list[str]) -> str | None:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except OSError:
            return None

    peers: dict[str, str] = {}
    for venv in ("venv", "venv-arq"):
        pip = PEERS_ENV / venv / "bin" / "pip"
        if pip.exists():
            for line in (out([str(pip), "freeze"]) or "").splitlines():
                name, _, ver = line.partition("==")
                if name.lower() in {"celery", "kombu", "arq", "dramatiq", "taskiq", "taskiq-redis",
                                    "faststream", "redis", "uvloop", "hiredis"}:
                    peers[f"{venv}:{name}"] = ver
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(
                ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30
            ).stdout.strip() or None
        except OSError:
            return None

    return {
        # What was measured: the services change under this benchmark while it is developed.
        "repo_head": git("rev-parse", "--short", "HEAD"),
        "services_last_commit": git("log", "-1", "--format=%h %cI", "--", "services", "shared"),
        "services_dirty": bool(git("status", "--porcelain", "--", "services", "shared")),
        "redis": redis_version,
        "python": platform.python_version(),
        "node": out(["node", "--version"]),
        "peers": peers,
    }


def parse_args(argv: list[str] | None = None) -> Config:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jobs", type=int, help="queued jobs for throughput (default 10,000)")
    ap.add_argument("--latency-jobs", type=int, help="one-at-a-time jobs for latency (default 500)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds, median reported (default 3)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1,000 jobs, 100, 1 round")
    ap.add_argument("--systems", help=f"comma list from: {','.join(ALL_SYSTEMS)}")
    ap.add_argument("--throughput-budget", type=float, default=180.0,
                    help="seconds a throughput phase may take before it is cut (arq)")
    ap.add_argument("--latency-budget", type=float, default=30.0,
                    help="seconds a latency phase may take before it is cut (arq polls at 0.5 s)")
    ap.add_argument("--runner", choices=("modules", "dev"), default="modules",
                    help="ShiftStream: python -m services.<name> per process, or shiftstream dev")
    ap.add_argument("--no-install", action="store_true", help="fail instead of building the peers")
    a = ap.parse_args(argv)
    systems = a.systems.split(",") if a.systems else list(DEFAULT_SYSTEMS)
    unknown = [s for s in systems if s not in ALL_SYSTEMS]
    if unknown:
        ap.error(f"unknown systems {unknown}; choose from {','.join(ALL_SYSTEMS)}")
    return Config(
        jobs=a.jobs or (1_000 if a.quick else 10_000),
        latency_jobs=a.latency_jobs or (100 if a.quick else 500),
        rounds=a.rounds or (1 if a.quick else 3),
        systems=systems,
        throughput_budget=a.throughput_budget,
        latency_budget=a.latency_budget,
        runner=a.runner,
        install=not a.no_install,
        quick=a.quick,
    )


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(argv)
    skipped: dict[str, str] = {}
    needs_peers = [*PYTHON_PEERS, *(e for e, (a, _) in EXPERIMENTS.items() if a != "shiftstream")]
    if any(s in needs_peers for s in cfg.systems if s != "arq"):
        ensure_python_env(PEERS_ENV / "venv", PEERS / "requirements.txt", cfg.install)
    if "arq" in cfg.systems:
        ensure_python_env(PEERS_ENV / "venv-arq", PEERS / "requirements-arq.txt", cfg.install)
    if "bullmq" in cfg.systems:
        ensure_node_env(cfg.install)
    why = shiftstream_available()
    if why:
        for s in (*SHIFTSTREAM, *BRIDGED):
            if s in cfg.systems:
                skipped[s] = why
        cfg.systems = [s for s in cfg.systems if s not in skipped]

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    logdir = PEERS_ENV / "logs" / stamp
    logdir.mkdir(parents=True, exist_ok=True)
    # The services log every message (tens of MB per run): keep the last few runs' logs only.
    for old in sorted((PEERS_ENV / "logs").iterdir())[:-KEEP_LOG_RUNS]:
        shutil.rmtree(old, ignore_errors=True)
    order = interleaved(cfg.systems, cfg.rounds)
    runs: list[dict[str, Any]] = []
    load_start = os.getloadavg()
    with redis_server() as (url, port, redis_version), sentinel_set(cfg) as sentinel:
        if sentinel:
            print(f"Sentinel: {sentinel}", flush=True)
        print(f"Redis {redis_version} on {url}; {len(order)} runs; logs in {logdir}", flush=True)
        for rnd, system in order:
            res = run_one(system, rnd, url, port, cfg, logdir)
            runs.append(res)
            lat = res.get("latency_ms") or {}
            print(
                f"  r{rnd} {system:<16} "
                + (f"ERROR {res['error'][:200]}" if "error" in res else
                   f"{_fmt(res.get('throughput_jobs_s'))} jobs/s  p50 {_fmt(lat.get('p50'), 2)} ms"
                   f"  p99 {_fmt(lat.get('p99'), 2)} ms  (load {res['loadavg_before'][0]:.2f})"),
                flush=True,
            )
        versions = _versions(port, redis_version)

    summary = summarise(runs, cfg.systems)
    rat = ratios(summary)
    wait_cost = sentinel_cost(summary)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"pipeline-{stamp}.json"
    doc = {
        "benchmark": "pipeline",
        "created": stamp,
        "command": " ".join(["bench/bench_pipeline.py", *(sys.argv[1:] if argv is None else argv)]),
        "config": {k: v for k, v in cfg.__dict__.items() if k != "extra"},
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_start": load_start,
            "loadavg_end": os.getloadavg(),
            "note": "2 cores shared with other engineers' work; see loadavg per run",
        },
        "versions": versions,
        "order": [f"r{r}:{s}" for r, s in order],
        "summary": summary,
        "ratios": rat,
        "targets": TARGETS,
        "target_check": target_check(summary),
        "tracing_check": tracing_check(summary, runs),
        "sentinel_wait_cost": wait_cost,
        "wait_round_trip_ms": cfg.extra.get("wait_round_trip_ms"),
        "anchors": ANCHORS,
        "skipped": skipped,
        "runs": runs,
    }
    # Written before anything else is printed: a closed stdout must not lose the run.
    path.write_text(json.dumps(doc, indent=2))
    table = render(summary, rat)
    print()
    print(table)
    tc = doc["tracing_check"]
    for s in TRACED:
        if tc.get(s, {}).get("ratio") is not None:
            extra = tc[s].get("every_job_traced")
            print(f"{s} ÷ shiftstream (untraced): {tc[s]['ratio']:.2f} "
                  f"(target ≥ {TRACED_MIN_RATIO:.2f}: {'met' if tc[s]['met'] else 'NOT met'})"
                  + ("" if extra is None else f"; every job traced: {extra}"))
    if cfg.extra.get("wait_round_trip_ms"):
        w = cfg.extra["wait_round_trip_ms"]
        print(f"\none write's round trip on the Sentinel primary: {w['set']['p50']} ms p50, "
              f"{w['set']['p99']} ms p99; with WAIT 1 behind it {w['set_wait1']['p50']} ms p50, "
              f"{w['set_wait1']['p99']} ms p99 ({w['n']} samples)")  # fmt: skip
    for name, cost in wait_cost.items():
        thr = _fmt(cost["throughput_ratio"], 2)
        p50, p99 = _fmt(cost["p50_delta_ms"], 2, "+"), _fmt(cost["p99_delta_ms"], 2, "+")
        print(f"\n{name} vs shiftstream (one server): throughput x{thr}, p50 {p50} ms, "
              f"p99 {p99} ms")  # fmt: skip
    for s, why in skipped.items():
        print(f"skipped {s}: {why}")

    print(f"\nwrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
