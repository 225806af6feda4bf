"""The published contracts (docs/schemas, docs/asyncapi.json) against the code that serves them.

Three kinds of drift are caught: a model changed without regenerating the documents; the
notifier writing a field or value the event contract does not describe; the intake parser
dropping a field the intake contract promises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from jsonschema.validators import Draft202012Validator
from referencing import Registry, Resource

from services.intake.parser import BODY_FIELDS, HEADER_FIELDS
from shared import contracts
from shared.jobs import events
from shared.jobs.messages import ErrorClass, Outcome, OutcomeKind
from shared.roster.model import Implementation, SolveRequest
from shared.solving.dispatch import solve_request
from tests.requests import tiny_request

SCHEMAS = contracts.SCHEMA_DIR


def _registry() -> Registry:
    resources = [
        (p.name, Resource.from_contents(json.loads(p.read_text()))) for p in SCHEMAS.glob("*.json")
    ]
    return Registry().with_resources(resources)


def validator(file: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / file).read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(
        schema, registry=_registry(), format_checker=Draft202012Validator.FORMAT_CHECKER
    )


def test_committed_documents_match_the_models() -> None:
    stale = contracts.stale()
    assert not stale, f"regenerate with `python -m shared.contracts`: {[str(p) for p in stale]}"


def test_drift_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above must be able to fail: a field added to a model shows up as stale."""
    original = contracts.json_schemas

    def with_new_field() -> dict[str, dict[str, Any]]:
        docs = original()
        docs["solve-request.v1.json"]["properties"]["priority"] = {"type": "integer"}
        return docs

    monkeypatch.setattr(contracts, "json_schemas", with_new_field)
    assert contracts.SCHEMA_DIR / "solve-request.v1.json" in contracts.stale()


def test_every_document_is_a_valid_schema() -> None:
    for path in SCHEMAS.glob("*.json"):
        Draft202012Validator.check_schema(json.loads(path.read_text()))
    spec = json.loads(contracts.ASYNCAPI_FILE.read_text())
    assert spec["asyncapi"].startswith("3.")
    addresses = {c["address"] for c in spec["channels"].values()}
    assert addresses == {
        "workforce-solver",
        "solver.jobs",
        "{solver.jobs}:high",
        "{solver.jobs}:low",
        "solver.fallback",
        "{solver.fallback}:high",
        "{solver.fallback}:low",
        "solver.failures",
        "solver.outcomes",
        "solver-events",
        "solver.dead",
    }


def test_request_schema_accepts_what_the_model_accepts() -> None:
    v = validator("solve-request.v1.json")
    good = SolveRequest.model_validate(tiny_request()).model_dump(mode="json")
    v.validate(good)
    v.validate(tiny_request())
    with pytest.raises(jsonschema.ValidationError):
        v.validate({k: x for k, x in tiny_request().items() if k != "horizon"})
    with pytest.raises(jsonschema.ValidationError):
        v.validate(tiny_request(version=2))
    with pytest.raises(jsonschema.ValidationError):
        v.validate(tiny_request(surprise=True))  # extra="forbid" is part of the contract


def test_a_real_result_matches_the_result_schema() -> None:
    req = SolveRequest.model_validate(tiny_request())
    result = solve_request(req, implementation=Implementation.GREEDY, time_limit=2)
    doc = json.loads(result.model_dump_json())
    validator("solve-result.v1.json").validate(doc)
    broken = dict(doc, score={"penalty": 3})
    with pytest.raises(jsonschema.ValidationError):
        validator("solve-result.v1.json").validate(broken)


