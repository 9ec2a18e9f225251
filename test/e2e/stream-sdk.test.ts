import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { UserClient, type StreamEvent } from "@feeds/client";
import { baseUrl, http, newTenant, type TestTenant } from "../support/api.js";

// @feeds/client's stream(): an async iterator over the live stream that resumes by itself (a
// fresh ticket and the last event's id per connection). The test cuts the client's connection
// under it, posts while it is away, and sees every event once, in order.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("@feeds/client stream()", () => {
  let t: TestTenant;
  let server: string;

  beforeAll(async () => {
    t = await newTenant();
    server = await t.server();
  });

  it("yields each event once and in order across a dropped connection, reconnecting with a new ticket and its cursor", { timeout: 60_000 }, async () => {
    const who = `sdk${randomBytes(3).toString("hex")}`;
    const feed = `user:${who}`;
    // The app's fetch, with a way for the test to cut the open stream's connection.
    const streams: AbortController[] = [];
    const opened: string[] = [];
    const fetchImpl: typeof fetch = (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (!url.includes("/v1/stream?")) return fetch(input, init);
      opened.push(url);
      const cut = new AbortController();
      streams.push(cut);
      return fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal });
    };
    const client = new UserClient({ baseUrl: baseUrl(), tokenProvider: () => t.user(who), fetch: fetchImpl });
    const stop = new AbortController();
    const got: StreamEvent[] = [];
    const reading = (async () => {
      for await (const e of client.stream({ feeds: [feed], notifications: true, signal: stop.signal })) got.push(e);
    })();
    const post = async (object: string) => {
      const res = await http("POST", `/v1/feeds/user/${who}/activities`, { token: server, body: { actor: feed, verb: "post", object } });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const until = async (n: number) => {
      for (let i = 0; i < 400 && got.length < n; i++) await sleep(50);
      expect(got.length).toBeGreaterThanOrEqual(n);
    };
    while (opened.length === 0) await sleep(20);
    await sleep(300);
    const ids = [await post("note:1"), await post("note:2")];
    await until(2);

    streams[0]?.abort();
    for (let i = 3; i <= 5; i++) ids.push(await post(`note:${i}`));
    await until(5);
    ids.push(await post("note:6"));
    await until(6);
    stop.abort();
    await reading;

    expect(got.map((e) => [e.type, "activity" in e.data ? e.data.activity.id : null])).toEqual(ids.map((id) => ["activity.added", id]));
    expect(opened.length).toBe(2);
    // Each connection its own ticket; the second resumes after the last event the first read.
    const [first, second] = opened.map((u) => new URL(u));
    expect(first?.searchParams.get("ticket")).not.toBe(second?.searchParams.get("ticket"));
    expect(second?.searchParams.get("last_event_id")).toBe(got[1]?.id);
    expect(first?.searchParams.has("last_event_id")).toBe(false);
  });
});
