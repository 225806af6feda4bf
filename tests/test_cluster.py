"""The end-to-end suite on a real three-master Redis Cluster, unchanged.

The cluster is started by the test (`redis-server --cluster-enabled yes` three times, joined by
`redis-cli --cluster create`), and every service, the CLI and the test's own client reach it in
cluster mode (`REDIS_MODE=cluster`). The flows are the suite's own test functions, imported
here so that they run once more with this module's `stack` and `make_stack`: submit, progress,
completed, failed, retry, dead letter, replay, cancel, delayed jobs, duplicates, the fallback,
the CLI and the Node example. The streams of one deployment spread over the nodes (checked
below), so a multi-key script or transaction that left its slot would fail here, loudly: the
first test shows that the cluster does refuse one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import RedisClusterException

from shared.cli.topology import ClusterSet
from shared.names import Names
from shared.settings import Settings
from tests.conftest import Stack, StackFactory
from tests.test_dlq import (
    test_replay_all_skips_what_never_became_a_job_and_purge_empties as test_replay_all_on_a_cluster,
)
from tests.test_dlq import (
    test_replay_gives_the_same_job_id_a_second_lifecycle as test_replay_on_a_cluster,
)
from tests.test_jobs_cli import cli
from tests.test_jobs_cli import test_submit_watch_status as test_cli_submit_watch_on_a_cluster
from tests.test_monolith_node import (
    test_node_monolith_gets_a_roster as test_node_monolith_on_a_cluster,
)
from tests.test_priority import (
    test_a_worker_killed_holding_jobs_of_every_priority_loses_and_doubles_none as test_priority_reclaim_on_a_cluster,  # noqa: E501
)
from tests.test_priority import (
    test_waiting_jobs_are_solved_highest_priority_first as test_priority_order_on_a_cluster,
)
from tests.test_services import (
    test_cancel_of_a_queued_job as test_cancel_queued_on_a_cluster,
)
from tests.test_services import (
    test_cancel_of_a_running_job_keeps_its_best_roster as test_cancel_running_on_a_cluster,
)
from tests.test_services import (
    test_foreign_producer_gets_accepted_progress_completed as test_completed_on_a_cluster,
)
from tests.test_services import (
    test_invalid_requests_fail_once_and_are_never_retried as test_failed_on_a_cluster,
)
from tests.test_services import (
    test_not_before_delays_the_solve as test_not_before_on_a_cluster,
)
from tests.test_services import (
    test_primary_failure_falls_back_to_greedy as test_fallback_on_a_cluster,
)
from tests.test_services import (
    test_same_job_id_three_times_is_solved_once as test_duplicates_on_a_cluster,
)
from tests.test_services import (
    test_transient_failures_are_retried_with_backoff_then_dead_lettered as test_retry_on_a_cluster,
)

pytestmark = pytest.mark.redis

FLOWS = (
    test_completed_on_a_cluster,
    test_failed_on_a_cluster,
    test_retry_on_a_cluster,
    test_replay_on_a_cluster,
    test_replay_all_on_a_cluster,
    test_cancel_queued_on_a_cluster,
    test_cancel_running_on_a_cluster,
    test_not_before_on_a_cluster,
    test_duplicates_on_a_cluster,
    test_fallback_on_a_cluster,
    test_cli_submit_watch_on_a_cluster,
    test_node_monolith_on_a_cluster,
    test_priority_order_on_a_cluster,
    test_priority_reclaim_on_a_cluster,
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterSet]:
    c = ClusterSet(masters=3).start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def stack(cluster: ClusterSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    env = {**cluster.env(), "SHIFTSTREAM_PREFIX": _spreading_prefix(cluster)}
    s = Stack(cluster.url, tmp_path_factory.mktemp("cluster-logs"), env).start()
    try:
        yield s.wait_started()
    finally:
        s.stop()


@pytest.fixture
def make_stack(cluster: ClusterSet, tmp_path: Path) -> Iterator[StackFactory]:
    stacks: list[Stack] = []

    def make(
        env: Mapping[str, str] | None = None,
        scale: Mapping[str, int] | None = None,
        cwd: Path | None = None,
        start: bool = True,
    ) -> Stack:
        log_dir = tmp_path / f"logs{len(stacks)}"
        full = {**cluster.env(), "SHIFTSTREAM_PREFIX": _spreading_prefix(cluster), **(env or {})}
        stack = Stack(cluster.url, log_dir, full, scale, cwd)
        stacks.append(stack)
        return stack.start() if start else stack

    yield make
    for s in stacks:
        s.stop()


def _streams(names: Names) -> tuple[str, ...]:
    """The streams every job passes through (or may end in)."""
    return (names.intake, names.jobs, names.outcomes, names.events, names.failures, names.dead)


def _spreading_prefix(cluster: ClusterSet) -> str:
    """A fresh prefix whose six streams do not all hash to one node: a random one does, once
    in 243 draws on three masters, and then the flows would not cross nodes at all."""
    owners = []
    for node in cluster.nodes:
        with node.client() as direct:
            owners.append(_slots_of(direct))
    while True:
        prefix = f"t{uuid.uuid4().hex[:8]}:"
        names = Names.from_settings(Settings(shiftstream_prefix=prefix))
        slots = {key_slot(s.encode()) for s in _streams(names)}
        if sum(1 for owned in owners if slots & owned) >= 2:
            return prefix


def test_the_cluster_refuses_a_cross_slot_script(cluster: ClusterSet) -> None:
    """What a script that left its slot would meet: the server's CROSSSLOT error ("Keys in
    request don't hash to the same slot"), and before it redis-py's own refusal to send it."""
    node = cluster.nodes[0]
    with node.client() as direct:
        owned = _slots_of(direct)
        # Two keys this very node holds, in two different slots.
        mine = [k for k in (f"k{i}" for i in range(2000)) if key_slot(k.encode()) in owned]
        a = mine[0]
        b = next(k for k in mine if key_slot(k.encode()) != key_slot(a.encode()))
        with pytest.raises(redis.ResponseError, match="hash to the same slot"):
            direct.eval("return redis.call('GET', KEYS[1])", 2, a, b)
        with pytest.raises(redis.ResponseError, match="hash to the same slot"):
            direct.execute_command("DEL", a, b)
    client = RedisCluster(host="127.0.0.1", port=node.port)
    try:
        with pytest.raises(RedisClusterException, match="same key slot"):
            client.eval("return 1", 2, a, b)
    finally:
        client.close()


def _slots_of(client: redis.Redis) -> set[int]:
    me = client.execute_command("CLUSTER", "MYID").decode()
    owned: set[int] = set()
    for line in client.execute_command("CLUSTER", "NODES").decode().splitlines():
        parts = line.split()
        if parts[0] != me:
            continue
        for rng in parts[8:]:
            lo, _, hi = rng.partition("-")
            owned |= set(range(int(lo), int(hi or lo) + 1))
    return owned


def test_the_streams_of_one_deployment_live_on_several_nodes(stack: Stack) -> None:
    """So the flows above cross nodes: nothing here leans on one server holding it all."""
    stack.wait_terminal(stack.submit(_tiny()))
    nodes = {
        stream: f"{n.host}:{n.port}"
        for stream in _streams(stack.names)
        for n in [stack.redis.get_node_from_key(stream)]
    }  # fmt: skip
    assert len(set(nodes.values())) >= 2, nodes


def test_stats_shows_the_cluster(stack: Stack) -> None:
    job = stack.submit(_tiny())
    stack.wait_terminal(job)
    shown = cli(stack, "stats", "--json")
    assert shown.returncode == 0, shown.stderr
    stats = json.loads(shown.stdout)
    assert stats["redis"].startswith("cluster via 127.0.0.1:")
    streams = {s["role"]: s for s in stats["streams"]}
    assert streams["events"]["length"] >= 2 and streams["intake"]["length"] >= 1
    assert len({s["node"] for s in stats["streams"]}) >= 2
    groups = {g["service"]: g for g in stats["groups"]}
    assert all(g["exists"] for g in groups.values()), groups
    assert stats["window"]["completed"] >= 1
    table = cli(stack, "stats")
    assert table.returncode == 0 and "node" in table.stdout and "cluster via" in table.stdout


def _tiny() -> str:
    from tests.conftest import request_json

    return request_json(implementation="greedy")


__all__ = [f.__name__ for f in FLOWS]
