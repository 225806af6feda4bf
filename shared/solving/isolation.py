"""Run one C solve in a child process, so a crash in C costs one fallback, not the worker.

The generetic solver is C: a segfault there would take the whole solver service down with it,
and every redelivery of the same request would take the next worker down too (see
docs/decisions/0003-crash-isolation.md). Here the C call runs in a child process started by a
`forkserver` (a clean interpreter with the solver modules preloaded, so the service's event
loop and threads are never forked). The parent (in a thread of the service) streams the
child's progress out of shared memory, carries cancel in through a shared Event, enforces a
hard deadline (SIGKILL at time limit + grace) and reads the result back over a socket pair:
its summary pickled, its JSON (11-14 MB at the size limits) in a memory file whose descriptor
the child passes over (docs/decisions/0020).

A child that dies by a signal raises `SolverCrashed`, one killed by the watchdog raises
`SolverTimedOut` (a TimeoutError, so the error class is `timeout`); both go to the fallback
like any primary failure, and the worker serves its next job at once.

Test-only switches (`SHIFTSTREAM_TEST_CRASH=1` on the service, see `switches_for`): a request
named `__crash__...` runs the C solver with `crash_for_test=True` (a real segfault), one named
`__hang__...` spins in Python ignoring its limit, for the watchdog.
"""

from __future__ import annotations

import contextlib
import gc
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing import reduction
from multiprocessing.sharedctypes import SynchronizedArray
from typing import Any

from shared.errors import IsolatedSolveError, SolverCrashed, SolverTimedOut
from shared.roster.evaluator import Rendered
from shared.roster.model import Implementation, SolveRequest, SolveResult
from shared.roster.solving import Progress, SolveControl
from shared.solving.dispatch import cells_of, finish_seconds, solve_rendered, solve_request
from shared.solving.drop import Dropper, ResultDrop
from shared.solving.progress import STEPS
from shared.streaming.gc_tuning import FULL_EVERY, MIDDLE_EVERY, YOUNG_THRESHOLD

# The child copies its progress out this often, the parent copies it in as often. A cancel is
# not polled: a thread on each side waits on it and passes it on at once.
CHILD_POLL_SECONDS = 0.02
PARENT_POLL_SECONDS = 0.02
# A cancelled child that has not answered by then (plus the time its roster takes to score,
# build and send back, `finish_seconds` and TRANSFER_SECONDS_PER_CELL) is killed; the solve
# then counts as cancelled without a roster. The column phase answers a cancel only between
# its pricing rounds and LP solves: ~2 s at 120 x 200 measured (one round prices every row in
# one C call), so 1 s here killed such solves and their rosters were lost.
CANCEL_KILL_SECONDS = 5.0
# Sending the result back: the child stores it (~0.004 us per employee-day, a 7 ms SET at
# 5,000 x 366) or writes it to a memory file the parent reads (~0.02 us); through the old pipe
# it was 0.35 us, and keeping 0.7 us back left the solve 1.3 s of a 5 s limit unused at the
# size limits. Kept back at five times the memory file's figure (decision 0036).
TRANSFER_SECONDS_PER_CELL = 0.1e-6
_FIELDS = (
    "generation",
    "total_generations",
    "population",
    "best_hard",
    "best_penalty",
    "evaluations",
)
# The phase, the LP bound and the step travel in the same int64 array: the phase as its index
# in PHASE_CODES, the bound rounded up (penalties are whole numbers), -1 for none, the step as
# its index in STEP_CODES.
PHASE_CODES = ("", "columns", "genetic", "greedy")
STEP_CODES = ("", *STEPS)
_PHASE, _BOUND, _STEP = len(_FIELDS), len(_FIELDS) + 1, len(_FIELDS) + 2
_SLOTS = len(_FIELDS) + 3


def _pack(p: Progress, shared: Any) -> None:
    for i, name in enumerate(_FIELDS):
        shared[i] = int(getattr(p, name))
    shared[_PHASE] = PHASE_CODES.index(p.phase) if p.phase in PHASE_CODES else 0
    bound = p.lower_bound
    shared[_BOUND] = -1 if bound is None or bound != bound else math.ceil(bound - 1e-6)
    shared[_STEP] = STEP_CODES.index(p.step) if p.step in STEP_CODES else 0


