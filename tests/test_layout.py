"""The folder tree is the architecture: imports point one way and never in a circle.

Layers, bottom up: roster < (settings, names, errors, text) < connection < observability <
streaming < jobs < solving < cli; `services` on top, and `csolver` beside `solving` (it may
import the roster only). Read from the source with `ast`, so a new module is checked without
being listed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = {"shared", "shared.settings", "shared.names", "shared.errors", "shared.text"}
# What each part may import, besides itself and the standard library / third parties.
ALLOWED: dict[str, set[str]] = {
    "shared.roster": {"shared.errors"},
    "shared.base": {"shared.roster"} | BASE,
    "shared.connection": {"shared.roster"} | BASE,
    "shared.observability": {"shared.roster", "shared.connection"} | BASE,
    "shared.streaming": {"shared.roster", "shared.connection", "shared.observability"} | BASE,
    "shared.jobs": {
        "shared.roster", "shared.connection", "shared.observability", "shared.streaming",
    } | BASE,
    "shared.solving": {
        "shared.roster", "shared.connection", "shared.observability", "shared.streaming",
        "shared.jobs", "csolver",
    } | BASE,
    "csolver": {"shared.roster", "shared.errors"},
    "shared.cli": {"shared", "csolver"},
    "shared.contracts": {"shared"},
    "services": {"shared", "services", "csolver"},
}


def part_of(module: str) -> str:
    if module in BASE:
        return "shared.base"
    for part in sorted(ALLOWED, key=len, reverse=True):
        if module == part or module.startswith(part + "."):
            return part
    raise AssertionError(f"{module} belongs to no layer: add it to tests/test_layout.py")


def project_modules() -> dict[str, Path]:
    found = {}
    for top in ("shared", "services", "csolver"):
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            found[".".join(parts)] = path
    return found


def imports_of(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.split(".")[0] in ("shared", "services", "csolver")}


def within(module: str, allowed: set[str]) -> bool:
    return any(module == a or module.startswith(a + ".") for a in allowed)


def test_every_import_points_down_the_layers() -> None:
    wrong = []
    for module, path in project_modules().items():
        part = part_of(module)
        for imported in imports_of(path) - {"shared", "services"}:
            if part_of(imported) != part and not within(imported, ALLOWED[part]):
                wrong.append(f"{module} imports {imported}")
    assert wrong == [], "\n".join(wrong)


def test_no_import_cycles() -> None:
    modules = project_modules()
    graph = {
        m: {i for i in imports_of(p) if i in modules and i != m} for m, p in modules.items()
    }
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == [], cycles


def test_the_checker_sees_a_wrong_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from services.intake.verdict import route\n")
    assert imports_of(bad) == {"services.intake.verdict"}
    assert not within("services.intake.verdict", ALLOWED["shared.jobs"])
