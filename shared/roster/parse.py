"""Turning raw request bytes into a validated `SolveRequest`, with errors a user can act on."""

from __future__ import annotations

from pydantic import ValidationError

from shared.errors import InvalidRequest
from shared.roster.limits import Limits
from shared.roster.model import SolveRequest

_validate_json = SolveRequest.__pydantic_validator__.validate_json


def describe(err: ValidationError) -> str:
    """One line per problem, each starting with the field path, e.g. `employees.3.id: ...`."""
    lines = []
    for e in err.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"])
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
        raise InvalidRequest(describe(err)) from err
