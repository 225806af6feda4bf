"""shared.observability.health against a real server: the probe fails exactly when a consumer
is stuck."""

from __future__ import annotations

import time
import uuid

import pytest
import redis

from shared.cli.devrunner import EmbeddedServer
from shared.names import Names
from shared.observability.health import check, main
from shared.settings import Settings


def test_probe_tells_stuck_from_idle(redis_server: EmbeddedServer) -> None:
    names = Names.from_settings(Settings(shiftstream_prefix=f"h{uuid.uuid4().hex[:6]}:"))
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    stream, group = names.groups["solver"]

    def verdict(mode: str, max_idle_ms: int = 60_000) -> bool:
        return check(
            client, "solver", mode, names=names, prefix="pod-1-", max_idle_ms=max_idle_ms
        ).ok

    assert not verdict("ready"), "no stream, no group: not ready"
    client.xgroup_create(stream, group, id="0", mkstream=True)
    assert not verdict("ready"), "the high and low priority streams have no group yet"
    for other, _ in names.inputs("solver"):
        if other != stream:
            client.xgroup_create(other, group, id="0", mkstream=True)
    assert verdict("ready")
    assert verdict("live"), "a quiet service is alive"
    client.xadd(stream, {"a": "1"})
    client.xadd(stream, {"a": "2"})
    assert not verdict("live"), "work waits and none of our consumers ever read"
    client.xreadgroup(group, "pod-1-0", {stream: ">"}, count=1)
    assert verdict("live")
    time.sleep(0.05)
    assert not verdict("live", max_idle_ms=10), "work waits, our reader went quiet"
    # Another pod's consumer does not make this pod healthy.
    client.xreadgroup(group, "pod-2-0", {stream: ">"}, count=1)
    client.xadd(stream, {"a": "3"})
    assert not check(client, "solver", "live", names=names, prefix="pod-3-", max_idle_ms=60_000).ok
    client.xreadgroup(group, "pod-1-0", {stream: ">"}, count=10)
    assert verdict("live", max_idle_ms=10), "caught up: nothing waits"
    client.close()


def test_unreachable_redis_fails_ready_not_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    assert main(["--service", "intake", "--check", "ready", "--timeout", "0.2"]) == 1
    assert main(["--service", "intake", "--check", "live", "--timeout", "0.2"]) == 0