def _outcomes() -> list[Outcome]:
    result = json.dumps({"version": 1})
    return [
        Outcome(kind=OutcomeKind.ACCEPTED, job_id="j1"),
        Outcome(
            kind=OutcomeKind.PROGRESS,
            job_id="j1",
            progress=42.4,
            message="exploring",
            generation="12/200",
            population=30,
            eta_seconds=3.25,
            best_score="0hard/1234soft",
        ),
        # Before the search starts nothing but the message is known.
        Outcome(kind=OutcomeKind.PROGRESS, job_id="j1", message="starting"),
        Outcome(
            kind=OutcomeKind.COMPLETED,
            job_id="j1",
            result=result,
            solve_time_ms=1234.5,
            solver_used="greedy",
            attempts=2,
        ),
        Outcome(
            kind=OutcomeKind.COMPLETED,
            job_id="j1",
            result=result,
            solve_time_ms=10,
            solver_used="generetic",
            attempts=1,
            cancelled=True,
        ),
        # With the proof: a bound, its gap, and proven optimal or not; and a bound without a
        # gap (the roster breaks a hard rule).
        Outcome(
            kind=OutcomeKind.COMPLETED, job_id="j1", result=result, solve_time_ms=10,
            solver_used="generetic", attempts=1, lower_bound=1141, gap=0.005258,
            proven_optimal=False, penalty=1147, hard_violations=0,
        ),
        Outcome(
            kind=OutcomeKind.COMPLETED, job_id="j1", result=result, solve_time_ms=10,
            solver_used="generetic", attempts=1, lower_bound=5746, gap=0.0,
            proven_optimal=True, penalty=5746, hard_violations=0,
        ),
        Outcome(
            kind=OutcomeKind.COMPLETED, job_id="j1", result=result, solve_time_ms=10,
            solver_used="generetic", attempts=1, lower_bound=4000, proven_optimal=False,
            penalty=3000, hard_violations=2,
        ),
        Outcome(
            kind=OutcomeKind.COMPLETED, job_id="j1", result=result, solve_time_ms=10,
            solver_used="greedy", attempts=1, proven_optimal=False,
        ),
    ] + [
        Outcome(
            kind=OutcomeKind.FAILED,
            job_id="j1",
            error_class=ec,
            reason="employees[0].max_minutes: ...",
            attempts=0 if ec is ErrorClass.INVALID else 5,
            dead_letter_id="1700000000000-0",
        )
        for ec in ErrorClass
    ]


@pytest.mark.parametrize("outcome", _outcomes(), ids=lambda o: o.kind.value)
def test_notifier_fields_match_the_event_contract(outcome: Outcome) -> None:
    fields = outcome.event_fields()
    validator("solver-event.v1.json").validate(fields)
    validator(f"event.{fields['type']}.v1.json").validate(fields)
    # Extra fields are allowed on the wire for forward compatibility, so the schema alone
    # would not notice an undocumented field: every field written must be in the model.
    model = events.EVENT_MODELS[fields["type"]]
    assert set(fields) <= set(model.model_fields), set(fields) - set(model.model_fields)


def test_event_schema_rejects_what_clients_could_not_handle() -> None:
    v = validator("solver-event.v1.json")
    with pytest.raises(jsonschema.ValidationError):
        v.validate({"type": "solver.finished", "job_id": "j", "ts": "2026-01-01T00:00:00Z"})
    bad_class = Outcome(kind=OutcomeKind.FAILED, job_id="j", reason="r").event_fields()
    bad_class["error_class"] = "oops"
    with pytest.raises(jsonschema.ValidationError):
        v.validate(bad_class)
    no_result = {"type": "solver.completed", "job_id": "j", "ts": "2026-01-01T00:00:00Z"}
    with pytest.raises(jsonschema.ValidationError):
        v.validate(no_result)


def test_intake_parser_keeps_every_contract_field() -> None:
    schema = json.loads((SCHEMAS / "intake-entry.v1.json").read_text())
    promised = set()
    for definition in schema["$defs"].values():
        promised |= set(definition.get("properties", {}))  # an enum (Priority) has none
    assert promised <= set(BODY_FIELDS) | set(HEADER_FIELDS)


def test_content_schemas_are_linked() -> None:
    completed = json.loads((SCHEMAS / "event.solver.completed.v1.json").read_text())
    assert completed["properties"]["result"]["contentSchema"] == {"$ref": "solve-result.v1.json"}
    intake = json.loads((SCHEMAS / "intake-entry.v1.json").read_text())
    payload = intake["$defs"]["SolveEntry"]["properties"]["payload"]
    assert payload["contentSchema"] == {"$ref": "solve-request.v1.json"}


def test_check_command_reports_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contracts, "SCHEMA_DIR", tmp_path / "schemas")
    monkeypatch.setattr(contracts, "ASYNCAPI_FILE", tmp_path / "asyncapi.json")
    monkeypatch.setattr(contracts, "ROOT", tmp_path)
    assert contracts.main(["--check"]) == 1
    assert contracts.main([]) == 0
    assert contracts.main(["--check"]) == 0
    (tmp_path / "schemas" / "solve-request.v1.json").write_text("{}\n")
    assert contracts.main(["--check"]) == 1
