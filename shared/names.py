"""Every stream, group and key name, derived from settings so the prefix applies everywhere.

Keys that one Lua script or transaction touches must live in one Redis Cluster slot, and the
Cluster hashes a key on its hash tag (the text in its first `{...}`) when it has one, else on
the whole key. Two families of side keys follow from that:

- keys that go with a stream (the delay schedules and the high and low priority streams with
  `solver.jobs`, the priority streams of `solver.fallback` with it, the terminal guards and the
  replay marks with `solver-events`) carry the stream's slot: `{<stream>}:...`, or, when the
  stream name has a hash tag of its own (a prefix like `{prod}:` puts a whole deployment in one
  slot), the stream name itself followed by the suffix, which keeps that tag;
- a job's keys (record, idempotency key, cancel marker, replay mark) share the job id as their
  tag, `<prefix>job:{<id>}`, so each job's keys sit together while jobs spread over the nodes.
  A job id that starts with `}` would leave an empty tag, and Redis would hash each whole key
  apart; such ids get `<prefix>job@{~}<id>` instead (the `@` keeps those names apart from
  every other job's).

tests/test_cluster_slots.py checks both for arbitrary prefixes and ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.roster.model import Priority
from shared.settings import Settings, hash_tag

# The order in which a priority hop reads its streams (shared/streaming/priority.py).
READ_ORDER: tuple[Priority, ...] = (Priority.HIGH, Priority.NORMAL, Priority.LOW)


def colocated(stream: str, suffix: str) -> str:
    """A key in the same Cluster slot as `stream`, ending with `suffix`."""
    if hash_tag(stream) is not None:
        return stream + suffix
    return "{" + stream + "}" + suffix


@dataclass(frozen=True)
class Names:
    intake: str
    jobs: str
    fallback: str
    failures: str
    outcomes: str
    events: str
    dead: str
    prefix: str

    @classmethod
    def from_settings(cls, s: Settings) -> Names:
        return cls(
            intake=s.name(s.stream_intake),
            jobs=s.name(s.stream_jobs),
            fallback=s.name(s.stream_fallback),
            failures=s.name(s.stream_failures),
            outcomes=s.name(s.stream_outcomes),
            events=s.name(s.stream_events),
            dead=s.name(s.stream_dead),
            prefix=s.shiftstream_prefix,
        )

    # One group per consuming service, named after it (docs/design.md §2).
    @property
    def groups(self) -> dict[str, tuple[str, str]]:
        """service -> (input stream, group)."""
        return {
            "intake": (self.intake, "intake"),
            "solver": (self.jobs, "solver"),
            "fallback": (self.fallback, "fallback"),
            "triage": (self.failures, "triage"),
            "notifier": (self.outcomes, "notifier"),
        }

    @property
    def schedule(self) -> str:
        return colocated(self.jobs, ":schedule")

    @property
    def scheduled(self) -> str:
        """The entries of `not_before` jobs by job id (a hash beside the schedule), so that a
        cancel can take one out at once (shared/jobs/schedule.py)."""
        return colocated(self.jobs, ":scheduled")

    # Redis Streams have no priorities: a prioritized hop has one stream per priority, read
    # highest first (docs/decisions/0016-priorities.md). `normal` keeps the hop's own name, so
    # entries written before priorities existed are still read; the others share its slot so
    # one script can read all three.
    def jobs_for(self, priority: Priority | str) -> str:
        return _by_priority(self.jobs, priority)

    def fallback_for(self, priority: Priority | str) -> str:
        return _by_priority(self.fallback, priority)

    def schedule_for(self, priority: Priority | str) -> str:
        """The delay schedule of one priority (promote_due.lua moves it into `jobs_for`)."""
        p = Priority(priority)
        if p is Priority.NORMAL:
            return self.schedule
        return colocated(self.jobs, ":schedule:" + p.value)

    def prioritized(self, stream: str) -> tuple[str, ...]:
        """A prioritized hop's streams in read order (`jobs` or `fallback`); another stream
        alone."""
        if stream in (self.jobs, self.fallback):
            return tuple(_by_priority(stream, p) for p in READ_ORDER)
        return (stream,)

    def inputs(self, service: str) -> tuple[tuple[str, str], ...]:
        """(stream, group) of every stream the service reads, in read order."""
        stream, group = self.groups[service]
        return tuple((s, group) for s in self.prioritized(stream))

    def terminal(self, job_id: str) -> str:
        return colocated(self.events, ":terminal:" + job_id)

    def result(self, job_id: str, token: str) -> str:
        """A large result on its way to its event (shared/solving/report.py): in the events
        stream's slot, so that the notifier's script moves it into the event."""
        return colocated(self.events, ":result:" + job_id + ":" + token)

    def replayed(self, dead_letter_id: str) -> str:
        """Mark of a replay whose terminal guard was cleared (shared/jobs/dead_letters.py)."""
        return colocated(self.events, ":replayed:" + dead_letter_id)

    def fence(self, consumer: str) -> str:
        """The notifier's replication fence (shared/connection/durable.py)."""
        return colocated(self.events, ":fence:" + consumer)

    def _job_key(self, kind: str, job_id: str) -> str:
        if job_id.startswith("}"):
            return f"{self.prefix}{kind}@{{~}}{job_id}"
        return f"{self.prefix}{kind}:{{{job_id}}}"

    def bridged(self, job_id: str) -> str:
        """Which BullMQ job the bridge handed over under `job_id`: in the intake stream's slot,
        so one script can claim the id and append the intake entry (services/bridge/)."""
        return "{" + self.intake + "}:bridged:" + job_id

    @property
    def alerts(self) -> str:
        """What the intake saw go wrong on its stream (services/intake/watch.py), for stats,
        health and the console."""
        return f"{self.prefix}alerts"

    def bridge_heartbeat(self, consumer: str) -> str:
        return f"{self.prefix}bridge:heartbeat:{consumer}"

    def job(self, job_id: str) -> str:
        return self._job_key("job", job_id)

    def idempotency(self, job_id: str) -> str:
        return self._job_key("idem", job_id)

    def cancel(self, job_id: str) -> str:
        return self._job_key("cancel", job_id)

    def replay_mark(self, job_id: str) -> str:
        """Which dead letter of this job a replay last cleared the keys for."""
        return self._job_key("replay", job_id)


def _by_priority(stream: str, priority: Priority | str) -> str:
    p = Priority(priority)
    if p is Priority.NORMAL:
        return stream
    return colocated(stream, ":" + p.value)
