"""The docs say what the code does, checked by a machine where one can.

- Every `shiftstream ...` command line in README.md and docs/*.md parses against the real CLI
  (its commands, options and choices), and README's local-solve block runs.
- Every `python -m shared.observability.health ...` line in the docs parses.
- The event tables of docs/events.md are the event models, field for field, every example
  valid against the published schema, and the failure example is what the code writes.
- One number for the job id limit: the contract, the schema, the intake and the docs.
- The settings table lists every setting; the exit code table is shared/cli/exits.py.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.main import get_command

from shared.cli.exits import MEANING, ExitCode
from shared.cli.main import app
from shared.errors import InvalidRequest
from shared.jobs.dead_letters import dead_letter_id_of
from shared.jobs.events import EVENT_MODELS, MAX_JOB_ID
from shared.roster.parse import parse_request
from shared.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SCHEMAS = ROOT / "docs" / "schemas"

# Placeholders of the docs' command notation, and a value that stands for each.
SAMPLES = {
    "JOB": "j1",
    "JOB_ID": "j1",
    "ID": "j1",
    "FILE": "request.json",
    "URL": "redis://localhost:6379/0",
    "DIR": "logs",
    "N": "3",
    "S": "1",
    "T": "2026-12-01T14:26:56Z",
    "TIME": "2026-12-01T14:26:56Z",
    "SERVICE=N": "solver=3",
    "PATH": "traces.jsonl",
}


def _code_spans(text: str) -> list[str]:
    """Command lines: lines of fenced blocks, and inline code spans."""
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            lines.append(line.strip().removeprefix("$ "))
        else:
            lines += re.findall(r"`([^`]+)`", line)
    return lines


def _notation_to_args(line: str) -> list[str]:
    """`shiftstream dlq list [-n N] [-o table\\|json]` -> ["dlq", "list", "-n", "3", ...]."""
    line = re.split(r"\s#\s|\s>\s|\s\|\s", line)[0]
    line = line.replace("\\|", "|").replace("[", " ").replace("]", " ")
    line = line.replace("…", " ").replace("...", " ")
    words = shlex.split(line)
    start = next(i for i, w in enumerate(words) if w.endswith("shiftstream"))
    args = []
    for word in words[start + 1 :]:
        word = word.split("|")[0] if "|" in word else word
        args.append(SAMPLES.get(word, word))
    return [a for a in args if a]


def documented_commands() -> list[tuple[str, list[str]]]:
    found = []
    for doc in DOCS:
        for span in _code_spans(doc.read_text()):
            if not re.search(r"(^|\s|/)shiftstream\s+[a-z]", span):
                continue
            if " / " in span:  # `shiftstream dlq list / show ID / replay ID` notation
                head, *more = span.split(" / ")
                group = _notation_to_args(head)[:1]
                found.append((doc.name, _notation_to_args(head)))
                found += [(doc.name, group + _notation_to_args("shiftstream " + m)) for m in more]
                continue
            found.append((doc.name, _notation_to_args(span)))
    return found


def parse_cli(args: list[str]) -> None:
    """Parse as the CLI would, down to the subcommand, without running anything. A bare
    mention of a command (`shiftstream trace`, in prose) only has to name a real one."""
    root = get_command(app)
    names = set(root.commands) | set(root.commands["dlq"].commands)  # type: ignore[attr-defined]
    mention = all(a in names for a in args)
    ctx = get_command(app).make_context("shiftstream", list(args), resilient_parsing=mention)
    rest = [*ctx._protected_args, *ctx.args]
    while rest and hasattr(ctx.command, "resolve_command"):
        name, sub, rest = ctx.command.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        ctx = sub.make_context(name, rest, parent=ctx, resilient_parsing=mention)
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
    assert not rest, f"left over: {rest}"


def test_the_docs_show_commands_at_all() -> None:
    commands = {" ".join(a[:1]) for _, a in documented_commands()}
    assert {"dev", "submit", "watch", "cancel", "status", "stats", "trace", "dlq"} <= commands


@pytest.mark.parametrize(
    ("doc", "args"),
    documented_commands(),
    ids=[f"{d}: {' '.join(a)}"[:90] for d, a in documented_commands()],
)
def test_every_documented_command_line_parses(doc: str, args: list[str]) -> None:
    parse_cli(args)


def _readme_block(heading: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(heading) :]
    block = section[section.index("```bash") + 7 :]
    return [line for line in block[: block.index("```")].splitlines() if line.strip()]


def test_the_readmes_local_solve_block_runs(tmp_path: Path) -> None:
    """Literally, in a fresh folder, with the time limits cut to 1 s (the docs' 10 s only buys
    a better roster)."""
    bench = ROOT / "bench"
    for line in _readme_block("## Solve a roster locally"):
        command, _, _comment = line.partition("  #")
        command = command.replace(".venv/bin/shiftstream", f"{sys.executable} -m shared.cli.main")
        command = command.replace("bench/", f"{bench}/")
        command = re.sub(r"--time-limit \d+", "--time-limit 1", command)
        if " solve " in command and "--time-limit" not in command:
            command = command.replace(" solve ", " solve --time-limit 1 ", 1)
        done = subprocess.run(
            command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        if " evaluate " in command:
            report = json.loads(done.stdout)
            assert done.returncode == (1 if report["hard_violations"] else 0), done.stderr
        else:
            assert done.returncode == 0, (line, done.stderr)
    assert (tmp_path / "i5.tsv").read_text().strip()


def test_documented_health_probe_lines_parse(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m shared.observability.health` as the docs write it: its arguments parse."""
    from shared.observability.health import parser

    sources = [*DOCS, *(ROOT / "docs" / "decisions").glob("*.md"), ROOT / "infra/systemd/README.md"]
    found = [
        (doc.name, span)
        for doc in sources
        for span in _code_spans(doc.read_text())
        if "python -m shared.observability.health" in span
    ]
    assert len(found) >= 3
    for doc, span in found:
        args = shlex.split(span.split("shared.observability.health", 1)[1].split("(")[0])
        args = [SAMPLES.get(a, "solver" if a == "NAME" else a) for a in args]
        try:
            parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"{doc}: `{span}` does not parse: {capsys.readouterr().err}")


