import SwaggerParser from "@apidevtools/swagger-parser";
import { describe, expect, it } from "vitest";
import { envelope, http, newOperator, newTenant, staffToken, type TestTenant, queueDrained } from "../support/api.js";

/** Follows `source` → `target` ("group:id") with a server token; asserts a 2xx. */
async function follow(t: TestTenant, source: string, target: string, token?: string) {
  const [group, id] = source.split(":");
  const res = await http("POST", `/v1/feeds/${group}/${id}/follows`, { token: token ?? (await t.server()), body: { target } });
  if (res.status !== 201 && res.status !== 200) throw new Error(`follow ${source} → ${target}: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

const stats = async (token: string, feed: string, prefix = "/v1/feeds") =>
  (await http("GET", `${prefix}/${feed.replace(":", "/")}/stats`, { token })).body;

/** Every page of a follows/followers list, `limit` at a time. */
async function allPages(token: string, path: string, limit: number) {
  const pages: any[][] = [];
  let next: string | null = null;
  do {
    const res: { status: number; body: any } = await http("GET", `${path}?limit=${limit}${next ? `&next=${next}` : ""}`, { token });
    expect(res.status).toBe(200);
    expect(res.body.results.length).toBeLessThanOrEqual(limit);
    pages.push(res.body.results);
    next = res.body.next;
  } while (next);
  return pages;
}

describe("follows", () => {
  it("follow answers 201 then 200 with the same edge; stats, follows and followers show it at once", async () => {
    const t = await newTenant();
    const server = await t.server();
    const first = await http("POST", "/v1/feeds/timeline/ann/follows", { token: server, body: { target: "user:bob" } });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      source_group: "timeline",
      source_id: "ann",
      target_group: "user",
      target_id: "bob",
      created_at: expect.any(String),
    });
    expect(Date.parse(first.body.created_at)).not.toBeNaN();
    const again = await http("POST", "/v1/feeds/timeline/ann/follows", { token: server, body: { target: "user:bob", activity_copy_limit: 0 } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);

    expect(await stats(server, "user:bob")).toEqual({ feed: "user:bob", follower_count: 1, following_count: 0 });
    expect(await stats(server, "timeline:ann")).toEqual({ feed: "timeline:ann", follower_count: 0, following_count: 1 });
    expect(await stats(server, "user:nobody")).toEqual({ feed: "user:nobody", follower_count: 0, following_count: 0 });
    const follows = await http("GET", "/v1/feeds/timeline/ann/follows", { token: server });
    expect(follows.body).toEqual({ results: [first.body], next: null });
    const followers = await http("GET", "/v1/feeds/user/bob/followers", { token: server });
    expect(followers.body).toEqual({ results: [first.body], next: null });
  });

  it("unfollow answers 204 (also without an edge) and updates every read before answering", async () => {
    const t = await newTenant();
    const server = await t.server();
    await follow(t, "user:ann", "user:bob");
    await follow(t, "user:ann", "user:cat");
    const gone = await http("DELETE", "/v1/feeds/user/ann/follows/user/bob", { token: server });
    expect(gone.status).toBe(204);
    expect(gone.body).toBeUndefined();
    expect(await stats(server, "user:bob")).toMatchObject({ follower_count: 0, following_count: 0 });
    expect(await stats(server, "user:ann")).toMatchObject({ follower_count: 0, following_count: 1 });
    expect((await http("GET", "/v1/feeds/user/bob/followers", { token: server })).body.results).toEqual([]);
    expect((await http("GET", "/v1/feeds/user/ann/follows", { token: server })).body.results.map((f: any) => f.target_id)).toEqual(["cat"]);

    // Absent edges, repeats and keep_history answer 204 and move no counter.
    expect((await http("DELETE", "/v1/feeds/user/ann/follows/user/bob", { token: server })).status).toBe(204);
    expect((await http("DELETE", "/v1/feeds/user/zed/follows/user/nobody?keep_history=false", { token: server })).status).toBe(204);
    expect((await http("DELETE", "/v1/feeds/user/ann/follows/user/cat?keep_history=true", { token: server })).status).toBe(204);
    expect(await stats(server, "user:ann")).toMatchObject({ follower_count: 0, following_count: 0 });
    expect(await stats(server, "user:bob")).toMatchObject({ follower_count: 0, following_count: 0 });
    expect((await http("DELETE", "/v1/feeds/user/ann/follows/user/cat?keep_history=maybe", { token: server })).status).toBe(400);

    // Following again after an unfollow is a new edge.
    expect((await http("POST", "/v1/feeds/user/ann/follows", { token: server, body: { target: "user:bob" } })).status).toBe(201);
    expect(await stats(server, "user:bob")).toMatchObject({ follower_count: 1 });
  });

  it("concurrent identical follows create one edge and count it once", async () => {
    const t = await newTenant();
    const server = await t.server();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => http("POST", "/v1/feeds/user/ann/follows", { token: server, body: { target: "user:bob" } })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.created_at)).size).toBe(1);
    expect(await stats(server, "user:bob")).toMatchObject({ follower_count: 1 });
    expect(await stats(server, "user:ann")).toMatchObject({ following_count: 1 });
  });

  it("validates: self-follow, targets, copy limit and path patterns answer 400 naming the field", async () => {
    const t = await newTenant();
    const server = await t.server();
    const self = await http("POST", "/v1/feeds/user/ann/follows", { token: server, body: { target: "user:ann" } });
    expect(self.status).toBe(400);
    expect(envelope(self)).toMatchObject({ code: "VALIDATION_FAILED", fields: [{ path: "target" }] });
    // The same id in another group is not oneself.
    expect((await http("POST", "/v1/feeds/timeline/ann/follows", { token: server, body: { target: "user:ann" } })).status).toBe(201);

    const cases: [string, unknown, string][] = [
      ["/v1/feeds/user/ann/follows", { target: "bob" }, "target"],
      ["/v1/feeds/user/ann/follows", { target: "us-er:bob" }, "target"],
      ["/v1/feeds/user/ann/follows", { target: `user:${"x".repeat(129)}` }, "target"],
      ["/v1/feeds/user/ann/follows", {}, "target"],
      ["/v1/feeds/user/ann/follows", { target: "user:bob", activity_copy_limit: 1001 }, "activity_copy_limit"],
      ["/v1/feeds/user/ann/follows", { target: "user:bob", activity_copy_limit: -1 }, "activity_copy_limit"],
      ["/v1/feeds/user/ann/follows", { target: "user:bob", activity_copy_limit: 1.5 }, "activity_copy_limit"],
      ["/v1/feeds/us-er/ann/follows", { target: "user:bob" }, "group"],
      [`/v1/feeds/user/${"x".repeat(129)}/follows`, { target: "user:bob" }, "id"],
      ["/v1/feeds/user/a%20b/follows", { target: "user:bob" }, "id"],
    ];
    for (const [path, body, field] of cases) {
      const res = await http("POST", path, { token: server, body });
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(envelope(res).fields?.map((f) => f.path)).toContain(field);
    }
    expect((await http("POST", "/v1/feeds/user/ann/follows", { token: server, body: { target: "user:bob", activity_copy_limit: 1000 } })).status).toBe(201);
    expect((await http("POST", "/v1/feeds/user/ann/follows", { token: server, body: { target: "user:cat", activity_copy_limit: 0 } })).status).toBe(201);

    const badUnfollow = await http("DELETE", "/v1/feeds/user/ann/follows/us-er/bob", { token: server });
    expect(envelope(badUnfollow).fields?.map((f) => f.path)).toEqual(["target_group"]);
    for (const path of ["/v1/feeds/us-er/ann/followers", "/v1/feeds/user/a%20b/follows", "/v1/feeds/user/a%20b/stats", "/v1/feeds/us-er/ann/suggestions"]) {
      const res = await http("GET", path, { token: server });
      expect(res.status, path).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
    expect((await http("GET", "/v1/feeds/user/ann/follows", {})).status).toBe(401);
  });

  it("user tokens follow and unfollow only from feeds with their own id; reads are open", async () => {
    const t = await newTenant();
    const ann = await t.user("ann");
    expect((await http("POST", "/v1/feeds/user/ann/follows", { token: ann, body: { target: "user:bob" } })).status).toBe(201);
    expect((await http("POST", "/v1/feeds/timeline/ann/follows", { token: ann, body: { target: "user:bob" } })).status).toBe(201);
    const foreign = await http("POST", "/v1/feeds/user/bob/follows", { token: ann, body: { target: "user:cat" } });
    expect(foreign.status).toBe(403);
    expect(envelope(foreign).code).toBe("FORBIDDEN");
    expect((await http("POST", "/v1/feeds/timeline/bob/follows", { token: ann, body: { target: "user:ann" } })).status).toBe(403);

    await follow(t, "user:bob", "user:cat");
    expect((await http("DELETE", "/v1/feeds/user/bob/follows/user/cat", { token: ann })).status).toBe(403);
    expect((await http("DELETE", "/v1/feeds/user/bob/follows/user/nobody", { token: ann })).status).toBe(403);
    expect(await stats(ann, "user:cat")).toMatchObject({ follower_count: 1 });
    expect((await http("DELETE", "/v1/feeds/timeline/ann/follows/user/bob", { token: ann })).status).toBe(204);

    // Reads of any feed of the tenant are open to any of its tokens.
    const bob = await t.user("bob");
    expect((await http("GET", "/v1/feeds/user/ann/follows", { token: bob })).body.results).toHaveLength(1);
    expect((await http("GET", "/v1/feeds/user/bob/followers", { token: bob })).body.results).toHaveLength(1);
    expect(await stats(bob, "user:bob")).toEqual({ feed: "user:bob", follower_count: 1, following_count: 1 });
    expect((await http("GET", "/v1/feeds/user/ann/suggestions", { token: bob })).status).toBe(200);
  });

  it("follows and followers page newest first, joining without loss or repeat", async () => {
    const t = await newTenant();
    const server = await t.server();
    const n = 11;
    for (let i = 0; i < n; i++) {
      await follow(t, `user:fan${String(i).padStart(2, "0")}`, "user:star");
      await follow(t, "user:star", `topic:t${String(i).padStart(2, "0")}`);
    }
    await follow(t, "user:other", "user:elsewhere");
    for (const [path, key] of [
      ["/v1/feeds/user/star/followers", "source_id"],
      ["/v1/feeds/user/star/follows", "target_id"],
    ] as const) {
      for (const limit of [1, 3, 4, 11, 100]) {
        const pages = await allPages(server, path, limit);
        expect(pages.length, `${path} limit ${limit}`).toBe(Math.ceil(n / limit));
        const rows = pages.flat();
        expect(rows).toHaveLength(n);
        expect(new Set(rows.map((r) => r[key])).size).toBe(n);
        const times = rows.map((r) => Date.parse(r.created_at));
        expect([...times].sort((a, b) => b - a)).toEqual(times);
      }
      // Newest first: the last made is the first listed.
      const firstPage = (await http("GET", `${path}?limit=2`, { token: server })).body;
      expect(firstPage.results[0][key]).toBe(key === "source_id" ? "fan10" : "t10");
      // `cursor` is the deprecated alias of `next`; `next` wins when both are sent.
      const viaAlias = (await http("GET", `${path}?limit=2&cursor=${firstPage.next}`, { token: server })).body;
      const viaNext = (await http("GET", `${path}?limit=2&next=${firstPage.next}`, { token: server })).body;
      expect(viaAlias).toEqual(viaNext);
      const both = (await http("GET", `${path}?limit=2&next=${firstPage.next}&cursor=${viaNext.next}`, { token: server })).body;
      expect(both).toEqual(viaNext);
    }
    const stars = await stats(server, "user:star");
    expect(stars).toEqual({ feed: "user:star", follower_count: n, following_count: n });

    for (const q of ["limit=0", "limit=101", "limit=x", "next=bad!", `next=${Buffer.from("[1]").toString("base64url")}`]) {
      const res = await http("GET", `/v1/feeds/user/star/followers?${q}`, { token: server });
      expect(res.status, q).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
    expect((await http("GET", "/v1/feeds/user/star/followers?limit=100", { token: server })).status).toBe(200);
  });
});

describe("history on follow and unfollow", () => {
  /** The ids of `feed`'s activities that came from `origin`. */
  const idsFrom = async (token: string, feed: string, origin: string) =>
    (await http("GET", `/v1/feeds/${feed.replace(":", "/")}?limit=100`, { token })).body.results
      .filter((a: any) => a.origin_feed === origin)
      .map((a: any) => a.id);

  /** Until the fan-out queue (posts' fan-out and follows' history tasks) holds nothing. */
  const drained = () => queueDrained("fanout", { timeoutMs: 10_000 });


  /** Follower-feed content is eventually consistent (contract): polls until it is `want`, 10 s at most. */
  async function eventuallyIdsFrom(token: string, feed: string, origin: string, want: string[]) {
    let ids: string[] = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      ids = await idsFrom(token, feed, origin);
      if (JSON.stringify(ids) === JSON.stringify(want)) break;
    }
    expect(ids).toEqual(want);
  }

  it("follow copies up to activity_copy_limit of the target's newest activities; unfollow removes them unless keep_history", async () => {
    const t = await newTenant();
    const server = await t.server();
    const posted: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await http("POST", "/v1/feeds/user/bob/activities", {
        token: server,
        body: { actor: "user:bob", verb: "post", object: `note:${i}`, time: new Date(Date.UTC(2020, 0, 1 + i)).toISOString() },
      });
      expect(res.status).toBe(201);
      posted.push(res.body.id);
    }
    // Let the posts' fan-out finish first, so that only the follow can bring them anywhere.
    await drained();
    const newest = [...posted].reverse();

    expect((await http("POST", "/v1/feeds/timeline/ann/follows", { token: server, body: { target: "user:bob", activity_copy_limit: 2 } })).status).toBe(201);
    await eventuallyIdsFrom(server, "timeline:ann", "user:bob", newest.slice(0, 2));
    expect((await http("DELETE", "/v1/feeds/timeline/ann/follows/user/bob?keep_history=true", { token: server })).status).toBe(204);
    // Nothing is queued to remove them: once the queue is empty they are still there.
    await drained();
    expect(await idsFrom(server, "timeline:ann", "user:bob")).toEqual(newest.slice(0, 2));

    expect((await http("POST", "/v1/feeds/timeline/ann/follows", { token: server, body: { target: "user:bob" } })).status).toBe(201);
    await eventuallyIdsFrom(server, "timeline:ann", "user:bob", newest);
    expect((await http("DELETE", "/v1/feeds/timeline/ann/follows/user/bob", { token: server })).status).toBe(204);
    await eventuallyIdsFrom(server, "timeline:ann", "user:bob", []);

    expect((await http("POST", "/v1/feeds/timeline/cat/follows", { token: server, body: { target: "user:bob", activity_copy_limit: 0 } })).status).toBe(201);
    await drained();
    expect(await idsFrom(server, "timeline:cat", "user:bob")).toEqual([]);
    // A repeat follow copies too (with its own limit); copies never duplicate.
    expect((await http("POST", "/v1/feeds/timeline/cat/follows", { token: server, body: { target: "user:bob", activity_copy_limit: 1 } })).status).toBe(200);
    await eventuallyIdsFrom(server, "timeline:cat", "user:bob", newest.slice(0, 1));
    expect((await http("POST", "/v1/feeds/timeline/cat/follows", { token: server, body: { target: "user:bob", activity_copy_limit: 1 } })).status).toBe(200);
    await drained();
    expect(await idsFrom(server, "timeline:cat", "user:bob")).toEqual(newest.slice(0, 1));
  });
});

describe("suggestions", () => {
  it("ranks by mutuals, then follower count, then id; fills by popularity with mutuals 0; excludes follows and self", async () => {
    const t = await newTenant();
    const server = await t.server();
    // me follows a, b, c.
    for (const f of ["user:a", "user:b", "user:c"]) await follow(t, "user:me", f);
    // x is followed by a, b, c (3 mutuals); y by a, b (2); w by a (1); z by b (1) and has more followers.
    for (const f of ["user:x", "user:y", "user:w"]) await follow(t, "user:a", f);
    for (const f of ["user:x", "user:y", "user:z"]) await follow(t, "user:b", f);
    // c also follows me (self), a (already followed) and a non-user feed: none is suggested.
    for (const f of ["user:x", "user:me", "user:a", "topic:q"]) await follow(t, "user:c", f);
    for (const f of ["user:z", "user:pop"]) {
      await follow(t, "user:p1", f);
      await follow(t, "user:p2", f);
    }
    await follow(t, "user:p3", "user:pop");
    await follow(t, "user:p4", "user:pop");
    await follow(t, "topic:feedish", "topic:q");

    const res = await http("GET", "/v1/feeds/user/me/suggestions", { token: await t.user("me") });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      results: [
        { group: "user", id: "x", mutuals: 3 },
        { group: "user", id: "y", mutuals: 2 },
        { group: "user", id: "z", mutuals: 1 },
        { group: "user", id: "w", mutuals: 1 },
        { group: "user", id: "pop", mutuals: 0 },
      ],
    });
    const two = await http("GET", "/v1/feeds/user/me/suggestions?limit=2", { token: server });
    expect(two.body.results.map((s: any) => s.id)).toEqual(["x", "y"]);

    // A thin graph: popularity alone (follower_count desc, then id), never itself: pop 4, x 3, z 3, a 2, y 2.
    const thin = await http("GET", "/v1/feeds/user/newbie/suggestions?limit=5", { token: server });
    expect(thin.body.results).toEqual([
      { group: "user", id: "pop", mutuals: 0 },
      { group: "user", id: "x", mutuals: 0 },
      { group: "user", id: "z", mutuals: 0 },
      { group: "user", id: "a", mutuals: 0 },
      { group: "user", id: "y", mutuals: 0 },
    ]);
    const popular = await http("GET", "/v1/feeds/user/pop/suggestions", { token: server });
    expect(popular.body.results.map((s: any) => s.id)).not.toContain("pop");
    // Another feed of the same owner is not offered its own user feed.
    const timeline = await http("GET", "/v1/feeds/timeline/me/suggestions?limit=50", { token: server });
    expect(timeline.body.results.map((s: any) => s.id)).not.toContain("me");
    expect(timeline.body.results.every((s: any) => s.group === "user" && s.mutuals === 0)).toBe(true);

    for (const q of ["limit=0", "limit=51", "limit=x"]) {
      const bad = await http("GET", `/v1/feeds/user/me/suggestions?${q}`, { token: server });
      expect(bad.status, q).toBe(400);
      expect(envelope(bad).fields?.[0]?.path).toBe("limit");
    }
    expect((await http("GET", "/v1/feeds/user/me/suggestions?limit=50", { token: server })).status).toBe(200);
  });
});

describe("batch follows", () => {
  it("envelope rules, per-item results, duplicates ok, server tokens only", async () => {
    const t = await newTenant();
    const server = await t.server();
    for (const body of [{}, { follows: [] }, { follows: "x" }, { follows: [1] }, { follows: Array.from({ length: 101 }, (_, i) => ({ source: `user:s${i}`, target: "user:t" })) }]) {
      const res = await http("POST", "/v1/batch/follows", { token: server, body });
      expect(res.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
    const asUser = await http("POST", "/v1/batch/follows", { token: await t.user("ann"), body: { follows: [{ source: "user:ann", target: "user:bob" }] } });
    expect(asUser.status).toBe(403);

    await follow(t, "user:ann", "user:cat");
    const items = [
      { source: "user:ann", target: "user:bob" },
      { source: "ann", target: "user:bob" },
      { source: "user:ann", target: "user:bob" },
      { source: "user:ann", target: "user:ann" },
      { source: "user:ann" },
      { source: "user:ann", target: "user:cat" },
      { source: "timeline:ann", target: "user:bob", extra: true },
    ];
    const res = await http("POST", "/v1/batch/follows", { token: server, body: { follows: items } });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { index: 0, ok: true },
      { index: 1, ok: false, code: "VALIDATION_FAILED" },
      { index: 2, ok: true },
      { index: 3, ok: false, code: "VALIDATION_FAILED" },
      { index: 4, ok: false, code: "VALIDATION_FAILED" },
      { index: 5, ok: true },
      { index: 6, ok: true },
    ]);
    const rerun = await http("POST", "/v1/batch/follows", { token: server, body: { follows: items } });
    expect(rerun.body).toEqual(res.body);
    expect(await stats(server, "user:bob")).toEqual({ feed: "user:bob", follower_count: 2, following_count: 0 });
    expect(await stats(server, "user:ann")).toEqual({ feed: "user:ann", follower_count: 0, following_count: 2 });
    const followers = await http("GET", "/v1/feeds/user/bob/followers", { token: server });
    expect(followers.body.results.map((f: any) => `${f.source_group}:${f.source_id}`).sort()).toEqual(["timeline:ann", "user:ann"]);

    const full = Array.from({ length: 100 }, (_, i) => ({ source: `user:s${i}`, target: "user:hub" }));
    const hundred = await http("POST", "/v1/batch/follows", { token: server, body: { follows: full } });
    expect(hundred.status).toBe(200);
    expect(hundred.body.results.every((r: any) => r.ok)).toBe(true);
    expect(await stats(server, "user:hub")).toMatchObject({ follower_count: 100 });
  });
});

describe("operator inspector and tenant isolation", () => {
  it("owners and members see follows, followers and stats of their tenant; staff 403; other tenants see none of it", async () => {
    const t = await newTenant();
    const other = await newTenant();
    await follow(t, "user:ann", "user:bob");
    await follow(t, "user:cat", "user:bob");
    const server = await t.server();
    const owner = await newOperator(t.id, "owner");
    const member = await newOperator(t.id, "member");
    const v1 = async (path: string) => (await http("GET", `/v1/feeds${path}`, { token: server })).body;
    for (const op of [owner, member]) {
      for (const path of ["/user/ann/follows", "/user/bob/followers", "/user/bob/stats", "/user/bob/followers?limit=1"]) {
        const res = await http("GET", `/operator/inspect/feeds${path}`, { token: op.token });
        expect(res.status, path).toBe(200);
        expect(res.body, path).toEqual(await v1(path));
      }
    }
    const paged = await http("GET", "/operator/inspect/feeds/user/bob/followers?limit=1", { token: member.token });
    const rest = await http("GET", `/operator/inspect/feeds/user/bob/followers?limit=1&next=${paged.body.next}`, { token: member.token });
    expect([...paged.body.results, ...rest.body.results].map((f: any) => f.source_id).sort()).toEqual(["ann", "cat"]);
    expect(rest.body.next).toBeNull();
    expect((await http("GET", "/operator/inspect/feeds/us-er/bob/stats", { token: owner.token })).status).toBe(400);
    expect((await http("GET", "/operator/inspect/feeds/user/bob/followers?next=bad!", { token: owner.token })).status).toBe(400);

    const staff = await staffToken();
    for (const path of ["/user/ann/follows", "/user/bob/followers", "/user/bob/stats"]) {
      const res = await http("GET", `/operator/inspect/feeds${path}`, { token: staff });
      expect(res.status, path).toBe(403);
      expect(envelope(res).code).toBe("FORBIDDEN");
      expect((await http("GET", `/operator/inspect/feeds${path}`, {})).status).toBe(401);
      // A tenant token is not an operator session.
      expect((await http("GET", `/operator/inspect/feeds${path}`, { token: server })).status).toBe(401);
    }

    // The other tenant: same feed names, nothing there, through every door.
    const otherServer = await other.server();
    const otherOwner = await newOperator(other.id, "owner");
    for (const token of [otherServer, await other.user("ann")]) {
      expect((await http("GET", "/v1/feeds/user/ann/follows", { token })).body).toEqual({ results: [], next: null });
      expect((await http("GET", "/v1/feeds/user/bob/followers", { token })).body).toEqual({ results: [], next: null });
      expect(await stats(token, "user:bob")).toEqual({ feed: "user:bob", follower_count: 0, following_count: 0 });
      expect((await http("GET", "/v1/feeds/user/dan/suggestions", { token })).body).toEqual({ results: [] });
    }
    expect(await stats(otherOwner.token, "user:bob", "/operator/inspect/feeds")).toEqual({ feed: "user:bob", follower_count: 0, following_count: 0 });
    expect((await http("GET", "/operator/inspect/feeds/user/bob/followers", { token: otherOwner.token })).body.results).toEqual([]);
    // A cursor of one tenant finds nothing of it in another.
    const cursor = (await http("GET", "/v1/feeds/user/bob/followers?limit=1", { token: server })).body.next;
    expect((await http("GET", `/v1/feeds/user/bob/followers?limit=1&next=${cursor}`, { token: otherServer })).body).toEqual({ results: [], next: null });
    // The other tenant's own edge on the same names is its own, and the first tenant's counts stay.
    expect((await http("POST", "/v1/feeds/user/ann/follows", { token: otherServer, body: { target: "user:bob" } })).status).toBe(201);
    expect(await stats(server, "user:bob")).toMatchObject({ follower_count: 2 });
    expect(await stats(otherServer, "user:bob")).toMatchObject({ follower_count: 1 });
  });
});

describe("graph routes in the OpenAPI document", () => {
  it("lists every follow route with its parameters and body", async () => {
    // Dereferenced: bodies and parameters in place of their $refs.
    const doc = await SwaggerParser.dereference(structuredClone((await http("GET", "/openapi.json")).body));
    const paths = doc.paths as any;
    expect(Object.keys(paths["/v1/feeds/{group}/{id}/follows"]).sort()).toEqual(["get", "post"]);
    for (const p of [
      "/v1/feeds/{group}/{id}/follows/{target_group}/{target_id}",
      "/v1/feeds/{group}/{id}/followers",
      "/v1/feeds/{group}/{id}/stats",
      "/v1/feeds/{group}/{id}/suggestions",
      "/v1/batch/follows",
      "/operator/inspect/feeds/{group}/{id}/follows",
      "/operator/inspect/feeds/{group}/{id}/followers",
      "/operator/inspect/feeds/{group}/{id}/stats",
    ]) {
      expect(paths[p], p).toBeDefined();
    }
    const post = paths["/v1/feeds/{group}/{id}/follows"].post;
    expect(post.responses["201"]).toBeDefined();
    const body = post.requestBody.content["application/json"].schema;
    expect(body.properties.target.type).toBe("string");
    expect(body.properties.activity_copy_limit).toMatchObject({ minimum: 0, maximum: 1000, default: 100 });
    const del = paths["/v1/feeds/{group}/{id}/follows/{target_group}/{target_id}"].delete;
    expect(del.parameters.filter((p: any) => p.in !== "header").map((p: any) => p.name)).toEqual(["group", "id", "target_group", "target_id", "keep_history"]);
  });
});
