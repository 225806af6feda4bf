"""Idempotency keys: a job id is accepted once while its key lives.

The key's value is the intake entry id that claimed it. A redelivery of that same entry (the
intake crashed after claiming but before forwarding) finds its own id and carries on, while a
second submission of the job id finds another entry's id and is dropped. A plain SET NX flag
could not tell the two apart and would lose the job in the first case.
"""

from __future__ import annotations

import redis.asyncio as aioredis


async def claim(redis: aioredis.Redis, key: str, entry_id: str, ttl: int) -> bool:
    """True if this entry owns the job id (first claim, or a redelivery of the owner)."""
    if await redis.set(key, entry_id, nx=True, ex=ttl):
        return True
    owner = await redis.get(key)
    if isinstance(owner, bytes):
        owner = owner.decode()
    return owner == entry_id
