#!/usr/bin/env node
// A monolith asking ShiftStream for a roster, with nothing but a Redis client (ioredis).
//
//   node index.js --redis-url redis://monolith:PASSWORD@localhost:6379/0 \
//                 --request request.json --out roster.json [--job-id ID] [--timeout 120]
//
// 1. Create a consumer group on `solver-events` at `$` *before* publishing, so no event of
//    this job can be written before we listen (a group created later would skip it).
// 2. XADD the solve request to `workforce-solver` with a W3C traceparent: the job's spans in
//    the services join this trace.
// 3. XREADGROUP the events, ACK each one, keep those of our job id, print progress, and stop
//    at the terminal event: solver.completed (roster written to --out, exit 0) or
//    solver.failed (exit 1). Nothing within --timeout seconds: exit 2.
//
// A long-running monolith would create its group once, share it between all its instances
// (each entry goes to one of them), and look jobs up by job_id in its own database. This
// one-shot program makes a private group and removes it at the end instead.

'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const Redis = require('ioredis');

const USAGE =
  'usage: node index.js --redis-url URL --request FILE --out FILE ' +
  '[--job-id ID] [--timeout SECONDS] [--prefix PREFIX] [--group NAME]';

function parseArgs(argv) {
  const opts = {
    redisUrl: process.env.REDIS_URL || 'redis://localhost:6379/0',
    timeout: 120,
    prefix: process.env.SHIFTSTREAM_PREFIX || '',
  };
  const names = {
    '--redis-url': 'redisUrl',
    '--request': 'request',
    '--out': 'out',
    '--job-id': 'jobId',
    '--timeout': 'timeout',
    '--prefix': 'prefix',
    '--group': 'group',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = names[argv[i]];
    if (!key || argv[i + 1] === undefined) {
      throw new Error(`unknown or incomplete option ${argv[i]}\n${USAGE}`);
    }
    opts[key] = argv[i + 1];
  }
  if (!opts.request || !opts.out) throw new Error(USAGE);
  opts.timeout = Number(opts.timeout);
  return opts;
}

// W3C trace context: version 00, random trace and parent ids, sampled.
function traceparent() {
  return `00-${crypto.randomBytes(16).toString('hex')}-${crypto.randomBytes(8).toString('hex')}-01`;
}

// ioredis returns stream fields as a flat [k1, v1, k2, v2, ...] array.
function fieldsOf(flat) {
  const out = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]] = flat[i + 1];
  return out;
}

async function ensureGroup(redis, stream, group) {
  try {
    await redis.xgroup('CREATE', stream, group, '$', 'MKSTREAM');
    return true;
  } catch (err) {
    if (String(err.message).includes('BUSYGROUP')) return false;
    throw err;
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const intake = `${opts.prefix}workforce-solver`;
  const events = `${opts.prefix}solver-events`;
  const payload = fs.readFileSync(opts.request, 'utf8');
  JSON.parse(payload); // fail here on a broken file rather than as solver.failed/invalid
  const jobId = opts.jobId || `node-${crypto.randomUUID()}`;
  const group = opts.group || `monolith-${os.hostname()}-${process.pid}`;
  const consumer = `${os.hostname()}-${process.pid}`;

  // Blocking reads must not be cut short by ioredis' own retry limit.
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
  await redis.connect();
  const privateGroup = (await ensureGroup(redis, events, group)) && !opts.group;

  const tp = traceparent();
  const entryId = await redis.xadd(
    intake, 'MAXLEN', '~', '100000', '*',
    'type', 'solve', 'job_id', jobId, 'payload', payload, 'traceparent', tp,
  );
  console.log(`submitted job ${jobId} as ${intake} entry ${entryId} (trace ${tp.split('-')[1]})`);

  const deadline = Date.now() + opts.timeout * 1000;
  let code = 2;
  try {
    outer: while (Date.now() < deadline) {
      const block = Math.max(1, Math.min(1000, deadline - Date.now()));
      const reply = await redis.xreadgroup(
        'GROUP', group, consumer, 'COUNT', 100, 'BLOCK', block, 'STREAMS', events, '>',
      );
      if (!reply) continue;
      for (const [, entries] of reply) {
        for (const [id, flat] of entries) {
          // ACK every entry, ours or not: other jobs' events are of no use to this program.
          await redis.xack(events, group, id);
          const e = fieldsOf(flat);
          if (e.job_id !== jobId) continue;
          if (e.type === 'solver.accepted') {
            console.log('accepted');
          } else if (e.type === 'solver.progress') {
            console.log(
              `progress ${e.progress}% gen ${e.generation} best ${e.best_score} ` +
                `eta ${e.eta_seconds}s: ${e.message}`,
            );
          } else if (e.type === 'solver.completed') {
            const result = JSON.parse(e.result);
            fs.writeFileSync(opts.out, JSON.stringify(result, null, 2));
            console.log(
              `completed by ${e.solver_used} in ${e.solve_time_ms} ms after ${e.attempts} ` +
                `attempt(s): hard ${result.score.hard_violations}, penalty ` +
                `${result.score.penalty}; roster written to ${opts.out}`,
            );
            code = 0;
            break outer;
          } else if (e.type === 'solver.failed') {
            console.error(
              `failed (${e.error_class}) after ${e.attempts} attempt(s): ${e.reason}` +
                (e.dead_letter_id ? ` [dead letter ${e.dead_letter_id}]` : ''),
            );
            code = 1;
            break outer;
          }
        }
      }
    }
    if (code === 2) console.error(`no result for job ${jobId} within ${opts.timeout} s`);
  } finally {
    if (privateGroup) {
      await redis.xgroup('DESTROY', events, group).catch(() => {});
    }
    redis.disconnect();
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err.message || err);
    process.exit(3);
  },
);
