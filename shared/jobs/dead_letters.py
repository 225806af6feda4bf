"""Dead letters for operators: list, show, replay, purge (`shiftstream dlq ...`).

A replay is an operator's explicit decision to run a job again under the SAME job id: the
contract "one terminal event per job id" holds per lifecycle, and a replay starts a second
lifecycle. It frees the job id (idempotency key, job record, cancel marker), lifts its
terminal-event guard, writes a fresh `type=solve` entry to the public intake stream and
removes the dead letter; the intake then handles it like any new submission (attempt 1, a new
`accepted`, exactly one new terminal event). Clients that follow the job id see the new
lifecycle after the old `failed` event.

Those keys live in three Redis Cluster slots (the job's keys hash on the job id, the guard on
the events stream, the two streams on their names), so no one script can do it all. Four steps
instead, each one atomic, in an order that any of them may be cut after and the replay run
again (or run twice at once) without a second lifecycle or a lost job:
1. `replay_keys.lua` (the job's slot) frees the job id, marked as done for this dead letter;
2. `replay_guard.lua` (the events slot) lifts the guard, marked likewise;
3. the intake entry is written; should a rerun write it twice, the intake claims the job id
   for the first copy and drops the other as a duplicate (the marks keep step 1 from freeing
   it again in between);
4. the dead letter is deleted: until then a rerun finds it and completes the replay.
The marks live as long as an idempotency key. With `REDIS_WAIT_REPLICAS` the last two steps
also wait for replicas: a replay the CLI reported survives a failover.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from faststream.redis.message import bDATA_KEY
from faststream.redis.parser import BinaryMessageFormatV1
from pydantic import ValidationError

from shared.connection.durable import write_durably_sync
from shared.connection.factory import SyncRedis
from shared.errors import ReplayError
from shared.jobs.messages import DeadLetter
from shared.names import Names
from shared.settings import Settings
from shared.streaming.lua import script
from shared.text import text

# The intake entry a replay writes names its dead letter in this field, and the intake puts it
# on the entry's span as this attribute: the replay's trace is a new lifecycle, not a lost
# trace context (shared/cli/waterfall.py).
REPLAY_FIELD = "replay_of"
REPLAY_ATTRIBUTE = "job.replay_of"


def dead_letter_id_of(job_id: str, attempts: int, reason: str) -> str:
    """`dl-<job id>-<attempts>-<8 hex of the reason>`: derived, not random, so a redelivered
    failure writes a letter with the same id, and the failed event names one dead letter
    whichever copy won the terminal guard."""
    return f"dl-{job_id}-{attempts}-{uuid.uuid5(uuid.NAMESPACE_URL, reason).hex[:8]}"


@dataclass(frozen=True)
class Entry:
    """A dead-letter stream entry: a DeadLetter, or a poison outcome the notifier parked."""

    entry_id: str
    letter: DeadLetter | None
    fields: dict[str, str]

    @property
    def key(self) -> str:
        return self.letter.dead_letter_id if self.letter else self.entry_id

    def matches(self, ident: str) -> bool:
        if ident == self.entry_id:
            return True
        return self.letter is not None and ident in (self.letter.dead_letter_id, self.letter.job_id)



class DeadLetters:
    def __init__(self, client: SyncRedis, settings: Settings) -> None:
        self.redis = client
        self.settings = settings
        self.names = Names.from_settings(settings)
        self._free_keys = client.register_script(script(__file__, "replay_keys"))
        self._lift_guard = client.register_script(script(__file__, "replay_guard"))

    def _decode(self, entry_id: Any, fields: dict[Any, Any]) -> Entry:
        data = fields.get(bDATA_KEY)
        letter = None
        if isinstance(data, bytes):
            try:
                body, _ = BinaryMessageFormatV1.parse(data)
                letter = DeadLetter.model_validate_json(body)
            except (ValidationError, ValueError):
                letter = None
        flat = {text(k, "replace"): text(v, "replace") for k, v in fields.items() if k != bDATA_KEY}
        return Entry(text(entry_id, "replace"), letter, flat)

    def newest(self, count: int) -> list[Entry]:
        rows: Any = self.redis.xrevrange(self.names.dead, count=count)
        return [self._decode(i, f) for i, f in rows]

    def all(self, batch: int = 1000) -> list[Entry]:
        out: list[Entry] = []
        start = "-"
        while True:
            rows: Any = self.redis.xrange(self.names.dead, min=start, count=batch)
            out += [self._decode(i, f) for i, f in rows]
            if len(rows) < batch:
                return out
            start = "(" + text(rows[-1][0], "replace")

    def find(self, ident: str) -> Entry | None:
        # The newest match: a job id may have died, been replayed and died again.
        for entry in reversed(self.all()):
            if entry.matches(ident):
                return entry
        return None

    def replay(self, entry: Entry) -> str:
        """Re-submit the dead job under its own id; the new intake entry id."""
        letter = entry.letter
        if letter is None or letter.payload is None:
            raise ReplayError(
                f"{entry.key}: never became a job (invalid entry or parked outcome); "
                "nothing to replay"
            )
        names, s = self.names, self.settings
        if not self.redis.xrange(names.dead, min=entry.entry_id, max=entry.entry_id):
            raise ReplayError(f"{entry.key}: already replayed, purged or trimmed")
        job_id, mark_ttl = letter.job_id, s.idempotency_ttl_seconds
        self._free_keys(
            keys=[
                names.idempotency(job_id),
                names.job(job_id),
                names.cancel(job_id),
                names.replay_mark(job_id),
            ],
            args=[letter.dead_letter_id, mark_ttl],
        )
        self._lift_guard(
            keys=[names.terminal(job_id), names.replayed(letter.dead_letter_id)], args=[mark_ttl]
        )
        fields = {
            "type": "solve",
            "job_id": job_id,
            "payload": letter.payload,
            REPLAY_FIELD: letter.dead_letter_id,
        }
        if letter.priority is not None:
            fields["priority"] = letter.priority.value
        replies = write_durably_sync(
            self.redis,
            s.wait_replicas,
            s.redis_wait_timeout_ms,
            lambda pipe: pipe.xadd(
                names.intake, fields, maxlen=s.stream_maxlen, approximate=True
            ),
        )
        write_durably_sync(
            self.redis,
            s.wait_replicas,
            s.redis_wait_timeout_ms,
            lambda pipe: pipe.xdel(names.dead, entry.entry_id),
        )
        return text(replies[0], "replace")

    def purge(self) -> int:
        """Remove every dead letter; the number removed."""
        return int(self.redis.xtrim(self.names.dead, maxlen=0, approximate=False))
