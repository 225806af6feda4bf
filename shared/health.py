"""Health probe for one service process, for Kubernetes exec probes and systemd watchdogs.

    python -m shared.health --service solver --check ready
    python -m shared.health --service solver --check live --max-idle 60

`ready`: Redis answers and the service's consumer group exists on its input stream.
`live`: the service's own consumers in that group have talked to Redis recently.

An HTTP endpoint or a "process is up" check would stay green for a worker that silently stopped
reading, the classic failure after a Redis failover or a lost connection. Redis itself records
when each consumer last read (XINFO CONSUMERS `idle`, refreshed by every XREADGROUP and
XAUTOCLAIM, even empty ones), and every service keeps a reclaimer polling even while its
readers are busy with a long solve, so a fresh idle time proves the consume loop turns.

The probe runs as a separate process and cannot know the service's pid, so it finds the
service's consumers by name prefix: `$CONSUMER_NAME-` if that is set (Kubernetes sets it to the
pod name), else `<hostname>-`, matching how `shared.settings` names consumers.

When Redis cannot be reached, `live` passes: restarting the service would not bring Redis back
and would turn a Redis outage into a restart storm; `ready` fails instead, which is the signal.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from dataclasses import dataclass

import redis
from redis.exceptions import RedisError, ResponseError

from shared.settings import Settings
from shared.streams import Names

SERVICES = ("intake", "solver", "fallback", "triage", "notifier")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str


def consumer_prefix() -> str:
    return (os.environ.get("CONSUMER_NAME") or socket.gethostname()) + "-"


def check(
    client: redis.Redis,
    service: str,
    mode: str,
    *,
    names: Names,
    prefix: str,
    max_idle_ms: int,
) -> Verdict:
    stream, group = names.groups[service]
    try:
        client.ping()
    except RedisError as err:
        if mode == "live":
            return Verdict(True, f"redis unreachable ({err}); not a reason to restart")
        return Verdict(False, f"redis unreachable: {err}")
    try:
        groups = client.xinfo_groups(stream)
    except ResponseError as err:  # no such key: the stream (and so the group) is gone
        return Verdict(False, f"{stream}: {err}")
    if not any(_text(g["name"]) == group for g in groups):
        return Verdict(False, f"group {group!r} missing on {stream!r}")
    if mode == "ready":
        return Verdict(True, f"{stream}/{group} present")
    mine = [c for c in client.xinfo_consumers(stream, group) if _text(c["name"]).startswith(prefix)]
    if not mine:
        return Verdict(False, f"no consumer named {prefix}* in {stream}/{group}")
    freshest = min(int(c["idle"]) for c in mine)
    if freshest > max_idle_ms:
        return Verdict(
            False, f"consumers {prefix}* idle {freshest} ms > {max_idle_ms} ms: not reading"
        )
    return Verdict(True, f"{len(mine)} consumers, last read {freshest} ms ago")


def _text(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.health", description=__doc__)
    parser.add_argument("--service", required=True, choices=SERVICES)
    parser.add_argument("--check", choices=("ready", "live"), default="live")
    parser.add_argument(
        "--max-idle",
        type=float,
        default=60.0,
        help="seconds a live service's consumers may go without reading (default 60)",
    )
    parser.add_argument("--timeout", type=float, default=3.0, help="Redis socket timeout")
    args = parser.parse_args(argv)
    settings = Settings()
    client = redis.Redis.from_url(
        settings.redis_url, socket_timeout=args.timeout, socket_connect_timeout=args.timeout
    )
    try:
        verdict = check(
            client,
            args.service,
            args.check,
            names=Names.from_settings(settings),
            prefix=consumer_prefix(),
            max_idle_ms=int(args.max_idle * 1000),
        )
    finally:
        client.close()
    print(f"{args.service} {args.check}: {'ok' if verdict.ok else 'FAIL'}: {verdict.reason}")
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
