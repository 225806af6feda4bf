"""`task chaos`: N jobs through the public stream while the pipeline is being broken.

    python bench/chaos.py                 # 100 jobs (the CI size, tests/test_chaos.py)
    python bench/chaos.py --jobs 2000     # by hand
    python bench/chaos.py --jobs 300 --seed 7 --keep-logs
    python bench/chaos.py --bridge        # the same, the jobs added through BullMQ
    python bench/chaos.py --jobs 1000 --failovers 2   # on Sentinel, the primary killed twice

Starts its own Redis (AOF on, in a temp dir) and the five services under the dev runner's
supervisor (SHIFTSTREAM_TEST_CRASH=1, short time limits and idle times). A foreign producer
(plain redis-py XADD of flat fields) submits valid jobs (greedy and generetic mixed, a fraction
named `__crash__` so the C solver segfaults, a few `__hang__` for the watchdog; about 10 % of
them `priority high` and 10 % `low`, the rest normal, mostly without the field) and malformed
entries (random bytes, wrong types, missing fields, unknown `type`, oversize payloads,
duplicate job ids), while a chaos thread SIGKILLs solver, fallback, triage and notifier
processes at random (the supervisor restarts them) and restarts Redis twice (SIGTERM, start
again on the same port and dir).

At the end it prints and checks: every valid job exactly one terminal event (counted per
priority, each accepted under the priority it was sent with), every invalid one
exactly one `failed/invalid`, lost 0, duplicate terminal events 0, entries pending in any
group 0; and prints redeliveries, retries, fallbacks, dead letters and Redis memory before and
after. Exit status 1 on any violation.

With `--bridge` the producer is a BullMQ monolith: every entry that BullMQ can carry (a solve
under a job id, valid or not) is a `Queue.add` on the `workforce-solver` BullMQ queue, which
the BullMQ bridge (services/bridge/) hands to ShiftStream, and the bridge is SIGKILLed with
the others. It also checks that every BullMQ job ended exactly once in BullMQ, completed
where ShiftStream completed it and failed (with its error class, without BullMQ retries)
where ShiftStream failed it, and that no BullMQ job is left waiting or active.

With `--failovers N` Redis is a Sentinel deployment instead (a primary, a replica, three
sentinels; shared/cli/topology.py) and, in place of the restarts, its primary is killed N times
while jobs flow. Each failover is made lossy on purpose, as a network partition makes it: the
replica is paused, the primary is given more writes than the sockets between them hold, then
killed, so the promoted replica lacks the primary's last writes. The producer is a careful
monolith: it XADDs and WAITs for a replica (REDIS_WAIT_REPLICAS), and submits again under the
same job id when that fails; a reader follows `solver-events` throughout, as the monolith would.
Checked on top of the above: every job the reader saw accepted ends with exactly one terminal
event, and each service reads again, and events flow again, within 15 s of each promotion
(the times are printed). A service still not reading at 15 s is sent SIGUSR1, so its log (kept
on a violation) holds every asyncio task's stack at that moment: where it hangs.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import redis

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from shared.cli.devrunner import EmbeddedServer, Supervisor, service_env  # noqa: E402
from shared.cli.topology import SentinelSet, pause, resume  # noqa: E402
from shared.connection.durable import NotReplicated, write_durably_sync  # noqa: E402
from shared.connection.factory import sync_client  # noqa: E402
from shared.names import Names  # noqa: E402
from shared.roster.generator import generate  # noqa: E402
from shared.settings import Settings  # noqa: E402

T = TypeVar("T")
KILLABLE = ("solver", "fallback", "triage", "notifier")
BULL_PREFIX, BULL_QUEUE = "bull", "workforce-solver"
# Short locks so a killed bridge's jobs come back in seconds; many stalls allowed, because
# this kills the bridge far more often than any deployment sees (the stalls are counted).
BRIDGE_ENV = {
    "BULLMQ_QUEUES": BULL_QUEUE,
    "BULLMQ_PREFIX": BULL_PREFIX,
    "BULLMQ_LOCK_DURATION_MS": "2000",
    "BULLMQ_STALLED_INTERVAL_MS": "1000",
    "BULLMQ_MAX_STALLED_COUNT": "50",
}
TERMINAL = ("solver.completed", "solver.failed")
HIGH_SHARE, LOW_SHARE = 0.10, 0.10
# BullMQ priorities for ours under the bridge's default rules (BULLMQ_PRIORITY_HIGH_MAX 1,
# BULLMQ_PRIORITY_LOW_MIN 10); a normal job has none or one in between.
BULL_PRIORITY = {"high": (1,), "normal": (None, 5), "low": (20,)}
MAX_JSON = 200_000
# What the services must recover within after a promotion (issue #27).
RECOVERY_BOUND_S = 15.0
# Writes queued behind the paused replica's sockets: more than a loopback connection buffers
# (tcp_rmem/tcp_wmem), so what the primary writes after them never reaches the replica.
JUNK_WRITES, JUNK_BYTES = 12, 4 * 1024 * 1024

ENV = {
    "SHIFTSTREAM_TEST_CRASH": "1",
    "SOLVER_MAX_TIME_LIMIT": "1",
    "SOLVER_WATCHDOG_GRACE_SECONDS": "1",
    "RECLAIM_IDLE_MS": "1500",
    "RECLAIM_POLL_MS": "200",
    "RETRY_BASE_SECONDS": "0.2",
    "RETRY_FACTOR": "2",
    "RETRY_CAP_SECONDS": "1",
    "RETRY_MAX_ATTEMPTS": "4",
    "MAX_DELIVERIES": "6",
    "GRACEFUL_TIMEOUT": "5",
    "SCHEDULE_POLL_MS": "100",
    "SOLVER_MAX_JSON_BYTES": str(MAX_JSON),
    "WORKER_CONCURRENCY": "2",
    "PROGRESS_INTERVAL_SECONDS": "0.5",
}


@dataclass
class Plan:
    """What the producer sends and what each job id must end with."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    valid: set[str] = field(default_factory=set)
    invalid: set[str] = field(default_factory=set)
    anonymous: int = 0  # entries without a usable job id: each one `anon-<entry id>` failure
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    # Each valid job's priority (high and low about 10 % each); `normal` ones mostly say nothing.
    priority: dict[str, str] = field(default_factory=dict)


