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

from shared.roster.limits import Limits
from shared.streaming.codec import envelope
from shared.text import text

BODY_FIELDS = ("type", "job_id", "payload", "not_before", "priority")
# A payload over the size limit is not carried into the batch's JSON (escaped, joined and
# parsed again, a 20 MiB payload took hundreds of MB): only its size, for the `invalid` answer.
MAX_PAYLOAD_BYTES = Limits.from_env().max_json_bytes
HEADER_FIELDS = ("traceparent", "tracestate")
DATA_KEY = bDATA_KEY.decode()


def is_envelope(data: Mapping[Any, Any]) -> bool:
    """FastStream writes `__data__` alone: a flat entry that merely has a field of that name
    is still a flat entry, and keeps its `job_id`."""
    return len(data) == 1 and (bDATA_KEY in data or DATA_KEY in data)


def _shown(value: object) -> str:
    # Bytes that are not UTF-8 are shown escaped (b"\xff" as "\\xff"): two different
    # invalid ids must stay two different texts in the dead letter.
    return text(value, "backslashreplace")


def _not_utf8(value: object) -> bool:
    if not isinstance(value, bytes):
        return False
    try:
        value.decode()
    except UnicodeDecodeError:
        return True
    return False


def lift_flat_fields(data: Mapping[Any, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(body, headers) from the flat fields of one entry.

    Unknown fields are kept (shortened) under `other`, so a dead letter of a garbage entry
    still shows what the producer sent. A contract field that is not UTF-8 cannot be used as
    sent (two such job ids would decode to the same text), so it is named in `defect` and the
    entry is refused, with the escaped bytes kept for the dead letter.
    """
    oversize = {_shown(k): len(v) for k, v in data.items() if len(v) > MAX_PAYLOAD_BYTES}
    fields = {_shown(k): "" if _shown(k) in oversize else _shown(v) for k, v in data.items()}
    body: dict[str, Any] = {k: fields[k] for k in BODY_FIELDS if k in fields}
    if "payload" in oversize:
        body["payload_bytes"] = oversize.pop("payload")
    broken = [_shown(k) for k, v in data.items() if _shown(k) in BODY_FIELDS and _not_utf8(v)]
    if broken:
        body["defect"] = f"{sorted(broken)[0]}: not valid UTF-8"
    elif oversize:
        name, size = min(oversize.items())
        body["defect"] = f"{name[:100]}: {size} bytes is over the limit of {MAX_PAYLOAD_BYTES}"
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
    if is_envelope(data):
        value = data.get(bDATA_KEY, data.get(DATA_KEY))
        raw, headers = BinaryMessageFormatV1.parse(value)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            # Under `other`, so that the dead letter holds what was sent.
            body = {"other": {DATA_KEY: _shown(raw)[:1000]}}
        elif "defect" in body:  # only the parser judges encodings
            body["other"] = {"defect": str(body.pop("defect"))[:1000]}
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
