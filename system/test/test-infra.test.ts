import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { startPrivateNats } from "../../scripts/infra.mjs";
import {
  IMAGES,
  mongoUrlFor,
  prepareContainers,
  probeContainerEngine,
  serversWanted,
  testInfraMode,
  type TestContainers,
} from "../../scripts/lib/containers.mjs";

// TEST_INFRA=containers (scripts/lib/containers.mjs): which infrastructure `npm test` takes, what
// it does when no container engine answers, and what it would start. The containers themselves
// run in the GitHub Actions workflow; where no engine answers (our machines), the tests marked so
// check that the real probe and the private servers say so instead of starting local processes.

const root = join(import.meta.dirname, "..", "..");
/** What testcontainers' strategies would find here; the real-probe tests run only without one. */
const noEngineHere = !process.env.DOCKER_HOST && !process.env.TESTCONTAINERS_HOST_OVERRIDE && !existsSync("/var/run/docker.sock");
const never = () => new Promise<never>(() => undefined);

describe("TEST_INFRA", () => {
  it("is local when unset, empty or 'local', containers when 'containers'", () => {
    expect(testInfraMode({})).toBe("local");
    expect(testInfraMode({ TEST_INFRA: "" })).toBe("local");
    expect(testInfraMode({ TEST_INFRA: "local" })).toBe("local");
    expect(testInfraMode({ TEST_INFRA: "containers" })).toBe("containers");
    expect(testInfraMode({ TEST_INFRA: " containers\n" })).toBe("containers");
  });

  it("refuses any other value, naming it and the two it takes", () => {
    for (const value of ["docker", "Containers", "container", "1"]) {
      expect(() => testInfraMode({ TEST_INFRA: value })).toThrow(`TEST_INFRA=${JSON.stringify(value)} is not a test infrastructure`);
      expect(() => testInfraMode({ TEST_INFRA: value })).toThrow(/TEST_INFRA=containers/);
    }
  });

  it("npm test stops on an unknown value before any set-up, with the message and exit code 2", () => {
    const r = spawnSync(process.execPath, [join(root, "scripts", "test.mjs")], {
      cwd: root,
      env: { ...process.env, TEST_INFRA: "dockr" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('TEST_INFRA="dockr" is not a test infrastructure');
    expect(r.stderr).not.toContain("building");
  });
});

describe("the container engine probe", () => {
  it("answers the engine testcontainers found", async () => {
    const load = async () => ({
      getContainerRuntimeClient: async () => ({ info: { containerRuntime: { host: "localhost", serverVersion: "27.3.1", operatingSystem: "Ubuntu 24.04" } } }),
    });
    expect(await probeContainerEngine({ load })).toEqual({ ok: true, engine: "Ubuntu 24.04 27.3.1 at localhost" });
  });

  it("gives testcontainers' reason and where it looked when no engine answers", async () => {
    const load = async () => ({ getContainerRuntimeClient: () => Promise.reject(new Error("Could not find a working container runtime strategy")) });
    const unset = await probeContainerEngine({ load, env: {} });
    expect(unset.ok).toBe(false);
    if (unset.ok) return;
    expect(unset.reason).toMatch(/^Could not find a working container runtime strategy: DOCKER_HOST unset, /);
    const set = await probeContainerEngine({ load, env: { DOCKER_HOST: "tcp://127.0.0.1:2375" } });
    expect(set.ok ? "" : set.reason).toContain("DOCKER_HOST=tcp://127.0.0.1:2375");
  });

  it("gives up after its timeout when the engine does not answer", async () => {
    const started = Date.now();
    const r = await probeContainerEngine({ load: async () => ({ getContainerRuntimeClient: never }), timeoutMs: 300, env: {} });
    expect(r).toEqual({ ok: false, reason: expect.stringMatching(/^no container engine answered within 0\.3 s: DOCKER_HOST unset/) as unknown });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("says so when testcontainers is not installed", async () => {
    const r = await probeContainerEngine({ load: () => Promise.reject(new Error("Cannot find package 'testcontainers'")) });
    expect(r).toEqual({ ok: false, reason: "testcontainers could not be loaded: Cannot find package 'testcontainers'" });
  });

  it.runIf(noEngineHere)("the real probe finds none here, within its timeout", async () => {
    const started = Date.now();
    const r = await probeContainerEngine({ timeoutMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(11_000);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/DOCKER_HOST unset, no \/var\/run\/docker\.sock/);
  });
});

describe("npm test under TEST_INFRA=containers", () => {
  const servers: TestContainers = { mongoUrl: "m", natsUrl: "n", redisUrl: "r", stop: async () => undefined };

  it("without an engine: skipped, with the reason, and nothing is started", async () => {
    let started = 0;
    const r = await prepareContainers({
      probe: async () => ({ ok: false, reason: "Could not find a working container runtime strategy: DOCKER_HOST unset" }),
      start: async () => { started += 1; return servers; },
    });
    expect(r).toEqual({ skipped: "skipped: no container engine (Could not find a working container runtime strategy: DOCKER_HOST unset)" });
    expect(started).toBe(0);
  });

  it("with an engine: names it and starts the servers only when asked", async () => {
    let started = 0;
    const r = await prepareContainers({
      probe: async () => ({ ok: true, engine: "Docker 27 at localhost" }),
      start: async () => { started += 1; return servers; },
    });
    expect("engine" in r && r.engine).toBe("Docker 27 at localhost");
    expect(started).toBe(0);
    if ("start" in r) expect(await r.start()).toBe(servers);
    expect(started).toBe(1);
  });

  it("starts a container only for the servers MONGO_URL, NATS_URL and REDIS_URL do not name", () => {
    expect(serversWanted({}).start).toEqual(["mongo", "nats", "redis"]);
    const wanted = serversWanted({ MONGO_URL: "mongodb://db.example:27017/" });
    expect(wanted.start).toEqual(["nats", "redis"]);
    expect(wanted.given.mongo).toBe("mongodb://db.example:27017/");
    expect(serversWanted({ MONGO_URL: "a", NATS_URL: "b", REDIS_URL: "c" }).start).toEqual([]);
  });

  it("reaches the replica-set member directly, not by its in-container host name", () => {
    const url = new URL(mongoUrlFor("localhost", 32768));
    expect(url.host).toBe("localhost:32768");
    expect(url.searchParams.get("directConnection")).toBe("true");
  });

  it("runs the images docker-compose.yml runs the system on", () => {
    const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8")) as { services: Record<string, { image?: string }> };
    expect(IMAGES.mongo).toBe(compose.services.mongo?.image);
    expect(IMAGES.nats).toBe(compose.services.nats?.image);
    expect(IMAGES.redis).toBe(compose.services.redis?.image);
    expect(IMAGES.mongo).toMatch(/^mongo:7(\.|$)/);
  });
});

describe("the fault tests' private servers under TEST_INFRA=containers", () => {
  const before = process.env.TEST_INFRA;
  afterEach(() => {
    if (before === undefined) delete process.env.TEST_INFRA;
    else process.env.TEST_INFRA = before;
  });

  it.runIf(noEngineHere)("are containers: without an engine, startPrivateNats fails for want of one, no nats-server starts", async () => {
    process.env.TEST_INFRA = "containers";
    const outcome = await startPrivateNats().then(
      async (server) => { await server.stop(); return `a server started at ${server.url}`; },
      (e: Error) => e.message,
    );
    expect(outcome).toMatch(/container runtime/);
  });
});
