"""The Redis deployment settings: a wrong combination is one line naming the variable, and what
the connection factory derives from them (TLS options, where it connects) is right and never
shows a password. The deployments themselves run in test_sentinel/test_cluster/test_tls."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from shared.connection.factory import describe, tls_options
from shared.settings import Settings, settings_error


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"redis_mode": "sentinel"}, "REDIS_MODE=sentinel needs REDIS_SENTINELS"),
        (
            {"redis_mode": "sentinel", "redis_sentinels": "a:26379"},
            "needs REDIS_SENTINEL_MASTER",
        ),
        (
            {"redis_mode": "sentinel", "redis_sentinels": "a:port", "redis_sentinel_master": "m"},
            "REDIS_SENTINELS: 'a:port' is not host:port",
        ),
        ({"redis_sentinels": "a:26379"}, "REDIS_SENTINELS is set but REDIS_MODE=standalone"),
        ({"redis_cluster_nodes": "a:6379"}, "REDIS_CLUSTER_NODES is set but REDIS_MODE"),
        (
            {"redis_mode": "cluster", "redis_wait_replicas": 1},
            "REDIS_WAIT_REPLICAS is not supported with REDIS_MODE=cluster",
        ),
        (
            {"redis_mode": "cluster", "redis_url": "unix:///run/redis.sock"},
            "needs a TCP REDIS_URL",
        ),
        ({"redis_url": "http://x"}, "REDIS_URL: scheme 'http' unknown"),
        ({"redis_tls_ca_file": "/x"}, "not rediss://"),
        ({"redis_url": "rediss://h:1/0", "redis_tls_cert_file": "/x"}, "go together"),
        ({"redis_url": "rediss://h:1/0", "redis_tls_ca_file": "/nope"}, "REDIS_TLS_CA_FILE"),
        ({"redis_wait_timeout_ms": 60_000}, "REDIS_WAIT_TIMEOUT_MS"),
        ({"redis_mode": "replicated"}, "REDIS_MODE"),
    ],
)
def test_a_wrong_deployment_is_one_line_naming_the_variable(
    variables: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError) as err:
        Settings(**variables)  # type: ignore[arg-type]
    line = settings_error(err.value)
    assert message in line and "\n" not in line, line


def test_waiting_for_replicas_defaults_to_one_with_sentinel_only() -> None:
    sentinel = Settings(
        redis_mode="sentinel", redis_sentinels="s1:26379, s2:26379", redis_sentinel_master="m"
    )
    assert sentinel.wait_replicas == 1
    assert sentinel.sentinel_nodes == [("s1", 26379), ("s2", 26379)]
    assert Settings().wait_replicas == 0
    assert Settings(redis_mode="cluster").wait_replicas == 0
    off = Settings(
        redis_mode="sentinel",
        redis_sentinels="s1:26379",
        redis_sentinel_master="m",
        redis_wait_replicas=0,
    )
    assert off.wait_replicas == 0


def test_tls_options_and_where_it_connects_without_secrets(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("-")
    s = Settings(
        redis_url="rediss://intake:s3cret@redis.internal:6380/0", redis_tls_ca_file=str(ca)
    )
    assert tls_options(s) == {
        "ssl_cert_reqs": "required",
        "ssl_check_hostname": True,
        "ssl_ca_certs": str(ca),
    }
    assert tls_options(Settings()) == {}
    assert describe(s) == "redis.internal:6380 over TLS"
    sentinel = Settings(
        redis_mode="sentinel",
        redis_sentinels="10.0.0.5:26379,10.0.0.6:26379",
        redis_sentinel_master="shiftstream",
        redis_sentinel_password="s3cret",
        redis_url="redis://intake:s3cret@unused/0",
    )
    assert describe(sentinel) == (
        "sentinel primary 'shiftstream' via 10.0.0.5:26379,10.0.0.6:26379"
    )
    cluster = Settings(
        redis_mode="cluster",
        redis_url="redis://u:s3cret@n1:7000/0",
        redis_cluster_nodes="n2:7000",
    )
    assert describe(cluster) == "cluster via n1:7000,n2:7000"
    assert all("s3cret" not in describe(x) for x in (s, sentinel, cluster))
