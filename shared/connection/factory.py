"""Every Redis connection of ShiftStream is built here, from the one settings object.

One server (`REDIS_URL`), a Sentinel deployment (`REDIS_MODE=sentinel`: the sentinels name the
current primary) or a Redis Cluster (`REDIS_MODE=cluster`), each with or without TLS
(`rediss://` and the `REDIS_TLS_*` files). The services' broker and raw client, the CLI, the
health probe, the queue statistics, the dev runner and the BullMQ bridge all ask this module, so
a deployment is described once and every process reaches it the same way
(docs/managed-redis.md).

redis-py does the work: `Sentinel.master_for` returns a client whose connections ask the
sentinels for the primary's address each time they connect, so after a failover the next
connection goes to the new primary; `RedisCluster` maps each key to its node. FastStream's
`RedisSentinelBroker` and `RedisClusterBroker` build their clients the same way.
"""

from __future__ import annotations

from typing import Any, TypeAlias, cast

import redis
import redis.asyncio as aioredis
import redis.cluster
from faststream.redis import RedisBroker, RedisClusterBroker, RedisSentinelBroker
from redis.asyncio.cluster import ClusterNode as AsyncClusterNode
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.connection import Connection
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.connection import parse_url as _parse_url

from shared.connection.packing import connection_class
from shared.connection.timed import RoundTripTimeout, TimedCluster, timed_client
from shared.settings import Settings

# What the services hold: one server's client (a Sentinel primary's is one too) or a cluster's.
AsyncRedis: TypeAlias = aioredis.Redis | AsyncRedisCluster
SyncRedis: TypeAlias = redis.Redis | redis.cluster.RedisCluster

# A sentinel that does not answer within this is skipped for the next one.
SENTINEL_TIMEOUT = 2.0


def tls_options(s: Settings) -> dict[str, Any]:
    """redis-py's TLS keywords for a `rediss://` deployment (empty for plain TCP)."""
    if not s.redis_url.lower().startswith("rediss://"):
        return {}
    out: dict[str, Any] = {
        "ssl_cert_reqs": "required",
        "ssl_check_hostname": s.redis_tls_check_hostname,
    }
    if s.redis_tls_ca_file:
        out["ssl_ca_certs"] = s.redis_tls_ca_file
    if s.redis_tls_cert_file:
        out["ssl_certfile"] = s.redis_tls_cert_file
        out["ssl_keyfile"] = s.redis_tls_key_file
    return out


def _login(s: Settings) -> dict[str, Any]:
    """Credentials and database of REDIS_URL, for modes that do not use its address."""
    parsed = parse_url(s.redis_url)
    return {k: parsed[k] for k in ("username", "password", "db") if parsed.get(k) is not None}


def _sentinel_kwargs(s: Settings) -> dict[str, Any]:
    """How to talk to the sentinels themselves: their own login, TLS as the data nodes."""
    out: dict[str, Any] = {
        "socket_timeout": SENTINEL_TIMEOUT,
        "socket_connect_timeout": SENTINEL_TIMEOUT,
    }
    if s.redis_sentinel_username:
        out["username"] = s.redis_sentinel_username
    if s.redis_sentinel_password:
        out["password"] = s.redis_sentinel_password
    tls = tls_options(s)
    if tls:
        out |= {"ssl": True, **tls}
    return out


def parse_url(url: str) -> dict[str, Any]:
    return cast(dict[str, Any], _parse_url(url))  # type: ignore[no-untyped-call, unused-ignore]


def _cluster_login(s: Settings) -> dict[str, Any]:
    # A cluster has database 0 only.
    return {k: v for k, v in _login(s).items() if k != "db"}


def _seed(s: Settings) -> tuple[str, int]:
    parsed = parse_url(s.redis_url)
    return str(parsed.get("host") or "127.0.0.1"), int(parsed.get("port") or 6379)


def async_client(
    s: Settings,
    *,
    round_trip_timeout: float = 10.0,
    socket_connect_timeout: float = 5.0,
    decode_responses: bool = False,
) -> AsyncRedis:
    """The raw asyncio client of a service: every reply within `round_trip_timeout`."""
    tls = tls_options(s)
    common: dict[str, Any] = {
        "socket_connect_timeout": socket_connect_timeout,
        "decode_responses": decode_responses,
        # The round trip has one timer (shared/connection/timed.py), not one per reply.
        "socket_timeout": None,
    }
    if s.redis_mode == "sentinel":
        sentinel = AsyncSentinel(  # type: ignore[no-untyped-call, unused-ignore]
            s.sentinel_nodes, sentinel_kwargs=_sentinel_kwargs(s), **_login(s)
        )
        client = sentinel.master_for(
            s.redis_sentinel_master,
            redis_class=RoundTripTimeout,
            connection_class=connection_class(s.redis_url, sentinel=True),
            **common,
            **tls,
        )
        assert isinstance(client, RoundTripTimeout)
        client.round_trip_timeout = round_trip_timeout
        return client
    if s.redis_mode == "cluster":
        host, port = _seed(s)
        cluster = TimedCluster(
            host=host,
            port=port,
            startup_nodes=[AsyncClusterNode(h, p) for h, p in s.cluster_nodes] or None,
            ssl=bool(tls),
            **_cluster_login(s),
            **common,
            **tls,
        )
        cluster.round_trip_timeout = round_trip_timeout
        return cluster
    common.pop("socket_timeout")
    return timed_client(s.redis_url, round_trip_timeout=round_trip_timeout, **common, **tls)


