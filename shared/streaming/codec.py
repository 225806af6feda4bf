"""Stream entries on the wire: FastStream's envelope written, and a batch read decoded.

Decoding a batch read: each entry's JSON body parsed once, straight into the hop's model.

FastStream's batch parser decodes every entry's body, dumps the list back to one JSON
document, and its decoder loads that again before the handler's annotation is validated:
three JSON passes over every entry plus a validation of plain dicts (for a job, its
kilobyte-sized request is escaped and unescaped each time). Here the envelopes are split, the
bodies joined into one JSON array as they are, and pydantic validates that array into models
in one pass. What a broken entry does is unchanged: the whole batch fails to decode and stays
pending, as it did with FastStream's own parser.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from faststream.message import StreamMessage
from faststream.redis.message import bDATA_KEY
from faststream.redis.parser import BinaryMessageFormatV1
from opentelemetry import propagate
from pydantic import BaseModel, TypeAdapter

# One entry's (JSON body, headers).
EntryBody = Callable[[Mapping[Any, Any]], tuple[bytes, dict[str, Any]]]
Parser = Callable[[Any, Callable[[Any], Awaitable[StreamMessage[Any]]]], Awaitable[Any]]
Decoder = Callable[[StreamMessage[Any], Callable[[Any], Awaitable[Any]]], Awaitable[Any]]


def envelope_body(entry: Mapping[Any, Any]) -> tuple[bytes, dict[str, Any]]:
    """An internal stream's entry: FastStream's binary envelope in `__data__`."""
    return BinaryMessageFormatV1.parse(entry[bDATA_KEY])


def batch_parser(entry_body: EntryBody = envelope_body) -> Parser:
    async def parse(
        msg: Any, original_parser: Callable[[Any], Awaitable[StreamMessage[Any]]]
    ) -> StreamMessage[Any]:
        data = msg.get("data")
        if not isinstance(data, list):
            return await original_parser(msg)
        bodies, headers = [], []
        for entry in data:
            body, h = entry_body(entry)
            bodies.append(body)
            headers.append(h)
        # FastStream builds the message (ids, consumer and group for the ack) from an empty
        # batch; the bodies and headers are set here instead of going through its JSON.
        message = await original_parser({**msg, "data": []})
        message.body = b"[" + b",".join(bodies) + b"]"
        message.batch_headers = headers
        # The batch span's parent, as FastStream's parser takes it: the first entry's headers.
        message.headers = {**(headers[0] if headers else {}), "content-type": "application/json"}
        return message

    return parse


def batch_decoder(model: type[Any]) -> Decoder:
    adapter = TypeAdapter(list[model])  # type: ignore[valid-type]

    async def decode(msg: StreamMessage[Any], original_decoder: Callable[[Any], Any]) -> Any:
        return adapter.validate_json(msg.body)

    return decode


# FastStream's envelope wants a correlation id per message; it only has to be unique. A random
# prefix per process and a counter are, without `uuid4`'s urandom syscall per message (4 % of
# intake's CPU under load).
_CORRELATION_PREFIX = os.urandom(8).hex()
_correlation_seq = itertools.count()


def _new_correlation_prefix() -> None:
    # A forked child would otherwise count on from its parent's prefix and repeat its ids.
    global _CORRELATION_PREFIX, _correlation_seq
    _CORRELATION_PREFIX = os.urandom(8).hex()
    _correlation_seq = itertools.count()


os.register_at_fork(after_in_child=_new_correlation_prefix)


async def envelope(body: bytes, headers: dict[str, Any]) -> bytes:
    """FastStream's stream entry format, so any FastStream subscriber reads what we write."""
    return await BinaryMessageFormatV1.encode(
        message=body,
        reply_to=None,
        headers=headers,
        correlation_id=str(
            headers.get("correlation_id") or f"{_CORRELATION_PREFIX}{next(_correlation_seq):x}"
        ),
    )


async def encode_entry(model: BaseModel) -> bytes:
    """`model` as a stream entry's data, carrying the current trace context."""
    headers: dict[str, Any] = {"content-type": "application/json"}
    propagate.inject(headers)
    return await envelope(model.model_dump_json().encode(), headers)
