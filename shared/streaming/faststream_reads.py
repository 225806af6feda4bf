"""The one place ShiftStream reaches into FastStream's Redis stream subscriber.

Checked against FastStream 0.7.8 (`faststream/redis/subscriber/usecases/stream_subscriber.py`
and `basic.py`). FastStream has no public way to change how a stream subscriber reads: a
subscriber is built by `broker.subscriber(StreamSub(...))` from a fixed set of classes,
middlewares and parsers run on an entry after it was read, `StreamSub` only holds the read's
options, and `get_one()` / `async for` read through the same `_xreadgroup` (and refuse a
subscriber with a handler). Nor does it retry a read that lost its connection: any failed read
costs a fixed 5 s (`CONSUME_ERROR_BACKOFF_SECONDS`; ag2ai/faststream#2797 asks for it).
docs/decisions/0021-one-read-path.md weighs the alternatives.

Three names of the installed FastStream are used, all checked by `check` when a service builds
its hops, so an upgrade that renames or reshapes one stops every service at start with an
`IncompatibleFastStream` naming it, and tests/test_faststream_reads.py fails:

- `_get_msgs(read)`: one step of the subscriber's loop: `await read(last_id)`, then hand the
  entries to the handler. `read_through` wraps the `read` it is given (a group reader's
  XREADGROUP or a reclaimer's XAUTOCLAIM), never the handler; `replace_read` reads with
  another (the prioritized hops' reclaimers, highest priority first).
- `_xreadgroup(*, count, block, noack)`: a group reader's read (its reply: XREADGROUP's,
  `((stream, ((id, fields), ...)), ...)`). `replace_group_read` swaps it (the prioritized
  hops' one-script read, shared/streaming/priority.py); FastStream's loop decodes, acks (to
  the stream the entries came from) and stops on NOGROUP as before.
- `_client`: the subscriber's connection (the broker's), set once the broker connected.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

try:
    from faststream.redis.subscriber.usecases.stream_subscriber import _StreamHandlerMixin
except ImportError:  # reported by `check`, with what to look at
    _StreamHandlerMixin = None  # type: ignore[assignment,misc]

CHECKED_AGAINST = "0.7.8"
log = logging.getLogger("shiftstream")

# `read(last_id)` as FastStream's loop calls it.
Read = Callable[[str], Awaitable[Any]]
# `_xreadgroup(count=..., block=..., noack=...)`.
GroupRead = Callable[..., Awaitable[Any]]


class IncompatibleFastStream(RuntimeError):
    pass


def _fail(what: str) -> IncompatibleFastStream:
    return IncompatibleFastStream(
        f"FastStream {version('faststream')}: {what}; ShiftStream reads through it "
        f"(shared/streaming/faststream_reads.py, checked against {CHECKED_AGAINST})"
    )


def check(subscriber: Any) -> None:
    """Raise `IncompatibleFastStream` unless `subscriber` is a stream subscriber with the three
    names this module uses, shaped as in the version it was checked against."""
    cls = type(subscriber)
    if _StreamHandlerMixin is None:
        raise _fail("no stream_subscriber._StreamHandlerMixin")
    if not isinstance(subscriber, _StreamHandlerMixin):
        raise _fail(f"{cls.__name__} is not a stream subscriber")
    get_msgs = getattr(cls, "_get_msgs", None)
    if get_msgs is None or list(inspect.signature(get_msgs).parameters) != ["self", "read"]:
        raise _fail(f"{cls.__name__}._get_msgs(self, read) is gone or changed")
    group_read = getattr(cls, "_xreadgroup", None)
    if group_read is None:
        raise _fail(f"{cls.__name__}._xreadgroup is gone")
    params = inspect.signature(group_read).parameters
    keywords = {n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    if keywords != {"count", "block", "noack"}:
        raise _fail(f"{cls.__name__}._xreadgroup takes {sorted(keywords)}, not count/block/noack")
    if not isinstance(inspect.getattr_static(cls, "_client", None), property):
        raise _fail(f"{cls.__name__}._client is gone")
    _note_version()


@functools.cache
def _note_version() -> None:
    # The shapes match, but what the methods do was read for one version only: say so once.
    installed = version("faststream")
    if installed != CHECKED_AGAINST:
        log.warning(
            "FastStream %s: ShiftStream's read adapter was checked against %s "
            "(shared/streaming/faststream_reads.py); its names and signatures match",
            installed,
            CHECKED_AGAINST,
        )


def read_through(subscriber: Any, around: Callable[[Read], Read]) -> None:
    """Every read of `subscriber`'s loop goes through `around(read)`."""
    check(subscriber)
    step = subscriber._get_msgs

    async def _get_msgs(read: Read) -> None:
        await step(around(read))

    subscriber._get_msgs = _get_msgs


def replace_read(subscriber: Any, read: Read) -> None:
    """`subscriber`'s loop reads with `read(last_id)` instead of its own (a reclaimer's
    XAUTOCLAIM); what already wraps its reads (`read_through`) wraps this one."""
    read_through(subscriber, lambda _own: read)


def replace_group_read(subscriber: Any, read: GroupRead) -> None:
    """A group reader's XREADGROUP becomes `read(count=, block=, noack=)`, same reply shape."""
    check(subscriber)
    subscriber._xreadgroup = read


def connection(subscriber: Any) -> Any:
    """The client `subscriber` reads with (valid once its broker connected)."""
    return subscriber._client