def _priority(rng: random.Random) -> str:
    roll = rng.random()
    return "high" if roll < HIGH_SHARE else "low" if roll < HIGH_SHARE + LOW_SHARE else "normal"


def _request(rng: random.Random, implementation: str, name: str | None) -> str:
    req = json.loads(
        generate(employees=rng.randint(4, 8), shifts=rng.randint(10, 30), seed=rng.randint(0, 9999))
        .model_dump_json()
    )
    req["solver"] = {
        "implementation": implementation,
        "time_limit_seconds": round(rng.uniform(0.2, 0.6), 2),
        "seed": 0,
    }
    if name:
        req["name"] = name
    return json.dumps(req)


def make_plan(n: int, rng: random.Random) -> Plan:
    plan = Plan()
    base = _request(rng, "greedy", None)
    duplicates: list[tuple[int, dict[str, Any]]] = []
    for i in range(n):
        job_id = f"chaos-{i}"
        roll = rng.random()
        kind: str
        fields: dict[str, Any]
        if roll < 0.78:
            sub = rng.random()
            if sub < 0.08:
                kind, payload = "crash", _request(rng, "generetic", f"__crash__{i}")
            elif sub < 0.10:
                kind, payload = "hang", _request(rng, "generetic", f"__hang__{i}")
            elif sub < 0.40:
                kind, payload = "generetic", _request(rng, "generetic", None)
            else:
                kind, payload = "greedy", _request(rng, "greedy", None)
            fields = {"type": "solve", "job_id": job_id, "payload": payload}
            priority = plan.priority[job_id] = _priority(rng)
            if priority != "normal" or rng.random() < 0.2:  # most normal jobs leave it out
                fields["priority"] = priority
            plan.valid.add(job_id)
            plan.entries.append(fields)
            if rng.random() < 0.05:  # a duplicate submission of the same id, later on
                duplicates.append((len(plan.entries), dict(fields)))
                plan.kinds["duplicate"] += 1
        else:
            sub = rng.randrange(7)
            anonymous = False
            if sub == 0:
                kind = "random-bytes"
                fields = {"type": "solve", "job_id": job_id, "payload": rng.randbytes(64)}
            elif sub == 1:
                kind = "wrong-types"
                bad = json.loads(base)
                bad["horizon"] = {"days": "many"}
                bad["employees"] = 7
                fields = {"type": "solve", "job_id": job_id, "payload": json.dumps(bad)}
            elif sub == 2:
                kind = "missing-payload"
                fields = {"type": "solve", "job_id": job_id}
            elif sub == 3:
                kind, anonymous = "missing-job-id", True
                fields = {"type": "solve", "payload": base}
            elif sub == 4:
                kind = "unknown-type"
                fields = {"type": "explode", "job_id": job_id, "payload": base}
            elif sub == 5:
                kind = "oversize"
                fields = {"type": "solve", "job_id": job_id, "payload": "x" * (MAX_JSON + 10)}
            else:
                kind, anonymous = "garbage-fields", True
                fields = {rng.randbytes(5): rng.randbytes(20)}
            plan.entries.append(fields)
            if anonymous:
                plan.anonymous += 1
            else:
                plan.invalid.add(job_id)
        plan.kinds[kind] += 1
    # Duplicates arrive after their original, somewhere later in the run.
    for after, fields in reversed(duplicates):
        plan.entries.insert(rng.randint(after, len(plan.entries)), fields)
    return plan


def _last_lines(stacktrace: str) -> list[str]:
    """The error line of each failed attempt BullMQ kept (a JSON list of tracebacks)."""
    try:
        stacks = json.loads(stacktrace)
    except ValueError:
        return [stacktrace[-200:]]
    return [str(t).strip().splitlines()[-1] if str(t).strip() else "?" for t in stacks or []]


