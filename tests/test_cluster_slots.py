"""Every multi-key script and transaction keeps to one Redis Cluster slot, whatever the names.

The keys each one touches (shared/names.py) are hashed with redis-py's own `key_slot` (the
Cluster specification's CRC16 with hash tags) for arbitrary prefixes, stream names and job ids,
braces included. A real cluster refuses what fails here (tests/test_cluster.py shows the
refusal, and runs every flow there); this test covers the names the suite does not happen to
use. Settings refuse the few prefixes and stream names that cannot be laid out this way, with
a message naming the variable.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from redis.crc import key_slot

from shared.names import READ_ORDER, Names
from shared.settings import Settings, hash_tag, settings_error

NAME_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",))
names_text = st.text(alphabet=st.sampled_from("ab:{}.-_x"), max_size=12) | st.text(
    NAME_CHARS, max_size=12
)
job_ids = st.text(NAME_CHARS, min_size=1, max_size=200) | st.text(
    alphabet=st.sampled_from("{}ab:"), min_size=1, max_size=8
)


def slot(key: str) -> int:
    return int(key_slot(key.encode()))


def one_slot(*keys: str) -> bool:
    return len({slot(k) for k in keys}) == 1


def names_for(prefix: str, jobs: str, events: str, fallback: str = "") -> Names:
    try:
        s = Settings(
            shiftstream_prefix=prefix, stream_jobs=jobs or "solver.jobs",
            stream_events=events or "solver-events", stream_fallback=fallback or "solver.fallback",
        )  # fmt: skip
    except ValidationError:
        assume(False)
        raise
    return Names.from_settings(s)


@settings(max_examples=400, deadline=None)
@given(
    prefix=names_text, jobs=names_text, events=names_text, fallback=names_text, job_id=job_ids,
    dl=job_ids,
)  # fmt: skip
def test_each_script_and_transaction_touches_one_slot(
    prefix: str, jobs: str, events: str, fallback: str, job_id: str, dl: str
) -> None:
    n = names_for(prefix, jobs, events, fallback)
    schedules = [n.schedule_for(p) for p in READ_ORDER]
    # shared/jobs/promote_due.lua: the not_before entries, every priority's schedule and stream
    assert one_slot(n.scheduled, *schedules, *(n.jobs_for(p) for p in READ_ORDER))
    # services/intake/watch_stream.lua touches the intake stream alone.
    # shared/jobs/schedule.py: a cancel's pipeline (ZREM from each schedule, HDEL)
    assert one_slot(*schedules, n.scheduled)
    # shared/streaming/priority_read.lua (and the XREAD that waits on the same streams)
    assert one_slot(*n.prioritized(n.jobs))
    assert one_slot(*n.prioritized(n.fallback))
    # services/notifier/emit_event.lua
    assert one_slot(n.terminal(job_id), n.events)
    # shared/jobs/replay_keys.lua
    assert one_slot(n.idempotency(job_id), n.job(job_id), n.cancel(job_id), n.replay_mark(job_id))
    # shared/jobs/replay_guard.lua
    assert one_slot(n.terminal(job_id), n.replayed(dl))
    # The notifier's fence goes with the events it guards (one node to WAIT on).
    assert one_slot(n.fence("notifier-1"), n.events)


@settings(max_examples=200, deadline=None)
@given(job_id=job_ids, other=job_ids)
def test_job_keys_stay_apart_between_jobs(job_id: str, other: str) -> None:
    """The `@` form for ids starting with `}` never collides with another job's key."""
    assume(job_id != other)
    n = Names.from_settings(Settings())
    for kind in (n.job, n.idempotency, n.cancel, n.replay_mark):
        assert kind(job_id) != kind(other)


def test_the_default_names_spread_over_slots() -> None:
    """Jobs land on different slots (so on different nodes), streams too: nothing forces a
    deployment onto one node unless its prefix asks for it."""
    n = Names.from_settings(Settings())
    assert len({slot(n.job(f"job-{i}")) for i in range(50)}) > 40
    streams = (n.intake, n.jobs, n.fallback, n.failures, n.outcomes, n.events, n.dead)
    assert len({slot(s) for s in streams}) == len(streams)
    one = Names.from_settings(Settings(shiftstream_prefix="{prod}:"))
    assert one_slot(one.intake, one.jobs, one.events, one.job("a"), one.schedule)


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"shiftstream_prefix": "{prod:"}, "SHIFTSTREAM_PREFIX"),
        ({"shiftstream_prefix": "x{}"}, "SHIFTSTREAM_PREFIX"),
        ({"stream_jobs": "a}b"}, "STREAM_JOBS"),
        ({"stream_fallback": "f}b"}, "STREAM_FALLBACK"),
        ({"stream_events": "ev{}x"}, "STREAM_EVENTS"),
    ],
)
def test_names_that_cannot_share_a_slot_are_refused(variables: dict[str, str], named: str) -> None:
    with pytest.raises(ValidationError) as err:
        Settings(**variables)
    assert named in settings_error(err.value)


def test_hash_tag_follows_the_cluster_rule() -> None:
    assert hash_tag("{user1000}.following") == "user1000"
    assert hash_tag("foo{}{bar}") is None
    assert hash_tag("foo{{bar}}zap") == "{bar"
    assert hash_tag("foo{bar}{zap}") == "bar"
    assert hash_tag("plain") is None