def _unpack(shared: Any, p: Progress) -> None:
    for i, name in enumerate(_FIELDS):
        setattr(p, name, int(shared[i]))
    p.phase = PHASE_CODES[shared[_PHASE]] if 0 <= shared[_PHASE] < len(PHASE_CODES) else ""
    p.lower_bound = float(shared[_BOUND]) if shared[_BOUND] >= 0 else None
    p.step = STEP_CODES[shared[_STEP]] if 0 <= shared[_STEP] < len(STEP_CODES) else ""
CRASH_NAME = "__crash__"
HANG_NAME = "__hang__"

_ctx = multiprocessing.get_context("forkserver")
# Imported once in the fork server, so each child starts with numpy, cffi and the solver loaded.
_ctx.set_forkserver_preload(
    ["shared.solving.isolation", "shared.roster.evaluator", "csolver", "csolver.explain"]
)


@dataclass(frozen=True)
class DebugSwitches:
    crash: bool = False
    hang: bool = False


def switches_for(request: SolveRequest, enabled: bool) -> DebugSwitches:
    """The test-only behaviours a request asks for; nothing unless the service enabled them."""
    name = request.name or ""
    if not enabled:
        return DebugSwitches()
    return DebugSwitches(crash=name.startswith(CRASH_NAME), hang=name.startswith(HANG_NAME))


def _act_on_switches(
    request: SolveRequest,
    implementation: Implementation,
    time_limit: float,
    control: SolveControl,
    switches: DebugSwitches,
) -> None:
    # Both switches act on the C solver only, so the greedy fallback can still finish the job.
    if switches.hang and implementation is Implementation.GENERETIC:
        # Ignores its limit on purpose; only the watchdog (process mode) or cancel ends it.
        while not control.cancel.wait(0.05):
            pass
        raise RuntimeError("hang test switch cancelled")
    if switches.crash and implementation is Implementation.GENERETIC:
        import csolver
        from shared.roster.compiled import compile_request

        csolver.solve_generetic(
            compile_request(request),
            time_limit=time_limit,
            seed=request.solver.seed,
            control=control,
            crash_for_test=True,
        )
        raise RuntimeError("the C crash switch returned instead of crashing")


def solve_direct(
    request: SolveRequest,
    *,
    implementation: Implementation,
    time_limit: float,
    control: SolveControl,
    switches: DebugSwitches = DebugSwitches(),
) -> SolveResult:
    """The solve itself, in whatever process calls it (the child, or a thread in thread mode)."""
    _act_on_switches(request, implementation, time_limit, control, switches)
    return solve_request(
        request, implementation=implementation, time_limit=time_limit, control=control
    )


def solve_direct_rendered(
    request: SolveRequest,
    *,
    implementation: Implementation,
    time_limit: float,
    control: SolveControl,
    switches: DebugSwitches = DebugSwitches(),
) -> Rendered:
    """`solve_direct`, its result rendered as the JSON that is published (what a service
    needs): at the size limits the roster never becomes Python objects."""
    _act_on_switches(request, implementation, time_limit, control, switches)
    return solve_rendered(
        request, implementation=implementation, time_limit=time_limit, control=control
    )


