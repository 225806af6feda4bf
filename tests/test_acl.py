"""infra/redis/users.acl on a real server: each user can do its job and nothing else.

The template is rendered exactly as in production (infra/redis/render-acl.sh) with fresh
passwords and a test prefix, and loaded the production way (`--aclfile`, so a line Redis
rejects fails the start). Then the five services run as processes, each logging in as its own
user, and a job submitted by the `monolith` user completes; and the accesses each user must not
have are refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
import redis

from shared.cli.devrunner import (
    BRIDGE,
    SERVICES,
    Supervisor,
    free_port,
    server_binary,
    service_env,
)
from shared.names import READ_ORDER, Names
from shared.roster.model import SolveResult
from shared.settings import Settings
from tests.conftest import FAST_ENV, request_json

EMIT_EVENT = (Path(__file__).parents[1] / "services/notifier/emit_event.lua").read_text()
PROMOTE_DUE = (Path(__file__).parents[1] / "shared/jobs/promote_due.lua").read_text()
PRIORITY_READ = (
    Path(__file__).parents[1] / "shared/streaming/priority_read.lua"
).read_text()
HAND_OVER = (Path(__file__).parents[1] / "services/bridge/hand_over.lua").read_text()

ROOT = Path(__file__).resolve().parent.parent
USERS = (*SERVICES, BRIDGE, "monolith", "keda", "admin", "console")


@dataclass
class AclServer:
    port: int
    passwords: dict[str, str]
    names: Names
    prefix: str

    def url(self, user: str) -> str:
        return f"redis://{user}:{self.passwords[user]}@127.0.0.1:{self.port}/0"

    def client(self, user: str) -> redis.Redis:
        return redis.Redis.from_url(self.url(user), decode_responses=True)


def render(prefix: str, passwords: dict[str, str]) -> str:
    env = {**os.environ, "SHIFTSTREAM_PREFIX": prefix}
    env |= {f"{u.upper()}_PASSWORD": p for u, p in passwords.items()}
    return subprocess.run(
        ["sh", str(ROOT / "infra" / "redis" / "render-acl.sh")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture(scope="module")
def acl_server() -> Iterator[AclServer]:
    prefix = f"acl{uuid.uuid4().hex[:6]}:"
    passwords = {u: secrets.token_hex(12) for u in USERS}
    with tempfile.TemporaryDirectory(prefix="shiftstream-acl-") as d:
        acl = Path(d) / "users.acl"
        acl.write_text(render(prefix, passwords))
        port = free_port()
        proc = subprocess.Popen(
            [
                server_binary(),
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                d,
                "--aclfile",
                str(acl),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        server = AclServer(
            port, passwords, Names.from_settings(Settings(shiftstream_prefix=prefix)), prefix
        )
        admin = server.client("admin")
        deadline = time.monotonic() + 10
        while True:
            try:
                admin.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None:
                    out = proc.stdout.read().decode() if proc.stdout else ""
                    pytest.fail(f"server refused the rendered ACL file:\n{out[-2000:]}")
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.05)
        try:
            yield server
        finally:
            admin.close()
            proc.terminate()
            proc.wait(10)


def refused(client: redis.Redis, *command: str) -> bool:
    try:
        client.execute_command(*command)
    except redis.exceptions.NoPermissionError:
        return True
    except redis.exceptions.AuthenticationError:
        return True
    except redis.ResponseError as err:
        return "NOPERM" in str(err) or "NOAUTH" in str(err)
    return False


def test_anonymous_access_is_off(acl_server: AclServer) -> None:
    anon = redis.Redis(port=acl_server.port)
    assert refused(anon, "PING") or refused(anon, "XLEN", acl_server.names.intake)


def test_monolith_publishes_and_follows_events_only(acl_server: AclServer) -> None:
    n = acl_server.names
    mono = acl_server.client("monolith")
    mono.xadd(n.intake, {"type": "solve", "job_id": "acl-1", "payload": "{}"})
    mono.xgroup_create(n.events, "monolith", id="$", mkstream=True)
    assert mono.xreadgroup("monolith", "m1", {n.events: ">"}, count=1) in ([], None, {})
    assert not refused(mono, "XACK", n.events, "monolith", "0-1")
    assert not refused(mono, "XRANGE", n.events, "-", "+", "COUNT", "1")
    # No forged events, no peeking at the intake or any internal stream, no admin.
    assert refused(mono, "XADD", n.events, "*", "type", "solver.completed", "job_id", "x")
    assert refused(mono, "XRANGE", n.intake, "-", "+")
    assert refused(mono, "XRANGE", n.jobs, "-", "+")
    assert refused(mono, "XREADGROUP", "GROUP", "solver", "x", "STREAMS", n.jobs, ">")
    assert refused(mono, "XADD", n.jobs, "*", "a", "1")
    assert refused(mono, "DEL", n.events)
    assert refused(mono, "XTRIM", n.events, "MAXLEN", "0")
    assert refused(mono, "FLUSHALL")
    assert refused(mono, "KEYS", "*")
    assert refused(mono, "HGETALL", n.job("acl-1"))
    # Groups are not keys: the ACL cannot name the monolith's own group, so it may ack in
    # any group of the events stream (docs/publishing.md), but not destroy one, nor leave db 0.
    assert refused(mono, "XGROUP", "DESTROY", n.events, "monolith")
    assert refused(mono, "XGROUP", "SETID", n.events, "monolith", "$")
    assert refused(mono, "SELECT", "1")
    assert not refused(mono, "SELECT", "0")


def test_services_cannot_reach_outside_their_lane(acl_server: AclServer) -> None:
    n = acl_server.names
    notifier = acl_server.client("notifier")
    assert refused(notifier, "XADD", n.jobs, "*", "a", "1")
    assert refused(notifier, "XRANGE", n.intake, "-", "+")
    solver = acl_server.client("solver")
    assert refused(solver, "XADD", n.events, "*", "type", "solver.completed")
    assert refused(solver, "XRANGE", n.intake, "-", "+")
    assert refused(solver, "SET", n.idempotency("j"), "1")
    assert refused(solver, "SET", n.cancel("j"), "1")  # reads cancel markers, never sets them
    # A large result: the solver and the fallback only write it, the notifier's script moves
    # it; no one else reads it.
    assert not refused(solver, "SET", n.result("j", "t"), "{}")
    assert not refused(solver, "UNLINK", n.result("j", "t"))  # one no outcome will name
    assert refused(solver, "UNLINK", n.job("j"))
    assert refused(solver, "GET", n.result("j", "t"))
    assert refused(solver, "SET", n.terminal("j"), "1")
    assert refused(notifier, "GET", n.fence("c"))  # GET and DEL only on the results
    assert refused(notifier, "DEL", n.job("j"))
    assert refused(acl_server.client("monolith"), "GET", n.result("j", "t"))
    assert refused(acl_server.client("console"), "GET", n.result("j", "t"))
    intake = acl_server.client("intake")
    assert refused(intake, "XADD", n.events, "*", "type", "solver.completed")
    assert refused(intake, "XRANGE", n.jobs, "-", "+")  # write-only on its outputs
    assert refused(intake, "XADD", n.dead, "*", "a", "1")
    triage = acl_server.client("triage")
    assert refused(triage, "XRANGE", n.dead, "-", "+")
    assert refused(triage, "XADD", n.events, "*", "a", "1")
    fallback = acl_server.client("fallback")
    assert refused(fallback, "XADD", n.jobs, "*", "a", "1")
    bridge = acl_server.client(BRIDGE)
    assert refused(bridge, "XADD", n.events, "*", "type", "solver.completed", "job_id", "x")
    assert refused(bridge, "SET", n.terminal("x"), "1")  # reads guards, never writes them
    assert refused(bridge, "XRANGE", n.intake, "-", "+")  # appends to the intake, reads nothing
    assert refused(bridge, "DEL", n.intake)
    assert refused(bridge, "XTRIM", n.intake, "MAXLEN", "0")
    assert refused(bridge, "HSET", n.job("x"), "state", "completed")
    assert refused(bridge, "SET", n.idempotency("x"), "1")
    assert refused(bridge, "XREADGROUP", "GROUP", "solver", "b", "STREAMS", n.jobs, ">")
    assert refused(bridge, "SCAN", "0")  # BullMQ's rights are on its keys, not on key names
    assert refused(bridge, "SCRIPT", "FLUSH")
    for user in (*SERVICES, BRIDGE):
        c = acl_server.client(user)
        assert refused(c, "FLUSHALL"), user
        assert refused(c, "CONFIG", "GET", "*"), user
        assert refused(c, "ACL", "LIST"), user
        assert refused(c, "KEYS", "*"), user
        assert refused(c, "GET", "unrelated-key"), user


def test_side_work_off_the_happy_path_is_allowed(acl_server: AclServer) -> None:
    """Delayed solves, cancels, retries and dead letters: paths one completed job never takes."""
    n = acl_server.names
    intake = acl_server.client("intake")
    assert intake.set(n.idempotency("d1"), "1-0", nx=True, ex=60)
    assert intake.get(n.idempotency("d1")) == "1-0"
    # A cancel: is the job known, and for how long (the marker never outlives the claim)?
    expires = intake.pexpiretime(n.idempotency("d1"))
    assert int(intake.time()[0]) * 1000 < expires
    assert intake.hget(n.job("d1"), "state") is None
    intake.set(n.cancel("d1"), "1", pxat=expires)
    intake.zadd(n.schedule, {"delayed": 1})  # not_before
    intake.hset(n.job("d1"), mapping={"state": "scheduled"})
    intake.expire(n.job("d1"), 60)
    for user in ("solver", "fallback"):
        c = acl_server.client(user)
        assert c.exists(n.cancel("d1")) == 1, user
        c.xadd(n.failures, {"a": "1"})
        c.xadd(n.outcomes, {"a": "1"})
    acl_server.client("solver").xadd(n.fallback, {"a": "1"})
    triage = acl_server.client("triage")
    triage.zadd(n.schedule, {"retry": 2})
    assert triage.zcard(n.schedule) >= 2
    triage.xadd(n.dead, {"a": "1"}, maxlen=1000, approximate=True)
    triage.xadd(n.outcomes, {"a": "1"})
    assert triage.zrem(n.schedule, "retry") == 1


def test_retention_runs_under_its_users(acl_server: AclServer) -> None:
    """Every service trims each stream it consumes of what its group acknowledged, keeping the
    pending and the unread entries, and triage the dead letters past their age: each with its
    own rights, and no right to trim another service's input."""
    import asyncio

    from services.triage.triage import trim_dead
    from shared.connection.factory import async_client
    from shared.streaming.retention import trim_consumed

    n = acl_server.names
    admin = acl_server.client("admin")
    inputs = {service: n.inputs(service) for service in n.groups}
    assert [len(v) for v in inputs.values()] == [1, 3, 3, 1, 1]
    for service, streams in inputs.items():
        c = acl_server.client(service)
        for stream, group in streams:
            admin.delete(stream)  # what earlier tests left there
            admin.xgroup_create(stream, group, id="0", mkstream=True)
            ids = [admin.xadd(stream, {"a": str(i)}) for i in range(4)]
            [(_, read)] = c.xreadgroup(group, "c1", {stream: ">"}, count=3)
            c.xack(stream, group, read[0][0], read[2][0])  # the second stays pending

            async def trim(user: str = service, stream: str = stream, group: str = group) -> int:
                client = async_client(Settings(redis_url=acl_server.url(user)))
                try:
                    return await trim_consumed(client, stream, group)
                finally:
                    await client.aclose()

            assert asyncio.run(trim()) == 1, (service, stream)
            # The pending entry and everything after it (acknowledged or not yet read) stay.
            assert [i for i, _ in admin.xrange(stream)] == ids[1:], (service, stream)
            c.xack(stream, group, read[1][0])
            c.xreadgroup(group, "c1", {stream: ">"})  # the last one, now pending
            assert asyncio.run(trim()) == 2, (service, stream)
            assert [i for i, _ in admin.xrange(stream)] == ids[3:], (service, stream)
        others = [s for other, v in inputs.items() if other != service for s, _ in v]
        for stream in others:
            assert refused(c, "XTRIM", stream, "MAXLEN", "0"), (service, stream)
        assert refused(c, "XTRIM", n.events, "MAXLEN", "0"), service
    admin.xadd(n.dead, {"a": "1"})

    async def dead_trimmed() -> int:
        client = async_client(Settings(redis_url=acl_server.url("triage")))
        try:
            return await trim_dead(client, n.dead, -60)  # every letter is past this age
        finally:
            await client.aclose()

    assert asyncio.run(dead_trimmed()) >= 1
    assert admin.xlen(n.dead) == 0
    triage = acl_server.client("triage")
    assert refused(triage, "XRANGE", n.dead, "-", "+")


