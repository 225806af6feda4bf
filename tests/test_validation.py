"""Every validation rule of request v1: rejected with a message naming the field and value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.errors import InvalidRequest
from shared.roster.limits import Limits
from shared.roster.parse import parse_request
from tests.requests import tiny_request


def reason_for(doc: dict[str, Any] | str, limits: Limits | None = None) -> str:
    raw = doc if isinstance(doc, str) else json.dumps(doc)
    with pytest.raises(InvalidRequest) as info:
        parse_request(raw, limits)
    return info.value.reason


def with_employee(**fields: Any) -> dict[str, Any]:
    return tiny_request(employees=[{"id": "A", **fields}])


def test_valid_request_passes() -> None:
    req = parse_request(json.dumps(tiny_request()))
    assert req.version == 1 and len(req.employees) == 2


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        # unknown references
        (
            tiny_request(
                shift_types=[{"id": "E", "length_minutes": 480, "cannot_follow": ["X"]}], cover=[]
            ),
            "shift_types[0].cannot_follow: unknown shift type 'X'",
        ),
        (
            tiny_request(cover=[{"day": 0, "shift": "Q", "required": 1}]),
            "cover[0].shift: unknown shift type 'Q'",
        ),
        (
            with_employee(max_shifts={"Z": 3}),
            "employees[0] ('A').max_shifts: unknown shift type 'Z'",
        ),
        (
            with_employee(shift_on_requests=[{"day": 1, "shift": "X", "weight": 1}]),
            "employees[0] ('A').shift_on_requests[0].shift: unknown shift type 'X'",
        ),
        (
            with_employee(shift_off_requests=[{"day": 1, "shift": "X", "weight": 1}]),
            "employees[0] ('A').shift_off_requests[0].shift: unknown shift type 'X'",
        ),
        # duplicate ids
        (
            tiny_request(employees=[{"id": "A"}, {"id": "A"}]),
            "duplicate id 'A' in employees",
        ),
        (
            tiny_request(
                shift_types=[{"id": "E", "length_minutes": 480}, {"id": "E", "length_minutes": 60}],
                cover=[],
            ),
            "duplicate id 'E' in shift_types",
        ),
        (
            tiny_request(cover=[{"day": 0, "shift": "E", "required": 1}] * 2),
            "cover[1]: duplicate cover for day 0 shift 'E'",
        ),
        # negative weights and counts
        (
            tiny_request(cover=[{"day": 0, "shift": "E", "required": 1, "under_weight": -5}]),
            "cover[0].under_weight: Input should be greater than or equal to 0 (got -5)",
        ),
        (
            tiny_request(cover=[{"day": 0, "shift": "E", "required": 1, "over_weight": -1}]),
            "cover[0].over_weight",
        ),
        (
            with_employee(shift_on_requests=[{"day": 1, "shift": "E", "weight": -2}]),
            "employees[0] ('A').shift_on_requests[0].weight",
        ),
        (tiny_request(cover=[{"day": 0, "shift": "E", "required": -1}]), "cover[0].required"),
        # impossible bounds
        (
            with_employee(min_minutes=5000, max_minutes=4000),
            "employee 'A': min_minutes 5000 exceeds max_minutes 4000",
        ),
        (
            with_employee(min_consecutive_shifts=4, max_consecutive_shifts=3),
            "employee 'A': min_consecutive_shifts 4 exceeds max_consecutive_shifts 3",
        ),
        (
            tiny_request(shift_types=[{"id": "E", "length_minutes": 0}], cover=[]),
            "shift_types[0] ('E').length_minutes",
        ),
        (
            tiny_request(horizon={"days": 0}),
            "horizon.days: Input should be greater than or equal to 1 (got 0)",
        ),
        # days outside the horizon
        (
            tiny_request(cover=[{"day": 14, "shift": "E", "required": 1}]),
            "cover[0].day: day 14 is outside the horizon of 14 days",
        ),
        (
            with_employee(days_off=[20]),
            "employees[0] ('A').days_off: day 20 is outside the horizon",
        ),
        (
            with_employee(shift_on_requests=[{"day": 99, "shift": "E"}]),
            "employees[0] ('A').shift_on_requests[0].day: day 99 is outside the horizon",
        ),
        # rest rules need start times
        (
            tiny_request(
                min_rest_minutes=660, shift_types=[{"id": "E", "length_minutes": 480}], cover=[]
            ),
            "min_rest_minutes needs a start time on every shift type; shift_types 'E' has none",
        ),
        # shape of the document
        (tiny_request(version=2), "version: Input should be 1 (got 2)"),
        (tiny_request(colour="red"), "colour: Extra inputs are not permitted"),
        ({"version": 1, "horizon": {"days": 3}}, "shift_types: Field required"),
        (tiny_request(employees="A,B"), "employees: Input should be a valid array (got 'A,B')"),
        ("{not json", "payload is not valid JSON"),
        ("[]", "Input should be an object"),
    ],
)
def test_rejected_with_a_named_field(doc: dict[str, Any] | str, expected: str) -> None:
    assert expected in reason_for(doc)


def test_size_limits_are_configurable() -> None:
    small = Limits(max_employees=1, max_days=7, max_shift_types=1, max_json_bytes=100_000)
    reason = reason_for(tiny_request(), small)
    assert "horizon.days: 14 is over the limit of 7" in reason
    assert "employees: 2 is over the limit of 1" in reason_for(
        tiny_request(horizon={"days": 7}, cover=[]), Limits(max_employees=1)
    )
    assert "shift_types: 2 is over the limit of 1" in reason_for(
        tiny_request(), Limits(max_shift_types=1)
    )


def test_json_size_limit_checked_before_parsing() -> None:
    raw = json.dumps(tiny_request(name="x" * 150))
    assert f"payload: {len(raw)} bytes is over the limit of 100 bytes" == reason_for(
        raw, Limits(max_json_bytes=100)
    )


def test_default_limits() -> None:
    assert Limits() == Limits(
        max_employees=5000, max_days=366, max_shift_types=64, max_json_bytes=8 * 1024 * 1024
    )
    over = tiny_request(horizon={"days": 367}, cover=[])
    assert "horizon.days: 367 is over the limit of 366" in reason_for(over)


def test_duplicate_id_named_is_the_first_id_repeated() -> None:
    doc = tiny_request(employees=[{"id": "A"}, {"id": "B"}, {"id": "B"}, {"id": "A"}])
    assert "duplicate id 'A' in employees" in reason_for(doc)