def _child(
    request_json: str,
    implementation: str,
    time_limit: float,
    started: float,
    switches: DebugSwitches,
    shared: SynchronizedArray[int],
    cancel: Any,
    conn: multiprocessing.connection.Connection,
    service_pid: int,
    drop: ResultDrop | None,
) -> None:
    # Die with the service. Watching our own parent is not enough: that is the fork server,
    # which only exits when every holder of its "alive" pipe is gone — and each child holds
    # one. A solve orphaned by a SIGKILLed service (a `__hang__` one for ever) would keep
    # itself and the fork server alive. So watch the service's pid itself.
    control = SolveControl()
    done = threading.Event()

    def forward_cancel() -> None:
        # Waits on the shared Event itself: the cancel reaches the search at once, not at the
        # pump's next look (20 ms of a cancel's 200 ms).
        cancel.wait()
        control.cancel.set()

    def pump() -> None:
        while not done.wait(CHILD_POLL_SECONDS):
            try:
                os.kill(service_pid, 0)
            except ProcessLookupError:
                os._exit(3)
            with contextlib.suppress(Exception):
                control.refresh()
            _pack(control.progress, shared)

    threading.Thread(target=pump, name="isolation-pump", daemon=True).start()
    threading.Thread(target=forward_cancel, name="isolation-cancel", daemon=True).start()
    dropper = Dropper(drop) if drop is not None else None
    if dropper is not None:
        threading.Thread(target=dropper.connect, name="isolation-connect", daemon=True).start()

    try:
        request = SolveRequest.model_validate_json(request_json)
        # The request's ~10^5 objects live as long as the child: out of the collector's way,
        # and collections as rare as in a service (shared/streaming/gc_tuning.py), so none
        # walks them while the result is built after a cancel.
        gc.freeze()
        gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_EVERY, FULL_EVERY)
        # The limit counts from the parent's call (one clock for both: CLOCK_MONOTONIC): the
        # process start, reading the request and sending the result back are inside it.
        transfer = TRANSFER_SECONDS_PER_CELL * cells_of(request)
        spent = time.monotonic() - started
        result = solve_direct_rendered(
            request,
            implementation=Implementation(implementation),
            time_limit=max(time_limit - spent - transfer, 0.05 * time_limit),
            control=control,
            switches=switches,
        )
        # The parent parses only the summary; the JSON goes as it is, or is stored already.
        summary = result.summary.model_dump_json()
        if dropper is not None and dropper.put(result.data):
            conn.send(("stored", summary, dropper.drop.key))
        else:
            _send_result(conn, summary, result.data)
    except BaseException as err:  # everything goes back to the parent, typed by name
        conn.send(("error", type(err).__name__, str(err)[:2000]))
    finally:
        done.set()
        conn.close()
    # Out at once: freeing the request and the compiled problem (~25 ms at the size limits)
    # would only delay an exit that nobody needs to wait for.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _send_result(
    conn: multiprocessing.connection.Connection, summary: str, data: bytes | bytearray
) -> None:
    """The result's JSON in an anonymous memory file whose descriptor goes over the socket:
    through the connection itself (64 KiB at a time, each a hand-over between the two
    processes) its 11-14 MB at the size limits took 50-80 ms of a cancel's 200 ms."""
    if not hasattr(os, "memfd_create"):  # not Linux: through the connection
        conn.send(("ok", summary, len(data), False))
        conn.send_bytes(data)
        return
    fd = os.memfd_create("shiftstream-result", os.MFD_CLOEXEC)
    try:
        with open(fd, "wb", closefd=False) as f:
            f.write(data)
        conn.send(("ok", summary, len(data), True))
        reduction.send_handle(conn, fd, os.getppid())
    finally:
        os.close(fd)  # the descriptor in flight keeps the file until the parent closes it


def _receive_result(conn: multiprocessing.connection.Connection, size: int, by_fd: bool) -> bytes:
    if not by_fd:
        return conn.recv_bytes()
    fd = reduction.recv_handle(conn)
    try:
        parts = []
        at = 0
        while at < size:
            part = os.pread(fd, size - at, at)
            if not part:
                raise EOFError("the result's memory file is shorter than announced")
            parts.append(part)
            at += len(part)
        return b"".join(parts)
    finally:
        os.close(fd)


def warm_up() -> None:
    """Start the fork server now (it imports numpy and the C solver), not on the first job."""
    p = _ctx.Process(target=int, daemon=True)
    p.start()
    p.join()


def solve_isolated(
    request: SolveRequest,
    *,
    implementation: Implementation,
    time_limit: float,
    control: SolveControl,
    grace: float,
    switches: DebugSwitches = DebugSwitches(),
) -> SolveResult:
    """Blocking: solve in a child process; call from a thread (the worker's to_thread)."""
    return solve_isolated_rendered(
        request,
        implementation=implementation,
        time_limit=time_limit,
        control=control,
        grace=grace,
        switches=switches,
    ).result()