def test_what_waits_for_replicas_may_wait(acl_server: AclServer) -> None:
    """With Sentinel the notifier fences and WAITs before a batch's events, and the monolith
    WAITs after its XADD (decision 0012): each with its own rights, nothing more."""
    n = acl_server.names
    notifier = acl_server.client("notifier")
    with notifier.pipeline(transaction=False) as pipe:
        pipe.set(n.fence("notifier-1"), "1", px=60_000)
        pipe.wait(0, 10)
        assert pipe.execute() == [True, 0]
    assert refused(notifier, "SET", n.replayed("dl-x"), "1")  # a replay's mark: admin only
    mono = acl_server.client("monolith")
    with mono.pipeline(transaction=False) as pipe:
        pipe.xadd(n.intake, {"type": "solve", "job_id": "acl-wait", "payload": "{}"})
        pipe.wait(0, 10)
        assert pipe.execute()[1] == 0
    for user in ("monolith", *SERVICES):  # a Cluster client learns the slot map
        assert not refused(acl_server.client(user), "CLUSTER", "SLOTS"), user
    assert refused(acl_server.client("solver"), "SET", n.fence("x"), "1")


def test_keda_reads_lag_only(acl_server: AclServer) -> None:
    n = acl_server.names
    admin = acl_server.client("admin")
    keda = acl_server.client("keda")
    for service in SERVICES:
        stream, group = n.groups[service]
        with contextlib.suppress(redis.ResponseError):  # BUSYGROUP from an earlier test
            admin.xgroup_create(stream, group, id="0", mkstream=True)
        assert any(g["name"] == group for g in keda.xinfo_groups(stream))
        assert not refused(keda, "XPENDING", stream, group)
        assert refused(keda, "XADD", stream, "*", "a", "1")
        assert refused(keda, "XRANGE", stream, "-", "+")
    assert refused(keda, "XINFO", "GROUPS", n.events)


