// How the monolith reaches ShiftStream's Redis, from the same environment variables the
// services read (docs/managed-redis.md): one server, a Sentinel deployment or a Cluster, with
// or without TLS, and the durable submission (XADD, then WAIT for replicas).
//
//   REDIS_URL                      redis://user:pass@host:6379/0, or rediss:// for TLS
//   REDIS_MODE                     standalone (default) | sentinel | cluster
//   REDIS_SENTINELS                host:port,host:port        (sentinel)
//   REDIS_SENTINEL_MASTER          the name the sentinels know the primary by
//   REDIS_SENTINEL_USERNAME / _PASSWORD   the sentinels' own login, if any
//   REDIS_CLUSTER_NODES            more seed nodes host:port,...  (cluster)
//   REDIS_TLS_CA_FILE / REDIS_TLS_CERT_FILE / REDIS_TLS_KEY_FILE   PEM files (rediss://)
//   REDIS_WAIT_REPLICAS            replicas a submission waits for (default 1 with sentinel)
//   REDIS_WAIT_TIMEOUT_MS          how long it waits (default 1000)

'use strict';

const fs = require('node:fs');
const Redis = require('ioredis');

function addresses(name, text) {
  return (text || '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((item) => {
      const at = item.lastIndexOf(':');
      const port = Number(item.slice(at + 1));
      if (at < 1 || !Number.isInteger(port) || port < 1 || port > 65535) {
        throw new Error(`${name}: '${item}' is not host:port`);
      }
      return { host: item.slice(0, at).replace(/^\[|\]$/g, ''), port };
    });
}

function readPem(name, path) {
  try {
    return fs.readFileSync(path);
  } catch (err) {
    throw new Error(`${name}: cannot read ${path} (${err.code || err.message})`);
  }
}

// ioredis' `tls` options from REDIS_TLS_*, for a rediss:// URL (undefined for plain TCP).
function tlsOptions(url, env) {
  const files = [env.REDIS_TLS_CA_FILE, env.REDIS_TLS_CERT_FILE, env.REDIS_TLS_KEY_FILE];
  if (!url.startsWith('rediss://')) {
    if (files.some(Boolean)) throw new Error('REDIS_TLS_* files are set but REDIS_URL is not rediss://');
    return undefined;
  }
  const tls = {};
  if (env.REDIS_TLS_CA_FILE) tls.ca = readPem('REDIS_TLS_CA_FILE', env.REDIS_TLS_CA_FILE);
  if (env.REDIS_TLS_CERT_FILE) tls.cert = readPem('REDIS_TLS_CERT_FILE', env.REDIS_TLS_CERT_FILE);
  if (env.REDIS_TLS_KEY_FILE) tls.key = readPem('REDIS_TLS_KEY_FILE', env.REDIS_TLS_KEY_FILE);
  return tls;
}

function login(url) {
  const u = new URL(url);
  const db = Number(u.pathname.replace('/', '') || 0);
  return {
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db,
    host: u.hostname || '127.0.0.1',
    port: Number(u.port || 6379),
  };
}

// A client for the deployment the environment describes; `extra` are ioredis options. Throws
// a plain Error naming the variable when the settings do not fit together.
function createClient(url, env = process.env, extra = {}) {
  const mode = env.REDIS_MODE || 'standalone';
  const tls = tlsOptions(url, env);
  const { username, password, db, host, port } = login(url);
  if (mode === 'sentinel') {
    if (!env.REDIS_SENTINELS || !env.REDIS_SENTINEL_MASTER) {
      throw new Error('REDIS_MODE=sentinel needs REDIS_SENTINELS and REDIS_SENTINEL_MASTER');
    }
    return new Redis({
      ...extra,
      sentinels: addresses('REDIS_SENTINELS', env.REDIS_SENTINELS),
      name: env.REDIS_SENTINEL_MASTER,
      sentinelUsername: env.REDIS_SENTINEL_USERNAME,
      sentinelPassword: env.REDIS_SENTINEL_PASSWORD,
      username,
      password,
      db,
      // The sentinels speak TLS when the data nodes do (as the services assume).
      ...(tls ? { tls, sentinelTLS: tls, enableTLSForSentinelMode: true } : {}),
    });
  }
  if (mode === 'cluster') {
    const seeds = [{ host, port }, ...addresses('REDIS_CLUSTER_NODES', env.REDIS_CLUSTER_NODES)];
    return new Redis.Cluster(seeds, {
      ...extra,
      redisOptions: { ...extra, username, password, ...(tls ? { tls } : {}) },
    });
  }
  if (mode !== 'standalone') {
    throw new Error(`REDIS_MODE: '${mode}' unknown, expected standalone, sentinel or cluster`);
  }
  return new Redis(url, { ...extra, ...(tls ? { tls } : {}) });
}

function waitReplicas(env = process.env) {
  const mode = env.REDIS_MODE || 'standalone';
  if (env.REDIS_WAIT_REPLICAS !== undefined && env.REDIS_WAIT_REPLICAS !== '') {
    const n = Number(env.REDIS_WAIT_REPLICAS);
    if (n > 0 && mode === 'cluster') {
      throw new Error('REDIS_WAIT_REPLICAS is not supported with REDIS_MODE=cluster');
    }
    return n;
  }
  return mode === 'sentinel' ? 1 : 0;
}

// XADD `fields` to `stream`, then WAIT (same connection, one round trip) until enough
// replicas hold it: an acknowledged XADD can still vanish with a primary that dies before
// its replica got it. Returns the entry id; throws when the replicas did not answer in time
// (submitting again under the same job id is safe: the intake drops a repeat).
async function addDurably(redis, stream, fields, env = process.env) {
  const replicas = waitReplicas(env);
  const timeout = Number(env.REDIS_WAIT_TIMEOUT_MS || 1000);
  const pipe = redis.pipeline().xadd(stream, 'MAXLEN', '~', '100000', '*', ...fields);
  if (replicas > 0) pipe.call('WAIT', replicas, timeout);
  const replies = await pipe.exec();
  for (const [err] of replies) if (err) throw err;
  if (replicas > 0) {
    const acked = replies[1][1];
    if (acked < replicas) {
      const err = new Error(
        `submitted, but ${acked} of ${replicas} replicas acknowledged within ${timeout} ms: ` +
          'it may not survive a failover; submit again with the same job id',
      );
      err.notReplicated = true;
      throw err;
    }
  }
  return replies[0][1];
}

module.exports = { createClient, addDurably, tlsOptions, waitReplicas };
