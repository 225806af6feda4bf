"""compose.yaml runs Redis with TLS and the per-service ACL users by default.

No Docker engine runs here, so the stack itself is not started. What can be run is: the
preparation `task up` does (infra/compose/prepare.sh: passwords, certificates, the rendered ACL
file), the stack's own redis.conf on a real redis-server with those files (only the container
paths swapped for local ones), and each service's login exactly as compose hands it over.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from shared.cli.devrunner import SERVICES
from shared.cli.topology import RedisProcess
from tests.conftest import ROOT

COMPOSE = ROOT / "compose.yaml"


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project's compose files, prepared as `task up` prepares them."""
    root = tmp_path_factory.mktemp("compose")
    shutil.copy(COMPOSE, root / "compose.yaml")
    shutil.copytree(ROOT / "infra", root / "infra")
    for _ in range(2):  # a second run keeps what the first made
        subprocess.run(["sh", "infra/compose/prepare.sh"], cwd=root, check=True,
                       capture_output=True, timeout=120)  # fmt: skip
    return root


def dotenv(root: Path) -> dict[str, str]:
    pairs = (
        line.split("=", 1)
        for line in (root / ".env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    return {k: v for k, v in pairs}


def test_every_variable_compose_needs_is_prepared(prepared: Path) -> None:
    # Required ones (`${VAR:?...}` or `${VAR}`); `${VAR:-default}` are optional settings.
    used = set(re.findall(r"\$\{([A-Z_]+)(?::\?[^}]*)?\}", COMPOSE.read_text()))
    assert used, "compose.yaml takes its passwords from .env"
    env = dotenv(prepared)
    assert used <= set(env), used - set(env)
    assert all(re.fullmatch(r"[0-9a-f]{32}", env[v]) for v in used), "URL-safe random passwords"
    first = (prepared / ".env").read_text()
    assert (prepared / ".secrets/tls/server.key").exists()
    subprocess.run(["sh", "infra/compose/prepare.sh"], cwd=prepared, check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    assert (prepared / ".env").read_text() == first, "a rerun keeps the passwords"


def test_services_log_in_as_their_own_users_over_tls() -> None:
    doc = compose()
    redis_svc = doc["services"]["redis"]
    mounts = dict(v.rsplit(":", 2)[:2] for v in redis_svc["volumes"] if v.startswith("./"))
    assert mounts["./.secrets/tls"] == "/tls"
    assert mounts["./.secrets/users.acl"] == "/etc/redis/users.acl"
    conf = redis_conf()
    assert conf["port"] == "0" and conf["tls-port"] == "6379"
    assert conf["tls-auth-clients"] == "yes" and conf["aclfile"] == "/etc/redis/users.acl"
    assert "--tls" in redis_svc["healthcheck"]["test"][1]
    for name in (*SERVICES, "bridge", "console"):
        svc = doc["services"][name]
        env = svc["environment"]
        assert re.fullmatch(
            rf"rediss://{name}:\$\{{{name.upper()}_PASSWORD:\?[^}}]+\}}@redis:6379/0",
            env["REDIS_URL"],
        ), env["REDIS_URL"]
        assert "./.secrets/tls:/tls:ro" in svc["volumes"]
        for var, file in (("REDIS_TLS_CA_FILE", "ca.crt"), ("REDIS_TLS_CERT_FILE", "client.crt"),
                          ("REDIS_TLS_KEY_FILE", "client.key")):  # fmt: skip
            assert env[var] == f"/tls/{file}"


def redis_conf() -> dict[str, str]:
    lines = (ROOT / "infra" / "redis" / "redis.conf").read_text().splitlines()
    return dict(line.split(None, 1) for line in lines if line.strip() and not line.startswith("#"))


@pytest.fixture(scope="module")
def stack_redis(prepared: Path) -> Iterator[RedisProcess]:
    """The stack's redis.conf on a real server, its container paths swapped for local ones."""
    tls = prepared / ".secrets" / "tls"
    # The mounts compose makes, made by rewriting the paths: Redis applies `dir` when it reads
    # it, so the container's /data cannot be overridden on the command line.
    conf = (ROOT / "infra" / "redis" / "redis.conf").read_text()
    acl = prepared / ".secrets" / "users.acl"
    mounts = {"/data": prepared, "/tls": tls, "/etc/redis/users.acl": acl}
    for inside, outside in mounts.items():
        conf = re.sub(rf"(\s){re.escape(inside)}(\s|/)", rf"\g<1>{outside}\g<2>", conf)
    assert " /tls/" not in conf and " /data" not in conf
    local = prepared / "redis.conf"
    local.write_text(conf)
    server = RedisProcess(
        connect={"ssl": True, "ssl_ca_certs": str(tls / "ca.crt"),
                 "ssl_certfile": str(tls / "client.crt"), "ssl_keyfile": str(tls / "client.key"),
                 "username": "admin", "password": dotenv(prepared)["ADMIN_PASSWORD"]},
        workdir=prepared,
        config=local,
    )  # fmt: skip
    server.args = ["--tls-port", str(server.port)]
    server.start()
    yield server
    server.stop()


def test_the_prepared_stack_redis_admits_each_user_with_its_certificate(
    prepared: Path, stack_redis: RedisProcess
) -> None:
    env = dotenv(prepared)
    tls = prepared / ".secrets" / "tls"
    cert = {
        "ssl": True,
        "ssl_ca_certs": str(tls / "ca.crt"),
        "ssl_certfile": str(tls / "client.crt"),
        "ssl_keyfile": str(tls / "client.key"),
    }
    base = {"host": "127.0.0.1", "port": stack_redis.port, "socket_timeout": 5}
    for user in (*SERVICES, "bridge", "console", "monolith", "admin"):
        url = f"rediss://{user}:{env[user.upper() + '_PASSWORD']}@127.0.0.1:{stack_redis.port}/0"
        client = redis.Redis.from_url(url, **{k: v for k, v in cert.items() if k != "ssl"})
        assert client.ping(), user
        client.close()
    with pytest.raises(redis.AuthenticationError):  # the default user is off
        redis.Redis(**base, **cert).execute_command("XLEN", "solver.jobs")
    with pytest.raises(redis.ConnectionError):  # no certificate, no connection
        redis.Redis(**base, ssl=True, ssl_ca_certs=str(tls / "ca.crt"),
                    username="admin", password=env["ADMIN_PASSWORD"]).ping()  # fmt: skip
    with pytest.raises(redis.ConnectionError):  # no TLS, no connection
        redis.Redis(**base, username="admin", password=env["ADMIN_PASSWORD"]).ping()
