// TEST_INFRA=containers: `npm test` on MongoDB 7 (a single-node replica set), NATS with JetStream
// and Redis in containers started through testcontainers, instead of the servers on loopback
// (scripts/infra.mjs). The fault tests' private servers (startPrivateRedis / startPrivateNats /
// startPrivateFerretdb) become private containers of the same images, behind the same handle.
//
// No container engine answers on the development machine this was written on: this path runs in
// the repository's GitHub Actions workflow (.github/workflows/ci.yml), not in our local checks.
// What runs locally is the decision: the mode, the probe, the skip with its reason
// (system/test/test-infra.test.ts).
//
// Plain ESM; testcontainers is loaded only once the containers path is taken, so this file can be
// imported before `npm install`.

import fs from 'node:fs';
import { freePort, portOpen, probeMongo, probeNats, probeRedis, waitFor } from '../infra.mjs';

/** The images: the ones docker-compose.yml runs the system on. */
export const IMAGES = { mongo: 'mongo:7', nats: 'nats:2.10-alpine', redis: 'redis:7-alpine' };

const PORTS = { mongo: 27017, nats: 4222, redis: 6379 };

/**
 * The test infrastructure TEST_INFRA asks for: 'local' (unset, empty or "local": servers on
 * loopback, started when missing) or 'containers'. Anything else is a mistake, refused by name.
 * @param {Record<string, string | undefined>} [env]
 * @returns {'local' | 'containers'}
 */
export function testInfraMode(env = process.env) {
  const value = (env.TEST_INFRA ?? '').trim();
  if (value === '' || value === 'local') return 'local';
  if (value === 'containers') return 'containers';
  throw new Error(`TEST_INFRA=${JSON.stringify(value)} is not a test infrastructure: leave it unset for servers on loopback (started when missing), or set TEST_INFRA=containers for MongoDB, NATS and Redis in containers`);
}

/** Where testcontainers looked, for the reason printed when no engine answered. */
function whereLooked(env) {
  const host = env.DOCKER_HOST ? `DOCKER_HOST=${env.DOCKER_HOST}` : 'DOCKER_HOST unset';
  const socket = fs.existsSync('/var/run/docker.sock') ? '/var/run/docker.sock exists' : 'no /var/run/docker.sock';
  return `${host}, ${socket}; DEBUG=testcontainers* prints why each way of reaching one failed`;
}

/**
 * Asks testcontainers for a container runtime (its own strategies: TESTCONTAINERS_HOST_OVERRIDE,
 * ~/.testcontainers.properties, DOCKER_HOST, the Docker sockets), giving up after `timeoutMs`.
 * @returns {Promise<{ ok: true, engine: string } | { ok: false, reason: string }>}
 */
