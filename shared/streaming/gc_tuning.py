"""Garbage-collector settings for a long-running service process.

A batch of requests keeps dozens of freshly parsed model trees alive at once, and CPython's
default young-generation threshold (700 allocations) then runs a collection every few
thousand objects, each one walking every young object still alive. Measured on the benchmark
roster (bench/README.md): parsing a batch of 64 requests cost 35–48 µs a request with the
defaults and 20 µs with a 50,000 threshold, the same as with the collector off. Almost all of
a service's garbage is freed by reference counting anyway; the collector is only for cycles,
which are rare here, so running it less often loses nothing but a little peak memory.

`gc.freeze()` moves everything allocated at start-up (modules, pydantic schemas, the broker)
into a permanent generation, so the occasional full collection no longer walks those
~70,000 objects every time.
"""

from __future__ import annotations

import gc

# Young-generation threshold: allocations minus deallocations between collections.
YOUNG_THRESHOLD = 50_000
# How many young collections per middle one, and middle per full one (CPython's defaults
# are 10 and 10; a full collection is the costly kind).
MIDDLE_EVERY = 20
FULL_EVERY = 100


def tune_for_service() -> None:
    """Call once, after the app is built and before it starts serving."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_EVERY, FULL_EVERY)