def retrying(what: str, fn: Callable[[], T], timeout: float = 60.0) -> T:
    """Like any producer or operator tool: Redis may be restarting or failing over, try again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError,
                redis.ReadOnlyError, NotReplicated):  # fmt: skip
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: Redis unreachable for {timeout} s") from None
            time.sleep(0.1)


@dataclass
class Failover:
    """One killed primary: when, how long the promotion took, what the services needed."""

    killed_at: float
    old_port: int
    promoted_at: float = 0.0
    new_port: int = 0
    junk_lost: int = 0
    # service -> seconds from the promotion until its group read an entry written after it
    reading: dict[str, float | None] = field(default_factory=dict)
    # seconds from the promotion until the notifier wrote an event again
    events: float | None = None


class Monolith(threading.Thread):
    """Follows `solver-events` from the start, as a client would, through every failover."""

    def __init__(self, client: Any, stream: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.client, self.stream, self.halt = client, stream, stop
        self.accepted: set[str] = set()
        self.terminals: dict[str, list[str]] = collections.defaultdict(list)

    def run(self) -> None:
        last = "0-0"
        while not self.halt.is_set():
            try:
                reply = self.client.xread({self.stream: last}, count=1000, block=200)
            except redis.RedisError:
                time.sleep(0.1)
                continue
            for _, entries in reply or []:
                for entry_id, f in entries:
                    last = entry_id
                    if f.get("type") == "solver.accepted":
                        self.accepted.add(f["job_id"])
                    elif f.get("type") in TERMINAL:
                        self.terminals[f["job_id"]].append(f["type"])


class Chaos:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.server = EmbeddedServer(aof=True)
        self.bridge = bool(args.bridge)
        self.killable = (*KILLABLE, "bridge") if self.bridge else KILLABLE
        self.env = {**ENV, **(BRIDGE_ENV if self.bridge else {})}
        self.bulled: set[str] = set()  # job ids added through BullMQ
        # Sentinels that call a primary down after 3 s of silence: a loaded CI machine can stall
        # a process for a second, and a failover nobody asked for would muddle the figures.
        self.sentinel = (
            SentinelSet(replicas=1, sentinels=3, down_after_ms=3000) if args.failovers else None
        )
        self.unplanned: list[tuple[float, int, int]] = []  # (when, old port, new port)
        self.planned = threading.Event()
        self.logs = Path(tempfile.mkdtemp(prefix="shiftstream-chaos-"))
        self.kills: collections.Counter[str] = collections.Counter()
        self.redis_restarts = 0
        self.failovers: list[Failover] = []
        self.stop = threading.Event()
        self.sent = 0
        self.resent = 0
        self.anon_resent = 0
        self.plan_lock = threading.Lock()
        # No SIGKILLs from a failover until its services have recovered: the recovery times
        # are the failover's, not those of a process that was killed meanwhile.
        self.recovering = threading.Event()
        # (group, entry id) -> highest delivery count seen in a pending list
        self.deliveries: dict[tuple[str, str], int] = {}

    # ----------------------------------------------------------------- the run

    def run(self) -> int:
        plan = make_plan(self.args.jobs, self.rng)
        self.plan = plan
        env = dict(self.env)
        if self.sentinel is not None:
            self.sentinel.start()
            env |= self.sentinel.env()
            url = env["REDIS_URL"]
            self.expected_primary = self.sentinel.primary().port
            threading.Thread(target=self._watch_primary, daemon=True).start()
        else:
            self.server.start()
            url = self.server.url
        settings = Settings(**{**{k.lower(): v for k, v in env.items()}, "redis_url": url})
        self.settings = settings
        self.names = Names.from_settings(settings)
        self.redis = sync_client(settings, decode_responses=True, socket_timeout=5)
        raw = sync_client(settings, socket_timeout=5)
        if self.bridge:
            # BullMQ trims its events stream to 10,000 by default: keep every event to count.
            self.redis.hset(f"{BULL_PREFIX}:{BULL_QUEUE}:meta", "opts.maxLenEvents", 10**7)
        services = dict(env)
        if self.args.no_gate:  # the services show events at once; the producer still WAITs
            services["REDIS_WAIT_REPLICAS"] = "0"
        self.sup = Supervisor(service_env(url, services), log_dir=self.logs, grace=15)
        started = time.monotonic()
        self.sup.start()
        supervise = threading.Thread(target=self._supervise, daemon=True)
        supervise.start()
        self._wait_ready()
        self.monolith = Monolith(
            sync_client(settings, decode_responses=True, socket_timeout=5),
            self.names.events,
            self.stop,
        )
        self.monolith.start()
        memory_before = int(self.redis.info("memory")["used_memory"])
        producer = threading.Thread(target=self._produce, args=(plan, raw), daemon=True)
        producer.start()
        chaos = threading.Thread(target=self._chaos, args=(len(plan.entries), raw), daemon=True)
        chaos.start()
        producer.join()
        chaos.join()
        produced = time.monotonic() - started
        deadline = time.monotonic() + self.args.timeout
        wanted = plan.valid | plan.invalid
        while time.monotonic() < deadline:
            ends = retrying("events", self._terminal_events)
            anon = sum(1 for j in ends if j.startswith("anon-"))
            bull_done = not self.bridge or not retrying("bullmq", self._bull_unfinished)
            if wanted <= set(ends) and anon >= plan.anonymous and bull_done:
                break
            time.sleep(0.5)
        # Let late duplicates, reclaims and acks settle before judging the pending lists.
        pending = self._settle(deadline=time.monotonic() + 30)
        finished = time.monotonic() - started
        time.sleep(1.0)  # room for a wrong second terminal event
        ends = retrying("events", self._terminal_events)
        stream = retrying("events", lambda: self.redis.xrange(self.names.events))
        accepted = [f for _, f in stream if f.get("type") == "solver.accepted"]
        self.final_accepted = {f["job_id"] for f in accepted}
        self.accepted_priority = {f["job_id"]: f.get("priority", "normal") for f in accepted}
        figures = self._figures(raw)
        bull = retrying("bullmq", lambda: self._bull_report(ends)) if self.bridge else None
        memory_after = int(retrying("info", lambda: self.redis.info("memory"))["used_memory"])
        self.stop.set()
        supervise.join()
        self.monolith.join(5)
        self.sup.stop()
        if self.sentinel is not None:
            self.sentinel.stop()
        else:
            self.server.stop()
        return self._report(plan, ends, pending, figures, memory_before, memory_after,
                            produced, finished, bull)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        groups = self.names.groups.values()
        while time.monotonic() < deadline:
            try:
                if all(
                    any(g["name"] == grp for g in self.redis.xinfo_groups(stream))
                    for stream, grp in groups
                ):
                    return
            except redis.ResponseError:
                pass
            time.sleep(0.2)
        raise RuntimeError("services did not create their groups within 60 s")

    def _supervise(self) -> None:  # the dev runner's loop, and a look at the pending lists
        while not self.stop.wait(0.2):
            self.sup.check()
            # Redis may be restarting; the next tick looks again.
            with contextlib.suppress(redis.RedisError):
                self._sample_deliveries()

    def _sample_deliveries(self) -> None:
        for stream, group in (i for s in self.names.groups for i in self.names.inputs(s)):
            try:
                rows = self.redis.xpending_range(stream, group, min="-", max="+", count=1000)
            except redis.ResponseError:
                continue
            for r in rows:
                key = (group, str(r["message_id"]))
                self.deliveries[key] = max(self.deliveries.get(key, 0), int(r["times_delivered"]))

    def _submit(self, raw: Any, fields: dict[Any, Any]) -> None:
        """XADD, and with Sentinel WAIT for a replica: until then the submission could vanish
        in a failover, so a failed attempt is sent again (same job id: the intake drops the
        copy if the first one survived after all)."""
        s = self.settings
        replicas = 0 if self.args.producer_no_wait else s.wait_replicas
        attempts = 0

        def once() -> None:
            nonlocal attempts
            attempts += 1
            write_durably_sync(
                raw, replicas, s.redis_wait_timeout_ms,
                lambda pipe: pipe.xadd(self.names.intake, fields),
            )  # fmt: skip

        retrying("xadd", once, timeout=120)
        if attempts > 1:
            self.resent += 1
            job_id = fields.get("job_id")
            if not (isinstance(job_id, str) and job_id):
                self.anon_resent += attempts - 1

    def _produce(self, plan: Plan, raw: Any) -> None:
        if self.bridge:
            asyncio.run(self._produce_bullmq(plan, raw))
            return
        spread = self.args.produce_seconds / max(1, len(plan.entries))
        for fields in list(plan.entries):
            self._submit(raw, fields)
            self.sent += 1
            time.sleep(self.rng.uniform(0, 2 * spread))

    async def _produce_bullmq(self, plan: Plan, raw: redis.Redis) -> None:
        """A BullMQ monolith: solves under a job id go through BullMQ (priorities and short
        delays mixed in); the rest, which BullMQ cannot carry, straight into the intake."""
        from bullmq import Queue

        queue = Queue(BULL_QUEUE, {"connection": self.server.url, "prefix": BULL_PREFIX})
        spread = self.args.produce_seconds / max(1, len(plan.entries))
        try:
            for fields in plan.entries:
                job_id = fields.get("job_id")
                if fields.get("type") == "solve" and isinstance(job_id, str):
                    payload = fields.get("payload")
                    data = payload.decode("latin-1") if isinstance(payload, bytes) else payload
                    opts: dict[str, Any] = {"jobId": job_id, "attempts": 3,
                                            "backoff": {"type": "exponential", "delay": 500}}
                    wanted = plan.priority.get(job_id, "normal")
                    bull_priority = self.rng.choice(BULL_PRIORITY[wanted])
                    if bull_priority is not None:
                        opts["priority"] = bull_priority
                    if self.rng.random() < 0.1:
                        opts["delay"] = self.rng.randint(100, 1500)
                    await self._retrying_async(lambda d=data, o=opts: queue.add("solve", d, o))
                    self.bulled.add(job_id)
                else:
                    retrying("xadd", lambda f=fields: raw.xadd(self.names.intake, f))
                self.sent += 1
                await asyncio.sleep(self.rng.uniform(0, 2 * spread))
        finally:
            with contextlib.suppress(redis.RedisError, OSError):
                await queue.close()

    @staticmethod
    async def _retrying_async(fn: Callable[[], Any], timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await fn()
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError, OSError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)

    def _chaos(self, total: int, raw: Any) -> None:
        """Random SIGKILLs while producing; two Redis restarts at a third and two thirds, or
        with `--failovers N` N killed primaries spread evenly."""
        n = self.args.failovers or 2
        restarts_at = [total * (i + 1) // (n + 1) for i in range(n)]
        next_kill = time.monotonic() + self.rng.uniform(0.5, 1.5)
        while self.sent < total:
            if restarts_at and self.sent >= restarts_at[0]:
                restarts_at.pop(0)
                if self.sentinel is not None:
                    self._failover(raw)
                else:
                    self.server.bounce(down=self.rng.uniform(0.5, 1.5))
                    self.redis_restarts += 1
            # With --bridge, the bridge dies mid-run at least once, however the draws fall.
            must = self.bridge and not self.kills["bridge"] and self.sent >= total // 2
            if (must or time.monotonic() >= next_kill) and not self.recovering.is_set():
                service = "bridge" if must else self.rng.choice(self.killable)
                pids = self.sup.pids(service)
                if pids:
                    try:
                        os.kill(self.rng.choice(pids), signal.SIGKILL)
                        self.kills[service] += 1
                    except ProcessLookupError:
                        pass
                next_kill = time.monotonic() + self.rng.uniform(*self.args.kill_every)
            time.sleep(0.05)
        if self.sentinel is not None:
            while len(self.failovers) < self.args.failovers:  # a short run still fails over
                self._failover(raw)
            for f in self.failovers:  # the last one's services may still be recovering
                self._watch_recovery(f)
            return
        while self.redis_restarts < 2:  # a short run still restarts Redis twice
            self.server.bounce(down=0.5)
            self.redis_restarts += 1

    def _failover(self, raw: Any) -> None:
        """Kill the primary after a partition from its replica, so that it takes writes the
        replica never gets; the sentinels promote the replica; the old primary comes back as
        a replica of the new one."""
        assert self.sentinel is not None
        topo = self.sentinel
        primary = topo.primary()
        replica = next(n for n in topo.nodes if n is not primary)
        self.recovering.set()
        self.planned.set()
        pause(replica)
        try:
            with primary.client(socket_timeout=10) as direct:
                for i in range(JUNK_WRITES):
                    direct.set(f"chaos:junk:{i}", b"j" * JUNK_BYTES)
            time.sleep(0.3)  # the pipeline goes on writing to the doomed primary meanwhile
            killed = Failover(killed_at=time.time(), old_port=primary.port)
            primary.kill()
        finally:
            resume(replica)
        new = topo.wait_promotion(primary.port, timeout=60)
        killed.promoted_at, killed.new_port = time.time(), new.port
        with new.client(socket_timeout=10) as direct:
            survived = sum(direct.exists(f"chaos:junk:{i}") for i in range(JUNK_WRITES))
            direct.delete(*(f"chaos:junk:{i}" for i in range(JUNK_WRITES)))
        killed.junk_lost = JUNK_WRITES - survived
        self.failovers.append(killed)
        # Work for every service right after the promotion: a crashing job (solver, then
        # fallback), an invalid one (triage), both through intake and notifier.
        k = len(self.failovers)
        probes = {
            f"probe-{k}-crash": _request(self.rng, "generetic", f"__crash__probe{k}"),
            f"probe-{k}-invalid": '{"version": 99}',
        }
        for job_id, payload in probes.items():
            with self.plan_lock:
                (self.plan.valid if "crash" in job_id else self.plan.invalid).add(job_id)
                self.plan.kinds["probe"] += 1
            # No WAIT: they must flow now, not once the old primary has resynced.
            fields = {"type": "solve", "job_id": job_id, "payload": payload}
            retrying("probe", lambda f=fields: raw.xadd(self.names.intake, f))
        threading.Thread(target=self._watch_recovery, args=(killed,), daemon=True).start()
        # The old primary back as a replica of the new one (promotable once it has synced).
        topo.restart(primary)
        self.expected_primary = new.port
        self.planned.clear()

    def _watch_primary(self) -> None:
        """Record every promotion the chaos run did not cause (the sentinels' own)."""
        assert self.sentinel is not None
        while not self.stop.wait(0.2):
            if self.planned.is_set():
                continue
            try:
                _, port = self.sentinel.primary_address()
            except RuntimeError:
                continue
            if port != self.expected_primary and not self.planned.is_set():
                self.unplanned.append((time.time(), self.expected_primary, port))
                self.expected_primary = port

    def _watch_recovery(self, f: Failover, bound: float = 60.0) -> None:
        """Seconds from the promotion until each group read an entry written after it, and
        until the notifier wrote an event again (entry ids are the new primary's clock)."""
        after_ms = int(f.promoted_at * 1000)
        deadline = f.promoted_at + bound
        pending = set(self.names.groups) - set(f.reading)
        dumped = False
        while (pending or f.events is None) and time.time() < deadline:
            if not dumped and time.time() > f.promoted_at + RECOVERY_BOUND_S:
                # Past the bound: each late service writes its asyncio tasks' stacks to its
                # log (SIGUSR1, shared/streaming/runner.py), so a hang can be read afterwards.
                dumped = True
                for service in pending:
                    for pid in self.sup.pids(service):
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGUSR1)
            with contextlib.suppress(redis.RedisError):
                for service in list(pending):
                    stream, group = self.names.groups[service]
                    info = next(
                        g for g in self.redis.xinfo_groups(stream) if g["name"] == group
                    )
                    if int(str(info["last-delivered-id"]).split("-")[0]) > after_ms:
                        f.reading[service] = time.time() - f.promoted_at
                        pending.discard(service)
                if f.events is None:
                    last = self.redis.xrevrange(self.names.events, count=1)
                    if last and int(last[0][0].split("-")[0]) > after_ms:
                        f.events = time.time() - f.promoted_at
            time.sleep(0.05)
        for service in pending:
            f.reading.setdefault(service, None)
        self.recovering.clear()

    # ----------------------------------------------------------------- reading the outcome

    def _terminal_events(self) -> dict[str, list[dict[str, str]]]:
        ends: dict[str, list[dict[str, str]]] = collections.defaultdict(list)
        for _, f in self.redis.xrange(self.names.events):
            if f.get("type") in TERMINAL:
                ends[f["job_id"]].append(f)
        return ends

    def _bull_key(self, *parts: str) -> str:
        return ":".join((BULL_PREFIX, BULL_QUEUE, *parts))

    def _bull_unfinished(self) -> list[str]:
        """BullMQ jobs added by the producer that are in neither BullMQ's completed nor failed
        set yet."""
        pipe = self.redis.pipeline(transaction=False)
        ids = sorted(self.bulled)
        for j in ids:
            pipe.zscore(self._bull_key("completed"), j)
            pipe.zscore(self._bull_key("failed"), j)
        got = pipe.execute()
        return [j for i, j in enumerate(ids) if got[2 * i] is None and got[2 * i + 1] is None]

    def _bull_report(self, ends: dict[str, list[dict[str, str]]]) -> dict[str, Any]:
        """How each BullMQ job ended in BullMQ, against its ShiftStream terminal event."""
        finals: collections.Counter[str] = collections.Counter()
        stalled = 0
        for _, f in self.redis.xrange(self._bull_key("events")):
            if f.get("event") in ("completed", "failed"):
                finals[f["jobId"]] += 1
            stalled += f.get("event") == "stalled"
        mismatched, retried = [], []
        why: dict[str, list[str]] = {}
        for j in sorted(self.bulled):
            job = self.redis.hgetall(self._bull_key(j))
            end = ends.get(j, [{}])[0]
            if self.redis.zscore(self._bull_key("completed"), j) is not None:
                ok = end.get("type") == "solver.completed" and bool(job.get("returnvalue"))
            else:
                reason = job.get("failedReason", "")
                ok = end.get("type") == "solver.failed" and reason.startswith(
                    end.get("error_class", "?")
                )
                if int(job.get("atm") or job.get("attemptsMade") or 0) != 1:
                    retried.append(j)
                    why[j] = _last_lines(job.get("stacktrace", "[]"))
            if not ok:
                mismatched.append(j)
        counts = {
            state: int(self.redis.llen(self._bull_key(state)))
            for state in ("wait", "active", "paused")
        } | {
            state: int(self.redis.zcard(self._bull_key(state)))
            for state in ("delayed", "prioritized", "completed", "failed")
        }
        return {
            "jobs": len(self.bulled),
            "unfinished": self._bull_unfinished(),
            "duplicates": sorted(j for j, n in finals.items() if n > 1),
            "mismatched": mismatched,
            "retried": retried,
            "why": why,
            "stalled": stalled,
            "counts": counts,
        }

    def _pending(self) -> dict[str, int]:
        """Entries pending per service, over every stream it reads (each priority's)."""
        out = {}
        for service in self.names.groups:
            out[service] = 0
            for stream, group in self.names.inputs(service):
                with contextlib.suppress(redis.ResponseError):
                    out[service] += int(self.redis.xpending(stream, group)["pending"])
        return out

    def _scheduled(self) -> int:
        return sum(
            int(self.redis.zcard(self.names.schedule_for(p))) for p in ("high", "normal", "low")
        )

    def _settle(self, deadline: float) -> dict[str, int]:
        while True:
            pending = retrying("xpending", self._pending)
            scheduled = retrying("zcard", self._scheduled)
            if (not any(pending.values()) and not scheduled) or time.monotonic() > deadline:
                return pending
            time.sleep(0.3)

    def _figures(self, raw: redis.Redis) -> dict[str, int]:
        # The hops' inputs are trimmed of what was consumed: count what was ever written.
        fallbacks = sum(
            int(raw.xinfo_stream(s)["entries-added"])
            for s in self.names.prioritized(self.names.fallback) if raw.exists(s)
        )  # fmt: skip
        retries = sum(
            log.read_text(errors="replace").count('"message": "retrying ')
            for log in self.logs.glob("triage-*.log")
        )
        dead = int(raw.xlen(self.names.dead))
        sampled = sum(c - 1 for c in self.deliveries.values() if c > 1)
        handler_errors = sum(
            line.count('"level": "error"') for log in self.logs.glob("*.log")
            for line in log.read_text(errors="replace").splitlines() if '"channel"' in line
        )
        abandoned = sum(
            log.read_text(errors="replace").count("abandoning it")
            for log in self.logs.glob("solver-*.log")
        )
        return {"retries": retries, "fallbacks": fallbacks, "dead_letters": dead,
                "abandoned": abandoned,
                "handler_errors": handler_errors, "redeliveries": sampled}

    def _priority_lines(
        self, plan: Plan, ends: dict[str, list[dict[str, str]]], violations: list[str]
    ) -> list[str]:
        """Every valid job of every priority: exactly one terminal event, accepted under the
        priority it was sent with."""
        parts, wrong = [], []
        for priority in ("high", "normal", "low"):
            jobs = sorted(j for j, p in plan.priority.items() if p == priority)
            once = sum(1 for j in jobs if len(ends.get(j, [])) == 1)
            parts.append(f"{priority} {once} of {len(jobs)}")
            if once != len(jobs):
                violations.append(
                    f"{priority} jobs not ended exactly once "
                    f"{[j for j in jobs if len(ends.get(j, [])) != 1][:10]}"
                )
            wrong += [
                j for j in jobs
                if j in self.accepted_priority and self.accepted_priority[j] != priority
            ]  # fmt: skip
        if wrong:
            violations.append(f"accepted under another priority {wrong[:10]}")
        return [
            "valid jobs ended exactly once, by priority: " + ", ".join(parts)
            + f"; accepted under another priority than sent: {len(wrong)}"
        ]

    def _failover_lines(
        self, ends: dict[str, list[dict[str, str]]], violations: list[str]
    ) -> list[str]:
        seen = self.monolith.accepted
        unended = sorted(j for j in seen if len(ends.get(j, [])) != 1)
        mixed = sorted(j for j, kinds in self.monolith.terminals.items() if len(set(kinds)) > 1)
        twice = sum(1 for kinds in self.monolith.terminals.values() if len(kinds) > 1)
        accepted = self.final_accepted
        lines = [
            f"accepted events: {len(accepted & self.plan.valid)} of {len(self.plan.valid)} "
            "valid jobs (an `accepted` redelivered after its job's end is dropped)",
            f"monolith: saw {len(seen)} jobs accepted; without exactly one terminal event: "
            f"{len(unended)}; terminal events it read twice (the same end, re-emitted after a "
            f"failover): {twice}; jobs it saw end two different ways: {len(mixed)}",
            f"producer: {self.resent} submissions sent again after a failed WAIT or a lost "
            f"connection ({self.anon_resent} of them without a job id)",
        ]
        if self.sentinel is None:
            lines = lines[:2]
        else:
            lines.append(
                f"unplanned failovers (the sentinels' own): {len(self.unplanned)}"
                + "".join(f"; :{a} -> :{b}" for _, a, b in self.unplanned)
            )
        for i, f in enumerate(self.failovers, 1):
            reading = ", ".join(
                f"{svc} {'-' if t is None else f'{t:.1f} s'}"
                for svc, t in sorted(f.reading.items())
            )
            events = "-" if f.events is None else f"{f.events:.1f} s"
            lines.append(
                f"failover {i}: primary :{f.old_port} killed, :{f.new_port} promoted after "
                f"{f.promoted_at - f.killed_at:.1f} s; {f.junk_lost} of {JUNK_WRITES} "
                f"partitioned writes lost with the old primary; after the promotion each "
                f"service read again in: {reading}; events flowed again in {events}"
            )
            slow = [s for s, t in f.reading.items() if t is None or t > RECOVERY_BOUND_S]
            if slow or f.events is None or f.events > RECOVERY_BOUND_S:
                violations.append(
                    f"failover {i}: not recovered within {RECOVERY_BOUND_S:.0f} s: "
                    f"{slow or ['events']}"
                )
        if unended:
            violations.append(f"seen accepted, not ended exactly once {unended[:10]}")
        if mixed:
            violations.append(f"seen ending two different ways {mixed[:10]}")
        return lines

    def _report(
        self,
        plan: Plan,
        ends: dict[str, list[dict[str, str]]],
        pending: dict[str, int],
        figures: dict[str, int],
        memory_before: int,
        memory_after: int,
        produced: float,
        finished: float,
        bull: dict[str, Any] | None = None,
    ) -> int:
        lost = sorted((plan.valid | plan.invalid) - set(ends))
        if self.args.producer_no_wait:
            # A submission acknowledged by a primary that then died is gone, and nobody saw it
            # accepted; what was seen accepted is checked in `_failover_lines`.
            gone = [j for j in lost if j not in self.monolith.accepted]
            lines_before = [f"submissions lost with a failed primary (never seen accepted): "
                            f"{len(gone)}"]  # fmt: skip
            lost = [j for j in lost if j in self.monolith.accepted]
        else:
            lines_before = []
        duplicates = sorted(j for j, evs in ends.items() if len(evs) > 1)
        wrong_invalid = sorted(
            j for j in plan.invalid
            if ends.get(j) and (ends[j][0]["type"], ends[j][0].get("error_class"))
            != ("solver.failed", "invalid")
        )
        valid_as_invalid = sorted(
            j for j in plan.valid if ends.get(j) and ends[j][0].get("error_class") == "invalid"
        )
        anon = [j for j in ends if j.startswith("anon-")]
        # An entry without a job id sent again (its WAIT failed, but it survived after all)
        # is a second entry to report: there is no id to tell the copies apart.
        # Without the producer's WAIT, some may have vanished with a primary (nobody saw them).
        at_least = 0 if self.args.producer_no_wait else plan.anonymous
        anon_ok = at_least <= len(anon) <= plan.anonymous + self.anon_resent and all(
            ends[j][0].get("error_class") in ("invalid", "exhausted") for j in anon
        )
        unknown = sorted(set(ends) - plan.valid - plan.invalid - set(anon))
        outcomes = collections.Counter(
            f"{ends[j][0]['type']}/{ends[j][0].get('solver_used') or ends[j][0].get('error_class')}"
            for j in plan.valid if ends.get(j)
        )
        lines = [
            f"jobs: {self.args.jobs} planned ({len(plan.valid)} valid, {len(plan.invalid)} "
            f"invalid with id, {plan.anonymous} without id), {len(plan.entries)} entries sent",
            f"kinds: {dict(sorted(plan.kinds.items()))}",
            f"valid outcomes: {dict(sorted(outcomes.items()))}",
            f"chaos: SIGKILLs {dict(sorted(self.kills.items()))} (total "
            f"{sum(self.kills.values())}), Redis restarts {self.redis_restarts}, "
            f"failovers {len(self.failovers)}",
            *lines_before,
            f"lost: {len(lost)}",
            f"duplicate terminal events: {len(duplicates)}",
            f"invalid not failed/invalid: {len(wrong_invalid)}; valid failed as invalid: "
            f"{len(valid_as_invalid)}; anonymous failures {len(anon)}/{plan.anonymous}; "
            f"unexpected ids {len(unknown)}",
            f"pending in groups: {pending} (total {sum(pending.values())})",
            f"redeliveries: {figures['redeliveries']} (seen in pending lists, sampled every "
            f"0.2 s); handler errors: {figures['handler_errors']}; "
            f"retry decisions (triage's log): {figures['retries']}, "
            f"solve threads abandoned: {figures['abandoned']}, "
            f"fallbacks: {figures['fallbacks']}, dead letters: {figures['dead_letters']}",
            f"redis used_memory: before {memory_before / 1e6:.2f} MB, after "
            f"{memory_after / 1e6:.2f} MB",
            f"time: produced in {produced:.1f} s, all ended and settled at {finished:.1f} s",
        ]
        violations = []
        lines += self._priority_lines(plan, ends, violations)
        lines += self._failover_lines(ends, violations)
        if lost:
            violations.append(f"lost {lost[:10]}")
        if duplicates:
            violations.append(f"duplicates {duplicates[:10]}")
        if wrong_invalid or valid_as_invalid:
            violations.append(f"wrong classes {(wrong_invalid + valid_as_invalid)[:10]}")
        if not anon_ok:
            violations.append(f"anonymous failures {len(anon)} != {plan.anonymous}")
        if unknown:
            violations.append(f"events for ids never sent {unknown[:10]}")
        if any(pending.values()):
            violations.append(f"pending {pending}")
        if bull is not None:
            c = bull["counts"]
            lines.append(
                f"bullmq: {bull['jobs']} jobs added, completed {c['completed']}, failed "
                f"{c['failed']}; unfinished: {len(bull['unfinished'])}; ended twice: "
                f"{len(bull['duplicates'])}; ended unlike ShiftStream: "
                f"{len(bull['mismatched'])}; failed after BullMQ retries: "
                f"{len(bull['retried'])}; stalled jobs given back: {bull['stalled']}; left "
                f"waiting/active/delayed: {c['wait'] + c['prioritized']}/{c['active']}/"
                f"{c['delayed']}"
            )
            for key in ("unfinished", "duplicates", "mismatched", "retried"):
                if bull[key]:
                    violations.append(f"bullmq {key} {bull[key][:10]}")
            for j, errors in bull["why"].items():
                lines.append(f"bullmq: {j}'s failed attempts: {errors}")
            if c["wait"] + c["active"] + c["delayed"] + c["prioritized"] + c["paused"]:
                violations.append(f"bullmq jobs left {c}")
        print("\n".join(lines))
        if violations:
            print("VIOLATIONS: " + "; ".join(violations))
            print(f"service logs kept in {self.logs}")
            return 1
        print("OK: every job ended exactly once")
        if not self.args.keep_logs:
            for log in self.logs.glob("*.log"):
                log.unlink()
            self.logs.rmdir()
        else:
            print(f"service logs in {self.logs}")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--produce-seconds", type=float, default=None,
        help="spread the submissions over this long (default: 0.15 s per job, at least 15 s)",
    )
    parser.add_argument(
        "--kill-every", type=float, nargs=2, default=(1.0, 3.0), metavar=("MIN", "MAX"),
        help="seconds between SIGKILLs, drawn uniformly (default 1 3)",
    )
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds to wait for the last terminal event after producing")
    parser.add_argument("--keep-logs", action="store_true")
    parser.add_argument(
        "--bridge", action="store_true",
        help="add the jobs through BullMQ (the BullMQ bridge runs, and is killed too)",
    )
    parser.add_argument(
        "--failovers", type=int, default=0,
        help="run on Sentinel and kill its primary this many times (instead of restarting Redis)",
    )
    parser.add_argument(
        "--no-gate", action="store_true",
        help="with --failovers: services run with REDIS_WAIT_REPLICAS=0 (to see what the "
        "notifier's WAIT prevents)",
    )
    parser.add_argument(
        "--producer-no-wait", action="store_true",
        help="with --failovers: the producer does not WAIT after its XADD (a submission may "
        "then vanish; only jobs seen accepted must end)",
    )
    args = parser.parse_args(argv)
    if args.bridge and args.failovers:
        parser.error("--bridge with --failovers: the BullMQ producer speaks to one server only")
    if args.produce_seconds is None:
        args.produce_seconds = max(15.0, 0.15 * args.jobs)
    if args.timeout is None:
        args.timeout = 90.0 + 0.1 * args.jobs
    return Chaos(args).run()


if __name__ == "__main__":
    sys.exit(main())
