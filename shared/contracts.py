"""Generate the published contracts: JSON Schemas into docs/schemas, AsyncAPI into docs/.

    python -m shared.contracts            # (re)write docs/schemas/*.json and docs/asyncapi.json
    python -m shared.contracts --check    # exit 1 if the committed files are out of date

Everything is generated from the pydantic models (the request and result in
`shared.roster.model`, the public entries in `shared.jobs.events`, the internal records in
`shared.jobs.messages`), so the documents cannot say something the code does not accept; the
contract test regenerates in memory and fails when the committed files drift.

The AsyncAPI document comes from a docs-only FastStream app rather than from the service apps:
the public streams carry flat string fields that the intake reads through a custom parser and
the notifier writes with a Lua script, so no service subscriber or publisher is declared with
the public models. The docs app declares every stream once, with the model actually on it, and
takes the stream names from `Settings`/`Names`, the same source the services use.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from faststream import FastStream
from faststream.redis import RedisBroker, StreamSub
from faststream.specification import AsyncAPI
from pydantic import BaseModel, TypeAdapter

from shared.jobs import events, messages
from shared.names import READ_ORDER, Names
from shared.roster.model import SolveRequest, SolveResult
from shared.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "docs" / "schemas"
ASYNCAPI_FILE = ROOT / "docs" / "asyncapi.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
CONTRACT_VERSION = "1.0.0"


def _link_content(node: Any) -> None:
    """Point JSON-text fields (`payload`, `result`) at the schema of the JSON they carry."""
    if isinstance(node, dict):
        for name, prop in (node.get("properties") or {}).items():
            if name in events.CONTENT_SCHEMAS and "contentMediaType" in prop:
                prop["contentSchema"] = {"$ref": events.CONTENT_SCHEMAS[name]}
        for value in node.values():
            _link_content(value)
    elif isinstance(node, list):
        for value in node:
            _link_content(value)


def _document(schema: dict[str, Any], file: str, title: str, description: str) -> dict[str, Any]:
    _link_content(schema)
    # `$id` is the bare file name so that `contentSchema: {"$ref": "solve-result.v1.json"}` in
    # the event schemas resolves to the sibling file wherever the folder is served from.
    return {"$schema": DRAFT, "$id": file, "title": title, "description": description} | {
        k: v for k, v in schema.items() if k not in ("title", "description")
    }


def _model(model: type[BaseModel], mode: str = "validation") -> dict[str, Any]:
    return model.model_json_schema(mode=mode)  # type: ignore[arg-type]


def json_schemas() -> dict[str, dict[str, Any]]:
    """File name -> JSON Schema document, for every public contract."""
    docs: dict[str, dict[str, Any]] = {
        "solve-request.v1.json": _document(
            _model(SolveRequest),
            "solve-request.v1.json",
            "SolveRequest v1",
            "The `payload` of a solve entry on `workforce-solver`. Cross-field rules (unknown "
            "shift or employee references, days outside the horizon, size limits) are checked "
            "by the service and reported as solver.failed/invalid with the field named.",
        ),
        "solve-result.v1.json": _document(
            _model(SolveResult, "serialization"),
            "solve-result.v1.json",
            "SolveResult v1",
            "The `result` of a solver.completed event: the roster with its score and the "
            "per-rule explanation.",
        ),
        "intake-entry.v1.json": _document(
            TypeAdapter(events.IntakeRequest).json_schema(),
            "intake-entry.v1.json",
            "workforce-solver entry v1",
            "The flat string fields of one entry XADDed to the public intake stream.",
        ),
        "solver-event.v1.json": _document(
            TypeAdapter(events.PublicEvent).json_schema(mode="serialization"),
            "solver-event.v1.json",
            "solver-events entry v1",
            "The flat string fields of one entry on the public events stream; `type` tells "
            "which. Ignore fields you do not know: new optional fields may be added in v1.",
        ),
    }
    for name, model in events.EVENT_MODELS.items():
        file = f"event.{name}.v1.json"
        docs[file] = _document(
            _model(model, "serialization"), file, name, (model.__doc__ or "").strip()
        )
    return docs


def docs_app(settings: Settings | None = None) -> FastStream:
    """A FastStream app that only describes: every stream, who reads it, what is on it."""
    names = Names.from_settings(settings or Settings(shiftstream_prefix=""))
    broker = RedisBroker(
        "redis://localhost:6379",
        description="The Redis server of the deployment (REDIS_URL).",
    )

    def reader(stream: str, group: str, model: Any, title: str, description: str) -> None:
        async def handler(body: Any) -> None:  # pragma: no cover - never run, only described
            return None

        handler.__annotations__["body"] = model
        broker.subscriber(
            stream=StreamSub(stream, group=group, consumer="docs"),
            title=title,
            description=description,
        )(handler)

    def writer(stream: str, model: Any, title: str, description: str) -> None:
        broker.publisher(stream=stream, schema=model, title=title, description=description)

    reader(
        names.intake,
        "intake",
        events.IntakeRequest,
        f"{names.intake}:intake",
        "PUBLIC. Solve and cancel requests from any producer, as flat string fields (XADD). "
        "job_id is the idempotency key.",
    )
    writer(
        names.events,
        events.PublicEvent,
        f"{names.events}:notifier",
        "PUBLIC. solver.accepted, solver.progress, solver.completed, solver.failed as flat "
        "string fields; exactly one terminal event per job id. Consumers read it with "
        "XREADGROUP in a group of their own.",
    )
    for p in READ_ORDER:
        # One stream per priority, read highest first (docs/decisions/0016-priorities.md).
        jobs, fallback = names.jobs_for(p), names.fallback_for(p)
        reader(
            jobs,
            "solver",
            messages.Job,
            f"{jobs}:solver",
            f"Internal. Validated {p.value}-priority jobs, written by intake and by triage "
            "(retries, delayed jobs); the solver reads high, then normal, then low.",
        )
        reader(
            fallback,
            "fallback",
            messages.FallbackJob,
            f"{fallback}:fallback",
            f"Internal. {p.value.capitalize()}-priority jobs whose primary solve failed, with "
            "the error; solved with greedy, high first.",
        )
    reader(
        names.failures,
        "triage",
        messages.FailureRecord,
        f"{names.failures}:triage",
        "Internal. Failure records from intake, solver and fallback; triage retries or "
        "dead-letters them.",
    )
    reader(
        names.outcomes,
        "notifier",
        messages.Outcome,
        f"{names.outcomes}:notifier",
        "Internal. Accepted, progress, completed and failed outcomes; the notifier turns "
        "them into public events.",
    )
    writer(
        names.dead,
        messages.DeadLetter,
        f"{names.dead}:triage",
        "Operators. Jobs that will not be retried, with their whole history; listed, shown "
        "and replayed with the CLI.",
    )
    return FastStream(
        broker,
        specification=AsyncAPI(
            broker,
            title="ShiftStream",
            version=CONTRACT_VERSION,
            description="Streams of ShiftStream. The two PUBLIC streams are the contract with "
            "callers; the others are internal and may change without notice.",
        ),
    )


app = docs_app()


def asyncapi() -> dict[str, Any]:
    spec: dict[str, Any] = app.schema.to_specification().to_jsonable()
    return spec


def rendered() -> dict[Path, str]:
    """Every generated file with its exact text, so the check compares bytes."""
    out = {
        SCHEMA_DIR / name: json.dumps(doc, indent=2, sort_keys=False) + "\n"
        for name, doc in json_schemas().items()
    }
    # FastStream orders channels by its subscriber registry, which is not stable between
    # processes; sorted keys make the file reproducible.
    out[ASYNCAPI_FILE] = json.dumps(asyncapi(), indent=2, sort_keys=True) + "\n"
    return out


def stale() -> list[Path]:
    files = rendered()
    on_disk = set(SCHEMA_DIR.glob("*.json")) | {ASYNCAPI_FILE}
    changed = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
    return sorted(changed + [p for p in on_disk - files.keys() if p.exists()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.contracts", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if files are out of date")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale()
        for p in bad:
            print(f"out of date: {p.relative_to(ROOT)}", file=sys.stderr)
        return 1 if bad else 0
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    files = rendered()
    for old in set(SCHEMA_DIR.glob("*.json")) - files.keys():
        old.unlink()
    for path, text in files.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
