// BullMQ peer worker: one Node process, a no-op processor that signals "done" with one XADD,
// the same signal every peer gives (see ../workers/common.py).
"use strict";
const { Worker } = require("bullmq");
const IORedis = require("ioredis");

const url = process.env.REDIS_URL || "redis://127.0.0.1:6379/0";
const concurrency = Number(process.env.BULLMQ_CONCURRENCY || "10");
// BullMQ requires maxRetriesPerRequest null on the connections its workers block on.
const connection = new IORedis(url, { maxRetriesPerRequest: null });
const done = new IORedis(url);

const worker = new Worker(
  "bench",
  async (job) => {
    await done.xadd("bench:done", "*", "id", job.data.id);
  },
  { connection, concurrency },
);

async function stop() {
  await worker.close();
  done.disconnect();
  connection.disconnect();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
