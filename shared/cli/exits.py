"""The exit codes of every `shiftstream` command: one table, so scripts can tell a job that
failed from a Redis that is down (docs/cli.md lists it; tests/test_docs.py keeps them equal)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    # The job failed (watch, submit --watch, demo); evaluate: the roster breaks a hard rule.
    FAILED = 1
    # Bad usage or input: an unknown option or format, an unreadable or invalid request file, a
    # job that failed as `invalid`.
    INVALID = 2
    # The chosen solver cannot run here (solve --solver generetic without the C build).
    UNAVAILABLE = 3
    # Nothing by that name: job id, dead letter, trace.
    NOT_FOUND = 4
    # Redis does not answer (refused, timed out, unknown host).
    UNREACHABLE = 5
    # Redis answers but refuses: wrong password, or the ACL user may not run the command.
    REFUSED = 6
    # Stopped by Ctrl-C (128 + SIGINT, as shells report it).
    INTERRUPTED = 130


MEANING = {
    ExitCode.OK: "success, the job completed",
    ExitCode.FAILED: "the job failed, or its result is not a result v1 (`evaluate`: the "
    "roster breaks a hard rule)",
    ExitCode.INVALID: "bad usage or input: unknown option or output format, unreadable or "
    "invalid request file, a job that failed as `invalid`",
    ExitCode.UNAVAILABLE: "the chosen solver cannot run here",
    ExitCode.NOT_FOUND: "no such job, dead letter or trace",
    ExitCode.UNREACHABLE: "Redis does not answer",
    ExitCode.REFUSED: "Redis refuses: wrong credentials, or the ACL user lacks a permission",
    ExitCode.INTERRUPTED: "stopped by Ctrl-C",
}


def epilog() -> str:
    """The table for `shiftstream --help`."""
    return "Exit codes: " + "; ".join(f"{int(c)} = {MEANING[c]}" for c in ExitCode) + "."
