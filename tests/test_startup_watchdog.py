"""A service whose start hangs exits for its supervisor to restart it; one that started stays."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from shared.cli.devrunner import EmbeddedServer
from shared.streaming.runner import STARTUP_HUNG
from tests.conftest import ROOT

APP = textwrap.dedent(
    """
    import asyncio, sys
    from faststream import FastStream
    from faststream.redis import RedisBroker
    from shared.streaming.runner import run

    app = FastStream(RedisBroker(sys.argv[1]))
    if sys.argv[2] == "hang":
        @app.on_startup
        async def hang() -> None:
            await asyncio.Event().wait()
    run(app)
    """
)


def _start(url: str, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "STARTUP_TIMEOUT_SECONDS": "2"}
    return subprocess.Popen(
        [sys.executable, "-c", APP, url, mode],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_start_that_hangs_exits_for_a_restart() -> None:
    # No broker is reached: the hook hangs before FastStream connects.
    proc = _start("redis://127.0.0.1:1", "hang")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == STARTUP_HUNG, err
    assert "STARTUP_TIMEOUT_SECONDS" in err


@pytest.mark.redis
def test_a_started_service_outlives_the_timeout(redis_server: EmbeddedServer) -> None:
    proc = _start(redis_server.url, "ok")
    try:
        time.sleep(5)  # well past the 2 s timeout
        assert proc.poll() is None, proc.communicate()[1]
    finally:
        proc.terminate()
        proc.wait(30)
