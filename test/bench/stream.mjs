// Bench 15 of `npm run bench`: the live stream (docs/stream.md) on a one-process system of its own.
//   - delivery latency, from a post's 201 (as its client reads it) to the activity.added frame,
//     for a watcher of the origin feed and one of a follower feed, while 8 other writers post
//     to feeds with 10 followers each as fast as they are answered (the write load);
//   - 1,000 idle streams held by one gateway process: its RSS before and after, per stream.
import { request } from "node:http";
import { performance } from "node:perf_hooks";
import { MB, api, percentile, rssOf, sleep } from "./lib.mjs";
import { batch, range, userToken, withSystem } from "./system.mjs";

/** An SSE GET whose activity.added frames call `onAdded(frame data, arrival ms)`. */
function watch(url, path, token, onAdded = () => undefined) {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!frame.includes("event: activity.added")) continue;
          const data = frame.split("\n").find((l) => l.startsWith("data: "));
          if (data) onAdded(JSON.parse(data.slice(6)), performance.now());
        }
      });
      res.on("error", () => undefined);
      resolve({ close: () => req.destroy() });
    });
    req.on("error", reject);
    req.end();
  });
}

const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1] };
};

export async function runStream({ infra, log, seconds = 10, idle = 1000 }) {
  return withSystem(infra, log, "bench-15-stream", async (c) => {
    const token = c.tenant.token;
    // The watched author has 10 followers; so has each of the 8 loaders.
    const follows = [
      ...range(10).map((i) => ({ source: `timeline:w${i}`, target: "user:author" })),
      ...range(8).flatMap((a) => range(10).map((i) => ({ source: `timeline:l${a}_${i}`, target: `user:load${a}` }))),
    ];
    await batch(c, "/v1/batch/follows", "follows", follows);

    const posted = new Map(); // activity id → the 201's arrival
    const origin = [];
    const follower = [];
    const arrivals = { origin: new Map(), follower: new Map() };
    const record = (kind) => (data, at) => {
      arrivals[kind].set(data.activity.id, at);
    };
    const w1 = await watch(c.url, "/v1/stream?feeds=user:author", token, record("origin"));
    const w2 = await watch(c.url, "/v1/stream?feeds=timeline:w0", token, record("follower"));

    let writing = true;
    let loadPosts = 0;
    const loaders = range(8).map(async (a) => {
      while (writing) {
        await api(c.url, "POST", `/v1/feeds/user/load${a}/activities`, { token, body: { actor: `user:load${a}`, verb: "post", object: "note:load" } });
        loadPosts++;
      }
    });
    const started = performance.now();
    while (performance.now() - started < seconds * 1000) {
      const a = await api(c.url, "POST", "/v1/feeds/user/author/activities", { token, body: { actor: "user:author", verb: "post", object: "note:watched" } });
      posted.set(a.id, performance.now());
      await sleep(100);
    }
    writing = false;
    await Promise.all(loaders);
    const elapsed = (performance.now() - started) / 1000;
    // Late frames still count (a miss would show as fewer than posted).
    for (let i = 0; i < 100 && (arrivals.origin.size < posted.size || arrivals.follower.size < posted.size); i++) await sleep(100);
    for (const [id, at] of posted) {
      if (arrivals.origin.has(id)) origin.push(arrivals.origin.get(id) - at);
      if (arrivals.follower.has(id)) follower.push(arrivals.follower.get(id) - at);
    }
    w1.close();
    w2.close();
    log(`bench 15: ${posted.size} watched posts, ${loadPosts} load posts in ${elapsed.toFixed(1)} s`);

    // Idle streams: one per user (the per-user limit is 5), all on the one gateway process.
    await sleep(500);
    const before = rssOf(c.gatewayPid);
    const held = [];
    for (let i = 0; i < idle; i += 50) {
      held.push(...(await Promise.all(range(i, Math.min(idle, i + 50)).map(async (u) => watch(c.url, `/v1/stream?feeds=timeline:w${u % 10}`, await userToken(c.tenant, `idle${u}`))))));
    }
    await sleep(2000);
    const after = rssOf(c.gatewayPid);
    for (const h of held) h.close();
    return {
      posts: posted.size,
      loadPostsPerSecond: loadPosts / elapsed,
      origin: summary(origin),
      follower: summary(follower),
      idle: { streams: held.length, rssBeforeMB: before / MB, rssAfterMB: after / MB, kbPerStream: (after - before) / 1024 / held.length },
    };
  });
}
