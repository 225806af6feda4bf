"""Redis replies as text: redis-py hands back `bytes` (or `str` with `decode_responses`)."""

from __future__ import annotations


def text(value: object, errors: str = "strict") -> str:
    """`value` as `str`: bytes decoded as UTF-8 (`errors` as in `bytes.decode`), else `str()`."""
    return value.decode("utf-8", errors) if isinstance(value, bytes) else str(value)
