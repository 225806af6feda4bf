"""Turning raw request bytes into a validated `SolveRequest`, with errors a user can act on."""

from __future__ import annotations

import json

from pydantic import ValidationError

from shared.errors import InvalidRequest
from shared.roster.limits import Limits
from shared.roster.model import SolveRequest

_validate_json = SolveRequest.__pydantic_validator__.validate_json


def field_path(loc: tuple[int | str, ...], document: object = None) -> str:
    """A field's location as the request's own messages write it (shared/roster/model.py):
    `employees[0] ('ana').max_minutes`. An item with an `id` is named by it, since a planner
    knows the employee, not its position in the array."""
    path = ""
    node = document
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            ident = node.get("id") if isinstance(node, dict) else None
            if isinstance(ident, str):
                path += f" ({ident!r})"
        else:
            path += f".{part}" if path else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return path


def describe(err: ValidationError, raw: str | bytes | None = None) -> str:
    """One line per problem, each starting with the field path, e.g.
    `employees[3] ('ana').max_minutes: ...`; `raw` (the request's JSON) names items by id."""
    document: object = None
    indexed = any(isinstance(p, int) for e in err.errors(include_url=False) for p in e["loc"])
    if raw is not None and indexed:
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            document = None
    lines = []
    for e in err.errors(include_url=False):
        loc = field_path(tuple(e["loc"]), document)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] in {"json_invalid"}:
            lines.append(f"payload is not valid JSON: {e['ctx'].get('error', msg)}")
            continue
        got = e.get("input")
        shown = "" if isinstance(got, dict | list) or got is None else f" (got {got!r:.60})"
        lines.append(f"{loc}: {msg}{shown}" if loc else msg)
    return "; ".join(lines)


def parse_request(raw: str | bytes, limits: Limits | None = None) -> SolveRequest:
    limits = limits or Limits()
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > limits.max_json_bytes:
        raise InvalidRequest(
            f"payload: {size} bytes is over the limit of {limits.max_json_bytes} bytes"
        )
    try:
        # The validator itself: `model_validate_json` only adds a wrapper call around it.
        request: SolveRequest = _validate_json(raw, context={"limits": limits})
        return request
    except ValidationError as err:
        raise InvalidRequest(describe(err, raw)) from err