def solve_isolated_rendered(
    request: SolveRequest,
    *,
    implementation: Implementation,
    time_limit: float,
    control: SolveControl,
    grace: float,
    switches: DebugSwitches = DebugSwitches(),
    drop: ResultDrop | None = None,
) -> Rendered:
    """`solve_isolated`, the result as the child rendered it: its JSON as sent, its summary
    parsed (what a service publishes and reads, without parsing the roster). With `drop`, a
    large result is stored by the child under `drop.key` and comes back as that key
    (`Rendered.key`), or as JSON if the child could not store it."""
    called = time.monotonic()
    cells = cells_of(request)
    cancel_grace = CANCEL_KILL_SECONDS + finish_seconds(cells, implementation)
    cancel_grace += TRANSFER_SECONDS_PER_CELL * cells
    shared = _ctx.Array("q", _SLOTS, lock=False)
    shared[3] = shared[4] = shared[_BOUND] = -1
    cancel = _ctx.Event()
    # A socket pair (duplex), not a pipe: the result's memory file goes over it as a descriptor.
    receiver, sender = _ctx.Pipe(duplex=True)
    proc = _ctx.Process(
        target=_child,
        args=(
            request.model_dump_json(),
            implementation.value,
            time_limit,
            called,
            switches,
            shared,
            cancel,
            sender,
            os.getpid(),
            drop,
        ),
        name="shiftstream-solve",
        daemon=True,
    )
    proc.start()
    sender.close()
    started = time.monotonic()
    deadline = started + time_limit + grace
    cancel_deadline: float | None = None
    progress = control.progress

    def copy_progress() -> None:
        _unpack(shared, progress)

    control.refresh = copy_progress
    answer: tuple[Any, ...] | None = None
    finished = threading.Event()

    def forward_cancel() -> None:
        # A cancel is passed on the moment it is set, not at the loop's next poll below.
        while not finished.is_set():
            if control.cancel.wait(PARENT_POLL_SECONDS):
                cancel.set()
                return

    threading.Thread(target=forward_cancel, name="isolation-cancel", daemon=True).start()
    try:
        while answer is None:
            if receiver.poll(PARENT_POLL_SECONDS):
                try:
                    answer = receiver.recv()
                    if answer[0] == "ok":  # the JSON follows
                        answer = (*answer[:2], _receive_result(receiver, *answer[2:]))
                except (EOFError, OSError, RuntimeError):  # the child died without a (whole) word
                    answer = None
                    break
                break
            copy_progress()
            now = time.monotonic()
            if control.cancel.is_set() and cancel_deadline is None:
                cancel.set()
                cancel_deadline = now + cancel_grace
            if not proc.is_alive() and not receiver.poll(0):
                break
            if now > deadline:
                _kill(proc)
                raise SolverTimedOut(
                    f"solver ran past its {time_limit:g} s limit + {grace:g} s grace; killed"
                )
            if cancel_deadline is not None and now > cancel_deadline:
                _kill(proc)
                raise RuntimeError("cancelled solver did not stop in time; killed")
    finally:
        finished.set()
        receiver.close()
        if answer is None:
            # A child that just closed its pipe by dying is reaped first, so its own signal
            # (SIGSEGV) is reported rather than our SIGKILL.
            proc.join(0.5)
            _kill(proc)
        if answer is not None and answer[0] in ("ok", "stored"):
            # The roster is here: the kernel's teardown of the child's memory (10-20 ms at the
            # size limits) need not come first.
            threading.Thread(target=proc.join, name="isolation-reap", daemon=True).start()
        else:
            proc.join(5)
    copy_progress()
    if answer is None:
        code = proc.exitcode
        if code is not None and code < 0:
            raise SolverCrashed(f"solver process died by {signal.Signals(-code).name}")
        raise SolverCrashed(f"solver process exited with code {code} without an answer")
    if answer[0] == "ok":
        return Rendered(SolveResult.model_validate_json(answer[1]), answer[2])
    if answer[0] == "stored":
        return Rendered(SolveResult.model_validate_json(answer[1]), b"", key=answer[2])
    raise IsolatedSolveError(answer[1], answer[2])


def _kill(proc: Any) -> None:
    if proc.is_alive():
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
