"""TLS end to end: a `redis-server` that speaks only TLS and asks every client for a certificate
signed by its CA, both made by the test (openssl); the five services, the CLI and the Node
example reach it with `rediss://` and the `REDIS_TLS_*` files; anything without a valid
certificate is turned away. The same on a Sentinel deployment whose nodes and sentinels all
speak TLS.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from pydantic import ValidationError

from shared.cli.topology import Pki, RedisProcess, SentinelSet
from shared.settings import Settings
from tests.conftest import ROOT, Stack, request_json
from tests.test_jobs_cli import cli

pytestmark = pytest.mark.redis
EXAMPLE = ROOT / "examples" / "monolith-node"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.make(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_server(pki: Pki) -> Iterator[RedisProcess]:
    server = RedisProcess(connect=pki.client_kwargs())
    server.args = pki.tls_args(server.port)
    server.start()
    yield server
    server.stop()


def tls_env(server: RedisProcess, pki: Pki) -> dict[str, str]:
    return {"REDIS_URL": f"rediss://127.0.0.1:{server.port}/0", **pki.env()}


def test_services_cli_and_node_over_tls(
    tls_server: RedisProcess, pki: Pki, tmp_path: Path
) -> None:
    env = tls_env(tls_server, pki)
    stack = Stack(env["REDIS_URL"], tmp_path / "logs", env).start()
    try:
        job = stack.submit(request_json(implementation="greedy"))
        assert stack.wait_terminal(job)[job]["type"] == "solver.completed"
        status = cli(stack, "status", job)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["state"] == "completed"
        stats = cli(stack, "stats", "--json")
        assert stats.returncode == 0 and json.loads(stats.stdout)["redis"].endswith("over TLS")
        node = run_node(stack, tmp_path)
        assert node.returncode == 0, f"{node.stdout}\n{node.stderr}\n{stack.logs()}"
        assert "completed by" in node.stdout
        # The health probe reaches it the same way.
        probe = subprocess.run(
            [sys.executable, "-m", "shared.observability.health", "--service", "notifier",
             "--check", "ready"],
            env={**os.environ, **env, "SHIFTSTREAM_PREFIX": stack.prefix, "PYTHONPATH": str(ROOT)},
            cwd=ROOT, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert probe.returncode == 0, probe.stdout + probe.stderr
        # Every connection the server saw came over TLS: its plain port is closed.
        with pytest.raises(redis.ConnectionError):
            redis.Redis(port=tls_server.port, socket_timeout=2).ping()
    finally:
        stack.stop()


def run_node(stack: Stack, tmp: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node and (EXAMPLE / "node_modules" / "ioredis").is_dir(), "Node.js, npm ci"
    request = tmp / "request.json"
    request.write_text(request_json(employees=5, shifts=12, time_limit=0.5))
    return subprocess.run(
        [node, str(EXAMPLE / "index.js"), "--redis-url", stack.settings.redis_url,
         "--prefix", stack.prefix, "--request", str(request), "--out", str(tmp / "out.json"),
         "--timeout", "60"],
        env={**os.environ, **stack.deployment_env},
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip


def test_a_client_without_a_valid_certificate_is_refused(
    tls_server: RedisProcess, pki: Pki, tmp_path: Path
) -> None:
    port = tls_server.port
    base = {"host": "127.0.0.1", "port": port, "socket_timeout": 3}
    # No client certificate: the server ends the handshake.
    no_cert = redis.Redis(**base, ssl=True, ssl_ca_certs=str(pki.ca))
    with pytest.raises(redis.ConnectionError):
        no_cert.ping()
    # A certificate from another CA: refused the same way.
    stranger = Pki.make(tmp_path / "stranger")
    with pytest.raises(redis.ConnectionError):
        redis.Redis(
            **base, ssl=True, ssl_ca_certs=str(pki.ca),
            ssl_certfile=str(stranger.client_cert), ssl_keyfile=str(stranger.client_key),
        ).ping()  # fmt: skip
    # A client that does not trust the server's CA refuses the server.
    with pytest.raises(redis.ConnectionError, match="certificate verify failed"):
        redis.Redis(
            **base, ssl=True, ssl_ca_certs=str(stranger.ca),
            ssl_certfile=str(pki.client_cert), ssl_keyfile=str(pki.client_key),
        ).ping()  # fmt: skip
    # Plain TCP to the TLS port gets nowhere.
    with pytest.raises(redis.ConnectionError):
        redis.Redis(**base).ping()
    # The right files do.
    assert redis.Redis(**base, **pki.client_kwargs()).ping()
    # A service whose certificate is missing stops at its start, saying which file.
    settings_error = _settings_error(
        {**tls_env(tls_server, pki), "REDIS_TLS_CERT_FILE": str(tmp_path / "nope.crt")}
    )
    assert "REDIS_TLS_CERT_FILE: no such file" in settings_error
    # ...and one whose URL says plain redis:// while certificates are set, too.
    assert "not rediss://" in _settings_error(
        {**pki.env(), "REDIS_URL": f"redis://127.0.0.1:{port}/0"}
    )
    assert ssl.OPENSSL_VERSION  # the test ran against the machine's OpenSSL


def _settings_error(env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "services.intake"],
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr  # one line, no stack trace
    with pytest.raises(ValidationError):
        Settings(**{k.lower(): v for k, v in env.items()})
    return lines[0]


def test_sentinel_deployment_over_tls(pki: Pki, tmp_path: Path) -> None:
    """Nodes, replication and sentinels all on TLS: the services find the primary through
    the sentinels over TLS and the job completes."""
    sentinel = SentinelSet(replicas=1, sentinels=3, pki=pki).start()
    try:
        env = sentinel.env()
        stack = Stack(env["REDIS_URL"], tmp_path / "logs", env).start()
        try:
            job = stack.submit(request_json(implementation="greedy"))
            assert stack.wait_terminal(job, timeout=90)[job]["type"] == "solver.completed"
            node = run_node(stack, tmp_path)
            assert node.returncode == 0, f"{node.stdout}\n{node.stderr}\n{stack.logs()}"
        finally:
            stack.stop()
    finally:
        sentinel.stop()
