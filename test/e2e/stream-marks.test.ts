import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, liveWatchKey } from "@feeds/kit";
import { http } from "../support/api.js";
import { startOwnSystem, type OwnSystem } from "../support/own-system.js";
import { openStream, type SseStream } from "../support/sse.js";

// Watched feeds (docs/stream.md): a gateway renews the marks of the feeds its streams watch; a
// mark found gone or made anew (Redis lost it, so producers may have left events out) ends the
// streams on that feed, and their resume is told `reset` cursor_too_old instead of missing events
// in silence.
//
// Its own system renews marks every 500 ms (production: every 60 s), so that a lost mark is found
// within the test's wait.

describe("a lost watch mark", () => {
  let own: OwnSystem | undefined;
  const open: SseStream[] = [];

  beforeAll(async () => {
    own = await startOwnSystem("stream_marks", { env: { STREAM_MARK_RENEW_MS: "500" } });
  }, 240_000);

  afterAll(async () => {
    for (const s of open) s.close();
    await own?.stop();
  });

  it("ends the streams on its feed at the next renewal, and their resume is reset (cursor_too_old); the feed is marked again", async () => {
    const { system, tenant, namespace, infra } = own as OwnSystem;
    const feed = `user:m${randomBytes(3).toString("hex")}`;
    const other = `user:o${randomBytes(3).toString("hex")}`;
    const stream = async (path: string, headers: Record<string, string> = {}) => {
      const s = await openStream(path, { url: system.url, token: tenant.token, headers });
      open.push(s);
      return s;
    };
    const s = await stream(`/v1/stream?feeds=${feed}`);
    const bystander = await stream(`/v1/stream?feeds=${other}`);
    await s.until("the start", () => s.frames.length >= 1);
    await bystander.until("the start", () => bystander.frames.length >= 1);
    const posted = await http("POST", `/v1/feeds/${feed.replace(":", "/")}/activities`, { url: system.url, token: tenant.token, body: { actor: "user:w", verb: "post", object: "note:1" } });
    expect(posted.status).toBe(201);
    await s.until("its event", () => s.events().some((e) => e.event === "activity.added"));
    const cursor = s.lastId() as string;

    const redis = await connectRedis({ REDIS_URL: infra.env.REDIS_URL, FEEDS_NAMESPACE: namespace });
    try {
      expect(await redis.redis.del(liveWatchKey(redis, tenant.id, feed))).toBe(1);
      await Promise.race([s.ended, new Promise((_, reject) => setTimeout(() => reject(new Error("the stream did not end after its mark was lost")), 5000))]);
      // Only the streams on the lost feed end.
      expect(bystander.isEnded()).toBe(false);
      const again = await stream(`/v1/stream?feeds=${feed}`, { "last-event-id": cursor });
      await again.until("the reset", () => again.events().length >= 1);
      expect(again.events()[0]).toMatchObject({ event: "reset", json: { reason: "cursor_too_old" } });
      expect(await redis.redis.exists(liveWatchKey(redis, tenant.id, feed))).toBe(1);
    } finally {
      await redis.close();
    }
  });

  it("a mark another gateway made anew (after Redis lost it; a new sequence) ends the streams on its feed here too", async () => {
    const { system, tenant, namespace, infra } = own as OwnSystem;
    const feed = `user:n${randomBytes(3).toString("hex")}`;
    const s = await openStream(`/v1/stream?feeds=${feed}`, { url: system.url, token: tenant.token });
    open.push(s);
    await s.until("the start", () => s.frames.length >= 1);
    const redis = await connectRedis({ REDIS_URL: infra.env.REDIS_URL, FEEDS_NAMESPACE: namespace });
    try {
      const key = liveWatchKey(redis, tenant.id, feed);
      const mark = Number(await redis.redis.get(key));
      expect(mark).toBeGreaterThan(0);
      // What another gateway leaves when it found the mark gone first: a mark of a later sequence.
      await redis.redis.set(key, String(mark + 1000), "KEEPTTL");
      await Promise.race([s.ended, new Promise((_, reject) => setTimeout(() => reject(new Error("the stream did not end after its mark was made anew")), 5000))]);
    } finally {
      await redis.close();
    }
  });
});
