"""Job-system commands: submit to and watch the services, inspect jobs, run the local stack.

Redis: `--redis-url`, else REDIS_URL, else localhost:6379, for every command
(shared/cli/redis_target.py). `dev` and `demo` differ on purpose: they *start* the services,
so when that address does not answer they start an embedded server rather than fail, and print
the `export REDIS_URL=...` line a second terminal needs.

Exit codes: shared/cli/exits.py (0 completed, 1 failed, 2 invalid input, 4 unknown job,
5 Redis unreachable, 6 Redis refused).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import redis
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from shared.cli.devrunner import (
    DevRedis,
    Supervisor,
    console_port,
    parse_scale,
    redis_for_dev,
    service_env,
)
from shared.cli.exits import ExitCode
from shared.cli.live import phase_label, progress_figures, result_figures
from shared.cli.redis_target import Target, fail, redact, resolve
from shared.cli.roster import Output, verdict_line
from shared.connection.factory import sync_client
from shared.errors import ReplayError
from shared.jobs.client import Client, lifecycle, terminal_of
from shared.jobs.dead_letters import DeadLetters, Entry
from shared.jobs.messages import parse_time
from shared.jobs.records import TERMINAL_STATES
from shared.roster.model import Priority, SolveRequest, SolveResult
from shared.settings import Settings

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# Where `dev` and `demo` keep each service's log (JSON lines, and the task dumps SIGUSR1 asks
# for); beside the trace file dev mode writes (.shiftstream/traces.jsonl).
DEFAULT_LOG_DIR = Path(".shiftstream/logs")
# How long a watcher waits for a job's first event before it says what may be wrong.
QUIET_HINT_SECONDS = 10.0

RedisUrlOpt = Annotated[
    str | None,
    typer.Option("--redis-url", help="Redis URL (default: REDIS_URL, then localhost:6379)."),
]
OutputOpt = Annotated[
    Output, typer.Option("--output", "-o", help="Result format: json, tsv or table.")
]
LogDirOpt = Annotated[
    Path,
    typer.Option("--log-dir", help="One log file per service process (appended to)."),
]


def _settings(url: str) -> Settings:
    return Settings(redis_url=url)


def _load(file: Path) -> SolveRequest:
    # The formats engineer's reader handles JSON requests and Curtois .txt alike.
    from shared.cli.roster import read_request

    return read_request(file)


def _not_before(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError:
        fail(
            f"--not-before {value!r}: not an ISO 8601 time (e.g. 2026-12-01T14:26:56Z, or "
            "2026-12-01T15:26:56+01:00; without a zone it is UTC)",
            ExitCode.INVALID,
        )


def render(
    result_json: str, result: SolveResult, request: SolveRequest | None, output: Output
) -> None:
    """Print a finished roster as json (the text as it came), tsv or a table (a table needs
    the request: its dates and shift names; the tsv is in the result)."""
    from shared.cli.roster import print_table
    from shared.roster.curtois import result_to_tsv

    if output is Output.TSV:
        print(result_to_tsv(result), end="")
        return
    if output is Output.JSON or request is None:
        if output is not Output.JSON:
            err.print(f"--output {output.value} needs the request (--request FILE); showing JSON")
        print(result_json)
        return
    print_table(request, result)


@dataclass(frozen=True)
class Ended:
    """A job's terminal event and, when it completed, its result parsed once: at the size
    limits a result is megabytes, and the progress line, the verdict and the roster all read
    it. `invalid` says why a completed event's result is not a result v1."""

    event: dict[str, str]
    result: SolveResult | None = None
    invalid: str = ""

    @classmethod
    def of(cls, ev: dict[str, str]) -> Ended:
        if ev.get("type") != "solver.completed":
            return cls(ev)
        try:
            return cls(ev, SolveResult.model_validate_json(ev.get("result", "")))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the result"
            return cls(ev, invalid=f"{where}: {first['msg']} ({exc.error_count()} problems)")


