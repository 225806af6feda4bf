"""Every stream, group and key name, derived from settings so the prefix applies everywhere.

Keys that one Lua script or transaction touches must live in one Redis Cluster slot, and the
Cluster hashes a key on its hash tag (the text in its first `{...}`) when it has one, else on
the whole key. Two families of side keys follow from that:

- keys that go with a stream (the delay schedule with `solver.jobs`, the terminal guards and the
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

from shared.settings import Settings, hash_tag


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

    def terminal(self, job_id: str) -> str:
        return colocated(self.events, ":terminal:" + job_id)

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
