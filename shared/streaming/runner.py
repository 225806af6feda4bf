"""Run a service on uvloop; FastStream's app handles SIGTERM/SIGINT with a graceful drain."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading

import uvloop
from faststream import FastStream

from shared.settings import Settings
from shared.streaming.gc_tuning import tune_for_service

# Exit status of a service whose subscriber FastStream stopped for good (EX_SOFTWARE).
SUBSCRIBER_LOST = 70
# Exit status of a service whose start did not finish within STARTUP_TIMEOUT_SECONDS
# (EX_TEMPFAIL: a restart may well succeed).
STARTUP_HUNG = 75


class _TerminalErrors(logging.Handler):
    """Remembers CRITICAL records: FastStream's only report of a subscriber it stopped for good.

    On a terminal read error (NOGROUP: the group or stream vanished, e.g. a Redis that came back
    without its data) FastStream 0.7 stops the subscriber, logs CRITICAL and calls `app.exit()`,
    which ends the process with status 0 — indistinguishable from a requested stop for a
    supervisor that restarts only on failure. Remembering the record lets `run` exit non-zero;
    the restarted process creates the groups again at 0 and consumes.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.CRITICAL)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        # Only FastStream's "stopping subscriber" verdicts: other CRITICAL records (a failed
        # startup while Redis is down) end the process with a non-zero status by themselves.
        if "Stopping subscriber" in message:
            self.seen.append(message)


def dump_tasks() -> None:
    """Every asyncio task's stack to stderr: what a wedged service is waiting on.

    Thread dumps (py-spy) show an idle loop when a handler waits on a lock or a future;
    only the coroutine stacks tell which one.
    """
    for task in asyncio.all_tasks():
        print(f"--- {task.get_name()}: {task.get_coro()!r}", file=sys.stderr)
        task.print_stack(file=sys.stderr)
    sys.stderr.flush()


async def _serve(app: FastStream) -> None:
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump_tasks)
    await app.run(log_level=logging.INFO)


def _startup_hung(timeout: float) -> None:
    # From a timer thread: the event loop may be the thing that is stuck.
    print(
        f"exiting {STARTUP_HUNG}: not started after {timeout:g} s (STARTUP_TIMEOUT_SECONDS); "
        "restarting frees the entries this process holds for the reclaimers",
        file=sys.stderr,
        flush=True,
    )
    os._exit(STARTUP_HUNG)


def _startup_watchdog(app: FastStream, timeout: float) -> None:
    """Exit with STARTUP_HUNG unless every startup hook and subscriber is up within `timeout`
    seconds. A subscriber start that hangs (seen once in a Sentinel failover chaos run) leaves
    a process that consumes through its other subscribers but never reclaims, for ever.

    Parameters:
        app: the service's app; the watchdog is disarmed by its last after-startup hook.
        timeout: seconds from now (STARTUP_TIMEOUT_SECONDS).
    """
    timer = threading.Timer(timeout, _startup_hung, args=(timeout,))
    timer.daemon = True

    async def disarm() -> None:
        timer.cancel()

    app.after_startup(disarm)
    timer.start()


def run(app: FastStream) -> None:
    _startup_watchdog(app, Settings().startup_timeout_seconds)
    watch = _TerminalErrors()
    logging.getLogger().addHandler(watch)
    logging.getLogger("shiftstream").addHandler(watch)
    tune_for_service()
    # `faststream run` picks uvloop itself, plain asyncio.run does not (docs/verified.md).
    uvloop.run(_serve(app))
    if watch.seen:
        print(f"exiting {SUBSCRIBER_LOST}: {watch.seen[0]}", file=sys.stderr)
        sys.exit(SUBSCRIBER_LOST)