async def follow(
    client: Client,
    job_id: str,
    after: str,
    show: bool,
    backlog: list[dict[str, str]] | None = None,
) -> Ended:
    """Show a progress bar from the job's events (`backlog` first, then the stream from
    `after`); return its terminal event. A job that stays silent gets one line saying why it
    may be, rather than a bar that never moves."""
    # The phase, then its figures once each (shared/cli/live.py): at 80 columns the bar and
    # the clock leave them room; a percentage beside the bar would not.
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=10),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not show,
    )
    last: dict[str, str] = {}
    started = time.monotonic()
    hinted = False

    async def stream() -> AsyncIterator[dict[str, str]]:
        for ev in backlog or []:
            yield ev
        async for ev in client.events(job_id, after=after, heartbeat=True):
            yield ev

    with bar:
        task = bar.add_task(f"{job_id}: waiting", total=100, detail="")
        async for ev in stream():
            if not ev:
                if not last and not hinted and time.monotonic() - started > QUIET_HINT_SECONDS:
                    hinted = True
                    bar.console.print(
                        f"no event for job {escape(job_id)} after {QUIET_HINT_SECONDS:.0f} s: "
                        "are the services running (shiftstream dev) on this Redis, with the "
                        "same SHIFTSTREAM_PREFIX? Still waiting; Ctrl-C to stop."
                    )
                continue
            last = ev
            kind = ev.get("type", "")
            if kind == "solver.accepted":
                bar.update(task, description=f"{job_id}: accepted")
            elif kind == "solver.progress":
                bar.update(
                    task,
                    completed=float(ev.get("progress") or 0),
                    description=escape(phase_label(ev.get("phase"), ev.get("message", ""))),
                    detail=progress_figures(ev),
                )
            elif kind == "solver.completed":
                # The solver may have improved since its last progress event (they come at
                # most once a second): the last line drawn is the result's, as the verdict
                # printed below it.
                done = Ended.of(ev)
                bar.update(
                    task,
                    completed=100,
                    description="cancelled" if ev.get("cancelled") == "true" else "completed",
                    detail=result_figures(done.result),
                )
                # the bar is erased on exit while a job runs (a Ctrl-C leaves no half line),
                # but its final line stays, above the verdict
                bar.live.transient = False
                return done
            elif kind == "solver.failed":
                break
    return Ended(last)


def exit_code_of(ev: dict[str, str]) -> ExitCode:
    if ev.get("type") == "solver.completed":
        return ExitCode.OK
    return ExitCode.INVALID if ev.get("error_class") == "invalid" else ExitCode.FAILED


def report(ended: Ended, request: SolveRequest | None, output: Output) -> None:
    ev = ended.event
    if ev.get("type") == "solver.completed":
        err.print(
            f"[green]completed[/green] by {ev.get('solver_used')} in "
            f"{ev.get('solve_time_ms')} ms, attempt {ev.get('attempts')}"
            + (" (cancelled early)" if ev.get("cancelled") == "true" else "")
            + (f", {ev['changes']} cells changed" if ev.get("changes") else "")
        )
        result_json = ev.get("result", "{}")
        if ended.result is None:
            # a service that wrote something else: what came is kept (JSON), and said
            if output is Output.JSON or request is None:  # what render would print
                print(result_json)
            err.print(f"[red]the result is not a result v1[/red]: {escape(ended.invalid)}")
            raise typer.Exit(int(ExitCode.FAILED))
        if output is not Output.TABLE or request is None:  # a table ends with this line
            err.print(verdict_line(ended.result))
        render(result_json, ended.result, request, output)
        return
    err.print(
        f"[red]failed[/red] ({ev.get('error_class')}): {escape(ev.get('reason', ''))} "
        f"[attempts {ev.get('attempts')}, dead letter {ev.get('dead_letter_id') or '-'}]"
    )
    raise typer.Exit(int(exit_code_of(ev)))


async def lookup(client: Client, job_id: str) -> tuple[dict[str, str], bool] | None:
    """The job's record and whether its id is claimed; None when this Redis user may not read
    them (the `monolith` user may only publish and read events)."""
    try:
        return await client.status(job_id), await client.claimed(job_id)
    except redis.exceptions.NoPermissionError:
        return None


