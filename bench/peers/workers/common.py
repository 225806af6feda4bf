"""Names shared by every peer worker and the driver: where jobs go and where "done" is written.

Every peer's no-op handler does exactly one thing, `XADD bench:done * id <job id>`, because the
ShiftStream pipeline's "done" is also one XADD (the notifier's `solver.completed`); the driver
observes all systems the same way, by reading a stream.
"""

from __future__ import annotations

import os

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
DONE_STREAM = "bench:done"
QUEUE = "bench"
GROUP = "bench"
