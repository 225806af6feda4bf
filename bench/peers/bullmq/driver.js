// BullMQ driver: the same protocol as ../driver.py (queue N with no worker, start the worker,
// throughput first completion -> last, then M one at a time for latency), printing the same
// `RESULT {json}` line. Done = the worker's XADD on bench:done, read with XREAD BLOCK.
"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { Queue } = require("bullmq");
const IORedis = require("ioredis");

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}
const url = arg("url", process.env.REDIS_URL || "redis://127.0.0.1:6379/0");
const round = Number(arg("round", "0"));
const jobs = Number(arg("jobs", "10000"));
const latencyJobs = Number(arg("latency-jobs", "500"));
const warmup = Number(arg("warmup", "10"));
const throughputBudget = Number(arg("throughput-budget", "120")) * 1000;
const latencyBudget = Number(arg("latency-budget", "30")) * 1000;
const logPath = arg("log", "/dev/null");
const concurrency = process.env.BULLMQ_CONCURRENCY || "10";

const now = () => Number(process.hrtime.bigint()) / 1e6; // ms

// Linear interpolation, as benchstats.percentile.
function percentile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  const pos = ((s.length - 1) * q) / 100;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

// User+system CPU seconds of the worker process, as driver.py's cpu_seconds (one process here).
const CLK_TCK = 100; // Linux's USER_HZ on every platform node runs this on
function cpuSeconds(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop().trim().split(/\s+/);
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return null;
  }
}

async function main() {
  const r = new IORedis(url);
  const queue = new Queue("bench", { connection: new IORedis(url, { maxRetriesPerRequest: null }) });
  const result = {
    system: "bullmq",
    round,
    notes: `BullMQ ${require("bullmq/package.json").version} on Node ${process.version}, one Worker process, concurrency ${concurrency}, defaults otherwise`,
  };

  let t0 = now();
  for (let start = 0; start < jobs; start += 1000) {
    const batch = [];
    for (let i = start; i < Math.min(jobs, start + 1000); i++) {
      batch.push({ name: "noop", data: { id: `t${round}-${i}` } });
    }
    await queue.addBulk(batch);
  }
  result.enqueue_jobs_s = jobs / ((now() - t0) / 1000);

  const log = fs.openSync(logPath, "a");
  const worker = spawn(process.execPath, [path.join(__dirname, "worker.js")], {
    env: { ...process.env, REDIS_URL: url, BULLMQ_CONCURRENCY: concurrency },
    stdio: ["ignore", log, log],
    detached: true, // own process group, stopped as a whole
  });

  let last = "0";
  const seen = new Set();
  let duplicates = 0;
  async function read(blockMs) {
    const got = await r.xread("COUNT", 5000, "BLOCK", blockMs, "STREAMS", "bench:done", last);
    const ids = [];
    for (const [, entries] of got || []) {
      for (const [id, fields] of entries) {
        last = id;
        const jid = fields[fields.indexOf("id") + 1];
        if (seen.has(jid)) {
          duplicates++;
          continue;
        }
        seen.add(jid);
        ids.push(jid);
      }
    }
    return ids;
  }

  try {
    const tStart = now();
    let tFirst = null;
    let tLast = null;
    let firstCount = 0;
    let cpuAtFirst = null;
    while (seen.size < jobs && now() - tStart < throughputBudget) {
      const got = await read(200);
      const t = now();
      if (got.length && tFirst === null) {
        tFirst = t;
        firstCount = got.length;
        cpuAtFirst = cpuSeconds(worker.pid);
      }
      if (got.length) tLast = t;
      if (worker.exitCode !== null) throw new Error(`worker exited early; see ${logPath}`);
    }
    const done = seen.size;
    const cpuNow = cpuSeconds(worker.pid);
    if (cpuAtFirst !== null && cpuNow !== null) {
      const perJob = (1000 * (cpuNow - cpuAtFirst)) / Math.max(done - firstCount, 1);
      result.worker_cpu_ms_per_job = { [`node worker.js [${worker.pid}]`]: Number(perJob.toFixed(3)) };
      result.worker_cpu_ms_per_job_total = Number(perJob.toFixed(3));
    }
    Object.assign(result, {
      jobs,
      done,
      complete: done >= jobs,
      duplicates,
      startup_to_first_done_s: tFirst === null ? null : (tFirst - tStart) / 1000,
      throughput_jobs_s:
        tFirst !== null && tLast > tFirst && done > firstCount
          ? (done - firstCount) / ((tLast - tFirst) / 1000)
          : null,
    });

    const samples = [];
    const latDeadline = now() + latencyBudget;
    for (let i = 0; i < warmup + latencyJobs && now() < latDeadline; i++) {
      const jid = `l${round}-${i}`;
      t0 = now();
      await queue.add("noop", { id: jid });
      while (!seen.has(jid)) {
        const got = await read(5000);
        if (!got.length && !seen.has(jid) && now() > latDeadline + 5000) break;
      }
      if (seen.has(jid) && i >= warmup) samples.push(now() - t0);
    }
    result.latency_ms = {
      n: samples.length,
      requested: latencyJobs,
      p50: samples.length ? percentile(samples, 50) : null,
      p99: samples.length ? percentile(samples, 99) : null,
      mean: samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : null,
      max: samples.length ? Math.max(...samples) : null,
    };
  } finally {
    try {
      process.kill(-worker.pid, "SIGTERM");
    } catch {}
    await new Promise((res) => {
      const timer = setTimeout(() => {
        try {
          process.kill(-worker.pid, "SIGKILL");
        } catch {}
        res();
      }, 10000);
      worker.on("exit", () => {
        clearTimeout(timer);
        res();
      });
      if (worker.exitCode !== null) {
        clearTimeout(timer);
        res();
      }
    });
    await queue.close();
    r.disconnect();
  }
  console.log("RESULT " + JSON.stringify(result));
  // The connections handed to Queue stay open after queue.close(); nothing is left to do.
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