async def watch_known(
    client: Client,
    target: Target,
    job_id: str,
    request: SolveRequest | None,
    output: Output,
    wait: bool,
) -> None:
    """Follow a job that may already be running or finished: its retained events first."""
    events, last_id = await client.history(job_id)
    current = lifecycle(events)
    ended = terminal_of(current)
    if ended is not None:
        report(Ended.of(ended), request, output)
        return
    known = await lookup(client, job_id)
    record = known[0] if known else {}
    if not events and not (known and (known[0] or known[1])):
        unknown = f"no job {job_id} on {target.shown}: never submitted, or forgotten"
        if known is None:
            unknown += f" (user {target.user!r} may not read job records, only events)"
        if not wait:
            fail(f"{unknown}; --wait waits for it to be submitted", ExitCode.NOT_FOUND)
        err.print(f"{escape(unknown)}; waiting for it (--wait)")
    elif record.get("state") in TERMINAL_STATES:
        # Ended, but its events were trimmed away (EVENTS_MAXLEN): the record is all there is.
        state = record["state"]
        err.print(
            f"job {escape(job_id)} {state}, but its events are no longer retained on "
            f"solver-events, so its result cannot be shown: {escape(json.dumps(record))}"
        )
        raise typer.Exit(int(ExitCode.OK if state == "completed" else ExitCode.FAILED))
    elif record:
        err.print(f"following job {escape(job_id)} (state: {record.get('state', '?')})")
    report(await follow(client, job_id, last_id, show=True, backlog=current), request, output)


async def submit_and_watch(
    target: Target,
    request: SolveRequest,
    job_id: str | None,
    not_before: dt.datetime | None,
    watch: bool,
    output: Output,
) -> None:
    url = target.url
    async with Client(url, _settings(url)) as client:
        if job_id is not None:
            known = await lookup(client, job_id)
            if known and (known[0] or known[1]):
                state = known[0].get("state", "queued")
                err.print(
                    f"job {escape(job_id)} is already known (state: {state}): a repeat of a "
                    "known job id is not solved again, so nothing was submitted"
                    + ("; following it" if watch else "")
                )
                if not watch:
                    print(job_id)
                    return
                await watch_known(client, target, job_id, request, output, wait=False)
                return
        after = await client.last_event_id()
        jid = await client.submit(request.model_dump_json(), job_id=job_id, not_before=not_before)
        when = f", not before {not_before:%Y-%m-%d %H:%M:%S %Z}" if not_before else ""
        err.print(f"submitted job [bold]{escape(jid)}[/bold]{when}")
        if not watch:
            print(jid)
            return
        report(await follow(client, jid, after, show=True), request, output)


def submit(
    file: Annotated[Path, typer.Argument(help="Solve request JSON or Curtois .txt instance.")],
    job_id: Annotated[str | None, typer.Option("--job-id", help="Idempotency key.")] = None,
    watch: Annotated[bool, typer.Option("--watch", help="Follow progress to the end.")] = False,
    not_before: Annotated[
        str | None,
        typer.Option(
            "--not-before",
            help="Do not start before this ISO 8601 time, e.g. 2026-12-01T14:26:56Z "
            "(without a zone: UTC).",
        ),
    ] = None,
    output: OutputOpt = Output.TABLE,
    priority: Annotated[
        Priority | None,
        typer.Option(
            "--priority",
            help="high, normal or low: which waiting jobs the solvers take first (default: "
            "the request's, else normal).",
        ),
    ] = None,
    redis_url: RedisUrlOpt = None,
) -> None:
    """Submit a request through the public stream, like any foreign producer.

    With --job-id of a job the services already know, nothing is submitted (a repeat is not
    solved twice); with --watch the known job is followed instead."""
    request = _load(file)
    if priority is not None:
        request = request.model_copy(update={"priority": priority})
    when = _not_before(not_before)
    target = resolve(redis_url)
    asyncio.run(submit_and_watch(target, request, job_id, when, watch, output))


