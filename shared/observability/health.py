"""Health probe for one service process, for Kubernetes exec probes and systemd watchdogs.

    python -m shared.observability.health --service solver --check ready
    python -m shared.observability.health --service solver --check live --max-idle 60

`ready`: Redis answers and the service's consumer group exists on its input stream.
`live`: when entries wait in the group, the service's own consumers have read recently.

An HTTP endpoint or a "process is up" check would stay green for a worker that silently stopped
reading, the classic failure after a Redis failover or a lost connection. Redis itself records
when each consumer last took an entry (XINFO CONSUMERS `idle`), and a reader that is free takes
a waiting entry within milliseconds, so "entries wait (group lag > 0) and none of our consumers
has taken one for longer than the longest solve" means the consume loop is stuck. A long solve
keeps its claim fresh (shared/jobs/lease.py) and its reader reads again as soon as it is done, so
`--max-idle` above the solve time limit never fires on a busy but healthy solver.

The probe runs as a separate process and cannot know the service's pid, so it finds the
service's consumers by name prefix: `$CONSUMER_NAME-` if that is set (Kubernetes sets it to the
pod name), else `<hostname>-`, matching how `shared.settings` names consumers.

When Redis cannot be reached, `live` passes: restarting the service would not bring Redis back
and would turn a Redis outage into a restart storm; `ready` fails instead, which is the signal.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from dataclasses import dataclass

from redis.exceptions import RedisError, ResponseError

from shared.connection.factory import SyncRedis, bullmq_settings, sync_client
from shared.names import Names
from shared.settings import Settings
from shared.text import text

SERVICES = ("intake", "solver", "fallback", "triage", "notifier")
# Not a stream consumer: probed through the heartbeat it writes every second (check_bridge).
BRIDGE = "bridge"
# How long the intake stays not-ready after requests vanished from its stream.
ALARM_S = 600.0


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str


def process_name() -> str:
    """What a probe and its process agree to call the process: `$CONSUMER_NAME` (the pod name on
    Kubernetes, set per process by the dev runner), else the host name."""
    return os.environ.get("CONSUMER_NAME") or socket.gethostname()


def consumer_prefix() -> str:
    return process_name() + "-"


def check(
    client: SyncRedis,
    service: str,
    mode: str,
    *,
    names: Names,
    prefix: str,
    max_idle_ms: int,
    reclaim_idle_ms: int = 30_000,
) -> Verdict:
    # A prioritized hop reads three streams (one per priority) with the same consumers: it is
    # live when they read any of them.
    inputs = names.inputs(service)
    group = inputs[0][1]
    where = "/".join(s for s, _ in inputs) + "/" + group
    try:
        client.ping()
    except RedisError as err:
        if mode == "live":
            return Verdict(True, f"redis unreachable ({err}); not a reason to restart")
        return Verdict(False, f"redis unreachable: {err}")
    infos = []
    for stream, _ in inputs:
        try:
            groups = client.xinfo_groups(stream)
        except ResponseError as err:  # no such key: the stream (and so the group) is gone
            return Verdict(False, f"{stream}: {err}")
        info = next((g for g in groups if text(g["name"]) == group), None)
        if info is None:
            return Verdict(False, f"group {group!r} missing on {stream!r}")
        infos.append((stream, info))
    if mode == "ready":
        if service == "intake" and (alarm := intake_alarm(client, names)):
            return Verdict(False, alarm)
        return Verdict(True, f"{where} present")
    waiting = sum(_waiting(client, stream, info) for stream, info in infos)
    mine = [
        c
        for stream, _ in infos
        for c in client.xinfo_consumers(stream, group)
        if text(c["name"]).startswith(prefix)
    ]
    freshest = min((int(c["idle"]) for c in mine), default=None)
    # A process whose loop hangs after taking an entry (it was delivered to a blocked read just
    # before) shows no lag at all: the entry sits in our pending list instead. A live holder
    # renews its claim every third of RECLAIM_IDLE_MS (shared/jobs/lease.py), and a dead one's
    # entries are reclaimed after RECLAIM_IDLE_MS, so an entry of ours idle past both bounds
    # is held by a stuck loop.
    bound = max(max_idle_ms, 2 * reclaim_idle_ms)
    stale = [h for stream, _ in infos for h in _stale_holds(client, stream, group, prefix, bound)]
    if stale:
        entry, consumer, idle = stale[0]
        return Verdict(
            False,
            f"{len(stale)} entries held without renewal (e.g. {entry} by {consumer}, idle "
            f"{idle} ms): not reading",
        )
    if not waiting:
        # Nothing to read: a healthy idle reader and a stuck one look alike, and neither
        # holds anything up. (Redis 7.0 creates a consumer only on its first delivery and
        # does not refresh its idle time on empty reads, so idle alone would fail a quiet
        # but healthy service.)
        return Verdict(True, f"nothing waiting in {where}")
    if freshest is None:
        return Verdict(False, f"{waiting} entries waiting, no consumer named {prefix}* reads")
    if freshest > max_idle_ms:
        return Verdict(
            False,
            f"{waiting} entries waiting, consumers {prefix}* idle {freshest} ms "
            f"> {max_idle_ms} ms: not reading",
        )
    return Verdict(True, f"{len(mine)} consumers, last read {freshest} ms ago")


def check_bridge(
    client: SyncRedis, mode: str, settings: Settings, *, max_idle_ms: int
) -> Verdict:
    """The BullMQ bridge: `ready` when both Redis servers answer; `live` when it wrote its
    heartbeat (every second, from the event loop its held jobs need) within `max_idle_ms`."""
    if not settings.bullmq_queues.strip():
        return Verdict(True, "BULLMQ_QUEUES is empty: the bridge is off")
    try:
        client.ping()
        if mode == "ready" and settings.bullmq_redis_url:
            bull = sync_client(bullmq_settings(settings), socket_timeout=3)
            try:
                bull.ping()
            finally:
                bull.close()
    except RedisError as err:
        if mode == "live":
            return Verdict(True, f"redis unreachable ({err}); not a reason to restart")
        return Verdict(False, f"redis unreachable: {err}")
    if mode == "ready":
        return Verdict(True, "redis answers")
    key = Names.from_settings(settings).bridge_heartbeat(process_name())
    raw = client.get(key)
    if raw is None:
        return Verdict(False, f"no heartbeat at {key}: the bridge is not running here")
    beat = json.loads(text(raw))
    age_ms = int((time.time() - float(beat["at"])) * 1000)
    if age_ms > max_idle_ms:
        return Verdict(False, f"last heartbeat {age_ms} ms ago > {max_idle_ms} ms: stuck")
    return Verdict(True, f"{beat['held']} BullMQ jobs held, heartbeat {age_ms} ms ago")


def _stale_holds(
    client: SyncRedis, stream: str, group: str, prefix: str, idle_ms: int
) -> list[tuple[str, str, int]]:
    """Entries our consumers hold without renewing: (entry id, consumer, idle ms)."""
    rows = client.xpending_range(stream, group, min="-", max="+", count=100, idle=idle_ms)
    return [
        (text(r["message_id"]), text(r["consumer"]), int(r["time_since_delivered"]))
        for r in rows
        if text(r["consumer"]).startswith(prefix)
    ]


def intake_alarm(client: SyncRedis, names: Names, recent_s: float = ALARM_S) -> str | None:
    """Why the intake is not ready: requests vanished from its stream in the last `recent_s`
    seconds, or the stream's ids ran ahead of the clock (services/intake/watch.py). Not a
    liveness failure: a restart would change neither."""
    alerts = {text(k): text(v) for k, v in (client.hgetall(names.alerts) or {}).items()}
    if alerts.get("intake_id_ahead"):
        return f"{names.intake}: last id {alerts['intake_id_ahead']} is far ahead of the clock"
    at = float(alerts.get("intake_vanished_at") or 0)
    if time.time() - at < recent_s:
        return (
            f"{names.intake}: requests vanished before the intake read them "
            f"{time.time() - at:.0f} s ago ({alerts.get('intake_vanished')} so far)"
        )
    return None


def _waiting(client: SyncRedis, stream: str, info: dict[str, object]) -> int:
    """Entries not yet delivered to the group (XINFO GROUPS `lag`)."""
    lag = info.get("lag")
    if lag is not None and int(str(lag)) == 0:
        return 0
    last = text(info.get("last-delivered-id", "0-0"))
    # Redis leaves lag unknown after some trims and deletions, and too high after a trim past
    # the group (a producer's MAXLEN): nothing after the last delivered id is nothing waiting.
    after = client.xrange(stream, min=f"({last}", count=1) or []
    if lag is not None and after:
        return int(str(lag))
    return len(after)



def parser() -> argparse.ArgumentParser:
    """The probe's arguments (tests/test_docs.py parses the docs' probe lines with it)."""
    parser = argparse.ArgumentParser(
        prog="python -m shared.observability.health", description=__doc__
    )
    parser.add_argument("--service", required=True, choices=(*SERVICES, BRIDGE))
    parser.add_argument("--check", choices=("ready", "live"), default="live")
    parser.add_argument(
        "--max-idle",
        type=float,
        default=60.0,
        help="seconds a live service's consumers may go without reading (default 60)",
    )
    parser.add_argument("--timeout", type=float, default=3.0, help="Redis socket timeout")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = Settings()
    client = sync_client(
        settings, socket_timeout=args.timeout, socket_connect_timeout=args.timeout
    )
    max_idle_ms = int(args.max_idle * 1000)
    try:
        if args.service == BRIDGE:
            verdict = check_bridge(client, args.check, settings, max_idle_ms=max_idle_ms)
        else:
            verdict = check(
                client,
                args.service,
                args.check,
                names=Names.from_settings(settings),
                prefix=consumer_prefix(),
                max_idle_ms=max_idle_ms,
                reclaim_idle_ms=settings.reclaim_idle_ms,
            )
    finally:
        client.close()
    print(f"{args.service} {args.check}: {'ok' if verdict.ok else 'FAIL'}: {verdict.reason}")
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
