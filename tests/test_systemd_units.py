"""infra/systemd: every unit parses cleanly with systemd's own parser and has what it must.

`systemd-analyze verify` exits 0 on unknown keys and bad values (it only warns), so any output
counts as a failure here. It also insists that ExecStart's binary exists, so the units are
checked in a copy whose /opt/shiftstream/.venv/bin/python points at this checkout's venv.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from shared.names import Names
from shared.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "infra" / "systemd"
SERVICES = ("intake", "solver", "fallback", "triage", "notifier", "bridge")


def parse(text: str) -> dict[str, dict[str, list[str]]]:
    """section -> key -> values (systemd allows repeated keys, configparser does not)."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out[section][key.strip()].append(value.strip())
    return out


def copy_units(tmp: Path) -> None:
    for unit in UNITS.glob("shiftstream*.*"):
        text = unit.read_text().replace("/opt/shiftstream/.venv/bin/python", sys.executable)
        (tmp / unit.name).write_text(text)


def verify(tmp: Path, *names: str) -> str:
    tool = shutil.which("systemd-analyze")
    assert tool, "systemd-analyze (Debian package systemd) is needed"
    proc = subprocess.run(
        [tool, "verify", *(str(tmp / n) for n in names)],
        capture_output=True, text=True, timeout=60, cwd=tmp,
    )  # fmt: skip
    return (proc.stdout + proc.stderr).strip() + ("" if proc.returncode == 0 else " (exit != 0)")


def test_units_verify_without_a_warning(tmp_path: Path) -> None:
    copy_units(tmp_path)
    names = [f"shiftstream-{s}.service" for s in (*SERVICES, "console")]
    names.append("shiftstream.target")
    assert verify(tmp_path, *names) == ""


def test_verify_catches_mistakes(tmp_path: Path) -> None:
    copy_units(tmp_path)
    unit = tmp_path / "shiftstream-solver.service"
    unit.write_text(unit.read_text().replace("KillMode=mixed", "KillMod=mixed"))
    assert "Unknown key" in verify(tmp_path, unit.name)


@pytest.mark.parametrize("service", SERVICES)
def test_unit_runs_the_service_safely(service: str) -> None:
    unit = parse((UNITS / f"shiftstream-{service}.service").read_text())
    s = unit["Service"]
    assert s["ExecStart"] == [f"/opt/shiftstream/.venv/bin/python -m services.{service}"]
    assert s["Restart"] == ["always"], "FastStream exits 0 when its stream is deleted"
    assert unit["Unit"]["StartLimitIntervalSec"] == ["0"]
    assert s["KillSignal"] == ["SIGTERM"]
    assert s["User"] == ["shiftstream"] and s["Group"] == ["shiftstream"]
    assert "/etc/shiftstream/shiftstream.env" in s["EnvironmentFile"]
    env = dict(v.split("=", 1) for v in s["Environment"])
    graceful = float(env["GRACEFUL_TIMEOUT"])
    assert float(s["TimeoutStopSec"][0]) > graceful + 5, "SIGKILL before the drain ends"
    if service in ("solver", "fallback"):
        assert graceful > Settings().solver_max_time_limit, "a maximal solve cannot drain"
    for key in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp"):
        assert s[key] and s[key][0] in ("yes", "strict"), key
    assert s["CapabilityBoundingSet"] == [""]
    assert unit["Install"]["WantedBy"] == ["shiftstream.target"]
    if service == "bridge":  # no stream group: it reads the BullMQ queues it is told to
        assert "BULLMQ_QUEUES" in unit["Unit"]["Description"][0]
        assert env["CONSUMER_NAME"] == "%H-bridge", "the probe finds its heartbeat by this name"
        return
    stream, _ = Names.from_settings(Settings(shiftstream_prefix="")).groups[service]
    assert f"reads {stream})" in unit["Unit"]["Description"][0]


def test_target_groups_all_services() -> None:
    target = parse((UNITS / "shiftstream.target").read_text())
    wants = target["Unit"]["Wants"][0].split()
    assert sorted(wants) == sorted(f"shiftstream-{s}.service" for s in (*SERVICES, "console"))
    assert target["Install"]["WantedBy"] == ["multi-user.target"]
