"""Every stream, group and key name, derived from settings so the prefix applies everywhere.

Keys touched by one Lua script must live in one Redis Cluster slot. A stream name has no
braces, so it hashes as a whole; a side key named `{<stream name>}:...` hashes on exactly that
text and therefore lands in the stream's slot. That is how the delay schedule shares a slot with
`solver.jobs` and the terminal guards with `solver-events`, whatever the prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.settings import Settings


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
        return "{" + self.jobs + "}:schedule"

    def terminal(self, job_id: str) -> str:
        return "{" + self.events + "}:terminal:" + job_id

    def bridged(self, job_id: str) -> str:
        """Which BullMQ job the bridge handed over under `job_id`: in the intake stream's slot,
        so one script can claim the id and append the intake entry (services/bridge/)."""
        return "{" + self.intake + "}:bridged:" + job_id

    def bridge_heartbeat(self, consumer: str) -> str:
        return f"{self.prefix}bridge:heartbeat:{consumer}"

    def job(self, job_id: str) -> str:
        return f"{self.prefix}job:{{{job_id}}}"

    def idempotency(self, job_id: str) -> str:
        return f"{self.prefix}idem:{{{job_id}}}"

    def cancel(self, job_id: str) -> str:
        return f"{self.prefix}cancel:{{{job_id}}}"