def test_scripts_run_under_their_users(acl_server: AclServer) -> None:
    """Commands inside Lua are ACL-checked: each script must fit its caller's rights."""
    n = acl_server.names
    notifier = acl_server.client("notifier")
    emit = notifier.register_script(EMIT_EVENT)
    entry = emit(
        keys=[n.terminal("s1"), n.events],
        args=["1", "60", "1000", "type", "solver.failed", "job_id", "s1"],
    )
    assert entry
    assert emit(keys=[n.terminal("s1"), n.events], args=["1", "60", "1000", "type", "x"]) is None
    triage = acl_server.client("triage")
    triage.zadd(n.schedule, {"member": 0})
    promote = triage.register_script(PROMOTE_DUE)
    assert promote(
        keys=[n.scheduled, n.schedule, n.jobs], args=[str(int(time.time() * 1000)), "10"]
    )
    # Every priority's schedule into its stream (shared/jobs/schedule.py).
    triage.zadd(n.schedule_for("high"), {"urgent": 0})
    pairs = [k for p in READ_ORDER for k in (n.schedule_for(p), n.jobs_for(p))]
    assert promote(keys=[n.scheduled, *pairs], args=[str(int(time.time() * 1000)), "10"])
    # The priority read (shared/streaming/priority_read.lua) under the solver and the fallback.
    for user, stream, group in (("solver", n.jobs, "solver"), ("fallback", n.fallback, "fallback")):
        client = acl_server.client(user)
        streams = n.prioritized(stream)
        for s in streams:
            with contextlib.suppress(redis.ResponseError):
                client.xgroup_create(s, group, id="0", mkstream=True)
        read = client.register_script(PRIORITY_READ)
        kind, _ = read(keys=list(streams), args=[group, "c", "10", "1000"])
        assert int(kind) in (0, 1)
        client.xread({s: "0-0" for s in streams}, count=1, block=1)
    # The same script under a user without the key is refused, inside the script.
    solver = acl_server.client("solver")
    with pytest.raises(redis.ResponseError):
        solver.register_script(EMIT_EVENT)(
            keys=[n.terminal("s2"), n.events], args=["1", "60", "1000", "type", "x"]
        )


