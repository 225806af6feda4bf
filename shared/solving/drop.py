"""A large result stored under its key by the process that rendered it.

At the size limits a roster is 12 MB of JSON. Handed from the solve's child process to the
service and SET from there, it was copied three more times before Redis had it (into a memory
file, out of it, decoded to text and encoded back): ~40 ms of a cancel's 200 ms (decision
0036). Now the child SETs it on a connection of its own, made while it solves, and the service
publishes only the key's name (`Rendered.key`, shared/solving/report.py); the notifier's
script moves it into the event as before (decision 0031).

Whatever goes wrong here (no Redis, a slow one, a failover), the child sends the result back the
old way and the service stores it: storing here only saves time, it never loses a roster.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

from shared.connection.factory import sync_client
from shared.connection.packing import chunks
from shared.names import Names
from shared.settings import Settings

log = logging.getLogger("shiftstream.solver")

# The least a roster's JSON takes per employee-day (`"D",` for a one-letter shift id).
MIN_BYTES_PER_CELL = 4
# A SET of 12 MB takes 7-40 ms on loopback; past these the service's own SET, with its
# reconnecting client, is the better bet. The deadline bounds the whole put, connecting and
# retries included, well inside the 5 s the parent gives a cancelled child to answer.
STORE_TIMEOUT_SECONDS = 1.0
STORE_DEADLINE_SECONDS = 1.0


def new_result_key(names: Names, job_id: str) -> str:
    """A fresh key for one completed result of `job_id` (a retried job gets another)."""
    return names.result(job_id, os.urandom(6).hex())


@dataclass(frozen=True)
class ResultDrop:
    """Where a solve process stores a large result itself.

    Parameters:
        settings: the service's, for a client of the same Redis as the same user.
        key: the result's key (`new_result_key`), in the events stream's slot.
        ttl: seconds the key lives if no outcome ever names it.
        min_bytes: smaller results go back to the service (`RESULT_KEY_MIN_BYTES`).
    """

    settings: Settings
    key: str
    ttl: int
    min_bytes: int

    @classmethod
    def for_job(cls, settings: Settings, names: Names, job_id: str) -> ResultDrop:
        return cls(
            settings,
            new_result_key(names, job_id),
            settings.idempotency_ttl_seconds,
            settings.result_key_min_bytes,
        )

    @classmethod
    def for_solve(
        cls, settings: Settings, names: Names, job_id: str, cells: int
    ) -> ResultDrop | None:
        """A drop for a solve of `cells` employee-days whose result may reach the size for a
        key; None for a smaller one, whose child then opens no connection. The rare small
        request with a large result is stored by the service, as before."""
        if cells * MIN_BYTES_PER_CELL < settings.result_key_min_bytes:
            return None
        return cls.for_job(settings, names, job_id)


class Dropper:
    """The child's side of a `ResultDrop`: `connect()` early (in a thread, while the search
    runs), `put()` once the result is rendered. `put` gives up after `STORE_DEADLINE_SECONDS`
    whatever the client does meanwhile (a Cluster or Sentinel client may retry for tens of
    seconds against unresponsive nodes): the parent kills a child that does not answer in time,
    and with it the roster."""

    def __init__(self, drop: ResultDrop) -> None:
        self.drop = drop
        self._node: Any = None
        self._lock = threading.Lock()

    def _ready(self) -> Any:
        """The client of the node that holds the key (the one client outside a Cluster)."""
        with self._lock:
            if self._node is None:
                client = sync_client(
                    self.drop.settings,
                    socket_timeout=STORE_TIMEOUT_SECONDS,
                    socket_connect_timeout=STORE_TIMEOUT_SECONDS,
                )
                if isinstance(client, RedisCluster):
                    node = client.get_node_from_key(self.drop.key)  # type: ignore[no-untyped-call]
                    client = client.get_redis_connection(node)
                self._node = client
            return self._node

    def connect(self) -> None:
        """Open the connection now, so that `put` does not pay for it (TLS, a Sentinel
        lookup). Best effort: `put` tries again, within its deadline."""
        try:
            self._ready().ping()
        except Exception as err:
            log.info("result store: no early connection (%r); the put tries again", err)

    def put(self, data: bytes | bytearray) -> bool:
        """Store `data` under the drop's key if it is large enough; False when it is not
        stored (too small, Redis did not take it, or not within the deadline) and must go back
        the old way. The service then stores it under the same key, so a SET that Redis made
        after all is overwritten, not left behind (`Reports.completed`)."""
        if len(data) < self.drop.min_bytes:
            return False
        outcome: list[BaseException | None] = []

        def store() -> None:
            try:
                _set_uncopied(self._ready(), self.drop.key, data, self.drop.ttl)
                outcome.append(None)
            except BaseException as err:
                outcome.append(err)

        worker = threading.Thread(target=store, name="result-store", daemon=True)
        worker.start()
        worker.join(STORE_DEADLINE_SECONDS)
        if not outcome or outcome[0] is not None:
            why = repr(outcome[0]) if outcome else f"no answer in {STORE_DEADLINE_SECONDS:g} s"
            log.warning("result store: SET %s failed (%s); sending it back", self.drop.key, why)
            return False
        return True


def _set_uncopied(node: Any, key: str, data: bytes | bytearray, ttl: int) -> None:
    """SET `key` to `data` with the value sent as it is (shared/connection/packing.py): redis-py's
    own packing copies it into a growing buffer first, 90 ms of fresh pages in a new process."""
    pool = node.connection_pool
    conn = pool.get_connection()
    try:
        conn.send_packed_command(chunks(("SET", key, data, "EX", ttl)))
        reply = conn.read_response()
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)
    if reply not in (b"OK", "OK"):
        raise ResponseError(f"SET answered {reply!r}")