def watch(
    job_id: Annotated[str, typer.Argument(help="Job id to follow.")],
    output: OutputOpt = Output.JSON,
    request_file: Annotated[
        Path | None, typer.Option("--request", help="The request, for table output.")
    ] = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="Wait for a job that is not submitted yet (else: exit 4)."),
    ] = False,
    redis_url: RedisUrlOpt = None,
) -> None:
    """Follow a job's events with a progress bar; exit 0 completed, 1 failed, 2 failed as
    invalid, 4 unknown job."""
    request = _load(request_file) if request_file else None
    target = resolve(redis_url)

    async def run() -> None:
        async with Client(target.url, _settings(target.url)) as client:
            await watch_known(client, target, job_id, request, output, wait)

    asyncio.run(run())


def status(
    job_id: Annotated[str, typer.Argument(help="Job id.")],
    redis_url: RedisUrlOpt = None,
) -> None:
    """Print the job record (state, attempts, timestamps, solver used, last error); exit 4
    when there is none."""
    target = resolve(redis_url)

    async def run() -> dict[str, str]:
        async with Client(target.url, _settings(target.url)) as client:
            return await client.status(job_id)

    record = asyncio.run(run())
    if not record:
        fail(
            f"no record of job {job_id} on {target.shown} (unknown or expired)",
            ExitCode.NOT_FOUND,
        )
    print(json.dumps({"job_id": job_id, **record}, indent=2))


def cancel(
    job_id: Annotated[str, typer.Argument(help="Job id.")],
    redis_url: RedisUrlOpt = None,
) -> None:
    """Stop a job: queued, it never runs; running, it stops within 200 ms and reports its best
    roster. An unknown job id is refused (exit 4): nothing is sent."""
    target = resolve(redis_url)

    async def run() -> None:
        async with Client(target.url, _settings(target.url)) as client:
            known = await lookup(client, job_id)
            if known is None:
                await client.cancel(job_id)
                err.print(
                    f"cancel sent for job {escape(job_id)}; user {target.user!r} may not read "
                    "job records, so whether the job is known was not checked (the services "
                    "ignore a cancel of a job they do not know)"
                )
                return
            record, claimed = known
            state = record.get("state")
            if not record and not claimed:
                fail(
                    f"no job {job_id} on {target.shown}: nothing to cancel (never submitted, "
                    "or forgotten); no cancel was sent",
                    ExitCode.NOT_FOUND,
                )
            if state in TERMINAL_STATES:
                err.print(f"job {escape(job_id)} already {state}: nothing to cancel")
                return
            await client.cancel(job_id)
            err.print(
                f"cancel sent for job {escape(job_id)} (state: {state or 'queued'}); a running "
                f"solve stops with its best roster (shiftstream watch {escape(job_id)})"
            )

    asyncio.run(run())


def _announce(target: Target, dev_redis: DevRedis, log_dir: Path) -> None:
    """Where everything is, printed once at start: the second terminal's setup."""
    if dev_redis.embedded:
        err.print(
            f"no Redis answers at {escape(target.describe())}: started an embedded server "
            "(no persistence; stopped with this command). In another terminal:"
        )
        prefix = Settings().shiftstream_prefix
        line = f"export REDIS_URL={dev_redis.url}"
        if prefix:
            line += f" SHIFTSTREAM_PREFIX={prefix}"
        err.print(f"  {line}", markup=False)
    err.print(
        f"logs in {escape(str(log_dir))}/ (one file per process; kill -USR1 PID writes its "
        "task dump there); traces in .shiftstream/traces.jsonl (shiftstream trace JOB)"
    )


def _service_url(target: Target, dev_redis: DevRedis) -> str:
    return dev_redis.url if dev_redis.embedded else redact(target.url)


