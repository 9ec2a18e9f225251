import { getHeapStatistics } from "node:v8";
import { afterEach, describe, expect, it } from "vitest";
import { isCode } from "@feeds/kit";
import { createOverloadGuard, type OverloadGuard, type OverloadOptions } from "../src/overload.js";

// The overload guard alone: a burst past the in-flight limit waits its turn and is served; a
// request is shed (429 RATE_LIMITED with the configured Retry-After) only when it waited too long,
// when the queue is full, when a route has a queue of slow requests, or when the process is
// too busy (event loop, heap). The gateway admits a request after its body and its caller
// (test/e2e/overload.test.ts shows that over HTTP).

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const off: OverloadOptions = {
  maxLatencyMs: 0,
  maxInFlight: 0,
  maxQueueWaitMs: 10_000,
  maxQueue: 1000,
  maxEventLoopDelayMs: 0,
  maxHeapPercent: 0,
  retryAfterSeconds: 2,
  windowMs: 50,
};

let guard: OverloadGuard | undefined;
afterEach(() => guard?.close());
const make = (o: Partial<OverloadOptions>) => (guard = createOverloadGuard({ ...off, ...o }));

/** Admits one request of `route`, holds its slot `ms`, answers "ok" or the refusal's code. */
async function request(g: OverloadGuard, ms: number, route = "GET /v1/x", tested = true): Promise<string> {
  try {
    const release = await g.admit(route, tested);
    await sleep(ms);
    release();
    return "ok";
  } catch (e) {
    expect(isCode(e, "RATE_LIMITED")).toBe(true);
    expect((e as { retryAfterSeconds?: number }).retryAfterSeconds).toBe(2);
    return "shed";
  }
}

describe("overload guard", () => {
  it("serves a burst past the in-flight limit in turn, never more than the limit at once, none shed", async () => {
    const g = make({ maxInFlight: 3, maxQueueWaitMs: 5000, maxQueue: 9 });
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, g.inFlight())), 5);
    const answers = await Promise.all(Array.from({ length: 12 }, () => request(g, 60)));
    clearInterval(watch);
    expect(answers).toEqual(answers.map(() => "ok"));
    expect(most).toBe(3);
    expect(g.shed()).toBe(0);
    expect([g.inFlight(), g.queued()]).toEqual([0, 0]);
  });

  it("queues no request for a second after the queue overflowed (a standing queue), then queues again", async () => {
    const g = make({ maxInFlight: 1, maxQueueWaitMs: 300, maxQueue: 2 });
    const holder = request(g, 1600);
    const waiters = [request(g, 0), request(g, 0)];
    await sleep(20);
    expect(await request(g, 0)).toBe("shed"); // the queue overflows
    expect(await Promise.all(waiters)).toEqual(["shed", "shed"]); // and its waiters time out
    // The queue has room again, but it overflowed under a second ago: shed at once, no wait.
    const t0 = Date.now();
    expect(await request(g, 0)).toBe("shed");
    expect(Date.now() - t0).toBeLessThan(50);
    await sleep(1100);
    const queued = request(g, 0);
    await sleep(20);
    expect(g.queued()).toBe(1);
    expect(await holder).toBe("ok");
    expect(await queued).toBe("ok");
  });

  it("is saturated once every slot and place in the queue is taken, and not before", async () => {
    const g = make({ maxInFlight: 1, maxQueue: 1 });
    const holder = request(g, 200);
    expect(g.saturated()).toBe(false);
    const waiter = request(g, 0);
    await sleep(10);
    expect(g.saturated()).toBe(true);
    expect(await Promise.all([holder, waiter])).toEqual(["ok", "ok"]);
    expect(g.saturated()).toBe(false);
  });

  it("sheds a request that waited past maxQueueWaitMs, and frees its place in the queue", async () => {
    const g = make({ maxInFlight: 1, maxQueueWaitMs: 100 });
    const holder = request(g, 400);
    const t0 = Date.now();
    expect(await request(g, 0)).toBe("shed");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    expect(g.queued()).toBe(0);
    expect(await holder).toBe("ok");
    expect(await request(g, 0)).toBe("ok");
  });

  it("sheds at once a request past maxQueue waiting ones, and queues again once the queue has room", async () => {
    const g = make({ maxInFlight: 1, maxQueueWaitMs: 10_000, maxQueue: 2 });
    const holder = request(g, 300);
    const waiters = [request(g, 0), request(g, 0)];
    await sleep(20);
    const t0 = Date.now();
    expect(await request(g, 0)).toBe("shed");
    expect(Date.now() - t0).toBeLessThan(50);
    expect(await holder).toBe("ok");
    expect(await Promise.all(waiters)).toEqual(["ok", "ok"]);
    expect(await request(g, 0)).toBe("ok");
  });

  it("sheds while the event loop is delayed past its limit and a request executes, and not once it is not", async () => {
    const g = make({ maxEventLoopDelayMs: 40, windowMs: 200 });
    await sleep(250);
    expect(await request(g, 0)).toBe("ok");
    const held = request(g, 1000);
    // Block the loop for 600 ms while one request executes: the window's mean delay is far past 40 ms.
    const t = Date.now();
    while (Date.now() - t < 600);
    await sleep(50);
    expect(g.inFlight()).toBe(1);
    expect(await request(g, 0)).toBe("shed");
    expect(await held).toBe("ok");
    await sleep(250);
    expect(await request(g, 0)).toBe("ok");
  });

  it("serves the next request after a delay of the loop with none executing (one costly request that has finished)", async () => {
    const g = make({ maxEventLoopDelayMs: 40, windowMs: 200 });
    await sleep(250);
    const t = Date.now();
    while (Date.now() - t < 600);
    await sleep(50);
    expect(g.inFlight()).toBe(0);
    expect(g.saturated()).toBe(false);
    expect(await request(g, 0)).toBe("ok");
    // The same delay with a request executing sheds: the window still holds it.
    const held = request(g, 300);
    await sleep(0);
    expect(await request(g, 0)).toBe("shed");
    expect(await held).toBe("ok");
  });

  it("sheds while the heap is past its share of the limit", async () => {
    // Half of what this process holds now: past the limit whatever the machine's heap limit.
    const percent = ((process.memoryUsage().heapUsed / getHeapStatistics().heap_size_limit) * 100) / 2;
    const g = make({ maxHeapPercent: percent });
    await sleep(120);
    expect(await request(g, 0)).toBe("shed");
  });

  it("sheds a route with 8 requests executing past maxLatencyMs, not other routes nor untested ones", async () => {
    const g = make({ maxLatencyMs: 100, windowMs: 50 });
    const slow = Array.from({ length: 8 }, () => request(g, 600, "GET /v1/slow"));
    const untested = Array.from({ length: 8 }, () => request(g, 600, "POST /v1/batch/x", false));
    // Seven slow ones are no queue: a client sending waves of a few is never shed.
    const seven = Array.from({ length: 7 }, () => request(g, 600, "GET /v1/seven"));
    await sleep(300);
    expect(await request(g, 0, "GET /v1/slow")).toBe("shed");
    expect(await request(g, 0, "GET /v1/seven")).toBe("ok");
    expect(await request(g, 0, "GET /v1/other")).toBe("ok");
    expect(await request(g, 0, "POST /v1/batch/x", false)).toBe("ok");
    expect(await Promise.all([...slow, ...untested, ...seven])).toEqual(Array(23).fill("ok"));
    await sleep(100);
    expect(await request(g, 0, "GET /v1/slow")).toBe("ok");
    expect(g.shed()).toBe(1);
  });
});
