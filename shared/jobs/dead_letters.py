"""Dead letters for operators: list, show, replay, purge (`shiftstream dlq ...`).

A replay is an operator's explicit decision to run a job again under the SAME job id: the
contract "one terminal event per job id" holds per lifecycle, and a replay starts a second
lifecycle. `replay_dead.lua` clears the job's terminal guard, idempotency key, job record and
cancel marker, removes the dead letter and writes a fresh `type=solve` entry to the public
intake stream, all in one script; the intake then handles it like any new submission
(attempt 1, a new `accepted`, exactly one new terminal event). Clients that follow the job id
see the new lifecycle after the old `failed` event.

The keys of one replay live in different Redis Cluster slots (the guard hashes on the events
stream, the idempotency key on the job id): on a Cluster the script must be run per shard
with co-located names; ShiftStream targets a single primary (docs/design.md §4).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import redis
from faststream.redis.message import bDATA_KEY
from faststream.redis.parser import BinaryMessageFormatV1
from pydantic import ValidationError

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
    def __init__(self, client: redis.Redis, settings: Settings) -> None:
        self.redis = client
        self.settings = settings
        self.names = Names.from_settings(settings)
        self._replay = client.register_script(script(__file__, "replay_dead"))

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
        names = self.names
        new_id = self._replay(
            keys=[
                names.terminal(letter.job_id),
                names.idempotency(letter.job_id),
                names.job(letter.job_id),
                names.cancel(letter.job_id),
                names.intake,
                names.dead,
            ],
            args=[
                entry.entry_id,
                self.settings.stream_maxlen,
                "type",
                "solve",
                "job_id",
                letter.job_id,
                "payload",
                letter.payload,
                REPLAY_FIELD,
                letter.dead_letter_id,
            ],
        )
        if new_id is None:
            raise ReplayError(f"{entry.key}: already replayed, purged or trimmed")
        return text(new_id, "replace")

    def purge(self) -> int:
        """Remove every dead letter; the number removed."""
        return int(self.redis.xtrim(self.names.dead, maxlen=0, approximate=False))