def dev(
    scale: Annotated[
        list[str] | None, typer.Option("--scale", help="SERVICE=N, e.g. solver=3; repeatable.")
    ] = None,
    redis_url: RedisUrlOpt = None,
    log_dir: LogDirOpt = DEFAULT_LOG_DIR,
) -> None:
    """Run the five services as local processes until Ctrl-C (an embedded Redis when none
    answers; the BullMQ bridge too when BULLMQ_QUEUES names queues)."""
    try:
        counts = parse_scale(scale or [])
    except ValueError as e:
        fail(str(e), ExitCode.INVALID)
    target = resolve(redis_url)
    with redis_for_dev(target) as dev_redis:
        _announce(target, dev_redis, log_dir)
        port = console_port()
        err.print(
            f"services on [bold]{escape(_service_url(target, dev_redis))}[/bold]; Ctrl-C to stop"
        )
        err.print(
            f"console at [bold]http://127.0.0.1:{port}/[/bold] (read-only without CONSOLE_TOKEN)"
        )
        sup = Supervisor(
            service_env(dev_redis.url, {"SHIFTSTREAM_DEV": "1"}),
            counts,
            log_dir=log_dir,
            console_port=port,
        )
        sup.start()
        sup.run_forever()


def console(
    host: Annotated[
        str | None, typer.Option("--host", help="Address (default CONSOLE_HOST, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="Port (default CONSOLE_PORT, 8780).")
    ] = None,
    redis_url: RedisUrlOpt = None,
) -> None:
    """The operations console: a live web page over queues, jobs, rosters, traces, dead letters.

    Read-only unless CONSOLE_TOKEN is set; binds 127.0.0.1 unless told otherwise.
    """
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env["REDIS_URL"] = resolve(redis_url).url
    if host:
        env["CONSOLE_HOST"] = host
    if port is not None:
        env["CONSOLE_PORT"] = str(port)
    shown = env.get("CONSOLE_HOST", "127.0.0.1")
    err.print(
        f"console at [bold]http://{shown}:{env.get('CONSOLE_PORT', '8780')}/[/bold]"
        + ("" if env.get("CONSOLE_TOKEN") else " (read-only: CONSOLE_TOKEN is not set)")
    )
    try:
        code = subprocess.call([sys.executable, "-m", "services.console"], env=env)
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code)


def demo(
    employees: Annotated[int, typer.Option(min=1)] = 80,
    shifts: Annotated[int, typer.Option(min=1)] = 200,
    time_limit: Annotated[float, typer.Option("--time-limit", min=0.1)] = 5.0,
    output: OutputOpt = Output.TABLE,
    redis_url: RedisUrlOpt = None,
    log_dir: LogDirOpt = DEFAULT_LOG_DIR,
) -> None:
    """Start the services, submit a generated roster, show live progress and the result."""
    from shared.roster.generator import generate

    request = generate(employees=employees, shifts=shifts, seed=0)
    options = request.solver.model_copy(update={"time_limit_seconds": time_limit})
    request = request.model_copy(update={"solver": options})
    target = resolve(redis_url)
    with redis_for_dev(target) as dev_redis:
        _announce(target, dev_redis, log_dir)
        port = console_port()
        err.print(
            f"starting the five services on [bold]{escape(_service_url(target, dev_redis))}[/bold]"
        )
        err.print(f"console at [bold]http://127.0.0.1:{port}/[/bold] while the demo runs")
        sup = Supervisor(
            service_env(dev_redis.url, {"SHIFTSTREAM_DEV": "1"}), log_dir=log_dir, console_port=port
        )
        sup.start()
        code = 0
        try:
            started = time.monotonic()
            services = Target(dev_redis.url, target.source)
            asyncio.run(submit_and_watch(services, request, None, None, True, output))
            err.print(f"demo finished in {time.monotonic() - started:.1f} s")
        except typer.Exit as e:
            code = e.exit_code
        finally:
            sup.stop()
        if code:
            raise typer.Exit(code)


dead_app = typer.Typer(
    help="Dead letters: list, show, replay (same job id, fresh attempts), purge.",
    no_args_is_help=True,
)


class DeadListOutput(StrEnum):
    TABLE = "table"
    JSON = "json"


def _dlq(redis_url: str | None) -> DeadLetters:
    settings = _settings(resolve(redis_url).url)
    return DeadLetters(sync_client(settings), settings)


