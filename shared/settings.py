"""The one settings object every service, the dev runner and the CLI read from the environment.

Field names are the environment variable names (case-insensitive), so `REDIS_URL`,
`WORKER_CONCURRENCY`, `SOLVER_ALLOW_FALLBACK` ... map one to one; docs/services.md lists them.
"""

from __future__ import annotations

import os
import socket
from functools import cached_property
from typing import Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.roster.limits import Limits
from shared.roster.model import Implementation

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

RedisMode = Literal["standalone", "sentinel", "cluster"]


def _default_consumer() -> str:
    # Consumer names must be unique per process, and readable in XINFO CONSUMERS.
    return f"{socket.gethostname()}-{os.getpid()}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    # Where Redis is (docs/managed-redis.md). REDIS_URL always carries the scheme (`rediss://`
    # for TLS), the credentials and, for one server, its address; in sentinel mode its host and
    # port are not used (the sentinels name the primary), in cluster mode it is one seed node.
    redis_url: str = DEFAULT_REDIS_URL
    redis_mode: RedisMode = "standalone"
    # host:port,host:port ... of the sentinels, and the name they monitor the primary under.
    redis_sentinels: str = ""
    redis_sentinel_master: str = ""
    # The sentinels' own login, when they require one (Sentinel has its own ACL).
    redis_sentinel_username: str | None = None
    redis_sentinel_password: str | None = None
    # More cluster seed nodes (host:port,...) beside REDIS_URL's, so a start survives one down.
    redis_cluster_nodes: str = ""
    # TLS (with a `rediss://` REDIS_URL): the CA that signed the servers' certificates, and this
    # client's certificate and key when the servers ask for one (`tls-auth-clients yes`).
    redis_tls_ca_file: str | None = None
    redis_tls_cert_file: str | None = None
    redis_tls_key_file: str | None = None
    redis_tls_check_hostname: bool = True
    # Replicas that must hold a write before it is shown to a client (WAIT; docs/decisions/
    # 0012-failover-durability.md). Unset: 1 in sentinel mode, else 0 (off).
    redis_wait_replicas: int | None = Field(default=None, ge=0, le=16)
    # Below the raw client's 10 s round-trip bound (shared/connection/timed.py).
    redis_wait_timeout_ms: int = Field(default=1000, ge=1, le=5_000)
    # Prepended to every stream and key name, so several deployments (or tests) share a server.
    shiftstream_prefix: str = ""

    stream_intake: str = "workforce-solver"
    stream_jobs: str = "solver.jobs"
    stream_fallback: str = "solver.fallback"
    stream_failures: str = "solver.failures"
    stream_outcomes: str = "solver.outcomes"
    stream_events: str = "solver-events"
    stream_dead: str = "solver.dead"

    consumer_name: str = Field(default_factory=_default_consumer)

    worker_concurrency: int = Field(default=2, ge=1, le=64)
    solver_implementation: Implementation = Implementation.GENERETIC
    solver_allow_fallback: bool = True
    solver_max_time_limit: float = Field(default=60.0, gt=0)
    # process: the C solve runs in a child process, so a segfault costs one fallback instead of
    # the worker (docs/decisions/0003-crash-isolation.md); thread: in-process, a little faster.
    solver_isolation: Literal["process", "thread"] = "process"
    # Greedy solves of rosters up to this many employee-day-shift cells run on the event loop
    # with their outcome batched (services/solver/choice.py); bigger ones in a thread.
    solver_inline_max_cells: int = Field(default=1_000, ge=0)
    # Most entries one read of a batched hop takes (shared/streaming/hop.py): intake and notifier.
    batch_max_records: int = Field(default=100, ge=1, le=10_000)
    # The same for each solver reader: smaller, because the long jobs of a batch beyond the
    # first one are written back to the stream for other replicas.
    solver_batch: int = Field(default=64, ge=1, le=1_000)
    # The watchdog kills a solve still running this long after its time limit (process mode).
    solver_watchdog_grace_seconds: float = Field(default=5.0, gt=0)
    # Test-only: requests named __crash__/__hang__ crash or hang the solver. Never in production.
    shiftstream_test_crash: bool = False

    # MAXLEN ~ of our own writers to the public intake stream only; every hop's input is
    # trimmed by its consumer instead (shared/streaming/retention.py), never capped.
    stream_maxlen: int = Field(default=100_000, ge=100)
    events_maxlen: int = Field(default=100_000, ge=100)
    dead_maxlen: int = Field(default=100_000, ge=100)
    # Dead letters older than this are trimmed by triage (XTRIM MINID) every trim interval;
    # intake trims what it consumed of its input (written by foreign producers, maybe
    # untrimmed, maybe 8 MiB an entry) and the notifier the outcomes it published as often:
    # memory is bounded by what is done with leaving at once (shared/streaming/retention.py).
    dead_max_age_seconds: int = Field(default=30 * 24 * 3600, ge=1)
    trim_interval_seconds: float = Field(default=1.0, gt=0)
    # A solved job's result of at least this many bytes goes from the solve to its public
    # event under a key of its own, not inside the outcome: a 12 MB roster is then written
    # once and copied by Redis, not escaped, sent, read and parsed again by the notifier
    # (docs/services.md, "Memory").
    result_key_min_bytes: int = Field(default=256 * 1024, ge=1)
    job_ttl_seconds: int = Field(default=7 * 24 * 3600, ge=1)
    idempotency_ttl_seconds: int = Field(default=24 * 3600, ge=1)
    cancel_ttl_seconds: int = Field(default=24 * 3600, ge=1)
    # The furthest ahead a `not_before` may lie: beyond it the request is `invalid`. A
    # scheduled job holds its whole request in Redis until it is due (docs/services.md).
    not_before_horizon_seconds: int = Field(default=90 * 24 * 3600, ge=1)

    retry_base_seconds: float = Field(default=1.0, gt=0)
    retry_factor: float = Field(default=2.0, ge=1)
    retry_cap_seconds: float = Field(default=60.0, gt=0)
    retry_max_attempts: int = Field(default=5, ge=1)

    # Longer than any legitimate hold *between lease renewals*: a running solve renews its
    # claim every third of this, so only entries of dead consumers reach it.
    reclaim_idle_ms: int = Field(default=30_000, ge=50)
    reclaim_poll_ms: int = Field(default=1_000, ge=10)
    max_deliveries: int = Field(default=5, ge=1)
    # A waiting low-priority job older than this competes with normal jobs as if it had been
    # queued this much later, so a steady flow of normal jobs cannot starve it for ever
    # (docs/decisions/0016-priorities.md). 0: low jobs compete as normal at once.
    priority_aging_seconds: float = Field(default=300.0, ge=0)
    graceful_timeout: float = Field(default=25.0, gt=0)
    # A service not started by then exits (status 75) for its supervisor to restart it: a start
    # wedged across a Redis failover would otherwise hold its pending entries from every
    # reclaimer. Longer than the 30 s a start waits for a Sentinel promotion.
    startup_timeout_seconds: float = Field(default=90.0, gt=0)
    # FastStream's own "Received"/"Processed" lines, one pair per read batch: they carry no job
    # id, and at INFO they cost ~0.5 ms of an idle job's latency (bench/README.md). Errors
    # stay at ERROR whatever this says; LOG_LEVEL still decides what is printed.
    message_log_level: Literal["DEBUG", "INFO"] = "DEBUG"
    schedule_poll_ms: int = Field(default=150, ge=10)
    progress_interval_seconds: float = Field(default=1.0, gt=0)

    solver_max_employees: int = Limits.max_employees
    solver_max_days: int = Limits.max_days
    solver_max_shift_types: int = Limits.max_shift_types
    solver_max_json_bytes: int = Limits.max_json_bytes

    # The BullMQ bridge (services/bridge/, docs/coming-from-bullmq.md): off while no queue is
    # named. Its BullMQ server may be another Redis than ShiftStream's.
    bullmq_queues: str = ""
    bullmq_redis_url: str | None = None
    bullmq_prefix: str = "bull"
    # Jobs one bridge process holds per queue: handed to ShiftStream and awaited, not solved,
    # so this is not WORKER_CONCURRENCY (services/bridge/worker.py splits it into Workers).
    bullmq_concurrency: int = Field(default=1_000, ge=1, le=100_000)
    bullmq_lock_duration_ms: int = Field(default=30_000, ge=1_000)
    bullmq_stalled_interval_ms: int = Field(default=30_000, ge=500)
    # A stall of a bridged job is a bridge that died, not a job that kills workers: allow several.
    bullmq_max_stalled_count: int = Field(default=5, ge=1)
    # BullMQ priority (1 = most urgent; 0/absent = no priority) to ShiftStream's names:
    # 1..HIGH_MAX -> high, LOW_MIN.. -> low, between -> normal, absent -> UNSET.
    bullmq_priority_high_max: int = Field(default=1, ge=0)
    bullmq_priority_low_min: int = Field(default=10, ge=1)
    bullmq_priority_unset: Literal["high", "normal", "low"] = "normal"

    # Dev mode writes traces to a local file when no OTLP endpoint is configured.
    shiftstream_dev: bool = False
    shiftstream_trace_file: str | None = None
    # The trace file is rotated past this size (one old generation kept as `<file>.1`).
    shiftstream_trace_file_max_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    otel_exporter_otlp_endpoint: str | None = None

    @model_validator(mode="after")
    def _redis_deployment(self) -> Settings:
        # Checked here, so a wrong combination stops every process at its start with one line
        # naming the variable, not at its first command with a driver's stack trace.
        scheme = self.redis_url.partition("://")[0].lower()
        if scheme not in ("redis", "rediss", "unix"):
            raise ValueError(
                f"REDIS_URL: scheme {scheme!r} unknown, expected redis://, rediss:// or unix://"
            )
        tls_files = [self.redis_tls_ca_file, self.redis_tls_cert_file, self.redis_tls_key_file]
        if scheme != "rediss" and any(tls_files):
            raise ValueError("REDIS_TLS_* files are set but REDIS_URL is not rediss:// (TLS)")
        if bool(self.redis_tls_cert_file) != bool(self.redis_tls_key_file):
            raise ValueError("REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE go together")
        for name, path in (
            ("REDIS_TLS_CA_FILE", self.redis_tls_ca_file),
            ("REDIS_TLS_CERT_FILE", self.redis_tls_cert_file),
            ("REDIS_TLS_KEY_FILE", self.redis_tls_key_file),
        ):
            if path and not os.path.isfile(path):
                raise ValueError(f"{name}: no such file {path!r}")
        if self.redis_mode == "sentinel":
            if not self.redis_sentinels:
                raise ValueError("REDIS_MODE=sentinel needs REDIS_SENTINELS (host:port,...)")
            if not self.redis_sentinel_master:
                raise ValueError("REDIS_MODE=sentinel needs REDIS_SENTINEL_MASTER (its name)")
            addresses("REDIS_SENTINELS", self.redis_sentinels)
        elif self.redis_sentinels:
            raise ValueError(f"REDIS_SENTINELS is set but REDIS_MODE={self.redis_mode}")
        if self.redis_mode == "cluster":
            if scheme == "unix":
                raise ValueError("REDIS_MODE=cluster needs a TCP REDIS_URL, not unix://")
            addresses("REDIS_CLUSTER_NODES", self.redis_cluster_nodes)
            if self.wait_replicas:
                raise ValueError(
                    "REDIS_WAIT_REPLICAS is not supported with REDIS_MODE=cluster "
                    "(docs/decisions/0012-failover-durability.md)"
                )
        elif self.redis_cluster_nodes:
            raise ValueError(f"REDIS_CLUSTER_NODES is set but REDIS_MODE={self.redis_mode}")
        # BullMQ's Python Worker takes one server's address: no sentinels, no cluster.
        bridged = self.bullmq_queues.strip() and not self.bullmq_redis_url
        if bridged and self.redis_mode != "standalone":
            raise ValueError(
                f"BULLMQ_QUEUES with REDIS_MODE={self.redis_mode} needs BULLMQ_REDIS_URL "
                "(the BullMQ Redis as one server or a primary endpoint)"
            )
        prefix = self.shiftstream_prefix
        if "{" in prefix and hash_tag(prefix) is None:
            raise ValueError(
                f"SHIFTSTREAM_PREFIX: {prefix!r} opens a {{hash tag}} it does not close; "
                "use a tag like {prod}: or no brace"
            )
        for field in ("stream_jobs", "stream_fallback", "stream_events"):
            name = self.name(getattr(self, field))
            if "}" in name and hash_tag(name) is None:
                raise ValueError(
                    f"{field.upper()}: {name!r} has a '}}' outside a {{hash tag}}, so its side "
                    "keys cannot share its Cluster slot; drop the brace or add a tag like {ss}"
                )
        return self

    @property
    def wait_replicas(self) -> int:
        """Replicas a client-visible write waits for (0: no WAIT)."""
        if self.redis_wait_replicas is not None:
            return self.redis_wait_replicas
        return 1 if self.redis_mode == "sentinel" else 0

    @property
    def sentinel_nodes(self) -> list[tuple[str, int]]:
        return addresses("REDIS_SENTINELS", self.redis_sentinels)

    @property
    def cluster_nodes(self) -> list[tuple[str, int]]:
        return addresses("REDIS_CLUSTER_NODES", self.redis_cluster_nodes)

    def name(self, base: str) -> str:
        return f"{self.shiftstream_prefix}{base}"

    @property
    def limits(self) -> Limits:
        return Limits(
            max_employees=self.solver_max_employees,
            max_days=self.solver_max_days,
            max_shift_types=self.solver_max_shift_types,
            max_json_bytes=self.solver_max_json_bytes,
        )

    @cached_property
    def lease_interval(self) -> float:
        return self.reclaim_idle_ms / 3000


def addresses(variable: str, text: str) -> list[tuple[str, int]]:
    """`host:port,host:port` as pairs; a ValueError naming `variable` for a malformed one."""
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{variable}: {item!r} is not host:port")
        out.append((host, int(port)))
    return out


def hash_tag(key: str) -> str | None:
    """The part of `key` Redis Cluster hashes when it is not the whole key: the text between
    the first `{` and the first `}` after it, if not empty (the Cluster specification's rule)."""
    start = key.find("{")
    if start < 0:
        return None
    end = key.find("}", start + 1)
    if end <= start + 1:
        return None
    return key[start + 1 : end]


def settings_error(err: ValidationError) -> str:
    """A settings ValidationError as one line per problem, naming the variable."""
    lines = []
    for e in err.errors():
        where = ".".join(str(x) for x in e["loc"]).upper()
        message = str(e["msg"]).removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return "; ".join(lines)


def get_settings() -> Settings:
    return Settings()
