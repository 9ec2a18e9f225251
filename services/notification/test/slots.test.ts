import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createSlots, type TakeResult } from "../src/webhooks/slots.js";

// The per-destination slots and lines of the delivery worker, on fake timers.

describe("delivery slots", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const settled = async <T>(p: Promise<T>): Promise<T | "waiting"> => {
    let out: T | "waiting" = "waiting";
    void p.then((v) => (out = v));
    await vi.advanceTimersByTimeAsync(0);
    return out;
  };

  it("a destination whose slots are taken queues its tasks in order and hands each freed slot to the first in line; other destinations are not touched", async () => {
    const slots = createSlots(2, 2000);
    expect(await slots.take("a", 250)).toBe("taken");
    expect(await slots.take("a", 250)).toBe("taken");
    const order: number[] = [];
    const waiting = [1, 2, 3].map((i) => slots.take("a", 250).then((r) => (order.push(i), r)));
    // Another destination has its own slots.
    expect(await slots.take("b", 250)).toBe("taken");
    slots.release("a", 100);
    await vi.advanceTimersByTimeAsync(100);
    slots.release("a", 100);
    await vi.advanceTimersByTimeAsync(100);
    slots.release("a", 100);
    expect(await Promise.all(waiting)).toEqual(["taken", "taken", "taken"]);
    expect(order).toEqual([1, 2, 3]);
  });

  it("a line with no attempt ending for the stall time is sent away whole; a failing destination (stall 0) never waits", async () => {
    const slots = createSlots(1, 2000);
    expect(await slots.take("dead", 250)).toBe("taken");
    const a = slots.take("dead", 250);
    const b = slots.take("dead", 250);
    await vi.advanceTimersByTimeAsync(200);
    expect(await settled(a)).toBe("waiting");
    await vi.advanceTimersByTimeAsync(100);
    expect(await a).toBe("stalled");
    expect(await b).toBe("stalled");
    expect(await slots.take("dead", 0)).toBe("full");
  });

  it("a stall check that runs late (this process's event loop held up) sends nobody away", async () => {
    const slots = createSlots(1, 2000);
    expect(await slots.take("a", 250)).toBe("taken");
    const waiter = slots.take("a", 250);
    // The clock jumps a second while no timer runs: the check fires that late.
    vi.setSystemTime(Date.now() + 1000);
    await vi.advanceTimersByTimeAsync(250);
    expect(await settled(waiter)).toBe("waiting");
    slots.release("a", 100);
    expect(await waiter).toBe("taken");
  });

  it("a line keeps waiting while attempts keep ending, however long it takes in all", async () => {
    const slots = createSlots(1, 60_000);
    expect(await slots.take("busy", 250)).toBe("taken");
    const line = Array.from({ length: 20 }, () => slots.take("busy", 250));
    const results: TakeResult[] = [];
    for (let i = 0; i < 20; i++) {
      await vi.advanceTimersByTimeAsync(200);
      slots.release("busy", 100);
      results.push(await (line[i] as Promise<TakeResult>));
    }
    expect(results.every((r) => r === "taken")).toBe(true);
  });

  it("before any attempt of a key ended, tasks turned away are booked at the pace its oldest attempt's age gives", async () => {
    const slots = createSlots(4, 10_000);
    for (let i = 0; i < 4; i++) expect(await slots.take("t", 0)).toBe("taken");
    expect(await slots.take("t", 0)).toBe("full");
    // Nothing known yet: the shortest stay.
    expect(slots.deferMs("t")).toBe(50);
    await vi.advanceTimersByTimeAsync(400);
    // 400 ms without an attempt ending over 4 slots: at least 100 ms a step, one after the other.
    const booked = [slots.deferMs("t"), slots.deferMs("t"), slots.deferMs("t")];
    expect(booked[0]).toBeGreaterThanOrEqual(100);
    expect(booked[1]! - booked[0]!).toBe(100);
    expect(booked[2]! - booked[1]!).toBe(100);
  });

  it("all lines together hold at most maxWaiting tasks; onWait runs for each task that joins one", async () => {
    const slots = createSlots(1, 60_000, 2);
    const joined: string[] = [];
    for (const key of ["a", "b"]) expect(await slots.take(key, 250)).toBe("taken");
    const line = [slots.take("a", 250, () => joined.push("a1")), slots.take("b", 250, () => joined.push("b1"))];
    expect(await slots.take("a", 250, () => joined.push("a2"))).toBe("full");
    expect(joined).toEqual(["a1", "b1"]);
    slots.release("a", 100);
    expect(await line[0]).toBe("taken");
    // A place in the lines is free again.
    const next = slots.take("b", 250, () => joined.push("b2"));
    expect(joined).toEqual(["a1", "b1", "b2"]);
    slots.release("b", 100);
    slots.release("b", 100);
    expect(await Promise.all([line[1], next])).toEqual(["taken", "taken"]);
  });

  it("a line is as long as the destination's pace gets through in the line wait; a task beyond it is turned away and booked one pace step after the last", async () => {
    const slots = createSlots(1, 1000);
    expect(await slots.take("slow", 5000)).toBe("taken");
    // Learn the pace: attempts of 100 ms, one slot.
    const warm = Array.from({ length: 6 }, () => slots.take("slow", 5000));
    for (let i = 0; i < 6; i++) {
      await vi.advanceTimersByTimeAsync(100);
      slots.release("slow", 100);
    }
    expect(await Promise.all(warm)).toEqual(warm.map(() => "taken"));
    // 100 ms a step and 1000 ms of line: ten wait, the eleventh is turned away.
    const line = Array.from({ length: 10 }, () => slots.take("slow", 5000));
    expect(await settled(line[9] as Promise<TakeResult>)).toBe("waiting");
    expect(await slots.take("slow", 5000)).toBe("full");
    const d1 = slots.deferMs("slow");
    const d2 = slots.deferMs("slow");
    // After the ten in line, one step apart.
    expect(d1).toBeGreaterThanOrEqual(1000);
    expect(d1).toBeLessThan(1300);
    expect(d2 - d1).toBeGreaterThan(50);
    expect(d2 - d1).toBeLessThan(150);
  });
});
