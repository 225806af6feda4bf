"""Custom FastStream parser for the public intake stream.

A foreign producer writes flat fields (`type`, `job_id`, `payload`, `traceparent`, ...).
FastStream's own parser keeps only `__data__` and would drop them, so this parser lifts them:
the business fields become the JSON body, the W3C trace fields become headers (the telemetry
middleware then continues the producer's trace). Entries in FastStream's envelope, from Python
producers, go to the original parser unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from faststream.message import StreamMessage
from faststream.redis.message import bDATA_KEY
from faststream.redis.parser import BinaryMessageFormatV1

from shared.streaming.codec import envelope
from shared.text import text

BODY_FIELDS = ("type", "job_id", "payload", "not_before", "priority")
HEADER_FIELDS = ("traceparent", "tracestate")



def lift_flat_fields(data: Mapping[Any, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(body, headers) from the flat fields of one entry.

    Unknown fields are kept (shortened) under `other`, so a dead letter of a garbage entry
    still shows what the producer sent.
    """
    fields = {text(k, "replace"): text(v, "replace") for k, v in data.items()}
    body: dict[str, Any] = {k: fields[k] for k in BODY_FIELDS if k in fields}
    headers = {k: fields[k] for k in HEADER_FIELDS if k in fields}
    other = {k[:100]: v[:1000] for k, v in fields.items() if k not in BODY_FIELDS + HEADER_FIELDS}
    if other:
        body["other"] = other
    return body, headers


def intake_body(data: Mapping[Any, Any]) -> tuple[bytes, dict[str, Any]]:
    """One entry, flat fields or FastStream envelope, as (a JSON object, headers).

    The handler's model accepts any JSON object; anything else (a Python producer sending a bare
    string, broken bytes) becomes an object the intake can report as invalid, rather than a
    decode error that would leave the entry (and in a batch, its neighbours) pending for ever.
    """
    if bDATA_KEY in data:
        raw, headers = BinaryMessageFormatV1.parse(data[bDATA_KEY])
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {"garbage": text(raw, "replace")[:200]}
    else:
        body, headers = lift_flat_fields(data)
    return json.dumps(body).encode(), {**headers, "content-type": "application/json"}


async def normalize(data: Mapping[Any, Any]) -> dict[bytes, bytes]:
    """`intake_body` as an envelope, for FastStream's own parser (the reclaimer's one entry).

    FastStream's binary envelope: a JSON envelope would escape the payload (itself JSON in a
    string) a second time, and every entry would be decoded twice more.
    """
    body, headers = intake_body(data)
    return {bDATA_KEY: await envelope(body, headers)}


async def intake_parser(
    msg: Any, original_parser: Callable[[Any], Awaitable[StreamMessage[Any]]]
) -> StreamMessage[Any]:
    # The reclaimer's one entry; batch reads go through shared/streaming/codec.py with
    # `intake_body`.
    data = msg.get("data")
    if isinstance(data, Mapping):
        msg = {**msg, "data": await normalize(data)}
    return await original_parser(msg)