def sync_client(
    s: Settings,
    *,
    socket_timeout: float | None = 10.0,
    socket_connect_timeout: float = 5.0,
    decode_responses: bool = False,
) -> SyncRedis:
    """A blocking client for the CLI, the health probe and the tests."""
    tls = tls_options(s)
    common: dict[str, Any] = {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": socket_connect_timeout,
        "decode_responses": decode_responses,
    }
    if s.redis_mode == "sentinel":
        from redis.sentinel import Sentinel

        sentinel = Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
            s.sentinel_nodes, sentinel_kwargs=_sentinel_kwargs(s), **_login(s)
        )
        # The sentinel pool picks its TLS connection class from `ssl`.
        primary = sentinel.master_for(  # type: ignore[no-untyped-call, unused-ignore]
            s.redis_sentinel_master, **common, **({"ssl": True, **tls} if tls else {})
        )
        return cast(redis.Redis, primary)
    if s.redis_mode == "cluster":
        host, port = _seed(s)
        return redis.cluster.RedisCluster(
            host=host,
            port=port,
            startup_nodes=[
                redis.cluster.ClusterNode(h, p)  # type: ignore[no-untyped-call, unused-ignore]
                for h, p in s.cluster_nodes
            ]
            or None,
            ssl=bool(tls),
            **_cluster_login(s),
            **common,
            **tls,
        )
    return redis.Redis.from_url(s.redis_url, **common, **tls)


def broker_for(s: Settings, **kwargs: Any) -> RedisBroker:
    """The FastStream broker for the deployment; `kwargs` go to the broker (middlewares ...).

    Its reads block for FastStream's polling interval (0.1 s) at most, so a reply that takes
    10 s is a dead connection (a primary gone without a TCP reset, as in a network partition):
    the read fails, FastStream retries it, and the retry connects to whoever is primary now.
    """
    options: dict[str, Any] = {
        "socket_timeout": 10.0,
        "socket_connect_timeout": 5.0,
        "socket_keepalive": True,
        **tls_options(s),
        **kwargs,
    }
    if s.redis_mode == "sentinel":
        return RedisSentinelBroker(
            s.redis_url,
            sentinels=s.sentinel_nodes,
            sentinel_master_name=s.redis_sentinel_master,
            sentinel_kwargs=_sentinel_kwargs(s),
            connection_class=cast(type[Connection], connection_class(s.redis_url, sentinel=True)),
            **options,
        )
    if s.redis_mode == "cluster":
        # FastStream turns a rediss:// URL into RedisCluster's `ssl=True`, and RedisCluster
        # picks its own connection class (no hiredis packing there).
        return RedisClusterBroker(s.redis_url, startup_nodes=s.cluster_nodes, **options)
    # Its annotation says Connection; a unix:// URL takes the socket class, as in redis-py.
    return RedisBroker(
        s.redis_url,
        connection_class=cast(type[Connection], connection_class(s.redis_url)),
        **options,
    )


def bullmq_settings(s: Settings) -> Settings:
    """The settings of the Redis that BullMQ's queues live on (the bridge, services/bridge/):
    `BULLMQ_REDIS_URL`, one server, with the deployment's TLS files when it is `rediss://`;
    without it, ShiftStream's own deployment."""
    if not s.bullmq_redis_url:
        return s
    tls = s.bullmq_redis_url.lower().startswith("rediss://")
    return s.model_copy(
        update={
            "redis_url": s.bullmq_redis_url,
            "redis_mode": "standalone",
            "redis_sentinels": "",
            "redis_cluster_nodes": "",
            "redis_tls_ca_file": s.redis_tls_ca_file if tls else None,
            "redis_tls_cert_file": s.redis_tls_cert_file if tls else None,
            "redis_tls_key_file": s.redis_tls_key_file if tls else None,
        }
    )


def bullmq_connection(s: Settings) -> str | dict[str, Any]:
    """What BullMQ's Python Worker takes as `connection` for the queues' Redis: the URL as it
    is, or, when TLS files are set, redis-py's keywords (a URL cannot carry them)."""
    b = bullmq_settings(s)
    tls = tls_options(b)
    if not tls:
        return b.redis_url
    host, port = _seed(b)
    return {"host": host, "port": port, **_login(b), "ssl": True, **tls}


def describe(s: Settings) -> str:
    """Where the deployment's Redis is, for logs and the CLI; never a password."""
    tls = " over TLS" if tls_options(s) else ""
    if s.redis_mode == "sentinel":
        nodes = ",".join(f"{h}:{p}" for h, p in s.sentinel_nodes)
        return f"sentinel primary {s.redis_sentinel_master!r} via {nodes}{tls}"
    host, port = _seed(s)
    if s.redis_mode == "cluster":
        more = "".join(f",{h}:{p}" for h, p in s.cluster_nodes)
        return f"cluster via {host}:{port}{more}{tls}"
    if s.redis_url.lower().startswith("unix://"):
        return s.redis_url.split("?")[0].rpartition("@")[-1]
    return f"{host}:{port}{tls}"


def is_cluster(client: Any) -> bool:
    """Whether one pipeline of `client` may run on several nodes at once (so out of order)."""
    return isinstance(client, AsyncRedisCluster | redis.cluster.RedisCluster)