export async function probeContainerEngine({ timeoutMs = 10_000, load = () => import('testcontainers'), env = process.env } = {}) {
  let tc;
  try {
    tc = await load();
  } catch (e) {
    return { ok: false, reason: `testcontainers could not be loaded: ${e.message}` };
  }
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: `no container engine answered within ${timeoutMs / 1000} s: ${whereLooked(env)}` }), timeoutMs);
  });
  const asked = Promise.resolve()
    .then(() => tc.getContainerRuntimeClient())
    .then(
      ({ info: { containerRuntime: rt } }) => ({ ok: true, engine: `${rt.operatingSystem ?? 'container engine'} ${rt.serverVersion ?? ''} at ${rt.host}`.replace(/\s+/g, ' ') }),
      (e) => ({ ok: false, reason: `${e?.message ?? e}: ${whereLooked(env)}` }),
    );
  try {
    return await Promise.race([asked, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `npm test` under TEST_INFRA=containers, before anything else: is there an engine? Answers
 * `{ skipped }` (the line to print, reason included) when none answers, else `{ engine, start }`
 * where start() brings the servers up.
 */
export async function prepareContainers({ probe = probeContainerEngine, start = startTestContainers } = {}) {
  const found = await probe();
  if (!found.ok) return { skipped: `skipped: no container engine (${found.reason})` };
  return { engine: found.engine, start };
}

/** MongoDB in a replica set reached straight, not through the member's in-container host name. */
export const mongoUrlFor = (host, port) => `mongodb://${host}:${port}/?directConnection=true`;

/** True once the MongoDB at `url` answers as a writable primary (an elected replica-set member). */
async function mongoPrimary(url) {
  const { MongoClient } = await import('mongodb');
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 1500, connectTimeoutMS: 1500 });
  try {
    const hello = await client.db('admin').command({ hello: 1 });
    return hello.isWritablePrimary === true;
  } catch {
    return false;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * The container definitions, by server. MongoDB: @testcontainers/mongodb's MongoDBContainer, which
 * starts mongod with --replSet rs0 and initiates the set in its health check (start() returns once
 * the member is primary). NATS: JetStream on, streams under /data. Redis: append-only file synced
 * on every write, so a private one keeps its data across a kill (as startPrivateRedis does).
 */
const SPECS = {
  mongo: {
    async container(tc) {
      const { MongoDBContainer } = await import('@testcontainers/mongodb');
      return new MongoDBContainer(IMAGES.mongo);
    },
    url: mongoUrlFor,
    ready: (host, port) => mongoPrimary(mongoUrlFor(host, port)),
  },
  nats: {
    async container(tc) {
      return new tc.GenericContainer(IMAGES.nats)
        .withCommand(['nats-server', '-js', '-sd', '/data'])
        .withWaitStrategy(tc.Wait.forLogMessage(/Server is ready/));
    },
    url: (host, port) => `nats://${host}:${port}`,
    ready: async (host, port) => (await probeNats(port, host))?.jetstream === true,
  },
  redis: {
    async container(tc) {
      return new tc.GenericContainer(IMAGES.redis)
        .withCommand(['redis-server', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'])
        .withWaitStrategy(tc.Wait.forLogMessage(/Ready to accept connections/));
    },
    url: (host, port) => `redis://${host}:${port}`,
    ready: (host, port) => probeRedis(port, host),
  },
};

/** Starts one server's container; `hostPort` fixes the host side (else the engine picks one). */
async function startContainer(tc, kind, hostPort) {
  const spec = SPECS[kind];
  const definition = await spec.container(tc);
  definition.withExposedPorts(hostPort ? { container: PORTS[kind], host: hostPort } : PORTS[kind]);
  const started = await definition.start();
  const host = started.getHost();
  const port = started.getMappedPort(PORTS[kind]);
  // The image's own readiness said yes; ours is what the tests rely on (JetStream on, primary).
  await waitFor(() => spec.ready(host, port), { what: `${IMAGES[kind]} on ${host}:${port}`, timeoutMs: 60_000 });
  return { started, host, port, url: spec.url(host, port) };
}

/** Which servers come from the environment (used as given, as ensureInfra does) and which to start. */
export function serversWanted(env = process.env) {
  const given = { mongo: env.MONGO_URL, nats: env.NATS_URL, redis: env.REDIS_URL };
  return { given, start: Object.keys(given).filter((kind) => !given[kind]) };
}

/**
 * MongoDB, NATS and Redis in containers for one `npm test` run, but for any of MONGO_URL,
 * NATS_URL, REDIS_URL set (used as given); stop() removes the containers (and if this process dies
 * first, testcontainers' reaper does).
 * @returns {Promise<{ mongoUrl: string, natsUrl: string, redisUrl: string, stop(): Promise<void> }>}
 */
export async function startTestContainers({ log = () => undefined, env = process.env } = {}) {
  const tc = await import('testcontainers');
  const { given, start } = serversWanted(env);
  const named = { mongo: `${IMAGES.mongo} (single-node replica set)`, nats: `${IMAGES.nats} (JetStream)`, redis: IMAGES.redis };
  for (const kind of Object.keys(given)) if (given[kind]) log(`  ${kind}: ${given[kind]} (from the environment)`);
  if (start.length) log(`starting ${start.map((kind) => named[kind]).join(', ')} in containers…`);
  const results = await Promise.allSettled(start.map((kind) => startContainer(tc, kind)));
  const up = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
  const stop = async () => { await Promise.all(up.map((c) => c.started.stop())); };
  const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
  if (failed.length) {
    await stop().catch(() => undefined);
    throw failed.length === 1 ? failed[0] : new AggregateError(failed, failed.map((e) => e.message).join('\n'));
  }
  const urls = { ...given };
  start.forEach((kind, i) => { urls[kind] = up[i].url; log(`  ${kind}: ${up[i].url}`); });
  return { mongoUrl: urls.mongo, natsUrl: urls.nats, redisUrl: urls.redis, stop };
}

/**
 * A private server in a container, with the handle of scripts/infra.mjs's private servers: the
 * host port is fixed so that it comes back where it was; stop() kills the server (SIGKILL, or the
 * signal given) and keeps the container, start() starts the same container again with its data.
 * @param {'mongo' | 'nats' | 'redis'} kind
 */
export async function startPrivateContainer(kind, { port } = {}) {
  const tc = await import('testcontainers');
  port ??= await freePort();
  const spec = SPECS[kind];
  const c = await startContainer(tc, kind, port);
  const docker = (await tc.getContainerRuntimeClient()).container.getById(c.started.getId());
  const what = `${IMAGES[kind]} on ${c.host}:${port}`;
  let running = true;
  const handle = {
    url: c.url,
    port,
    pid: null,
    get running() { return running; },
    async start() {
      if (running) return handle;
      await docker.start();
      running = true;
      await waitFor(() => spec.ready(c.host, port), { what, timeoutMs: 120_000 });
      return handle;
    },
    async stop({ signal = 'SIGKILL', timeoutMs = 20_000 } = {}) {
      if (!running) return;
      await docker.kill({ signal });
      let timer;
      const stopped = await Promise.race([
        docker.wait().then(() => true),
        new Promise((resolve) => { timer = setTimeout(() => resolve(false), timeoutMs); }),
      ]).finally(() => clearTimeout(timer));
      if (!stopped) {
        await docker.kill({ signal: 'SIGKILL' }).catch(() => undefined);
        await docker.wait();
      }
      running = false;
      await waitFor(async () => !(await portOpen(port, c.host)), { what: `${what} to close`, timeoutMs });
    },
  };
  return handle;
}
