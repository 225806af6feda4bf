"""The console in a real browser: Debian's chromium driven by Playwright, against real services.

The stack runs the five services (a crashing C solve never falls back, so a `__crash__` job is
retried and dead-lettered) and two consoles on the stack's prefix: one with CONSOLE_TOKEN, one
read-only. In the browser: sign in, submit a roster, watch it reach completed, compare every
cell of the grid with the result on `solver-events`, open a failed job, replay its dead letter;
then every action is refused without the token (read-only console, no session, wrong CSRF,
another site's Origin), and nothing changed.

The README's screenshot is this test's: `SHIFTSTREAM_SCREENSHOTS=1` writes docs/console.png.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.cli.devrunner import free_port
from tests.conftest import ROOT, Stack, StackFactory, request_json

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
TOKEN = "s3cret-console-token"


def start_console(stack: Stack, tmp: Path, token: str | None, name: str) -> tuple[str, Any]:
    port = free_port()
    env = {
        **os.environ,
        "REDIS_URL": stack.settings.redis_url,
        "SHIFTSTREAM_PREFIX": stack.prefix,
        "CONSOLE_PORT": str(port),
        "CONSOLE_REFRESH_SECONDS": "0.5",
        "SHIFTSTREAM_TRACE_FILE": str(tmp / "traces.jsonl"),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("CONSOLE_TOKEN", None)
    if token:
        env["CONSOLE_TOKEN"] = token
    log = (tmp / f"{name}.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.console"], env=env, cwd=ROOT, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as r:
                if r.status == 200:
                    return url, proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"console did not start:\n{(tmp / f'{name}.log').read_text()}")
        time.sleep(0.2)


@pytest.fixture
def consoles(make_stack: StackFactory, tmp_path: Path) -> Iterator[tuple[Stack, str, str]]:
    stack = make_stack(
        env={
            "SHIFTSTREAM_TEST_CRASH": "1",
            "SOLVER_ALLOW_FALLBACK": "false",
            "SHIFTSTREAM_TRACE_FILE": str(tmp_path / "traces.jsonl"),
        }
    )
    url, proc = start_console(stack, tmp_path, TOKEN, "console")
    ro_url, ro_proc = start_console(stack, tmp_path, None, "console-ro")
    try:
        yield stack, url, ro_url
    finally:
        for p in (proc, ro_proc):
            p.terminate()
            p.wait(10)


@pytest.fixture
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(
            "the console's browser test needs Debian's chromium at /usr/bin/chromium: "
            "`apt-get install -y chromium` (./task test installs it)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield b
        finally:
            b.close()


def test_console_in_a_browser(
    consoles: tuple[Stack, str, str], browser: Any, tmp_path: Path
) -> None:
    stack, url, ro_url = consoles
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    dialogs: list[str] = []

    def accept(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)

    # Sign in with the token.
    page.goto(f"{url}/login")
    page.fill("#token", TOKEN)
    page.click("#sign-in")
    assert "signed in" in page.inner_text(".flash")

    # Submit a roster through the page and watch it reach completed.
    roster = tmp_path / "roster.json"
    roster.write_text(request_json(employees=8, shifts=30, time_limit=1.0))
    page.goto(f"{url}/submit")
    page.set_input_files("#file", str(roster))
    page.fill("#job-id-input", "browser-job-1")
    page.click("#submit")
    page.wait_for_url(f"{url}/jobs/browser-job-1?submitted=1")
    # The page follows the job live and reloads itself when it ends.
    try:
        page.wait_for_selector("#job-state.completed", timeout=60_000)
    except Exception:
        pytest.fail(
            f"page never showed completed: {page.inner_text('main')[:1500]}\n"
            f"events: {[e['type'] for e in stack.events('browser-job-1')]}\n{stack.logs()}"
        )
    event = stack.terminal("browser-job-1")[0]
    assert event["type"] == "solver.completed"
    result = json.loads(event["result"])
    rows = page.eval_on_selector_all(
        "#roster tbody tr",
        "trs => trs.map(tr => [tr.querySelector('th').textContent,"
        " [...tr.querySelectorAll('td')].map(td => td.textContent)])",
    )
    assert rows == [
        [a["employee"], [s or "" for s in a["shifts"]]] for a in result["assignments"]
    ]
    assert page.inner_text("#penalty") == str(result["score"]["penalty"])
    assert page.inner_text("#priority") == "normal"
    tsv = page.request.get(f"{url}/jobs/browser-job-1/roster.tsv").text()
    assert tsv.splitlines()[0].split("\t") == [s or "" for s in result["assignments"][0]["shifts"]]

    # A Curtois benchmark file goes in as it is; its unmet requests are marked on the grid.
    page.goto(f"{url}/submit")
    page.set_input_files("#file", str(ROOT / "bench" / "curtois" / "Instance1.txt"))
    page.fill("#job-id-input", "browser-curtois")
    page.click("#submit")
    page.wait_for_selector("#job-state.completed", timeout=90_000)
    result = json.loads(stack.terminal("browser-curtois")[0]["result"])
    # Beside the penalty: the solver's bound (Instance 1's root LP converges in well under a
    # second), the gap against it, and whether the roster is proven optimal.
    stats = result["stats"]
    assert page.inner_text("#penalty") == str(result["score"]["penalty"])
    assert page.inner_text("#lower-bound") == str(stats["lower_bound"])
    assert page.inner_text("#gap") == f"{stats['gap'] * 100:.2f} %"
    assert page.inner_text("#proven-optimal") == ("yes" if stats["proven_optimal"] else "no")
    unmet = {
        (m["employee"], d)
        for r in result["breakdown"] if r["rule"] in ("shift_on_requests", "shift_off_requests")
        for m in r["matches"] for d in m["days"]
    }  # fmt: skip
    marked = page.eval_on_selector_all(
        "#roster tbody tr",
        "trs => trs.flatMap(tr => [...tr.querySelectorAll('td')].map((td, d) =>"
        " td.classList.contains('request') ? [tr.querySelector('th').textContent, d] : null)"
        ".filter(x => x))",
    )
    assert unmet and {tuple(x) for x in marked} == unmet
    # Its trace as a waterfall, from the trace file (spans are written in batches).
    deadline = time.monotonic() + 30
    while True:
        services = set(
            page.eval_on_selector_all(".waterfall .wf-service", "es => es.map(e => e.textContent)")
        )
        if {"intake", "solver", "notifier"} <= services:
            break
        assert time.monotonic() < deadline, f"the job's trace is incomplete: {services}"
        time.sleep(0.5)
        page.reload()
    assert page.locator(".waterfall").count() == 1  # one job, one trace
    if os.environ.get("SHIFTSTREAM_SCREENSHOTS"):
        page.screenshot(path=str(ROOT / "docs" / "console-job.png"), full_page=True)

    # A job that fails every attempt: its page, its dead letter, the replay.
    crash = json.loads(request_json(employees=5, shifts=12, time_limit=0.5))
    crash["name"] = "__crash__browser"
    stack.submit(json.dumps(crash), job_id="browser-crash")
    assert stack.wait_terminal("browser-crash")["browser-crash"]["type"] == "solver.failed"
    page.goto(f"{url}/jobs/browser-crash")
    assert page.inner_text("#job-state") == "failed"
    assert page.locator("#attempts tbody tr").count() >= 2  # every attempt with its error
    old_letter = stack.job("browser-crash")["dead_letter_id"]
    page.click("#dead-link")
    assert page.url.endswith(f"/dead/{old_letter}")
    accepted_before = sum(e["type"] == "solver.accepted" for e in stack.events("browser-crash"))
    page.click("#replay")
    page.wait_for_url(f"{url}/jobs/browser-crash")
    assert "replayed" in page.inner_text(".flash")
    assert any("Replay browser-crash" in d for d in dialogs)
    stack.wait_for(
        lambda: sum(e["type"] == "solver.accepted" for e in stack.events("browser-crash"))
        > accepted_before,
        what="the replayed job's second lifecycle",
    )
    # The replayed letter left the dead-letter stream (its job may die again: a new letter).
    assert old_letter not in {r.get("dead_letter_id") for r in stack.records(stack.names.dead)}

    page.goto(url)
    page.wait_for_selector("svg.chart")
    page.wait_for_function("document.querySelectorAll('tr[data-service]').length == 9")
    shot = tmp_path / "console.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("SHIFTSTREAM_SCREENSHOTS"):
        page.goto(url)
        page.wait_for_selector("svg.chart")
        page.screenshot(path=str(ROOT / "docs" / "console.png"))

    # Without the token every action is refused, and nothing changes.
    stack.submit(request_json(employees=5, shifts=12, time_limit=0.5), job_id="browser-keep")
    stack.wait_terminal("browser-keep")
    crash["name"] = "__crash__browser2"
    stack.submit(json.dumps(crash), job_id="browser-crash-2")
    stack.wait_terminal("browser-crash-2")
    dead_id = stack.job("browser-crash-2")["dead_letter_id"]
    dead_len = stack.redis.xlen(stack.names.dead)
    intake_len = stack.redis.xlen(stack.names.intake)
    files = {
        "file": {"name": "r.json", "mimeType": "application/json", "buffer": roster.read_bytes()}
    }
    attempts = [
        ("/jobs/browser-keep/cancel", {}),
        (f"/dead/{dead_id}/replay", {}),
        ("/dead/replay-all", {"confirm": "yes"}),
        ("/dead/purge", {"confirm": "yes"}),
    ]
    ro = browser.new_page()
    ro.goto(ro_url)
    assert ro.inner_text(".badge.ro") == "read-only"
    ro.goto(f"{ro_url}/dead/{dead_id}")
    assert ro.locator("#replay").is_disabled()
    for base, headers, why in (
        (ro_url, {}, "read-only"),
        (url, {}, "sign in"),  # a fresh context: no session cookie
        (url, {"Authorization": "Bearer wrong"}, "wrong token"),
        (url, {"Origin": "https://evil.example"}, "cross-site"),
    ):
        ctx = browser.new_context()
        try:
            for path, form in [*attempts, ("/submit", None)]:
                r = ctx.request.post(
                    f"{base}{path}", form=form, multipart=files if form is None else None,
                    headers=headers, max_redirects=0,
                )  # fmt: skip
                assert r.status == 403, (base, path, r.status)
                assert why in r.text(), (path, why, r.text()[-400:])
                assert "Traceback" not in r.text()
        finally:
            ctx.close()
    # Signed in, but a form from elsewhere (wrong CSRF token) is refused too.
    r = page.request.post(f"{url}/dead/purge", form={"confirm": "yes", "csrf": "forged"})
    assert r.status == 403 and "stale" in r.text()
    assert stack.redis.xlen(stack.names.dead) == dead_len
    assert stack.redis.xlen(stack.names.intake) == intake_len

    # Bad input gets a clear message on the page, never a stack trace.
    page.goto(f"{url}/jobs/no-such-job")
    assert "no job no-such-job" in page.inner_text("#error-message")
    bad = tmp_path / "bad.json"
    bad.write_text('{"horizon": {"days": 0}}')
    page.goto(f"{url}/submit")
    page.set_input_files("#file", str(bad))
    page.click("#submit")
    message = page.inner_text("#error-message")
    assert "bad.json" in message and "horizon" in message, message
    assert "Traceback" not in page.content()