def test_the_bridge_does_its_job_and_nothing_else(acl_server: AclServer) -> None:
    n = acl_server.names
    bridge = acl_server.client(BRIDGE)
    hand_over = bridge.register_script(HAND_OVER)
    fields = ["type", "solve", "job_id", "b1", "payload", "{}", "priority", "high"]
    reply = hand_over(
        keys=[n.bridged("b1"), n.intake], args=["workforce-solver:1", 60, 1000, "claim", *fields]
    )
    assert reply[0] == "new"
    assert hand_over(keys=[n.bridged("b1"), n.intake], args=["q:2", 60, 1000, "claim"])[0] == (
        "taken"
    )
    bridge.xadd(n.intake, {"type": "cancel", "job_id": "b1"})
    assert bridge.get(n.terminal("b1")) is None
    assert bridge.exists(n.idempotency("b1")) == 0 and bridge.hgetall(n.job("b1")) == {}
    assert bridge.xrevrange(n.events, count=1) is not None
    assert bridge.xread({n.events: "0-0"}, count=1) is not None
    bridge.set(n.bridge_heartbeat("pod-1"), "{}", ex=10)
    # BullMQ's keys (default prefix `bull`): its commands, INFO for its version check.
    assert bridge.info("server")["redis_version"]
    bridge.hset("bull:workforce-solver:1", mapping={"data": "{}"})
    assert bridge.bzpopmin("bull:workforce-solver:marker", timeout=0.01) is None
    assert refused(bridge, "HSET", "not-bull:1", "a", "1")
    assert refused(bridge, "KEYS", "bull:*")


