"""The project's exceptions, and the one mapping from an exception to a public error class.

Every error a job can end with is named here, so that "what does `error_class=timeout` mean"
and "which exception becomes which class" have one answer (`error_class_for`). The C library's
own `csolver.GeneticError` (a bad array or size) is a crash like any other unknown exception.

A leaf module: it imports nothing of the project, so the roster domain may raise these too.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorClass(StrEnum):
    """`error_class` of a `solver.failed` event (public contract v1)."""

    INVALID = "invalid"  # the request cannot be solved as sent: never retried
    INFEASIBLE = "infeasible"
    TIMEOUT = "timeout"  # a solve ran past its limit plus the watchdog's grace
    CRASH = "crash"  # any other failure of a solve (the C process died, a bug)
    EXHAUSTED = "exhausted"  # attempts used up, or a poison message
    CANCELLED = "cancelled"  # a cancel request, with no roster found before it


class InvalidRequest(ValueError):
    """The request cannot be solved as sent; `reason` names the field and the value."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SolverUnavailable(RuntimeError):
    """The requested implementation cannot run here (e.g. the C library failed to load)."""


class SolverCrashed(RuntimeError):
    """The solver's child process died (a signal such as SIGSEGV) without an answer."""


class SolverTimedOut(TimeoutError):
    """The solver ran past its time limit plus the grace and was stopped or abandoned."""


class IsolatedSolveError(RuntimeError):
    """An exception raised inside the solver's child process; `error_type` is its class there."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


class Cancelled(RuntimeError):
    """The job was cancelled before its solve found a roster."""


class HandBack(RuntimeError):
    """The solve was stopped for shutdown; the entry stays pending for another worker."""


class ReplayError(RuntimeError):
    """A dead letter cannot be replayed (unknown id, or its request is not kept)."""


def error_class_for(err: BaseException) -> ErrorClass:
    """The public error class of a failed attempt."""
    if isinstance(err, InvalidRequest):
        return ErrorClass.INVALID
    if isinstance(err, Cancelled):
        return ErrorClass.CANCELLED
    if isinstance(err, TimeoutError):
        return ErrorClass.TIMEOUT
    return ErrorClass.CRASH


def error_type_of(err: BaseException) -> str:
    """The exception's class name; for one raised in the solver's child, its name there."""
    return getattr(err, "error_type", None) or type(err).__name__