@dead_app.command("list")
def dead_list(
    count: Annotated[int, typer.Option("--count", "-n", min=1)] = 20,
    output: Annotated[
        DeadListOutput, typer.Option("--output", "-o", help="table or json")
    ] = DeadListOutput.TABLE,
    redis_url: RedisUrlOpt = None,
) -> None:
    """The newest dead letters."""
    entries = _dlq(redis_url).newest(count)
    if output is DeadListOutput.JSON:
        for e in entries:
            body = e.letter.model_dump(mode="json") if e.letter else e.fields
            print(json.dumps({"entry_id": e.entry_id, **body}))
        return
    table = Table(title="dead letters")
    for col in ("dead letter", "job", "class", "attempts", "dead at", "reason"):
        table.add_column(col)
    for e in entries:
        d = e.letter
        if d is None:  # a poison outcome the notifier parked
            table.add_row(e.entry_id, "-", "outcome", e.fields.get("deliveries", "-"), "-", "")
            continue
        when = dt.datetime.fromtimestamp(d.dead_at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        table.add_row(
            d.dead_letter_id, d.job_id, d.error_class.value, str(d.attempts), when, d.reason[:80]
        )
    out.print(table)


def _find(dlq: DeadLetters, ident: str) -> Entry:
    entry = dlq.find(ident)
    if entry is None:
        fail(f"no dead letter {ident} (dead letter id, job id or entry id)", ExitCode.NOT_FOUND)
    return entry


@dead_app.command("show")
def dead_show(
    dead_letter_id: Annotated[str, typer.Argument(help="Dead letter id, job id or entry id.")],
    redis_url: RedisUrlOpt = None,
) -> None:
    """One dead letter with its whole history (every attempt's class, message, time), as JSON."""
    entry = _find(_dlq(redis_url), dead_letter_id)
    if entry.letter is None:
        print(json.dumps({"entry_id": entry.entry_id, **entry.fields}, indent=2))
        return
    print(entry.letter.model_dump_json(indent=2))


@dead_app.command("replay")
def dead_replay(
    dead_letter_id: Annotated[
        str | None, typer.Argument(help="Dead letter id, job id or entry id.")
    ] = None,
    replay_all: Annotated[
        bool, typer.Option("--all", help="Replay every dead letter that has a request.")
    ] = False,
    redis_url: RedisUrlOpt = None,
) -> None:
    """Submit a dead job again under the SAME job id, from attempt 1.

    An operator's explicit decision: the job id gets a second lifecycle (a new `accepted` and
    exactly one new terminal event). Guard, idempotency key and record are cleared and the
    request re-enters intake in steps that are safe to repeat (shared/jobs/dead_letters.py).
    """
    if (dead_letter_id is None) == (not replay_all):
        fail("give one dead letter id, or --all", ExitCode.INVALID)
    dlq = _dlq(redis_url)
    if not replay_all:
        assert dead_letter_id is not None
        try:
            entry_id = dlq.replay(_find(dlq, dead_letter_id))
        except ReplayError as e:
            fail(str(e), ExitCode.INVALID)
        print(entry_id)
        return
    replayed = skipped = 0
    for entry in dlq.all():
        try:
            dlq.replay(entry)
            replayed += 1
        except ReplayError:
            skipped += 1
    print(f"replayed {replayed}, skipped {skipped} (never became a job, or gone)")


@dead_app.command("purge")
def dead_purge(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    redis_url: RedisUrlOpt = None,
) -> None:
    """Delete every dead letter."""
    if not yes:
        typer.confirm("delete every dead letter?", abort=True)
    print(f"purged {_dlq(redis_url).purge()}")


def register(app: typer.Typer) -> None:
    app.add_typer(dead_app, name="dlq")
    # The old name, kept as an alias (same commands).
    app.add_typer(dead_app, name="dead", hidden=True)
    app.command("submit")(submit)
    app.command("watch")(watch)
    app.command("status")(status)
    app.command("cancel")(cancel)
    app.command("dev")(dev)
    app.command("console")(console)
    app.command("demo")(demo)
