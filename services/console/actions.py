"""What the console changes, and who may: cancel, replay, purge, submit.

Every action is a POST that must carry (1) the operator's session, got by typing
`CONSOLE_TOKEN` once into the page (an HttpOnly, SameSite=Strict cookie signed with the token),
or an `Authorization: Bearer <token>` header for scripts, and (2) for a browser session, the
page's CSRF token, derived from the session and the console token (a page of another site can
neither read it nor send the cookie). A POST whose Origin is another site is refused before
anything else. Without `CONSOLE_TOKEN` the console is read-only and every action is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import uuid

from shared.errors import InvalidRequest
from shared.roster.curtois import CurtoisFormatError, parse_curtois
from shared.roster.limits import Limits
from shared.roster.model import SolveRequest
from shared.roster.parse import parse_request

SESSION_COOKIE = "shiftstream_console"
# The contract's limit on job ids (docs/design.md §3); printable, no spaces.
JOB_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,200}$")


class Refused(Exception):
    """An action that may not run; the message is shown on the page as it is."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class BadInput(Refused):
    def __init__(self, message: str) -> None:
        super().__init__(message, 400)


def _mac(token: str, what: str) -> str:
    return hmac.new(token.encode(), what.encode(), hashlib.sha256).hexdigest()


def new_session(token: str) -> str:
    nonce = secrets.token_hex(16)
    return f"{nonce}.{_mac(token, 'session:' + nonce)}"


def session_nonce(token: str | None, cookie: str | None) -> str | None:
    """The session's nonce if the cookie was signed with the current token."""
    if not token or not cookie or "." not in cookie:
        return None
    nonce, mac = cookie.split(".", 1)
    return nonce if hmac.compare_digest(mac, _mac(token, "session:" + nonce)) else None


def csrf_token(token: str, nonce: str) -> str:
    return _mac(token, "csrf:" + nonce)


def check_login(token: str | None, typed: str) -> None:
    if not token:
        raise Refused("this console is read-only: start it with CONSOLE_TOKEN set to allow actions")
    if not hmac.compare_digest(typed.encode(), token.encode()):
        raise Refused("wrong token")


def authorise(
    token: str | None,
    *,
    cookie: str | None,
    csrf: str | None,
    bearer: str | None,
    origin: str | None,
    host: str | None,
) -> None:
    """Raise `Refused` unless this POST may change state."""
    if not token:
        raise Refused("this console is read-only: start it with CONSOLE_TOKEN set to allow actions")
    if origin and origin != "null" and host and origin.split("://", 1)[-1] != host:
        raise Refused(f"refused a cross-site request from {origin}")
    if bearer is not None:
        if hmac.compare_digest(bearer.encode(), token.encode()):
            return
        raise Refused("wrong token")
    nonce = session_nonce(token, cookie)
    if nonce is None:
        raise Refused("sign in with the console token first")
    if not csrf or not hmac.compare_digest(csrf, csrf_token(token, nonce)):
        raise Refused("the form is stale or came from another page: reload and try again")


def job_id_of(raw: str | None, *, required: bool = True) -> str | None:
    value = (raw or "").strip()
    if not value:
        if required:
            raise BadInput("a job id is required")
        return None
    if not JOB_ID.match(value):
        raise BadInput(
            "job id: up to 200 letters, digits and . _ : @ / + = - (no spaces), "
            f"got {value[:60]!r}"
        )
    return value


def parse_upload(filename: str, data: bytes, limits: Limits) -> SolveRequest:
    """A solve request from an uploaded JSON request or Curtois benchmark file; `BadInput`
    names the problem (the field, or the line of the instance)."""
    name = filename or "upload"
    if not data.strip():
        raise BadInput(f"{name}: the file is empty")
    if len(data) > limits.max_json_bytes:
        raise BadInput(f"{name}: {len(data)} bytes is over the limit of {limits.max_json_bytes}")
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(f"{name}: not UTF-8 text (byte {err.start})") from err
    looks_json = content.lstrip()[:1] in "{["
    try:
        if name.lower().endswith(".json") or looks_json:
            try:
                json.loads(content)
            except json.JSONDecodeError as err:
                raise BadInput(
                    f"{name}: not valid JSON: {err.msg} at line {err.lineno} column {err.colno}"
                ) from err
            return parse_request(content, limits)
        return parse_curtois(content, name=name.rsplit(".", 1)[0])
    except InvalidRequest as err:
        raise BadInput(f"{name}: {err.reason}") from err
    except CurtoisFormatError as err:
        raise BadInput(f"{name}: not a solve request (JSON) nor a Curtois instance: {err}") from err
    except (KeyError, IndexError, ValueError) as err:
        # A text that is neither format may break the instance reader before it can say where.
        raise BadInput(
            f"{name}: not a solve request (JSON) nor a Curtois instance ({type(err).__name__}: "
            f"{err})"
        ) from err


def new_job_id() -> str:
    return f"console-{uuid.uuid4().hex[:12]}"
