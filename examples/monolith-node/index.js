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
//    at the terminal event: solver.completed (roster written to --out) or solver.failed.
//
// Exit codes, each failure one line on stderr:
//   0  completed: the roster is in --out
//   1  failed: the services answered solver.failed (error class and reason printed)
//   2  no terminal event within --timeout seconds
//   3  bad arguments, or a request file that cannot be read or is not JSON (named in the line)
//   4  Redis: unreachable, wrong password, the user lacks a permission (NOPERM), or no
//      replica acknowledged the submission in time (with REDIS_WAIT_REPLICAS)
//  70  an unexpected error (a bug): printed with its stack trace
//
// A long-running monolith would create its group once, share it between all its instances
// (each entry goes to one of them), and look jobs up by job_id in its own database. This
// one-shot program makes a private group and removes it at the end instead.
//
// Redis is found as the services find it (connection.js): REDIS_MODE=sentinel or cluster,
// rediss:// with REDIS_TLS_* files, and with replicas the XADD waits until one holds it.

'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const { createClient, addDurably } = require('./connection');

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

const EXIT = { completed: 0, failed: 1, timeout: 2, usage: 3, redis: 4 };

// An expected failure: one line on stderr and its exit code, no stack trace.
class Failure extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

function readRequest(file) {
  let payload;
  try {
    payload = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Failure(`${file}: cannot read the request: ${err.message}`, EXIT.usage);
  }
  try {
    JSON.parse(payload); // fail here on a broken file rather than as solver.failed/invalid
  } catch (err) {
    throw new Failure(`${file}: not valid JSON: ${err.message}`, EXIT.usage);
  }
  return payload;
}

// The URL without its password, for messages.
function shown(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

async function connect(url) {
  let connected = false;
  let lastError = null;
  // Blocking reads must not be cut short by ioredis' own retry limit; once connected, a Redis
  // restart is ridden out by reconnecting, but a Redis that never answered is reported at once.
  let redis;
  try {
    redis = createClient(url, process.env, {
      maxRetriesPerRequest: null,
      lazyConnect: true,
      retryStrategy: (times) => (connected ? Math.min(times * 200, 2000) : null),
    });
  } catch (err) {
    throw new Failure(err.message, EXIT.usage); // REDIS_MODE, REDIS_TLS_* ... do not fit
  }
  // Without a listener ioredis prints every connection error as an "Unhandled error event".
  redis.on('error', (err) => {
    lastError = err;
  });
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    const why = (lastError || err).message;
    throw new Failure(`cannot reach Redis at ${shown(url)}: ${why}`, EXIT.redis);
  }
  connected = true;
  return redis;
}

// Redis refusals (a wrong password, an ACL user without the permission) are expected
// failures too: say which, in one line.
function redisFailure(err, url) {
  const message = String(err && err.message);
  if (/^(NOPERM|WRONGPASS|NOAUTH)/.test(message)) {
    const user = (() => {
      try {
        return decodeURIComponent(new URL(url).username) || 'default';
      } catch {
        return 'default';
      }
    })();
    return new Failure(`Redis refused user '${user}' at ${shown(url)}: ${message}`, EXIT.redis);
  }
  return null;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    throw new Failure(err.message, EXIT.usage);
  }
  const intake = `${opts.prefix}workforce-solver`;
  const events = `${opts.prefix}solver-events`;
  const payload = readRequest(opts.request);
  const jobId = opts.jobId || `node-${crypto.randomUUID()}`;
  const group = opts.group || `monolith-${os.hostname()}-${process.pid}`;
  const consumer = `${os.hostname()}-${process.pid}`;

  const redis = await connect(opts.redisUrl);
  try {
    return await follow(redis, opts, { intake, events, payload, jobId, group, consumer });
  } catch (err) {
    throw redisFailure(err, opts.redisUrl) || err;
  } finally {
    redis.disconnect();
  }
}

async function follow(redis, opts, { intake, events, payload, jobId, group, consumer }) {
  const privateGroup = (await ensureGroup(redis, events, group)) && !opts.group;

  const tp = traceparent();
  let entryId;
  try {
    entryId = await addDurably(redis, intake, [
      'type', 'solve', 'job_id', jobId, 'payload', payload, 'traceparent', tp,
    ]);
  } catch (err) {
    if (err.notReplicated) throw new Failure(err.message, EXIT.redis);
    throw err;
  }
  console.log(`submitted job ${jobId} as ${intake} entry ${entryId} (trace ${tp.split('-')[1]})`);

  const deadline = Date.now() + opts.timeout * 1000;
  let code = EXIT.timeout;
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
            // `message` says what the solver is doing (its phase and figures) in words.
            console.log(`progress ${e.progress}% eta ${e.eta_seconds}s: ${e.message}`);
          } else if (e.type === 'solver.completed') {
            const result = JSON.parse(e.result);
            fs.writeFileSync(opts.out, JSON.stringify(result, null, 2));
            // How good the roster is, when the solver proved a lower bound (docs/events.md).
            let proof = '';
            if (e.lower_bound) {
              proof = `, bound ${e.lower_bound}`;
              if (e.proven_optimal === 'true') proof += ' (proven optimal)';
              else if (e.gap) proof += `, gap ${(100 * Number(e.gap)).toFixed(2)} %`;
            }
            console.log(
              `completed by ${e.solver_used} in ${e.solve_time_ms} ms after ${e.attempts} ` +
                `attempt(s): hard ${result.score.hard_violations}, penalty ` +
                `${result.score.penalty}${proof}; roster written to ${opts.out}`,
            );
            code = EXIT.completed;
            break outer;
          } else if (e.type === 'solver.failed') {
            console.error(
              `failed (${e.error_class}) after ${e.attempts} attempt(s): ${e.reason}` +
                (e.dead_letter_id ? ` [dead letter ${e.dead_letter_id}]` : ''),
            );
            code = EXIT.failed;
            break outer;
          }
        }
      }
    }
    if (code === EXIT.timeout) console.error(`no result for job ${jobId} within ${opts.timeout} s`);
  } finally {
    if (privateGroup) {
      await redis.xgroup('DESTROY', events, group).catch(() => {});
    }
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof Failure) {
      console.error(`error: ${err.message}`);
      process.exit(err.code);
    }
    console.error(err); // a bug: keep its stack
    process.exit(70);
  },
);
