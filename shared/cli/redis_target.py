"""Which Redis a command talks to, and the one line it prints when that Redis will not talk.

One rule for every command (`dev`, `demo`, `submit`, `status`, `watch`, `cancel`, `stats`,
`dlq ...`): `--redis-url`, else `REDIS_URL`, else redis://127.0.0.1:6379/0. Only `dev` and
`demo`, which start the services, go further when that address does not answer: they start an
embedded server (shared/cli/devrunner.py) and print the `export REDIS_URL=...` line that a
second terminal needs to reach it. Every other command says it cannot reach Redis and exits 5.

Expected failures are one line on stderr with an exit code from `shared.cli.exits`, never a
traceback: `explain` turns redis-py's errors into that line, `CliGroup` applies it to every
command in one place.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import redis
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from shared.cli.exits import ExitCode
from shared.connection.factory import sync_client
from shared.settings import DEFAULT_REDIS_URL, Settings, settings_error

ENV = "REDIS_URL"
SCHEMES = ("redis", "rediss", "unix")
err = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class Target:
    url: str
    source: str  # "--redis-url", "REDIS_URL" or "default"

    @property
    def shown(self) -> str:
        """The URL with its password blanked: it goes to terminals and logs."""
        return redact(self.url)

    @property
    def user(self) -> str:
        """The ACL user the URL logs in as (`default` when it names none)."""
        return urlsplit(self.url).username or "default"

    def describe(self) -> str:
        if self.source == "default":
            return f"{self.shown} (the default: neither --redis-url nor {ENV} is set)"
        return f"{self.shown} (from {self.source})"


# The target of the command being run, for the error line; set by `resolve`.
_current: Target | None = None


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def resolve(flag: str | None) -> Target:
    """The Redis this command uses: `--redis-url`, else `REDIS_URL`, else the default."""
    global _current
    if flag:
        target = Target(flag, "--redis-url")
    elif os.environ.get(ENV):
        target = Target(os.environ[ENV], ENV)
    else:
        target = Target(DEFAULT_REDIS_URL, "default")
    if urlsplit(target.url).scheme not in SCHEMES:
        fail(
            f"{target.source} {target.shown!r} is not a Redis URL "
            "(expected redis://[user:password@]host:port/db, rediss://... or unix://...)",
            ExitCode.INVALID,
        )
    _current = target
    return target


def answers(url: str, timeout: float = 0.5) -> bool:
    """Whether a server answers at `url`. A server that answers only to refuse (a wrong
    password) raises that refusal: starting another server beside it would hide the mistake."""
    # The deployment's settings (Sentinel, Cluster, TLS: shared/connection/factory.py), at `url`.
    settings = Settings(redis_url=url)
    client = sync_client(settings, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        return bool(client.ping())
    except (redis.AuthenticationError, redis.ResponseError):
        raise
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False
    finally:
        client.close()


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print `error: message` on stderr and stop with `code`."""
    err.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(int(code))


_NOPERM_COMMAND = re.compile(r"run the '([^']+)' command")


def explain(error: BaseException, target: Target | None = None) -> tuple[str, ExitCode] | None:
    """The line and exit code for an expected Redis failure; None for anything else (a bug,
    which keeps its traceback)."""
    target = target or _current
    where = target.describe() if target else "Redis"
    user = target.user if target else "default"
    if isinstance(error, redis.AuthenticationError) or (
        isinstance(error, redis.ResponseError) and str(error).startswith(("NOAUTH", "WRONGPASS"))
    ):
        return (
            f"Redis at {where} refused to log in user {user!r}: {error}",
            ExitCode.REFUSED,
        )
    if isinstance(error, redis.exceptions.NoPermissionError):
        found = _NOPERM_COMMAND.search(str(error))
        what = (
            f"may not run {found.group(1).upper()}"
            if found
            else "may not touch a key this command needs"
        )
        return (
            f"Redis user {user!r} {what} (NOPERM: {error}); this command needs an operator "
            "user (`admin` in infra/redis/users.acl)",
            ExitCode.REFUSED,
        )
    if isinstance(error, redis.ConnectionError | redis.TimeoutError):
        return f"cannot reach Redis at {where}: {_why(error)}", ExitCode.UNREACHABLE
    return None


# redis-py words the same failure differently in its sync and asyncio clients; these are the
# common ones, said once, plainly.
_REASONS = (
    (re.compile(r"Error 111\b|Connection refused|Connect call failed"), "connection refused"),
    (re.compile(r"Error -[23]\b|Name or service not known|nodename nor servname"), "unknown host"),
    (re.compile(r"[Tt]imeout|timed out"), "timed out"),
)


def _why(error: BaseException) -> str:
    message = str(error)
    for pattern, reason in _REASONS:
        if pattern.search(message):
            return reason
    return message


class CliGroup(TyperGroup):
    """The root command group: a Redis failure inside any command becomes one line and an
    exit code, and Ctrl-C a short note (code 130) instead of a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except redis.RedisError as error:
            explained = explain(error)
            if explained is None:
                raise
            message, code = explained
            err.print(f"[red]error:[/red] {escape(message)}")
            raise typer.Exit(int(code)) from None
        except ValidationError as error:
            # A wrong REDIS_* (or other) setting: the variable and the problem, in one line.
            err.print(f"[red]error:[/red] settings: {escape(settings_error(error))}")
            raise typer.Exit(int(ExitCode.INVALID)) from None
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
