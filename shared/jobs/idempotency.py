"""Idempotency keys: a job id is accepted once while its key lives.

The key's value is the intake entry id that claimed it. A redelivery of that same entry (the
intake crashed after claiming but before forwarding) finds its own id and carries on, while a
second submission of the job id finds another entry's id and is dropped. A plain SET NX flag
could not tell the two apart and would lose the job in the first case.
"""

from __future__ import annotations

from shared.connection.factory import AsyncRedis
from shared.text import text


async def claim_many(redis: AsyncRedis, claims: list[tuple[str, str]], ttl: int) -> list[bool]:
    """For each (key, entry id): True if this entry owns the job id (first claim, or a
    redelivery of the owner). One round trip for a whole batch.

    `SET NX GET` (Redis 7.0+) sets and answers with the previous owner in one command, so there
    is no window between asking and taking. Pipelined in order, a job id twice in one batch is
    won by its first entry.
    """
    async with redis.pipeline(transaction=False) as pipe:
        for key, entry_id in claims:
            pipe.set(key, entry_id, nx=True, ex=ttl, get=True)
        owners = await pipe.execute()
    return [
        owner is None or text(owner) == entry_id
        for owner, (_, entry_id) in zip(owners, claims, strict=True)
    ]

