"""The console's pages, live fragments (server-sent events) and actions."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import redis
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from services.console import actions, views
from services.console.actions import BadInput, Refused
from services.console.config import ConsoleSettings
from services.console.reads import Reads, created_ms
from services.console.sampler import Sampler, chart_points
from shared.errors import ReplayError
from shared.jobs.client import Client
from shared.jobs.events import TERMINAL_EVENTS
from shared.observability.otlp_file import load_traces, traces_of_job
from shared.observability.telemetry import trace_file

log = logging.getLogger("shiftstream.console")
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
STATES = ("queued", "scheduled", "running", "retrying", "completed", "failed")
# Most traces of one job the page draws (a job should be one trace; more means lost context).
MAX_TRACES = 5
FLASH_COOKIE = "shiftstream_console_flash"


class Console:
    """The pages; `app.py` wires them to routes."""

    def __init__(
        self, settings: ConsoleSettings, sampler: Sampler, reads: Reads, client: Client
    ) -> None:
        self.s = settings
        self.sampler = sampler
        self.reads = reads
        self.client = client

    # ------------------------------------------------------------------ rendering

    def session(self, request: Request) -> str | None:
        return actions.session_nonce(self.s.token, request.cookies.get(actions.SESSION_COOKIE))

    def page(self, request: Request, name: str, status: int = 200, **ctx: Any) -> Response:
        nonce = self.session(request)
        token = self.s.token
        ctx |= {
            "read_only": token is None,
            "signed_in": nonce is not None,
            "csrf": actions.csrf_token(token, nonce) if token and nonce else "",
            "flash": unquote(request.cookies.get(FLASH_COOKIE, "")),
            "v": views,
            "prefix": self.sampler.names.prefix,
        }
        response = templates.TemplateResponse(request, name, ctx, status_code=status)
        if FLASH_COOKIE in request.cookies:
            response.delete_cookie(FLASH_COOKIE)
        return response

    def error(self, request: Request, message: str, status: int) -> Response:
        return self.page(request, "error.html", status=status, message=message)

    def overview_fragment(self) -> str:
        stats = self.sampler.stats
        ctx: dict[str, Any] = {"error": self.sampler.error, "stats": stats, "v": views}
        if stats is not None:
            now_minute = int(stats.at) // 60
            ctx |= {
                "groups": views.group_rows(stats, self.s.reclaim_idle_ms),
                "summary": views.summary_rows(stats),
                "chart": views.chart_svg(chart_points(self.sampler.points, now_minute)),
                "window_min": stats.window.window_s / 60,
            }
        return templates.get_template("_overview.html").render(ctx)

    # ------------------------------------------------------------------ overview

    async def overview(self, request: Request) -> Response:
        return self.page(request, "overview.html", fragment=self.overview_fragment())

    async def overview_stream(self, request: Request) -> Response:
        async def events() -> AsyncIterator[ServerSentEvent]:
            version = -1
            while not await request.is_disconnected():
                version = await self.sampler.wait_newer(version, timeout=15)
                yield ServerSentEvent(self.overview_fragment(), event="overview")

        return EventSourceResponse(events(), ping=15)

    # ------------------------------------------------------------------ jobs

    async def jobs_fragment(self, state: str | None) -> str:
        seen = self.sampler.jobs.newest(1000 if state else 200)
        rows = await self.reads.rows(seen)
        if state:
            rows = [r for r in rows if r.state == state][:200]
        return templates.get_template("_jobs.html").render({"rows": rows, "v": views})

    def _state(self, request: Request) -> str | None:
        state = request.query_params.get("state") or None
        if state is not None and state not in STATES:
            raise BadInput(f"state: one of {', '.join(STATES)}, got {state[:40]!r}")
        return state

    async def jobs(self, request: Request) -> Response:
        state = self._state(request)
        q = (request.query_params.get("q") or "").strip()
        if q:
            job_id = actions.job_id_of(q)
            return RedirectResponse(f"/jobs/{job_id}", status_code=303)
        return self.page(
            request, "jobs.html", state=state, states=STATES,
            fragment=await self.jobs_fragment(state),
        )  # fmt: skip

    async def jobs_stream(self, request: Request) -> Response:
        state = self._state(request)

        async def events() -> AsyncIterator[ServerSentEvent]:
            version = self.sampler.version
            while not await request.is_disconnected():
                version = await self.sampler.wait_newer(version, timeout=15)
                yield ServerSentEvent(await self.jobs_fragment(state), event="jobs")

        return EventSourceResponse(events(), ping=15)

    async def job(self, request: Request) -> Response:
        job_id = actions.job_id_of(request.path_params["job_id"])
        assert job_id is not None
        record = await self.reads.record(job_id)
        if not record and request.query_params.get("submitted"):
            # Just submitted: the intake has not written the record yet. The page follows the
            # job's events and reloads at the first one.
            after = f"{int(time.time() * 1000) - 60_000}-0"
            return self.page(request, "job_pending.html", job_id=job_id, after=after)
        if not record:
            return self.error(
                request,
                f"no job {job_id}: never submitted here, or its record expired "
                f"(kept {self.s.job_ttl_seconds // 3600} h)",
                404,
            )
        since = created_ms(record)
        terminal = await self.reads.terminal_event(record)
        events = [] if terminal else await self.reads.events(job_id, since)
        if terminal is None:
            # The notifier writes the event before the record that points at it: between the
            # two the job has ended although its record does not say so yet.
            terminal = next((e for e in reversed(events) if e.get("type") in TERMINAL_EVENTS), None)
        progress = next(
            (views.progress_view(e) for e in reversed(events) if e["type"] == "solver.progress"),
            None,
        )
        result: dict[str, Any] | None = None
        if terminal and terminal.get("type") == "solver.completed":
            try:
                result = json.loads(terminal.get("result") or "{}")
            except ValueError:
                result = None
        attempts = await self.reads.attempts(job_id, since)
        dead = None
        if record.get("dead_letter_id"):
            dead = await self.reads.dead_letter(record["dead_letter_id"])
        if dead is not None and dead.letter is not None:
            attempts = dead.letter.history
        trace_id = dead.letter.trace_id if dead and dead.letter else None
        traces, jaeger = await self._traces(job_id, trace_id)
        return self.page(
            request,
            "job.html",
            job_id=job_id,
            record=record,
            state=_state_of(record, terminal),
            terminal=terminal,
            running=terminal is None,
            last_event=events[-1]["id"] if events else f"{since}-0",
            progress=progress,
            result=result,
            summary=views.result_summary(result) if result else None,
            grid=views.roster_grid(result) if result else None,
            scores=views.score_rows(result) if result else [],
            attempts=attempts,
            dead=dead,
            traces=traces,
            jaeger=jaeger,
        )

    async def _traces(
        self, job_id: str, trace_id: str | None
    ) -> tuple[list[tuple[str, float, list[views.SpanRow]]], list[tuple[str, str]]]:
        if self.s.otel_exporter_otlp_endpoint:
            return [], views.jaeger_links(self.s.jaeger_ui_url, job_id, [trace_id or ""])
        path = trace_file(self.s)
        if path is None:
            return [], []

        def read() -> list[tuple[str, float, list[views.SpanRow]]]:
            ids = traces_of_job(path, job_id)
            if not ids:
                return []
            loaded = load_traces(path, set(sorted(ids)[:MAX_TRACES]))
            out = []
            for tid, spans in sorted(
                loaded.items(), key=lambda kv: min((s.start_ns for s in kv[1]), default=0)
            ):
                total, rows = views.waterfall_rows(spans)
                out.append((tid, total, rows))
            return out

        return await asyncio.to_thread(read), []

    async def job_stream(self, request: Request) -> Response:
        job_id = actions.job_id_of(request.path_params["job_id"])
        assert job_id is not None
        after = request.query_params.get("after") or "0-0"

        async def events() -> AsyncIterator[ServerSentEvent]:
            async for ev in self.reads.follow(job_id, after):
                if await request.is_disconnected():
                    return
                if ev is None:
                    continue
                kind = ev.get("type", "")
                if kind == "solver.progress":
                    html = templates.get_template("_progress.html").render(
                        {"p": views.progress_view(ev)}
                    )
                    yield ServerSentEvent(html, event="progress", id=ev["id"])
                elif kind in TERMINAL_EVENTS:
                    yield ServerSentEvent(kind, event="end", id=ev["id"])
                else:
                    yield ServerSentEvent(kind.removeprefix("solver."), event="state", id=ev["id"])

        return EventSourceResponse(events(), ping=15)

    async def roster(self, request: Request) -> Response:
        job_id = actions.job_id_of(request.path_params["job_id"])
        assert job_id is not None
        fmt = request.path_params["fmt"]
        record = await self.reads.record(job_id)
        terminal = await self.reads.terminal_event(record) if record else None
        if not terminal or terminal.get("type") != "solver.completed":
            return self.error(request, f"job {job_id} has no roster (not completed)", 404)
        raw = terminal.get("result") or "{}"
        if fmt == "json":
            return Response(raw, media_type="application/json", headers=_attachment(job_id, "json"))
        if fmt == "tsv":
            return PlainTextResponse(
                views.roster_tsv(json.loads(raw)), headers=_attachment(job_id, "tsv")
            )
        return self.error(request, f"unknown roster format {fmt!r}: json or tsv", 404)

    # ------------------------------------------------------------------ dead letters

    async def dead_list(self, request: Request) -> Response:
        entries = await asyncio.to_thread(self.reads.dead.newest, 200)
        return self.page(request, "dead.html", entries=entries)

    async def dead_show(self, request: Request) -> Response:
        ident = request.path_params["ident"]
        entry = await self.reads.dead_letter(ident)
        if entry is None:
            return self.error(
                request, f"no dead letter {ident[:80]} (replayed, purged or trimmed)", 404
            )
        return self.page(request, "dead_letter.html", entry=entry)

    # ------------------------------------------------------------------ actions

    async def authorise(self, request: Request) -> dict[str, Any]:
        """The POST's form, once the request may change state (else `Refused`)."""
        form = await request.form(max_part_size=self.s.solver_max_json_bytes + 1024)
        header = request.headers.get("authorization", "")
        bearer = header[7:] if header.lower().startswith("bearer ") else None
        actions.authorise(
            self.s.token,
            cookie=request.cookies.get(actions.SESSION_COOKIE),
            csrf=str(form.get("csrf") or "") or None,
            bearer=bearer,
            origin=request.headers.get("origin"),
            host=request.headers.get("host"),
        )
        return dict(form)

    async def cancel(self, request: Request) -> Response:
        await self.authorise(request)
        job_id = actions.job_id_of(request.path_params["job_id"])
        assert job_id is not None
        if not await self.reads.record(job_id):
            raise BadInput(f"no job {job_id} to cancel")
        await self.client.cancel(job_id)
        return _back(f"/jobs/{job_id}", "cancel requested: the job stops with its best roster")

    async def replay(self, request: Request) -> Response:
        await self.authorise(request)
        ident = request.path_params["ident"]
        entry = await self.reads.dead_letter(ident)
        if entry is None:
            raise BadInput(f"no dead letter {ident[:80]} (replayed, purged or trimmed)")
        try:
            await asyncio.to_thread(self.reads.dead.replay, entry)
        except ReplayError as err:
            raise BadInput(str(err)) from err
        assert entry.letter is not None
        return _back(f"/jobs/{entry.letter.job_id}", f"replayed {entry.key}: the job runs again")

    async def replay_all(self, request: Request) -> Response:
        form = await self.authorise(request)
        if form.get("confirm") != "yes":
            raise BadInput("replaying every dead letter needs the confirmation")

        def run() -> tuple[int, int]:
            done = skipped = 0
            for entry in self.reads.dead.all():
                try:
                    self.reads.dead.replay(entry)
                    done += 1
                except ReplayError:
                    skipped += 1
            return done, skipped

        done, skipped = await asyncio.to_thread(run)
        return _back("/dead", f"replayed {done}, skipped {skipped} (never became a job, or gone)")

    async def purge(self, request: Request) -> Response:
        form = await self.authorise(request)
        if form.get("confirm") != "yes":
            raise BadInput("purging the dead letters needs the confirmation")
        removed = await asyncio.to_thread(self.reads.dead.purge)
        return _back("/dead", f"purged {removed} dead letters")

    async def submit_form(self, request: Request) -> Response:
        return self.page(request, "submit.html")

    async def submit(self, request: Request) -> Response:
        form = await self.authorise(request)
        upload = form.get("file")
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise BadInput("choose a file: a solve request (JSON) or a Curtois instance (.txt)")
        data = await upload.read(self.s.solver_max_json_bytes + 1)
        req = actions.parse_upload(upload.filename, data, self.s.limits)
        job_id = actions.job_id_of(str(form.get("job_id") or ""), required=False)
        if job_id and await self.reads.record(job_id):
            raise BadInput(f"job id {job_id} is taken: a job with this id is known")
        job_id = await self.client.submit(
            req.model_dump_json(exclude_defaults=True), job_id=job_id or actions.new_job_id()
        )
        return _back(
            f"/jobs/{quote(job_id, safe='')}?submitted=1",
            f"submitted {upload.filename} as job {job_id}",
        )

    # ------------------------------------------------------------------ signing in

    async def login_form(self, request: Request) -> Response:
        return self.page(request, "login.html", next=request.query_params.get("next", "/"))

    async def login(self, request: Request) -> Response:
        form = await request.form()
        origin = request.headers.get("origin")
        host = request.headers.get("host")
        if origin and origin != "null" and host and origin.split("://", 1)[-1] != host:
            raise Refused(f"refused a cross-site request from {origin}")
        actions.check_login(self.s.token, str(form.get("token") or ""))
        assert self.s.token is not None
        target = str(form.get("next") or "/")
        response = _back(target if target.startswith("/") and not target.startswith("//") else "/",
                         "signed in: actions are enabled")
        response.set_cookie(
            actions.SESSION_COOKIE, actions.new_session(self.s.token),
            httponly=True, samesite="strict", secure=request.url.scheme == "https",
        )  # fmt: skip
        return response

    async def logout(self, request: Request) -> Response:
        response = _back("/", "signed out")
        response.delete_cookie(actions.SESSION_COOKIE)
        return response

    async def health(self, request: Request) -> Response:
        """Alive: the process serves pages (a Redis outage is shown on them, not fixed by a
        restart)."""
        return PlainTextResponse("ok")

    async def ready(self, request: Request) -> Response:
        """Ready: the last sample of Redis went through."""
        if self.sampler.error or self.sampler.stats is None:
            return PlainTextResponse(self.sampler.error or "no sample yet", status_code=503)
        return PlainTextResponse("ok")

    # ------------------------------------------------------------------ errors

    async def on_refused(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refused)
        return self.error(request, str(exc), exc.status)

    async def on_redis(self, request: Request, exc: Exception) -> Response:
        return self.error(request, f"cannot reach Redis: {exc}", 503)

    async def on_error(self, request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return self.error(
            request, f"internal error ({type(exc).__name__}); the console's log has the details",
            500,
        )


def _state_of(record: dict[str, str], terminal: dict[str, str] | None) -> str:
    if terminal is not None:
        return "completed" if terminal.get("type") == "solver.completed" else "failed"
    return record.get("state") or "unknown"


def _attachment(job_id: str, ext: str) -> dict[str, str]:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in job_id)
    return {"Content-Disposition": f'attachment; filename="{safe}.{ext}"'}


def _back(path: str, flash: str) -> RedirectResponse:
    """Redirect after a POST; the outcome is shown once on the next page (a cookie, not the
    URL, so nobody can link to a page that shows a message of their choosing)."""
    response = RedirectResponse(path, status_code=303)
    response.set_cookie(FLASH_COOKIE, quote(flash), max_age=60, httponly=True, samesite="strict")
    return response


REDIS_ERRORS = (redis.RedisError,)
