#!/usr/bin/env node
// A monolith that asks for rosters through BullMQ, the way such monoliths already do, with a
// Python worker consuming the `workforce-solver` queue. Nothing in this file knows ShiftStream:
// run ShiftStream with BULLMQ_QUEUES=workforce-solver and its bridge consumes the queue instead
// of that worker (docs/coming-from-bullmq.md).
//
//   node index.js --redis-url redis://localhost:6379/0 --plan 42=request.json \
//                 [--plan 43=other.json ...] --out-dir rosters/ [--timeout 120] \
//                 [--queue workforce-solver] [--prefix bull]
//
// Each plan is added as `queue.add('solve', rosterData, { jobId: 'roster-<plan>', attempts: 3,
// backoff: { type: 'exponential', delay: 2000 }, priority: 1 })`; QueueEvents reports progress,
// completion and failure as they happen (one JSON line each on stdout), and
// `job.waitUntilFinished(queueEvents)` hands back the roster, written to
// <out-dir>/roster-<plan>.json. Exit 0 when every plan got a roster, 1 when one failed,
// 2 when one did not finish within --timeout seconds.

'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { Queue, QueueEvents, Job } = require('bullmq');
const IORedis = require('ioredis');

const USAGE =
  'usage: node index.js --redis-url URL --plan ID=FILE [--plan ID=FILE ...] --out-dir DIR ' +
  '[--timeout SECONDS] [--queue NAME] [--prefix PREFIX]';

function parseArgs(argv) {
  const opts = {
    redisUrl: process.env.REDIS_URL || 'redis://localhost:6379/0',
    queue: 'workforce-solver',
    prefix: 'bull',
    timeout: 120,
    plans: [],
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
    if (flag === '--redis-url') opts.redisUrl = value;
    else if (flag === '--queue') opts.queue = value;
    else if (flag === '--prefix') opts.prefix = value;
    else if (flag === '--out-dir') opts.outDir = value;
    else if (flag === '--timeout') opts.timeout = Number(value);
    else if (flag === '--plan') {
      const eq = value.indexOf('=');
      if (eq < 1) throw new Error(`--plan ${value}: expected ID=FILE\n${USAGE}`);
      opts.plans.push({ planId: value.slice(0, eq), file: value.slice(eq + 1) });
    } else throw new Error(`unknown option ${flag}\n${USAGE}`);
  }
  if (!opts.plans.length || !opts.outDir) throw new Error(USAGE);
  return opts;
}

const say = (fields) => console.log(JSON.stringify(fields));

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  // BullMQ wants maxRetriesPerRequest null on connections it blocks on (QueueEvents does).
  const connection = new IORedis(opts.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(opts.queue, { connection, prefix: opts.prefix });
  const queueEvents = new QueueEvents(opts.queue, {
    connection: new IORedis(opts.redisUrl, { maxRetriesPerRequest: null }),
    prefix: opts.prefix,
  });
  // Listening before adding: QueueEvents reads from the events written after it started.
  await queueEvents.waitUntilReady();
  queueEvents.on('progress', ({ jobId, data }) => say({ event: 'progress', jobId, progress: data }));
  queueEvents.on('completed', ({ jobId }) => say({ event: 'completed', jobId }));
  queueEvents.on('failed', ({ jobId, failedReason }) => say({ event: 'failed', jobId, failedReason }));

  fs.mkdirSync(opts.outDir, { recursive: true });
  const jobs = [];
  for (const { planId, file } of opts.plans) {
    const rosterData = JSON.parse(fs.readFileSync(file, 'utf8'));
    // The snippet, unchanged.
    const job = await queue.add('solve', rosterData, {
      jobId: `roster-${planId}`,
      attempts: 3,
      backoff: { type: 'exponential', delay: 2000 },
      priority: 1,
    });
    say({ event: 'added', jobId: job.id });
    jobs.push(job);
  }

  let code = 0;
  const outcomes = await Promise.allSettled(
    jobs.map((job) => job.waitUntilFinished(queueEvents, opts.timeout * 1000)),
  );
  for (const [i, outcome] of outcomes.entries()) {
    const job = jobs[i];
    if (outcome.status === 'fulfilled') {
      const out = path.join(opts.outDir, `${job.id}.json`);
      fs.writeFileSync(out, JSON.stringify(outcome.value, null, 2));
      say({ event: 'roster', jobId: job.id, file: out });
      continue;
    }
    const timedOut = String(outcome.reason && outcome.reason.message).includes('timed out');
    code = Math.max(code, timedOut ? 2 : 1);
    const after = await Job.fromId(queue, job.id);
    say({
      event: timedOut ? 'timeout' : 'error',
      jobId: job.id,
      message: String(outcome.reason && outcome.reason.message),
      state: after ? await after.getState() : 'missing',
      attemptsMade: after ? after.attemptsMade : null,
    });
  }
  await queueEvents.close();
  await queue.close();
  process.exit(code);
}

main().catch((err) => {
  console.error(err.message || err);
  process.exit(3);
});
