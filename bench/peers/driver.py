"""Measures one system for one round and prints one `RESULT {json}` line.

Run by bench/bench_pipeline.py with the python of the venv that has the system's framework (the
peers' venvs, or the project venv for the floor and ShiftStream). The protocol is the same for
every system, so the figures compare:

1. queue N jobs while no worker runs (the producer's rate is noted, not scored);
2. start the worker process(es) and read the done stream until all N are done: throughput is
   counted from the first completion to the last (see benchstats.throughput);
3. with the worker now warm and idle, send M jobs one at a time, each waiting for its own
   completion: submit -> done latency, p50 and p99;
4. stop the worker (SIGTERM to its process group, SIGKILL after a grace period).

"Done" is always an entry on a stream that the driver blocks on with XREAD: `bench:done`
(written by each peer's no-op handler) or, for ShiftStream, `solver.completed` on
`solver-events`. No polling sits between a completion and its observation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from redis.asyncio import Redis

HERE = Path(__file__).resolve().parent
WORKERS = HERE / "workers"
BENCH = HERE.parent
REPO = BENCH.parent
sys.path[:0] = [str(WORKERS), str(BENCH)]

from benchstats import percentile, throughput  # noqa: E402
from common import DONE_STREAM, GROUP, QUEUE  # noqa: E402

BIN = Path(sys.executable).parent
# Concurrent submissions when queueing; small enough for every client pool's default size.
CHUNK = 50


async def _ensure_group(r: Redis, stream: str, group: str) -> None:
    # Frameworks that create their group at `$` would skip the jobs queued before the worker
    # starts; creating it at 0 first makes them see the whole queue.
    try:
        await r.xgroup_create(stream, group, id="0", mkstream=True)
    except Exception as exc:
        if "BUSYGROUP" not in str(exc):
            raise


class Adapter(ABC):
    """One system: how to start its worker, submit a job, and recognise its completion."""

    name = ""
    done_stream = DONE_STREAM
    #: Described in the JSON so that a reader knows what was measured.
    notes = ""

    def __init__(self, url: str, args: argparse.Namespace) -> None:
        self.url = url
        self.args = args

    @abstractmethod
    def worker_cmds(self) -> list[list[str]]: ...

    def worker_cwd(self) -> Path:
        return WORKERS

    def worker_env(self) -> dict[str, str]:
        return dict(self.extra_env)

    @property
    def extra_env(self) -> dict[str, str]:
        # Experiments switch worker behaviour through the environment (--worker-env K=V).
        return dict(item.split("=", 1) for item in self.args.worker_env or [])

    async def setup(self, r: Redis) -> None:
        return None

    @abstractmethod
    async def submit(self, job_id: str) -> None: ...

    async def submit_many(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), CHUNK):
            await asyncio.gather(*(self.submit(i) for i in ids[start : start + CHUNK]))

    def done_id(self, fields: dict[str, str]) -> str | None:
        return fields.get("id")

    async def close(self) -> None:
        return None


class Floor(Adapter):
    name = "floor-streams"
    notes = (
        "raw redis-py: producer XADD (pipelined when queued), worker XREADGROUP COUNT 100 BLOCK, "
        "one pipeline per batch with a done XADD per entry and one XACK"
    )

    def worker_cmds(self) -> list[list[str]]:
        return [[sys.executable, "floor_worker.py"]]

    async def setup(self, r: Redis) -> None:
        self.r = r
        await _ensure_group(r, QUEUE, GROUP)

    async def submit(self, job_id: str) -> None:
        await self.r.xadd(QUEUE, {"id": job_id})

    async def submit_many(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 1000):
            pipe = self.r.pipeline(transaction=False)
            for i in ids[start : start + 1000]:
                pipe.xadd(QUEUE, {"id": i})
            await pipe.execute()


class Celery(Adapter):
    name = "celery"
    notes = "Celery Redis broker, worker -P solo (one process), prefetch default, acks early"

    def worker_cmds(self) -> list[list[str]]:
        return [
            [
                str(BIN / "celery"), "-A", "celery_worker", "worker", "-P", "solo",
                "-Q", QUEUE, "--loglevel=WARNING",
                # Start-up only: no broadcast chatter with other workers (there are none).
                "--without-gossip", "--without-mingle", "--without-heartbeat",
            ]
        ]

    async def setup(self, r: Redis) -> None:
        import celery_worker

        self.task = celery_worker.noop

    async def submit(self, job_id: str) -> None:
        self.task.apply_async(args=[job_id])

    async def submit_many(self, ids: Sequence[str]) -> None:
        for i in ids:
            self.task.apply_async(args=[i])


class Dramatiq(Adapter):
    name = "dramatiq"
    notes = "Dramatiq RedisBroker, --processes 1 --threads 10, max_retries=0"

    def worker_cmds(self) -> list[list[str]]:
        return [[str(BIN / "dramatiq"), "dramatiq_worker", "--processes", "1", "--threads", "10"]]

    async def setup(self, r: Redis) -> None:
        import dramatiq_worker

        self.actor = dramatiq_worker.noop

    async def submit(self, job_id: str) -> None:
        self.actor.send(job_id)

    async def submit_many(self, ids: Sequence[str]) -> None:
        for i in ids:
            self.actor.send(i)


class Arq(Adapter):
    name = "arq"
    notes = "arq defaults: max_jobs=10, poll_delay=0.5 s (jobs in a sorted set), one worker"

    def worker_cmds(self) -> list[list[str]]:
        return [[str(BIN / "arq"), "arq_worker.WorkerSettings"]]

    async def setup(self, r: Redis) -> None:
        from arq import create_pool
        from arq_worker import WorkerSettings

        self.pool = await create_pool(WorkerSettings.redis_settings)

    async def submit(self, job_id: str) -> None:
        await self.pool.enqueue_job("noop", job_id)

    async def close(self) -> None:
        await self.pool.aclose()


class Taskiq(Adapter):
    name = "taskiq"
    notes = (
        "taskiq-redis RedisStreamBroker (XREADGROUP COUNT 100, XACK after the task), --workers 1"
    )

    def worker_cmds(self) -> list[list[str]]:
        return [[str(BIN / "taskiq"), "worker", "taskiq_worker:broker", "--workers", "1"]]

    async def setup(self, r: Redis) -> None:
        await _ensure_group(r, QUEUE, GROUP)
        import taskiq_worker

        self.broker = taskiq_worker.broker
        self.task = taskiq_worker.noop
        await self.broker.startup()

    async def submit(self, job_id: str) -> None:
        await self.task.kiq(job_id)

    async def close(self) -> None:
        await self.broker.shutdown()


class FastStreamPeer(Adapter):
    name = "faststream"
    notes = "bare FastStream RedisBroker StreamSub with a group, default ack policy, uvloop"

    def worker_cmds(self) -> list[list[str]]:
        return [[sys.executable, "faststream_worker.py"]]

    async def setup(self, r: Redis) -> None:
        await _ensure_group(r, QUEUE, GROUP)
        from faststream.redis import RedisBroker

        self.broker = RedisBroker(self.url)
        await self.broker.connect()

    async def submit(self, job_id: str) -> None:
        await self.broker.publish(job_id, stream=QUEUE)

    async def close(self) -> None:
        await self.broker.stop()


class FastStreamLike(FastStreamPeer):
    name = "faststream-like"
    notes = "experiment: bare FastStream worker with ShiftStream's habits switched on by env"

    def worker_cmds(self) -> list[list[str]]:
        return [[sys.executable, "faststream_like_shiftstream_worker.py"]]


def tiny_roster_payload() -> str:
    """A week, two shifts, three employees, greedy: validated like any request, solved in <1 ms."""
    sys.path.insert(0, str(REPO))
    from shared.roster.model import SolveRequest

    request = SolveRequest.model_validate(
        {
            "version": 1,
            "name": "bench-tiny",
            "horizon": {"start_date": "2026-01-05", "days": 7},
            "shift_types": [
                {"id": "E", "start": "07:00", "length_minutes": 480},
                {"id": "L", "start": "14:00", "length_minutes": 480, "cannot_follow": []},
            ],
            "cover": [
                {"day": d, "shift": s, "required": 1} for d in range(7) for s in ("E", "L")
            ],
            "employees": [
                {"id": e, "max_minutes": 5 * 480, "max_consecutive_shifts": 5}
                for e in ("ana", "ben", "cai")
            ],
            "solver": {"implementation": "greedy", "time_limit_seconds": 5, "seed": 1},
        }
    )
    return request.model_dump_json(exclude_defaults=True)


class ShiftStream(Adapter):
    name = "shiftstream"
    done_stream = "solver-events"
    notes = (
        "public contract only: flat XADD type=solve job_id payload to workforce-solver; done = "
        "type=solver.completed on solver-events; services intake, solver, notifier, fallback, "
        "triage as processes, SOLVER_IMPLEMENTATION=greedy"
    )

    def __init__(self, url: str, args: argparse.Namespace) -> None:
        super().__init__(url, args)
        self.scale: dict[str, int] = {}
        for item in args.scale or []:
            svc, _, n = item.partition("=")
            self.scale[svc] = int(n)
        if self.scale:
            self.name = "shiftstream-x" + "-".join(f"{k}{v}" for k, v in sorted(self.scale.items()))
        self.payload = tiny_roster_payload()

    def worker_cwd(self) -> Path:
        return REPO

    def worker_env(self) -> dict[str, str]:
        return {"SOLVER_IMPLEMENTATION": "greedy", **self.extra_env}

    def worker_cmds(self) -> list[list[str]]:
        if self.args.runner == "dev":
            # The supervisor sets SHIFTSTREAM_DEV, which turns on the trace file: a figure with
            # tracing, unlike the default runner's.
            cmd = [str(BIN / "shiftstream"), "dev", "--redis-url", self.url]
            for svc, n in sorted(self.scale.items()):
                cmd += ["--scale", f"{svc}={n}"]
            return [cmd]
        cmds = []
        for svc in ("intake", "solver", "notifier", "fallback", "triage"):
            cmds += [[sys.executable, "-m", f"services.{svc}"]] * self.scale.get(svc, 1)
        return cmds

    async def setup(self, r: Redis) -> None:
        self.r = r

    def _fields(self, job_id: str) -> dict[Any, Any]:
        return {"type": "solve", "job_id": job_id, "payload": self.payload}

    async def submit(self, job_id: str) -> None:
        await self.r.xadd("workforce-solver", self._fields(job_id))

    async def submit_many(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 1000):
            pipe = self.r.pipeline(transaction=False)
            for i in ids[start : start + 1000]:
                pipe.xadd("workforce-solver", self._fields(i))
            await pipe.execute()

    def done_id(self, fields: dict[str, str]) -> str | None:
        if fields.get("type") == "solver.completed":
            return fields.get("job_id")
        return None

    async def hops(self, r: Redis, since_ms: int, prefix: str) -> dict[str, Any]:
        """Mean time per hop of the latency jobs, from the Redis-assigned entry ids.

        An entry id starts with the server's clock in ms at XADD, so the ids of one job on
        successive streams time each hop with no instrumentation in the services. One id is
        only ms-exact, but the latency jobs run one at a time, so the mean over hundreds is
        good to a few hundredths of a ms.
        """
        lo = f"{since_ms}-0"
        # The envelopes are binary: a client that does not decode replies.
        raw = Redis.from_url(self.url)

        def ms(entry_id: str | bytes) -> int:
            text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
            return int(text.split("-")[0])

        # redis-py types stream replies loosely: [(id, {field: value})] here.
        intake: Any = await r.xrange("workforce-solver", min=lo)
        submitted = {
            f["job_id"]: ms(i)
            for i, f in intake
            if f.get("job_id", "").startswith(prefix)
        }
        # Internal streams carry FastStream envelopes; the job id is in the body as JSON text.
        def by_job(entries: Any, marker: bytes | None = None) -> dict[str, int]:
            out: dict[str, int] = {}
            for entry_id, fields in entries:
                data = b"".join(v for v in fields.values() if isinstance(v, bytes))
                if marker is not None and marker not in data:
                    continue
                for jid in submitted:
                    if f'"{jid}"'.encode() in data:
                        out[jid] = ms(entry_id)
                        break
            return out

        queued = by_job(await raw.xrange("solver.jobs", min=lo))
        solved = by_job(await raw.xrange("solver.outcomes", min=lo), b'"completed"')
        await raw.aclose()
        published: Any = await r.xrange("solver-events", min=lo)
        events = {
            f["job_id"]: ms(i)
            for i, f in published
            if f.get("type") == "solver.completed" and f.get("job_id") in submitted
        }
        spans: dict[str, list[int]] = {"intake": [], "solver": [], "notifier": []}
        for jid, t0 in submitted.items():
            if jid in queued and jid in solved and jid in events:
                spans["intake"].append(queued[jid] - t0)
                spans["solver"].append(solved[jid] - queued[jid])
                spans["notifier"].append(events[jid] - solved[jid])
        return {
            "jobs": len(spans["intake"]),
            "mean_ms": {k: round(sum(v) / len(v), 3) if v else None for k, v in spans.items()},
            "how": "entry-id timestamps: workforce-solver -> solver.jobs -> solver.outcomes "
            "(completed) -> solver-events (completed)",
        }


class BullMQShiftStream(ShiftStream):
    """A BullMQ producer whose queue the bridge hands to ShiftStream: the monolith's side of
    the switch (docs/coming-from-bullmq.md), next to the `bullmq` row (BullMQ alone)."""

    name = "bullmq-shiftstream"
    queue_name = "workforce-solver"
    done_stream = f"bull:{queue_name}:events"
    notes = (
        "BullMQ producer (Python bullmq Queue.add/addBulk, the same Lua scripts as Node's) on "
        "queue workforce-solver; the bridge hands each job to ShiftStream (intake, solver, "
        "notifier, fallback, triage as processes, SOLVER_IMPLEMENTATION=greedy); done = "
        "BullMQ's own completed event, what QueueEvents and waitUntilFinished read"
    )

    def worker_env(self) -> dict[str, str]:
        return {**super().worker_env(), "BULLMQ_QUEUES": self.queue_name}

    def worker_cmds(self) -> list[list[str]]:
        cmds = super().worker_cmds()
        if self.args.runner == "dev":  # `shiftstream dev` starts the bridge for BULLMQ_QUEUES
            return cmds
        return [*cmds, [sys.executable, "-m", "services.bridge"]]

    async def setup(self, r: Redis) -> None:
        from bullmq import Queue

        await super().setup(r)
        self.request = json.loads(self.payload)
        self.queue = Queue(self.queue_name, {"connection": self.url})
        # BullMQ trims its events stream near 10,000 entries, and ten thousand queued jobs
        # write more than that before the reader catches up: keep them all for this run.
        await r.hset(f"bull:{self.queue_name}:meta", "opts.maxLenEvents", 10**7)

    async def submit(self, job_id: str) -> None:
        await self.queue.add("solve", self.request, {"jobId": job_id})

    async def submit_many(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 1000):
            await self.queue.addBulk(
                [
                    {"name": "solve", "data": self.request, "opts": {"jobId": i}}
                    for i in ids[start : start + 1000]
                ]
            )

    def done_id(self, fields: dict[str, str]) -> str | None:
        return fields.get("jobId") if fields.get("event") == "completed" else None

    async def hops(self, r: Redis, since_ms: int, prefix: str) -> dict[str, Any]:
        """ShiftStream's hops, plus the bridge's two: BullMQ `waiting` -> intake entry (the
        hand-over), and `solver.completed` -> BullMQ `completed` (the return value)."""
        out = await super().hops(r, since_ms, prefix)
        lo = f"{since_ms}-0"

        def ms(entry_id: str) -> int:
            return int(entry_id.split("-")[0])

        bull: Any = await r.xrange(self.done_stream, min=lo)
        waiting = {f["jobId"]: ms(i) for i, f in bull if f.get("event") == "waiting"}
        done = {f["jobId"]: ms(i) for i, f in bull if f.get("event") == "completed"}
        intake: Any = await r.xrange("workforce-solver", min=lo)
        handed = {f["job_id"]: ms(i) for i, f in intake if f.get("job_id", "").startswith(prefix)}
        events: Any = await r.xrange("solver-events", min=lo)
        solved = {f["job_id"]: ms(i) for i, f in events if f.get("type") == "solver.completed"}
        ins = [handed[j] - waiting[j] for j in handed if j in waiting]
        outs = [done[j] - solved[j] for j in solved if j in done]
        out["mean_ms"]["bridge_in"] = round(sum(ins) / len(ins), 3) if ins else None
        out["mean_ms"]["bridge_out"] = round(sum(outs) / len(outs), 3) if outs else None
        out["how"] += "; BullMQ waiting -> workforce-solver (bridge_in), solver-events " \
            "completed -> BullMQ completed (bridge_out)"
        return out

    async def close(self) -> None:
        await self.queue.close()


ADAPTERS: dict[str, type[Adapter]] = {
    a.name: a
    for a in (
        Floor, Celery, Dramatiq, Arq, Taskiq, FastStreamPeer, FastStreamLike, ShiftStream,
        BullMQShiftStream,
    )
}  # fmt: skip


def start_workers(adapter: Adapter, log_path: Path) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "REDIS_URL": adapter.url, "PYTHONUNBUFFERED": "1", **adapter.worker_env()}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(adapter.worker_cwd()), env.get("PYTHONPATH", "")) if p
    )
    log = log_path.open("ab")
    procs = []
    for cmd in adapter.worker_cmds():
        log.write(f"$ {' '.join(cmd)}\n".encode())
        log.flush()
        procs.append(
            subprocess.Popen(
                cmd, cwd=adapter.worker_cwd(), env=env, stdout=log, stderr=subprocess.STDOUT,
                # Own session: stopping the worker stops its children (celery/dramatiq/taskiq
                # fork), and nothing else.
                start_new_session=True,
            )
        )
    return procs


def cpu_seconds(procs: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    """User+system CPU seconds of each worker's process group, keyed by its command.

    Read from /proc so that forked children (Celery, Dramatiq, Taskiq supervisors) count too;
    ShiftStream's services are one group each, so this is CPU per service.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    # start_workers always passes a list of str.
    groups = {p.pid: " ".join(Path(a).name for a in cast(list[str], p.args)[:3]) for p in procs}
    out: dict[str, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pgrp = int(fields[2])
        if pgrp in groups:
            key = f"{groups[pgrp]} [{pgrp}]"
            out[key] = out.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return out


def stop_workers(procs: list[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        # Whatever the worker left behind in its group (forked children) goes too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()


class DoneReader:
    """Follows the done stream from where it last read, decoding completion ids."""

    def __init__(self, r: Redis, adapter: Adapter) -> None:
        self.r = r
        self.adapter = adapter
        self.last = "0"
        self.seen: set[str] = set()
        self.duplicates = 0

    async def read(self, block_ms: int) -> list[str]:
        got: Any = await self.r.xread(
            {self.adapter.done_stream: self.last}, count=5000, block=block_ms
        )
        ids: list[str] = []
        for _, entries in got or []:
            for entry_id, fields in entries:
                self.last = entry_id
                jid = self.adapter.done_id(fields)
                if jid is None:
                    continue
                if jid in self.seen:
                    self.duplicates += 1
                    continue
                self.seen.add(jid)
                ids.append(jid)
        return ids


async def measure(adapter: Adapter, args: argparse.Namespace) -> dict[str, Any]:
    r = Redis.from_url(adapter.url, decode_responses=True)
    await adapter.setup(r)
    result: dict[str, Any] = {"system": adapter.name, "round": args.round, "notes": adapter.notes}

    ids = [f"t{args.round}-{i}" for i in range(args.jobs)]
    t0 = time.perf_counter()
    await adapter.submit_many(ids)
    result["enqueue_jobs_s"] = args.jobs / (time.perf_counter() - t0)

    log_path = Path(args.log)
    procs = start_workers(adapter, log_path)
    reader = DoneReader(r, adapter)
    try:
        t_start = time.perf_counter()
        deadline = t_start + args.throughput_budget
        t_first = t_last = None
        first_count = 0
        cpu_at_first: dict[str, float] = {}
        while len(reader.seen) < args.jobs and time.perf_counter() < deadline:
            got = await reader.read(block_ms=200)
            now = time.perf_counter()
            if got and t_first is None:
                t_first, first_count = now, len(got)
                # From here on: CPU spent moving jobs, not importing and connecting.
                cpu_at_first = cpu_seconds(procs)
            if got:
                t_last = now
            if any(p.poll() is not None for p in procs):
                raise RuntimeError(f"a worker exited early; see {log_path}")
        done = len(reader.seen)
        cpu = {k: v - cpu_at_first.get(k, 0.0) for k, v in cpu_seconds(procs).items()}
        moved = max(done - first_count, 1)
        result["worker_cpu_ms_per_job"] = {
            k: round(1000 * v / moved, 3) for k, v in sorted(cpu.items())
        }
        result["worker_cpu_ms_per_job_total"] = round(1000 * sum(cpu.values()) / moved, 3)
        result.update(
            jobs=args.jobs,
            done=done,
            complete=done >= args.jobs,
            duplicates=reader.duplicates,
            startup_to_first_done_s=None if t_first is None else t_first - t_start,
            throughput_jobs_s=(
                None if t_first is None or t_last is None
                else throughput(done, first_count, t_first, t_last)
            ),
        )

        samples: list[float] = []
        lat_since_ms = int(time.time() * 1000) - 1
        lat_deadline = time.perf_counter() + args.latency_budget
        for i in range(args.warmup + args.latency_jobs):
            if time.perf_counter() > lat_deadline:
                break
            jid = f"l{args.round}-{i}"
            t0 = time.perf_counter()
            await adapter.submit(jid)
            while jid not in reader.seen:
                # Bounded block so that a lost job ends the phase instead of hanging it.
                got = await reader.read(block_ms=5000)
                if not got and time.perf_counter() > lat_deadline + 5:
                    break
            if jid in reader.seen and i >= args.warmup:
                samples.append((time.perf_counter() - t0) * 1000)
        result["latency_ms"] = {
            "n": len(samples),
            "requested": args.latency_jobs,
            "p50": percentile(samples, 50) if samples else None,
            "p99": percentile(samples, 99) if samples else None,
            "mean": sum(samples) / len(samples) if samples else None,
            "max": max(samples) if samples else None,
        }
        if isinstance(adapter, ShiftStream):
            result["latency_hops"] = await adapter.hops(r, lat_since_ms, f"l{args.round}-")
    finally:
        stop_workers(procs)
        await adapter.close()
        await r.aclose()
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("system", choices=sorted(ADAPTERS))
    ap.add_argument("--url", required=True)
    ap.add_argument("--round", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--latency-jobs", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--throughput-budget", type=float, default=120.0)
    ap.add_argument("--latency-budget", type=float, default=30.0)
    ap.add_argument("--scale", action="append", help="shiftstream: service=N, repeatable")
    ap.add_argument("--runner", choices=("modules", "dev"), default="modules")
    ap.add_argument("--log", default=os.devnull)
    ap.add_argument("--name", help="report under this name (e.g. shiftstream-x2)")
    ap.add_argument("--worker-env", action="append", help="K=V for the workers, repeatable")
    args = ap.parse_args()
    os.environ["REDIS_URL"] = args.url
    adapter = ADAPTERS[args.system](args.url, args)
    if args.name:
        adapter.name = args.name
    try:
        import uvloop

        result = uvloop.run(measure(adapter, args))
    except ImportError:
        result = asyncio.run(measure(adapter, args))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