def test_pipeline_completes_with_each_service_on_its_own_user(
    acl_server: AclServer, tmp_path: Path
) -> None:
    n = acl_server.names
    # The bridge follows BullMQ's default prefix, which the ACL file grants.
    env = {**FAST_ENV, "SHIFTSTREAM_PREFIX": acl_server.prefix, "BULLMQ_QUEUES": "workforce-solver"}
    env["TRIM_INTERVAL_SECONDS"] = "0.3"  # each service trims its inputs under its own user
    # The solved roster goes to its event under a key (the path of large results), which the
    # solver writes and the notifier's script moves under their own users.
    env["RESULT_KEY_MIN_BYTES"] = "1"
    supervisors = [
        Supervisor(
            service_env(acl_server.url(s), env),
            {x: (1 if x == s else 0) for x in (*SERVICES, BRIDGE)},
            cwd=ROOT,
            log_dir=tmp_path,
            grace=15,
        )
        for s in (*SERVICES, BRIDGE)
    ]
    # The module's earlier tests leave poison entries pending in the hops' groups; trimming
    # stops below the oldest pending entry, so this run starts from empty inputs.
    admin = redis.Redis.from_url(acl_server.url("admin"))
    admin.delete(*{s for service in SERVICES for s, _ in n.inputs(service)})
    mono = acl_server.client("monolith")
    group = f"mono-{uuid.uuid4().hex[:6]}"
    mono.xgroup_create(n.events, group, id="$", mkstream=True)
    for sup in supervisors:
        sup.start()
    try:
        job_id = f"acl-{uuid.uuid4().hex[:8]}"
        mono.xadd(
            n.intake,
            {"type": "solve", "job_id": job_id, "payload": request_json(time_limit=0.5)},
        )
        seen: list[dict[str, str]] = []
        deadline = time.monotonic() + 60
        while not any(e["type"] in ("solver.completed", "solver.failed") for e in seen):
            assert time.monotonic() < deadline, f"no terminal event; seen {seen}\n{logs(tmp_path)}"
            for _, entries in mono.xreadgroup(group, "m", {n.events: ">"}, block=500) or []:
                for entry_id, fields in entries:
                    mono.xack(n.events, group, entry_id)
                    if fields["job_id"] == job_id:
                        seen.append(fields)
        terminal = seen[-1]
        # Real events from the running services match the published contract.
        schema = json.loads((ROOT / "docs" / "schemas" / "solver-event.v1.json").read_text())
        for event in seen:
            jsonschema.validate(event, schema)
        assert terminal["type"] == "solver.completed", (terminal, logs(tmp_path))
        assert len(SolveResult.model_validate_json(terminal["result"]).assignments) == 8
        assert admin.keys(n.result(job_id, "*")) == []
        assert seen[0]["type"] == "solver.accepted"
        # This job's entries leave every hop's input.
        mark = job_id.encode()

        def holds_job(stream: str) -> bool:
            return any(
                mark in b"".join(k + v for k, v in fields.items())
                for _, fields in admin.xrange(stream)
            )

        deadline = time.monotonic() + 30
        while any(holds_job(s) for s in (n.intake, n.jobs, n.outcomes)):
            assert time.monotonic() < deadline, f"inputs not trimmed\n{logs(tmp_path)}"
            time.sleep(0.1)
        # Liveness probe under the service's own user sees its consumers reading.
        for service in SERVICES:
            probe = subprocess.run(
                [sys.executable, "-m", "shared.observability.health",
                 "--service", service, "--check", "live", "--max-idle", "30"],
                env={**service_env(acl_server.url(service), env), "CONSUMER_NAME": service},
                cwd=ROOT, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert probe.returncode == 0, (service, probe.stdout, probe.stderr)
        # The Node example (ioredis) needs nothing beyond the monolith user either.
        node = run_node_example(acl_server, tmp_path)
        assert node.returncode == 0, f"{node.stdout}\n{node.stderr}\n{logs(tmp_path)}"
        # Nor does the BullMQ monolith (bullmq 6 from npm), through the bridge on its user.
        bull = run_bullmq_example(acl_server, tmp_path)
        assert bull.returncode == 0, f"{bull.stdout}\n{bull.stderr}\n{logs(tmp_path)}"
        assert '"event":"roster"' in bull.stdout
        for user in (BRIDGE,):
            probe = subprocess.run(
                [sys.executable, "-m", "shared.observability.health",
                 "--service", user, "--check", "live", "--max-idle", "30"],
                env={**service_env(acl_server.url(user), env),
                     "CONSUMER_NAME": consumer_name(supervisors[-1].procs[0].popen.pid)},
                cwd=ROOT, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert probe.returncode == 0, (user, probe.stdout, probe.stderr)
        assert "NOPERM" not in logs(tmp_path), logs(tmp_path)
        assert "trimming" not in logs(tmp_path), logs(tmp_path)  # none failed
    finally:
        for sup in supervisors:
            sup.stop()


def test_console_reads_everything_and_writes_only_its_actions(
    acl_server: AclServer, tmp_path: Path
) -> None:
    """The console under its own user: pages render, every action works, nothing else."""
    import asyncio
    import urllib.parse
    import urllib.request

    from shared.jobs.messages import AttemptError, DeadLetter, ErrorClass
    from shared.streaming.codec import encode_entry

    n = acl_server.names
    admin = acl_server.client("admin")
    for service in SERVICES:
        stream, group = n.groups[service]
        with contextlib.suppress(redis.ResponseError):
            admin.xgroup_create(stream, group, id="0", mkstream=True)
    letter = DeadLetter(
        dead_letter_id="dl-acl-1", job_id="acl-dead", error_class=ErrorClass.EXHAUSTED,
        reason="test", attempts=3, payload=request_json(time_limit=0.5), raw=None,
        history=[AttemptError(attempt=1, stage="solver", error_class=ErrorClass.CRASH,
                              error_type="SolverCrashed", message="boom")],
        trace_id=None, first_seen=None,
    )  # fmt: skip
    data = asyncio.run(encode_entry(letter))
    admin.delete(n.dead)  # earlier tests of this module leave entries of their own
    admin.execute_command("XADD", n.dead, "*", "__data__", data)
    admin.hset(n.job("acl-dead"), mapping={"state": "failed", "dead_letter_id": "dl-acl-1"})
    port = free_port()
    env = {
        **service_env(acl_server.url("console"), {"SHIFTSTREAM_PREFIX": acl_server.prefix}),
        "CONSOLE_PORT": str(port), "CONSOLE_TOKEN": "t0ken", "CONSOLE_REFRESH_SECONDS": "0.3",
    }  # fmt: skip
    log = (tmp_path / "console.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "services.console"], env=env, cwd=ROOT,
                            stdout=log, stderr=log)  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def call(path: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        body = None if form is None else urllib.parse.urlencode(form).encode()
        headers = {"Authorization": "Bearer t0ken"}
        req = urllib.request.Request(base + path, data=body, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if call("/readyz")[0] == 200:
                    break  # a whole sample (stats, window, history write) went through
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (
                tmp_path / "console.log"
            ).read_text()
            time.sleep(0.2)
        for path in ("/", "/jobs", "/dead", "/dead/dl-acl-1", "/jobs/acl-dead"):
            status, text = call(path)
            assert status == 200 and "NOPERM" not in text, (
                path,
                status,
                text[-300:],
                (tmp_path / "console.log").read_text()[-3000:],
            )
        assert call("/jobs/acl-dead/cancel", {})[0] in (200, 303)
        # The replay redirects to the job's page, whose record the replay just cleared (no
        # intake runs here to write the new one): what counts is what it changed.
        status, text = call("/dead/dl-acl-1/replay", {})
        assert "NOPERM" not in text and status in (200, 404), (status, text[-500:])
        assert admin.xlen(n.dead) == 0
        assert any(f.get("job_id") == "acl-dead" and f.get("type") == "solve"
                   for _, f in admin.xrange(n.intake))  # fmt: skip
        admin.execute_command("XADD", n.dead, "*", "a", "1")
        assert call("/dead/purge", {"confirm": "yes"})[0] == 200
        assert admin.xlen(n.dead) == 0
        assert "NOPERM" not in (tmp_path / "console.log").read_text()
    finally:
        proc.terminate()
        proc.wait(10)
    console = acl_server.client("console")
    assert not refused(console, "XLEN", n.jobs)
    assert not refused(console, "XRANGE", n.events, "-", "+", "COUNT", "1")
    assert not refused(console, "HGETALL", n.job("x"))
    for command in (
        ("XREADGROUP", "GROUP", "solver", "c", "STREAMS", n.jobs, ">"),
        ("XACK", n.jobs, "solver", "0-1"),
        ("XADD", n.jobs, "*", "a", "1"),
        ("XADD", n.events, "*", "type", "solver.completed"),
        ("XTRIM", n.events, "MAXLEN", "0"),
        ("HSET", n.job("x"), "state", "completed"),
        ("FLUSHALL",),
        ("KEYS", "*"),
        ("CONFIG", "GET", "*"),
        ("GET", "unrelated-key"),
    ):
        assert refused(console, *command), command


def run_node_example(server: AclServer, tmp: Path) -> subprocess.CompletedProcess[str]:
    example = ROOT / "examples" / "monolith-node"
    node = shutil.which("node")
    assert node and (example / "node_modules").is_dir(), f"Node.js and `npm ci` in {example}"
    request = tmp / "request.json"
    request.write_text(request_json(employees=5, shifts=12, time_limit=0.5))
    return subprocess.run(
        [node, str(example / "index.js"), "--redis-url", server.url("monolith"),
         "--prefix", server.prefix, "--request", str(request), "--out", str(tmp / "out.json"),
         "--timeout", "60"],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip


def run_bullmq_example(server: AclServer, tmp: Path) -> subprocess.CompletedProcess[str]:
    example = ROOT / "examples" / "monolith-bullmq"
    node = shutil.which("node")
    assert node and (example / "node_modules").is_dir(), f"Node.js and `npm ci` in {example}"
    request = tmp / "bull-request.json"
    request.write_text(request_json(employees=5, shifts=12, time_limit=0.5))
    return subprocess.run(
        [node, str(example / "index.js"), "--redis-url", server.url("monolith"),
         "--plan", f"acl{uuid.uuid4().hex[:6]}={request}", "--out-dir", str(tmp / "rosters"),
         "--timeout", "60"],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip


def consumer_name(pid: int) -> str:
    """The CONSUMER_NAME the dev runner gave a process (the name its heartbeat carries)."""
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    (name,) = [e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"CONSUMER_NAME=")]
    return name


def logs(d: Path) -> str:
    return "\n".join(
        f"== {p.name}\n{p.read_text(errors='replace')[-2500:]}" for p in d.glob("*.log")
    )
