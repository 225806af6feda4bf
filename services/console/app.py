"""The console's wiring: routes, the sampler's lifetime, error pages. One screen; the pages
are in `pages.py`, what they compute in `views.py`, what they read in `reads.py`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import redis
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from services.console.actions import Refused
from services.console.config import ConsoleSettings
from services.console.pages import Console
from services.console.reads import Reads
from services.console.sampler import Sampler
from shared.connection.factory import async_client, sync_client
from shared.jobs.client import Client
from shared.names import Names


def build(settings: ConsoleSettings | None = None) -> Starlette:
    s = settings or ConsoleSettings()
    # Built where every process builds its connections (Sentinel, Cluster, TLS).
    sync = sync_client(s)
    # Its event reads block 1.5 s at most (reads.py): a slower reply is a dead connection.
    aio = async_client(s, round_trip_timeout=30)
    sampler = Sampler(
        sync, Names.from_settings(s),
        interval=s.console_refresh_seconds, window=s.console_window_seconds,
    )  # fmt: skip
    c = Console(s, sampler, Reads(aio, sync, s), Client(s.redis_url, s))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        sampler.start()
        try:
            yield
        finally:
            await sampler.stop()
            await c.client.close()
            await aio.aclose()
            sync.close()

    routes = [
        Route("/", c.overview),
        Route("/sse/overview", c.overview_stream),
        Route("/jobs", c.jobs),
        Route("/sse/jobs", c.jobs_stream),
        Route("/jobs/{job_id:path}/roster.{fmt}", c.roster),
        Route("/jobs/{job_id:path}/cancel", c.cancel, methods=["POST"]),
        Route("/sse/job/{job_id:path}", c.job_stream),
        Route("/jobs/{job_id:path}", c.job),
        Route("/dead", c.dead_list),
        Route("/dead/replay-all", c.replay_all, methods=["POST"]),
        Route("/dead/purge", c.purge, methods=["POST"]),
        Route("/dead/{ident}/replay", c.replay, methods=["POST"]),
        Route("/dead/{ident}", c.dead_show),
        Route("/submit", c.submit_form),
        Route("/submit", c.submit, methods=["POST"]),
        Route("/login", c.login_form),
        Route("/login", c.login, methods=["POST"]),
        Route("/logout", c.logout, methods=["POST"]),
        Route("/healthz", c.health),
        Route("/readyz", c.ready),
        Mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static"),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            Refused: c.on_refused,
            redis.RedisError: c.on_redis,
            Exception: c.on_error,
        },
    )
