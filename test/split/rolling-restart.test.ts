import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningProcess, RunningSystem } from "../../scripts/lib/system.mjs";
import { http } from "../support/api.js";
import { startOwnSystem, type OwnSystem } from "../support/own-system.js";

// A rolling restart as Kubernetes runs one, on a split system of its own with two gateways and two
// feed processes (behind a TCP balancer, as a ClusterIP Service is): a steady stream of writes and
// reads over keep-alive goes on while one process is taken out of rotation and sent SIGTERM at
// once (its requests, calls and connections still in hand), then started again and put back. No
// request may fail and every acknowledged write must be readable afterwards.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("rolling restarts under a steady stream of requests", () => {
  let own: OwnSystem;
  let system: RunningSystem;
  let token = "";
  const processNamed = (name: string): RunningProcess => system.processes.find((p) => p.name === name)!;

  beforeAll(async () => {
    own = await startOwnSystem("rolling", { split: true, replicas: { feed: 2 }, gateways: 2 });
    ({ system } = own);
    token = own.tenant.token;
  });

  afterAll(async () => {
    await own?.stop();
  });

  /**
   * Four clients, each a write then a read of `feed` at a time, round robin over the gateways in
   * `rotation` (what the Service's endpoints hold), until `stop`. Every failure is kept: a status
   * other than the one expected, or a network error.
   */
  function steadyStream(feed: string, rotation: () => string[]) {
    let running = true;
    let n = 0;
    const failures: string[] = [];
    const written: string[] = [];
    /** Requests sent and not yet answered, by gateway URL. */
    const inFlight = new Map<string, number>();
    // Each request goes to the next gateway in rotation at the moment it is sent.
    const pick = () => {
      const urls = rotation();
      return urls[n++ % urls.length]!;
    };
    const client = async () => {
      while (running) {
        for (const req of ["POST", "GET"] as const) {
          const url = pick();
          inFlight.set(url, (inFlight.get(url) ?? 0) + 1);
          try {
            if (req === "POST") {
              const posted = await http("POST", `/v1/feeds/${feed}/activities`, { url, token, body: { actor: "user:roll", verb: "post", object: `note:${n}` } });
              if (posted.status === 201) written.push(posted.body.id as string);
              else failures.push(`POST ${url}: ${posted.status} ${JSON.stringify(posted.body)}`);
            } else {
              const read = await http("GET", `/v1/feeds/${feed}?limit=5`, { url, token });
              if (read.status !== 200) failures.push(`GET ${url}: ${read.status} ${JSON.stringify(read.body)}`);
            }
          } catch (e) {
            failures.push(`${req} ${url}: ${String(e)}`);
          } finally {
            inFlight.set(url, (inFlight.get(url) ?? 1) - 1);
          }
        }
      }
    };
    const clients = Promise.all([client(), client(), client(), client()]);
    return {
      failures,
      written,
      inFlight,
      async stop() {
        running = false;
        await clients;
      },
    };
  }

  /** Every activity of `feed`, through `url`, following `next`. */
  async function allIds(feed: string, url: string): Promise<Set<string>> {
    const ids = new Set<string>();
    let next: string | null = null;
    do {
      const page: { status: number; body: { results: { id: string }[]; next: string | null } } = await http("GET", `/v1/feeds/${feed}?limit=100${next ? `&next=${encodeURIComponent(next)}` : ""}`, { url, token });
      expect(page.status).toBe(200);
      for (const a of page.body.results) ids.add(a.id);
      next = page.body.next;
    } while (next);
    return ids;
  }

  /** SIGTERM and the exit it leads to (the process's own, not a SIGKILL). */
  async function terminate(p: RunningProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => p.child.once("exit", (code, signal) => resolve({ code, signal })));
    p.child.kill("SIGTERM");
    return Promise.race([exited, sleep(15_000).then(() => ({ code: null, signal: "SIGTERM" as const }))]);
  }

  it("one of two gateways is taken out and stopped mid-stream, then comes back: 0 failed requests, 0 lost writes", { timeout: 120_000 }, async () => {
    const gateways = [...system.gatewayUrls];
    const inRotation = new Set([0, 1]);
    const stream = steadyStream("user/roll-gw", () => [...inRotation].map((i) => gateways[i]!));
    await sleep(1500);
    // The endpoints controller takes the pod out as the kubelet sends SIGTERM (no preStop sleep
    // here, so that requests are still in flight on it): they must be answered.
    inRotation.delete(1);
    const pending = stream.inFlight.get(gateways[1]!) ?? 0;
    expect(await terminate(processNamed("gateway-1"))).toEqual({ code: 0, signal: null });
    await sleep(500);
    await processNamed("gateway-1").restart();
    gateways[1] = (await processNamed("gateway-1").first).url!;
    inRotation.add(1);
    await sleep(1500);
    await stream.stop();
    expect(stream.failures).toEqual([]);
    expect(pending, "requests in flight on the stopped gateway").toBeGreaterThan(0);
    expect(stream.written.length).toBeGreaterThan(20);
    const stored = await allIds("user/roll-gw", gateways[1]);
    expect(stream.written.filter((id) => !stored.has(id))).toEqual([]);
  });

  it("one of two feed processes is taken out and stopped mid-stream, then comes back: 0 failed requests, 0 lost writes", { timeout: 120_000 }, async () => {
    const balancer = system.balancers.feed!;
    const stream = steadyStream("user/roll-feed", () => [system.url]);
    await sleep(1500);
    // New connections go to feed-1 only; the gateway's connection to feed-0 carries calls in hand.
    balancer.drain(0);
    expect(await terminate(processNamed("feed-0"))).toEqual({ code: 0, signal: null });
    await sleep(500);
    await processNamed("feed-0").restart();
    balancer.undrain(0);
    await sleep(1500);
    await stream.stop();
    expect(stream.failures).toEqual([]);
    expect(stream.written.length).toBeGreaterThan(20);
    const stored = await allIds("user/roll-feed", system.url);
    expect(stream.written.filter((id) => !stored.has(id))).toEqual([]);
  });
});
