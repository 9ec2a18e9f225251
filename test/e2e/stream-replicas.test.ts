import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { http, newIp } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { openStream, type SseStream } from "../support/sse.js";

// The stream across gateway replicas (docs/stream.md), on two whole systems of its own sharing one
// namespace: a cursor replays on any replica; a cursor past the window gets `reset` first; a
// gateway restarted under a connected client ends its stream with a last frame, and the client's
// reconnect with its cursor loses nothing and repeats nothing.
//
// The replay window here keeps 5 events per feed (production: 10,000), so that "past the window"
// is a handful of posts rather than 10,001; the restart test stays within it (at most 2 events per
// feed while its client is away).

const PER_FEED = 5;

describe("the stream across replicas and restarts", () => {
  const namespace = newNamespace("stream");
  const staff = { email: "staff@stream.test", password: randomBytes(12).toString("base64url") };
  let infra: Awaited<ReturnType<typeof testInfra>>;
  const replicas: RunningSystem[] = [];
  let token: string;

  beforeAll(async () => {
    infra = await testInfra();
    const env = {
      ...infra.env,
      FEEDS_NAMESPACE: namespace,
      BOOTSTRAP_STAFF_EMAIL: staff.email,
      BOOTSTRAP_STAFF_PASSWORD: staff.password,
      TRUST_PROXY: "1",
      LOG_LEVEL: "fatal",
      BUILD_VERSION: inject("buildVersion"),
      STREAM_REPLAY_EVENTS_PER_FEED: String(PER_FEED),
    };
    for (let i = 0; i < 2; i++) replicas.push(await startSystem({ env }));
    const [a] = replicas as [RunningSystem];
    const login = await http("POST", "/operator/login", { url: a.url, ip: newIp(), body: staff });
    const created = await http("POST", "/admin/tenants", { url: a.url, token: login.body.token, body: { name: "stream" } });
    expect(created.status).toBe(201);
    token = await createServerToken(created.body.tenant.api_key, created.body.api_secret);
  }, 240_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    if (infra) await dropNamespace(namespace, infra);
  });

  const post = async (url: string, feed: string, object: string) => {
    const res = await http("POST", `/v1/feeds/${feed.replace(":", "/")}/activities`, { url, token, body: { actor: "user:w", verb: "post", object } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  const addedIds = (s: SseStream) => s.events().filter((e) => e.event === "activity.added").map((e) => e.json.activity.id as string);

  it("a cursor past the window gets reset cursor_too_old first, then live; one within it replays on the other replica", async () => {
    const [a, b] = replicas as [RunningSystem, RunningSystem];
    const feed = "user:window";
    const s = await openStream(`/v1/stream?feeds=${feed}`, { url: a.url, token });
    const first = await post(b.url, feed, "note:0");
    await s.until("the first", () => addedIds(s).length === 1);
    const old = s.lastId() as string;
    s.close();

    // Within the window (PER_FEED events after the cursor): replayed, on the other replica.
    const kept: string[] = [];
    for (let i = 1; i <= PER_FEED; i++) kept.push(await post(a.url, feed, `note:${i}`));
    const within = await openStream(`/v1/stream?feeds=${feed}`, { url: b.url, token, headers: { "last-event-id": old } });
    await within.until("the replay", () => addedIds(within).length === PER_FEED);
    expect(addedIds(within)).toEqual(kept);
    expect(within.events().some((e) => e.event === "reset")).toBe(false);
    within.close();
    expect(first).not.toBe(kept[0]);

    // One more: the first event after the cursor is gone, so the cursor is past the window.
    await post(a.url, feed, "note:more");
    const past = await openStream(`/v1/stream?feeds=${feed}`, { url: b.url, token, headers: { "last-event-id": old } });
    expect(past.status).toBe(200);
    await past.until("the reset", () => past.events().length >= 1);
    expect(past.events()[0]).toMatchObject({ event: "reset", json: { reason: "cursor_too_old" } });
    const live = await post(a.url, feed, "note:live");
    await past.until("live", () => addedIds(past).length === 1);
    expect(addedIds(past)).toEqual([live]);
    // The reset's id is a fresh cursor: resuming from it replays what came after it only.
    const fresh = past.events()[0]?.id as string;
    past.close();
    const after = await openStream(`/v1/stream?feeds=${feed}`, { url: a.url, token, headers: { "last-event-id": fresh } });
    await after.until("the replay", () => addedIds(after).length === 1);
    expect(addedIds(after)).toEqual([live]);
    after.close();
  });

  it("a gateway restarted under a connected client: a last frame, then the reconnect with its cursor loses nothing and repeats nothing", async () => {
    const [a, b] = replicas as [RunningSystem, RunningSystem];
    const gateway = a.processes[0];
    if (!gateway) throw new Error("no gateway process");
    const feeds = Array.from({ length: 20 }, (_, i) => `user:r${i}`);
    const s = await openStream(`/v1/stream?feeds=${feeds.join(",")}`, { url: a.url, token });
    expect(s.status).toBe(200);
    const posted: string[] = [];
    for (let i = 0; i < 3; i++) posted.push(await post(b.url, feeds[i] as string, `note:before${i}`));
    await s.until("the first 3", () => addedIds(s).length === 3);

    // Posts go on through the other replica while the gateway drains, stops and starts again.
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing && i < 20; i++) {
        posted.push(await post(b.url, feeds[i] as string, `note:during${i}`));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await new Promise((r) => setTimeout(r, 150));
    await gateway.stop();
    await s.ended;
    const last = s.events()[s.events().length - 1];
    expect(last).toMatchObject({ event: "reset", json: { reason: "server_draining" } });
    await gateway.restart();
    const url = (await gateway.first).url as string;
    writing = false;
    await writer;

    const cursor = s.lastId() as string;
    const again = await openStream(`/v1/stream?feeds=${feeds.join(",")}`, { url, token, headers: { "last-event-id": cursor } });
    expect(again.status).toBe(200);
    const tail = await post(b.url, feeds[5] as string, "note:after");
    posted.push(tail);
    await again.until("every event", () => addedIds(again).includes(tail), 30_000);
    const seen = [...addedIds(s), ...addedIds(again)];
    expect(seen).toEqual(posted);
    again.close();
  }, 120_000);
});
