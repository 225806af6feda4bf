"""How many BullMQ jobs one bridge process holds, and what that costs (docs/coming-from-bullmq.md).

    python bench/bridge_capacity.py                       # 1,000 / 5,000 / 10,000 held jobs
    python bench/bridge_capacity.py --held 2000 --payload large

Starts its own Redis and one bridge process (`python -m services.bridge`, BULLMQ_CONCURRENCY =
the held count) and no other service, so nothing ever ends: every job the bridge takes stays
held, as when ShiftStream has a long queue. For each size it adds that many BullMQ jobs
(Python `bullmq` Queue.addBulk; `small` = a generated 8-employee request, 7 KB; `large` = 80
employees, 28 KB), then reports:

- trickle: 200 jobs added one at a time (20 ms apart), as a monolith adds them when nothing
  queues up: Redis commands and bridge CPU per job;
- take: seconds until every job of the backlog is handed over (intake entries), and jobs/s;
- RSS of the bridge with its slots empty and with them all held (memory follows
  BULLMQ_CONCURRENCY: an empty slot is a fetch the official Worker keeps queued), and the
  difference per held job;
- CPU while holding (lock renewals, the removal/lock check, the events reader), per second;
- Redis memory per held job (the BullMQ job, its intake entry, the bridge's job-id claim);
- give-back: seconds from SIGTERM until every job is back in BullMQ's queue.

Writes bench/results/bridge-capacity-<stamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bullmq import Queue  # noqa: E402

from shared.cli.devrunner import EmbeddedServer, service_env  # noqa: E402
from shared.roster.generator import generate  # noqa: E402

PAYLOADS = {"small": (8, 30), "large": (80, 200)}
TRICKLE = 200


async def commands(r: Any) -> int:
    stats = await r.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(url: str, held: int, payload_kind: str, log: Path) -> dict[str, Any]:
    import redis.asyncio as aioredis

    employees, shifts = PAYLOADS[payload_kind]
    data = json.loads(generate(employees=employees, shifts=shifts, seed=1).model_dump_json())
    prefix, bull = f"cap{uuid.uuid4().hex[:6]}:", f"bull{uuid.uuid4().hex[:6]}"
    r = aioredis.Redis.from_url(url)
    await r.config_set("maxmemory-policy", "noeviction")
    queue = Queue("workforce-solver", {"connection": url, "prefix": bull})
    env = service_env(url, {
        "SHIFTSTREAM_PREFIX": prefix, "BULLMQ_QUEUES": "workforce-solver",
        "BULLMQ_PREFIX": bull, "BULLMQ_CONCURRENCY": str(held + TRICKLE),
        "CONSUMER_NAME": "capacity",
        "LOG_LEVEL": "WARNING",
    })  # fmt: skip
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.bridge"], env=env, cwd=REPO,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        heartbeat = f"{prefix}bridge:heartbeat:capacity"
        while not await r.exists(heartbeat):
            if proc.poll() is not None:
                raise RuntimeError(f"bridge exited; see {log}")
            await asyncio.sleep(0.1)
        intake = f"{prefix}workforce-solver"
        await asyncio.sleep(1)
        n0, c0 = await commands(r), cpu_s(proc.pid)
        for i in range(TRICKLE):
            await queue.add("solve", data, {"jobId": f"trickle-{i}", "attempts": 3})
            await asyncio.sleep(0.02)
        while await r.xlen(intake) < TRICKLE:
            await asyncio.sleep(0.05)
        # The producer's own calls (one script per add) are in the count too.
        trickle_cmds = (await commands(r) - n0) / TRICKLE
        trickle_cpu = (cpu_s(proc.pid) - c0) / TRICKLE
        rss_idle = rss_mb(proc.pid)
        mem0 = int((await r.info("memory"))["used_memory"])
        for start in range(0, held, 500):
            await queue.addBulk([
                {"name": "solve", "data": data, "opts": {"jobId": f"cap-{i}", "attempts": 3}}
                for i in range(start, min(held, start + 500))
            ])  # fmt: skip
        mem_queued = int((await r.info("memory"))["used_memory"])
        t0, c0 = time.monotonic(), cpu_s(proc.pid)
        while await r.xlen(intake) < held + TRICKLE:
            await asyncio.sleep(0.05)
        take = time.monotonic() - t0
        take_cpu = cpu_s(proc.pid) - c0
        await asyncio.sleep(3)  # let the heap settle
        rss_held = rss_mb(proc.pid)
        mem_held = int((await r.info("memory"))["used_memory"])
        c1, t1 = cpu_s(proc.pid), time.monotonic()
        await asyncio.sleep(10)
        idle_cpu = (cpu_s(proc.pid) - c1) / (time.monotonic() - t1)
        t2 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(120)
        give_back = time.monotonic() - t2
        counts = await queue.getJobCounts("active", "waiting", "delayed", "prioritized")
        return {
            "held": held,
            "payload": payload_kind,
            "payload_bytes": len(json.dumps(data)),
            "trickle_redis_commands_per_job": round(trickle_cmds, 1),
            "trickle_cpu_ms_per_job": round(1000 * trickle_cpu, 2),
            "take_s": round(take, 2),
            "take_jobs_s": round(held / take),
            "take_cpu_ms_per_job": round(1000 * take_cpu / held, 3),
            "rss_idle_mb": round(rss_idle, 1),
            "rss_held_mb": round(rss_held, 1),
            "rss_kb_per_held_job": round((rss_held - rss_idle) * 1024 / (held + TRICKLE), 2),
            "cpu_while_holding_pct": round(100 * idle_cpu, 2),
            "redis_bytes_per_job_queued_in_bullmq": round((mem_queued - mem0) / held),
            "redis_bytes_per_job_held": round((mem_held - mem0) / held),
            "note": f"RSS per job over all {held + TRICKLE} held (the trickle's too)",
            "give_back_s": round(give_back, 2),
            "exit_status": code,
            "after_give_back": counts,
        }
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        await queue.obliterate(force=True)
        await queue.close()
        await r.aclose()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--held", type=int, action="append", help="held jobs (repeatable)")
    ap.add_argument("--payload", choices=sorted(PAYLOADS), action="append")
    args = ap.parse_args(argv)
    # A SIGTERM (timeout, Ctrl-C in a pipe) must still stop the Redis server and the bridge.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = args.held or [1_000, 5_000, 10_000]
    kinds = args.payload or ["small", "large"]
    server = EmbeddedServer().start()
    log = Path(tempfile.gettempdir()) / "shiftstream-bridge-capacity.log"
    rows = []
    try:
        for kind in kinds:
            for held in sizes:
                row = asyncio.run(measure(server.url, held, kind, log))
                rows.append(row)
                print(
                    f"{row['held']:>6} held, {kind:<5} ({row['payload_bytes']:>6} B): trickle "
                    f"{row['trickle_redis_commands_per_job']:.0f} cmds, "
                    f"{row['trickle_cpu_ms_per_job']:.2f} ms CPU/job; take "
                    f"{row['take_s']:>6.1f} s ({row['take_jobs_s']:>5} jobs/s, "
                    f"{row['take_cpu_ms_per_job']:.2f} ms CPU/job); RSS {row['rss_idle_mb']:.0f}"
                    f" -> {row['rss_held_mb']:.0f} MB ({row['rss_kb_per_held_job']:.1f} KB/job);"
                    f" holding {row['cpu_while_holding_pct']:.1f} % CPU; Redis "
                    f"{row['redis_bytes_per_job_held'] / 1024:.1f} KB/job; give-back "
                    f"{row['give_back_s']:.1f} s",
                    flush=True,
                )
    finally:
        server.stop()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    (REPO / "bench" / "results").mkdir(exist_ok=True)
    out = REPO / "bench" / "results" / f"bridge-capacity-{stamp}.json"
    out.write_text(json.dumps({"benchmark": "bridge-capacity", "created": stamp,
                               "cpus": os.cpu_count(), "loadavg": os.getloadavg(),
                               "rows": rows}, indent=2))  # fmt: skip
    print(f"wrote {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