# ------------------------------------------------------------------------------ events.md


def _events_sections() -> dict[str, str]:
    text = (ROOT / "docs" / "events.md").read_text()
    parts = re.split(r"^## `(solver\.[a-z]+)`.*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _table(section: str) -> dict[str, str]:
    """The first table of a section: field -> example."""
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0] != "`field`":
            rows[cells[0].strip("`")] = cells[1].strip("`")
        elif rows and not line.startswith("|"):
            break
    return rows


def _schema(kind: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"event.{kind}.v1.json").read_text())
    return loaded


def test_the_event_tables_are_the_event_models() -> None:
    sections = _events_sections()
    assert set(sections) == set(EVENT_MODELS) - {"solver.accepted"} | (
        {"solver.accepted"} & set(sections)
    )
    for kind, section in sections.items():
        model = EVENT_MODELS[kind]
        fields = set(model.model_fields) - {"type", "job_id", "ts"}
        table = _table(section)
        assert set(table) == fields, kind
        schema = _schema(kind)
        for field, example in table.items():
            if example.endswith("...") or example.endswith(",...}"):
                continue  # an elided JSON document
            jsonschema.validate(
                example, {"$defs": schema.get("$defs", {}), **schema["properties"][field]}
            )


def test_every_event_shown_in_events_md_is_a_valid_event() -> None:
    text = (ROOT / "docs" / "events.md").read_text()
    schema = json.loads((SCHEMAS / "solver-event.v1.json").read_text())
    shown = [
        json.loads(line)
        for block in re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)
        for line in block.splitlines()
        if line.strip()
    ]
    assert {e["type"] for e in shown} >= {"solver.progress", "solver.failed"}
    assert {e["phase"] for e in shown if e["type"] == "solver.progress"} == {"columns", "genetic"}
    for event in shown:
        jsonschema.validate(event, schema)


def test_the_failure_example_is_what_the_code_writes() -> None:
    """The publishing guide's minimal request with `max_minutes: -60` on `ana`: the reason and
    the dead letter id events.md shows are the ones the intake and triage produce."""
    table = _table(_events_sections()["solver.failed"])
    request = {
        "version": 1,
        "horizon": {"start_date": "2026-01-05", "days": 7},
        "shift_types": [{"id": "D", "start": "08:00", "length_minutes": 480}],
        "cover": [{"day": 0, "shift": "D", "required": 1}],
        "employees": [{"id": "ana", "max_minutes": -60}, {"id": "ben"}],
    }
    with pytest.raises(InvalidRequest) as err:
        parse_request(json.dumps(request))
    assert table["reason"] == err.value.reason
    assert table["dead_letter_id"] == dead_letter_id_of("j2", 0, err.value.reason)


# ------------------------------------------------------------------------------ numbers


def test_one_number_for_the_job_id_limit() -> None:
    intake = json.loads((SCHEMAS / "intake-entry.v1.json").read_text())
    lengths = {
        v["maxLength"]
        for v in _walk(intake)
        if isinstance(v, dict) and v.get("description", "").startswith("The caller's job id")
    }
    assert lengths == {MAX_JOB_ID}
    publishing = (ROOT / "docs" / "publishing.md").read_text()
    assert f"1–{MAX_JOB_ID} characters" in publishing
    assert f"longer than the contract's {MAX_JOB_ID} characters" in " ".join(
        (ROOT / "docs" / "services.md").read_text().split()
    )


def _walk(node: Any) -> list[Any]:
    out = [node]
    if isinstance(node, dict):
        for v in node.values():
            out += _walk(v)
    elif isinstance(node, list):
        for v in node:
            out += _walk(v)
    return out


def test_the_settings_table_lists_every_setting() -> None:
    text = (ROOT / "docs" / "services.md").read_text()
    table = text[text.index("## Settings") : text.index("## Dead letters")]
    documented: set[str] = set()
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        names = re.findall(r"`([A-Z_]+)`", first)
        stem = ""
        for name in names:
            if name.startswith("_"):  # `SOLVER_MAX_EMPLOYEES` / `_DAYS`: SOLVER_MAX_DAYS
                name = stem + name
            else:
                stem = name.rsplit("_", 1)[0]
            documented.add(name)
        if "…" in first:  # `STREAM_INTAKE` … `STREAM_DEAD`
            documented |= {f.upper() for f in Settings.model_fields if f.startswith("stream_")}
    fields = {f.upper() for f in Settings.model_fields}
    assert fields - documented == set(), "settings missing from docs/services.md"
    assert documented - fields == set(), "docs/services.md lists settings the code lacks"


def test_the_exit_code_table_is_the_codes() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    table = text[text.index("## Exit codes") :]
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", table, flags=re.MULTILINE))
    assert {int(k) for k in rows} == {int(c) for c in ExitCode}
    for code in ExitCode:
        assert rows[str(int(code))] == MEANING[code], code
