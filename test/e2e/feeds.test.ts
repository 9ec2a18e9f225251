import { connect } from "nats";
import { describe, expect, inject, it } from "vitest";
import { envelope, http, newOperator, newTenant, staffToken, type RawAnswer } from "../support/api.js";
import { until } from "../support/until.js";

// Activities and feed reads through the gateway: add-activity rules 1–6, read one, patch, soft
// delete, feed pages, the objects sidecar, actor_user, the change signal and the inspector.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MIN = 60_000;

const feedPath = (ref: string) => ref.replace(":", "/");
const add = (token: string, feed: string, body: unknown) => http("POST", `/v1/feeds/${feedPath(feed)}/activities`, { token, body });
const read = (token: string, feed: string, query = "") => http("GET", `/v1/feeds/${feedPath(feed)}${query}`, { token });
const fieldPaths = (res: RawAnswer) => (envelope(res).fields ?? []).map((f) => f.path);
const ms = (iso: string) => Date.parse(iso);
/** The activity of an add answer (warnings belong to the answer, not to the activity). */
const noWarnings = ({ warnings: _warnings, ...activity }: any) => activity;

/** Asserts 201 and answers the activity. */
async function added(token: string, feed: string, body: unknown): Promise<any> {
  const res = await add(token, feed, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Every page of a feed, following `next`. */
async function readAll(token: string, feed: string, limit: number) {
  const pages: any[] = [];
  let next: string | null = null;
  do {
    const q: string = `?limit=${limit}${next ? `&next=${encodeURIComponent(next)}` : ""}`;
    const res = await read(token, feed, q);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    pages.push(res.body);
    next = res.body.next;
    expect(pages.length).toBeLessThan(100);
  } while (next);
  return pages;
}


describe("add activity", () => {
  it("server token: answers the Activity as given (time unclamped), read one and the feed show it", async () => {
    const t = await newTenant();
    const server = await t.server();
    const time = "2001-02-03T04:05:06.789Z";
    const res = await add(server, "user:alice", {
      actor: "system:importer",
      verb: "post",
      object: "note:1",
      target: "group:g1",
      foreign_id: "fid-1",
      time,
      custom: { title: "hello", n: 12345678901234, nested: { a: [1, 2] } },
      refs: ["note:1", "tag:x"],
    });
    expect(res.status).toBe(201);
    const a = res.body;
    expect(a).toEqual({
      id: expect.stringMatching(UUID),
      actor: "system:importer",
      verb: "post",
      object: "note:1",
      target: "group:g1",
      foreign_id: "fid-1",
      time,
      custom: { title: "hello", n: 12345678901234, nested: { a: [1, 2] } },
      origin_feed: "user:alice",
      reaction_counts: {},
      actor_user: null,
      refs: ["note:1", "tag:x"],
      edited_at: null,
      version: 1,
    });
    // Defaults: custom {}, refs [], target and foreign_id null, time now; a far-future server time stays.
    const before = Date.now();
    const bare = await added(server, "user:alice", { actor: "system:x", verb: "like", object: "note:2" });
    expect(bare).toMatchObject({ target: null, foreign_id: null, custom: {}, refs: [], edited_at: null, version: 1 });
    expect(ms(bare.time)).toBeGreaterThanOrEqual(before - 1000);
    expect(ms(bare.time)).toBeLessThanOrEqual(Date.now() + 1000);
    const future = await added(server, "user:alice", { actor: "system:x", verb: "plan", object: "o", time: "2100-01-01T00:00:00+02:00" });
    expect(future.time).toBe("2099-12-31T22:00:00.000Z");

    const one = await http("GET", `/v1/activities/${a.id}`, { token: server });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(a);
    const viaUser = await http("GET", `/v1/activities/${a.id}`, { token: await t.user("bob") });
    expect(viaUser.body).toEqual({ ...a, own_reactions: [] });
    const feed = await read(server, "user:alice");
    expect(feed.status).toBe(200);
    expect(feed.body.results.map((x: any) => x.id)).toEqual([future.id, bare.id, a.id]);
    expect(feed.body.results[2]).toEqual(a);
    expect(feed.body.next).toBeNull();
  });

  it("user token: actor overwritten, time clamped to [now - 10 min, now], only its own feed", async () => {
    const t = await newTenant();
    const alice = await t.user("alice");
    let before = Date.now();
    const past = await added(alice, "user:alice", { actor: "user:mallory", verb: "post", object: "o", time: new Date(before - 60 * MIN).toISOString() });
    let after = Date.now();
    expect(past.actor).toBe("user:alice");
    expect(past.own_reactions).toEqual([]);
    expect(ms(past.time)).toBeGreaterThanOrEqual(before - 10 * MIN);
    expect(ms(past.time)).toBeLessThanOrEqual(after - 10 * MIN);
    before = Date.now();
    const fut = await added(alice, "user:alice", { verb: "post", object: "o", time: new Date(before + 60 * MIN).toISOString() });
    after = Date.now();
    expect(fut.actor).toBe("user:alice");
    expect(ms(fut.time)).toBeGreaterThanOrEqual(before);
    expect(ms(fut.time)).toBeLessThanOrEqual(after);
    // Inside the window the time is kept.
    const recent = new Date(Date.now() - 5 * MIN).toISOString();
    expect((await added(alice, "user:alice", { verb: "post", object: "o", time: recent })).time).toBe(recent);
    // Any group whose id is the user's id is the user's own feed.
    expect((await added(alice, "timeline:alice", { verb: "post", object: "o" })).origin_feed).toBe("timeline:alice");

    for (const feed of ["user:bob", "timeline:bob"]) {
      const res = await add(alice, feed, { verb: "post", object: "o" });
      expect(res.status, feed).toBe(403);
      expect(envelope(res).code).toBe("FORBIDDEN");
    }
    expect((await read(await t.server(), "user:bob")).body.results).toEqual([]);
  });

  it("validates the body and the feed path", async () => {
    const t = await newTenant();
    const server = await t.server();
    const ok = { actor: "system:x", verb: "post", object: "o" };
    const cases: [string, string, unknown, string[]][] = [
      ["server token without actor", "user:a", { verb: "post", object: "o" }, ["actor"]],
      ["no verb", "user:a", { actor: "system:x", object: "o" }, ["verb"]],
      ["no object", "user:a", { actor: "system:x", verb: "post" }, ["object"]],
      ["empty verb", "user:a", { ...ok, verb: "" }, ["verb"]],
      ["verb over 64", "user:a", { ...ok, verb: "v".repeat(65) }, ["verb"]],
      ["object over 256", "user:a", { ...ok, object: "o".repeat(257) }, ["object"]],
      ["foreign_id without time", "user:a", { ...ok, foreign_id: "f1" }, ["time", "foreign_id"]],
      ["time not a date-time", "user:a", { ...ok, time: "yesterday" }, ["time"]],
      ["time without zone", "user:a", { ...ok, time: "2024-01-01T00:00:00" }, ["time"]],
      ["custom not an object", "user:a", { ...ok, custom: [1] }, ["custom"]],
      ["custom over 64 KB", "user:a", { ...ok, custom: { s: "x".repeat(65 * 1024) } }, ["custom"]],
      ["5 refs", "user:a", { ...ok, refs: ["a:1", "a:2", "a:3", "a:4", "a:5"] }, ["refs"]],
      ["duplicate refs", "user:a", { ...ok, refs: ["a:1", "b:2", "a:1"] }, ["refs.2"]],
      ["ref without type", "user:a", { ...ok, refs: ["a:1", "b:2", "nocolon"] }, ["refs.2"]],
      ["ref with a bad id", "user:a", { ...ok, refs: ["a:1", "b:two words"] }, ["refs.1"]],
      ["ref with two colons", "user:a", { ...ok, refs: ["a:b:c"] }, ["refs.0"]],
      ["bad group", "us-er:a", ok, ["group"]],
      ["bad feed id", `user:${"x".repeat(129)}`, ok, ["id"]],
    ];
    for (const [label, feed, body, paths] of cases) {
      const res = await add(server, feed, body);
      expect(res.status, label).toBe(400);
      expect(envelope(res).code, label).toBe("VALIDATION_FAILED");
      expect(paths.some((p) => fieldPaths(res).includes(p)), `${label}: ${JSON.stringify(fieldPaths(res))}`).toBe(true);
    }
    // Just under the limits is fine.
    const big = await add(server, "user:a", { ...ok, custom: { s: "x".repeat(63 * 1024) }, refs: ["a:1", "a:2", "a:3", "a:4"] });
    expect(big.status).toBe(201);
    expect((await read(server, "user:a")).body.results).toHaveLength(1);
  });

  it("a live duplicate answers 201 with the existing activity unchanged; a deleted identity is burned (409)", async () => {
    const t = await newTenant();
    const server = await t.server();
    const time = "2024-05-06T07:08:09.000Z";
    const first = await added(server, "user:dup", { actor: "system:x", verb: "post", object: "o1", foreign_id: "f", time, custom: { v: 1 } });
    const again = await added(server, "user:dup", { actor: "system:y", verb: "edit", object: "o2", foreign_id: "f", time, custom: { v: 2 } });
    expect(again).toEqual(first);
    // The same foreign_id at another time is another identity; the same instant in another zone is not.
    const other = await added(server, "user:dup", { actor: "system:x", verb: "post", object: "o1", foreign_id: "f", time: "2024-05-06T07:08:10Z" });
    expect(other.id).not.toBe(first.id);
    expect((await added(server, "user:dup", { actor: "system:x", verb: "post", object: "o", foreign_id: "f", time: "2024-05-06T09:08:09+02:00" })).id).toBe(first.id);
    expect((await read(server, "user:dup")).body.results.map((a: any) => a.id)).toEqual([other.id, first.id]);

    expect((await http("DELETE", `/v1/activities/${first.id}`, { token: server })).status).toBe(204);
    const burned = await add(server, "user:dup", { actor: "system:x", verb: "post", object: "o1", foreign_id: "f", time });
    expect(burned.status).toBe(409);
    expect(envelope(burned).code).toBe("CONFLICT");
  });

  it("10 concurrent identical posts create one activity and start one fan-out", async () => {
    const t = await newTenant();
    const server = await t.server();
    const follow = await http("POST", "/v1/feeds/timeline/fan/follows", { token: server, body: { target: "user:race" } });
    expect(follow.status).toBe(201);
    // Every fan-out task the system publishes, seen by a plain NATS subscriber on the run's
    // namespace (it sees each publish, also those JetStream would drop as duplicates by id).
    const nc = await connect({ servers: inject("natsUrl") });
    const tasks: { kind: string; t: string; a: string }[] = [];
    const sub = nc.subscribe(`${inject("namespace")}.fanout.task`, {
      callback: (_err, m) => {
        const task = JSON.parse(new TextDecoder().decode(m.data)) as { kind: string; t: string; a: string };
        if (task.t === t.id) tasks.push(task);
      },
    });
    await nc.flush();
    try {
      const body = { actor: "system:x", verb: "post", object: "o", foreign_id: "race", time: "2024-01-01T00:00:00.000Z" };
      const answers = await Promise.all(Array.from({ length: 10 }, () => add(server, "user:race", body)));
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
      const ids = new Set(answers.map((a) => a.body.id));
      expect(ids.size).toBe(1);
      const id = answers[0]?.body.id as string;
      const feed = await read(server, "user:race");
      expect(feed.body.results.map((a: any) => a.id)).toEqual([id]);
      const timeline = await until("the activity on timeline:fan", async () => {
        const res = await read(server, "timeline:fan");
        return res.body.results?.length ? res.body.results.map((a: any) => a.id) : undefined;
      }, 10_000);
      expect(timeline).toEqual([id]);
      // A late second publish would have arrived by now (the outbox relay republishes after 2 s).
      await new Promise((r) => setTimeout(r, 2500));
      // One activity task: one fan-out (a follower set this small needs no chunk task of its own).
      expect(tasks.filter((x) => x.kind === "activity").map((x) => x.a)).toEqual([id]);
      expect(tasks.filter((x) => x.kind === "chunk")).toEqual([]);
    } finally {
      sub.unsubscribe();
      await nc.close();
    }
  });

  it("warns actor_user_unresolved for a user: actor without a record, never for other actors", async () => {
    const t = await newTenant();
    const server = await t.server();
    expect((await http("PUT", "/v1/users/known", { token: server, body: { custom: { name: "Known" } } })).status).toBe(201);
    const ghost = await added(server, "user:f", { actor: "user:ghost", verb: "post", object: "o" });
    expect(ghost.warnings).toEqual(["actor_user_unresolved"]);
    expect(ghost.actor_user).toBeNull();
    const system = await added(server, "user:f", { actor: "system:x", verb: "post", object: "o" });
    expect(system).not.toHaveProperty("warnings");
    expect(system.actor_user).toBeNull();
    const known = await added(server, "user:f", { actor: "user:known", verb: "post", object: "o" });
    expect(known).not.toHaveProperty("warnings");
    expect(known.actor_user).toEqual({ id: "known", custom: { name: "Known" } });
    // A user token of a user without a record posts as that user: the write succeeds with the warning.
    const nobody = await added(await t.user("f"), "user:f", { verb: "post", object: "o" });
    expect(nobody.warnings).toEqual(["actor_user_unresolved"]);
    // Warnings belong to the add answer only.
    const feed = await read(server, "user:f");
    expect(feed.body.results.some((a: any) => "warnings" in a)).toBe(false);
  });
});

describe("feed reads", () => {
  it("actor_user enrichment: {id, custom} for user actors with a record, null otherwise; own_reactions by token kind", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/users/ann", { token: server, body: { custom: { name: "Ann", avatar: "a.png" } } });
    await http("PUT", "/v1/users/ben", { token: server, body: { custom: {} } });
    const ids: string[] = [];
    for (const [i, actor] of ["user:ann", "user:ben", "user:nobody", "system:bot", "user:ann"].entries()) {
      ids.unshift((await added(server, "topic:news", { actor, verb: "post", object: "o", time: `2024-01-0${i + 1}T00:00:00Z` })).id);
    }
    const feed = await read(server, "topic:news");
    expect(feed.body.results.map((a: any) => a.id)).toEqual(ids);
    expect(feed.body.results.map((a: any) => a.actor_user)).toEqual([
      { id: "ann", custom: { name: "Ann", avatar: "a.png" } },
      null,
      null,
      { id: "ben", custom: {} },
      { id: "ann", custom: { name: "Ann", avatar: "a.png" } },
    ]);
    expect(feed.body.results.some((a: any) => "own_reactions" in a)).toBe(false);
    expect("objects" in feed.body).toBe(false);
    const asUser = await read(await t.user("someone"), "topic:news");
    expect(asUser.body.results.every((a: any) => Array.isArray(a.own_reactions) && a.own_reactions.length === 0)).toBe(true);
    // A user record updated later shows on the next read.
    await http("PUT", "/v1/users/ann", { token: server, body: { custom: { name: "Anna" } } });
    expect((await read(server, "topic:news", "?limit=1")).body.results[0].actor_user).toEqual({ id: "ann", custom: { name: "Anna" } });
    // So does one created after reads that found none (a cached absence does not outlive it).
    await http("PUT", "/v1/users/nobody", { token: server, body: { custom: { name: "Now somebody" } } });
    expect((await read(server, "topic:news")).body.results[2].actor_user).toEqual({ id: "nobody", custom: { name: "Now somebody" } });
  });

  it("orders by time desc, then id desc", async () => {
    const t = await newTenant();
    const server = await t.server();
    const at = (iso: string) => added(server, "user:o", { actor: "system:x", verb: "post", object: "o", time: iso });
    const b = await at("2024-01-02T00:00:00Z");
    const a = await at("2024-01-01T00:00:00Z");
    const c = await at("2024-01-03T00:00:00Z");
    const tie = [await at("2024-01-02T00:00:00Z"), await at("2024-01-02T00:00:00Z")];
    const middle = [b, ...tie].map((x) => x.id).sort().reverse();
    expect((await read(server, "user:o")).body.results.map((x: any) => x.id)).toEqual([c.id, ...middle, a.id]);
  });

  it("pages join without loss or repeat when 45 activities share one timestamp; cursor alias and next wins", async () => {
    const t = await newTenant();
    const server = await t.server();
    const time = "2024-03-03T03:03:03.333Z";
    const created: string[] = [];
    for (let i = 0; i < 3; i++) {
      const batch = await Promise.all(
        Array.from({ length: 15 }, (_, j) => added(server, "user:same", { actor: "system:x", verb: "post", object: `o${i * 15 + j}`, time })),
      );
      created.push(...batch.map((a) => a.id as string));
    }
    const pages = await readAll(server, "user:same", 10);
    expect(pages.map((p) => p.results.length)).toEqual([10, 10, 10, 10, 5]);
    const ids = pages.flatMap((p) => p.results.map((a: any) => a.id as string));
    expect(ids).toHaveLength(45);
    expect(new Set(ids).size).toBe(45);
    expect([...ids].sort()).toEqual([...created].sort());
    expect(ids).toEqual([...ids].sort().reverse());
    expect(pages[4].next).toBeNull();

    // Default limit 20.
    const first = await read(server, "user:same");
    expect(first.body.results).toHaveLength(20);
    // `cursor` is an alias of `next`; when both are sent, `next` wins.
    const n1 = encodeURIComponent(pages[0].next);
    const n2 = encodeURIComponent(pages[1].next);
    const viaCursor = await read(server, "user:same", `?limit=10&cursor=${n1}`);
    expect(viaCursor.status).toBe(200);
    expect(viaCursor.body).toEqual(pages[1]);
    expect((await read(server, "user:same", `?limit=10&next=${n2}&cursor=${n1}`)).body).toEqual(pages[2]);
    expect((await read(server, "user:same", `?limit=10&next=${n1}&cursor=garbage!!`)).body).toEqual(pages[1]);
  });

  it("rejects a malformed next or cursor and an out-of-range limit", async () => {
    const t = await newTenant();
    const server = await t.server();
    await added(server, "user:v", { actor: "system:x", verb: "post", object: "o" });
    const notCursor = Buffer.from(JSON.stringify({ hello: "world" })).toString("base64url");
    for (const q of ["?limit=0", "?limit=101", "?limit=abc", "?limit=1.5", "?next=!!!", `?next=${notCursor}`, "?cursor=%25%25%25", `?cursor=${notCursor}`]) {
      const res = await read(server, "user:v", q);
      expect(res.status, q).toBe(400);
      expect(envelope(res).code, q).toBe("VALIDATION_FAILED");
    }
    expect((await read(server, "user:v", "?limit=100")).status).toBe(200);
    expect((await read(server, "user:v", "?limit=1")).body.results).toHaveLength(1);
  });

  it("objects sidecar: resolved refs of the page, missing ones absent; no sidecar without refs", async () => {
    const t = await newTenant();
    const server = await t.server();
    const put = await http("PUT", "/v1/objects/post/p1", { token: server, body: { custom: { title: "First", n: 1 } } });
    expect(put.status, JSON.stringify(put.body)).toBe(201);
    await http("PUT", "/v1/objects/photo/ph1", { token: server, body: { custom: { url: "x.png" } } });
    const post = (object: string, day: number, refs: string[]) =>
      added(server, "user:obj", { actor: "system:x", verb: "post", object, time: `2024-01-0${day}T00:00:00Z`, refs });
    await post("post:p1", 1, ["post:p1", "post:missing"]);
    await post("photo:ph1", 2, ["photo:ph1", "post:p1"]);
    await post("plain", 3, []);
    const feed = await read(server, "user:obj");
    expect(feed.status).toBe(200);
    expect(feed.body.objects).toEqual({
      "post:p1": { type: "post", id: "p1", custom: { title: "First", n: 1 }, updated_at: put.body.updated_at },
      "photo:ph1": { type: "photo", id: "ph1", custom: { url: "x.png" }, updated_at: expect.any(String) },
    });
    // The page holding only the ref-less activity has no sidecar; refs with no objects give an empty map.
    const top = await read(server, "user:obj", "?limit=1");
    expect(top.body.results[0].refs).toEqual([]);
    expect("objects" in top.body).toBe(false);
    await added(server, "user:obj2", { actor: "system:x", verb: "post", object: "o", refs: ["post:nothing"] });
    expect((await read(server, "user:obj2")).body.objects).toEqual({});
    // Reads are open to user tokens too.
    expect((await read(await t.user("viewer"), "user:obj")).body.objects["post:p1"].custom.title).toBe("First");
    // Refs resolve at read time: a changed object shows its new state on the next read (the page
    // itself comes from the feed's head and the activity cache), a deleted one drops out.
    const patched = await http("PATCH", "/v1/objects/post/p1", { token: server, body: { set: { "custom.title": "Second" } } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect((await http("DELETE", "/v1/objects/photo/ph1", { token: server })).status).toBe(204);
    const after = await read(server, "user:obj");
    expect(after.body.results.map((a: any) => a.id)).toEqual(feed.body.results.map((a: any) => a.id));
    expect(after.body.objects).toEqual({
      "post:p1": { type: "post", id: "p1", custom: { title: "Second", n: 1 }, updated_at: patched.body.updated_at },
    });
  });
});

describe("read one, patch, soft delete", () => {
  it("patch: set and unset under custom., refs; edited_at set on first patch; version increments on each change", async () => {
    const t = await newTenant();
    const alice = await t.user("alice");
    const a = noWarnings(await added(alice, "user:alice", { verb: "post", object: "o", custom: { title: "old", drop: true, keep: 1 }, refs: ["post:1"] }));
    expect(a).toMatchObject({ edited_at: null, version: 1 });

    const p1 = await http("PATCH", `/v1/activities/${a.id}`, {
      token: alice,
      body: { set: { "custom.title": "new", "custom.meta.score": 3 }, unset: ["custom.drop"] },
    });
    expect(p1.status, JSON.stringify(p1.body)).toBe(200);
    expect(p1.body).toMatchObject({ id: a.id, custom: { title: "new", meta: { score: 3 }, keep: 1 }, refs: ["post:1"], version: 2 });
    expect(p1.body.custom).not.toHaveProperty("drop");
    expect(ms(p1.body.edited_at)).not.toBeNaN();
    expect({ ...p1.body, custom: a.custom, edited_at: null, version: 1 }).toEqual(a);

    const p2 = await http("PATCH", `/v1/activities/${a.id}`, { token: alice, body: { refs: ["post:2", "tag:t"] } });
    expect(p2.status).toBe(200);
    expect(p2.body).toMatchObject({ refs: ["post:2", "tag:t"], custom: p1.body.custom, version: 3 });
    expect(p2.body.edited_at).not.toBeNull();
    expect(ms(p2.body.edited_at)).toBeGreaterThanOrEqual(ms(p1.body.edited_at));

    // Read your own writes: read one and the origin feed show the patched activity.
    const one = await http("GET", `/v1/activities/${a.id}`, { token: alice });
    expect(one.body).toEqual(p2.body);
    expect((await read(alice, "user:alice")).body.results[0]).toEqual(p2.body);
    // A server token may patch any activity.
    const p3 = await http("PATCH", `/v1/activities/${a.id}`, { token: await t.server(), body: { set: { "custom.by": "server" } } });
    expect(p3.status).toBe(200);
    expect(p3.body.version).toBe(4);
    expect(p3.body).not.toHaveProperty("own_reactions");
  });

  it("patch: paths outside custom. and bad refs are 400; another user's activity 403; unknown ids 404", async () => {
    const t = await newTenant();
    const alice = await t.user("alice");
    const a = await added(alice, "user:alice", { verb: "post", object: "o", custom: { x: 1 } });
    const bad: [unknown, string][] = [
      [{ set: { verb: "edit" } }, "set.verb"],
      [{ set: { custom: { x: 2 } } }, "set.custom"],
      [{ set: { "custom.": 1 } }, "set.custom."],
      [{ set: { "custom.$where": 1 } }, "set.custom.$where"],
      [{ unset: ["title"] }, "unset.0"],
      [{ unset: ["custom.ok", "actor"] }, "unset.1"],
      [{ set: { "custom.a": 1 }, unset: ["custom.a"] }, "unset.0"],
      [{ refs: ["a:1", "a:2", "a:3", "a:4", "a:5"] }, "refs"],
      [{ refs: ["a:1", "a:1"] }, "refs.1"],
      [{ refs: ["bad"] }, "refs.0"],
      [{}, ""],
    ];
    for (const [body, path] of bad) {
      const res = await http("PATCH", `/v1/activities/${a.id}`, { token: alice, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
      expect(fieldPaths(res), JSON.stringify(body)).toContain(path);
    }
    const bob = await http("PATCH", `/v1/activities/${a.id}`, { token: await t.user("bob"), body: { set: { "custom.x": 2 } } });
    expect(bob.status).toBe(403);
    expect(envelope(bob).code).toBe("FORBIDDEN");
    const unchanged = await http("GET", `/v1/activities/${a.id}`, { token: alice });
    expect(unchanged.body).toMatchObject({ custom: { x: 1 }, version: 1, edited_at: null });

    for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
      for (const [method, body] of [["GET", undefined], ["PATCH", { set: { "custom.x": 1 } }], ["DELETE", undefined]] as const) {
        const res = await http(method, `/v1/activities/${id}`, { token: alice, body });
        expect(res.status, `${method} ${id}`).toBe(404);
        expect(envelope(res).code).toBe("NOT_FOUND");
      }
    }
  });

  it("soft delete: 204, gone from the feed and read one, listed by the inspector with deleted_at", async () => {
    const t = await newTenant();
    const alice = await t.user("alice");
    const server = await t.server();
    for (const follower of ["timeline:f1", "timeline:f2"]) {
      const f = await http("POST", `/v1/feeds/${feedPath(follower)}/follows`, { token: server, body: { target: "user:alice" } });
      expect(f.status).toBe(201);
    }
    const keep = noWarnings(await added(alice, "user:alice", { verb: "post", object: "keep" }));
    const gone = await added(alice, "user:alice", { verb: "post", object: "gone" });
    for (const follower of ["timeline:f1", "timeline:f2"]) {
      await until(`both activities on ${follower}`, async () => ((await read(server, follower)).body.results?.length === 2 ? true : undefined), 10_000);
    }
    const bob = await http("DELETE", `/v1/activities/${gone.id}`, { token: await t.user("bob") });
    expect(bob.status).toBe(403);
    expect(envelope(bob).code).toBe("FORBIDDEN");

    const del = await http("DELETE", `/v1/activities/${gone.id}`, { token: alice });
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    const one = await http("GET", `/v1/activities/${gone.id}`, { token: alice });
    expect(one.status).toBe(404);
    expect(envelope(one).code).toBe("NOT_FOUND");
    expect((await read(alice, "user:alice")).body.results.map((a: any) => a.id)).toEqual([keep.id]);
    // Gone from every feed that held it, at once (the delete removes every entry before answering).
    for (const follower of ["timeline:f1", "timeline:f2"]) {
      expect((await read(server, follower)).body.results.map((a: any) => a.id)).toEqual([keep.id]);
      expect((await read(server, follower, "?limit=1")).body.next).toBeNull();
    }
    const patch = await http("PATCH", `/v1/activities/${gone.id}`, { token: alice, body: { set: { "custom.x": 1 } } });
    expect(patch.status).toBe(404);

    const member = await newOperator(t.id, "member");
    const listed = await http("GET", "/operator/inspect/activities", { token: member.token });
    expect(listed.status).toBe(200);
    expect(listed.body.next).toBeNull();
    const byId = new Map<string, any>(listed.body.results.map((a: any) => [a.id, a]));
    expect(byId.size).toBe(2);
    expect(ms(byId.get(gone.id).deleted_at)).not.toBeNaN();
    expect(byId.get(gone.id).version).toBe(gone.version + 1);
    expect(byId.get(keep.id)).toEqual({ ...keep, own_reactions: undefined, deleted_at: null });
    expect(byId.get(keep.id)).not.toHaveProperty("own_reactions");
    // A server token may delete any activity.
    expect((await http("DELETE", `/v1/activities/${keep.id}`, { token: await t.server() })).status).toBe(204);
    expect((await read(alice, "user:alice")).body.results).toEqual([]);
  });
});

describe("change signal", () => {
  it("answers {feed, version, head} with an ETag; If-None-Match answers 304 until a write", async () => {
    const t = await newTenant();
    const server = await t.server();
    const signal = (headers: Record<string, string> = {}) => http("GET", "/v1/feeds/user/sig/signal", { token: server, headers });
    const empty = await signal();
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ feed: "user:sig", version: expect.any(Number), head: null });
    const etag0 = empty.headers.get("etag");
    expect(etag0).toMatch(/^(W\/)?".+"$/);
    const same = await signal({ "if-none-match": etag0 as string });
    expect(same.status).toBe(304);
    expect(same.body).toBeUndefined();
    expect(same.headers.get("etag")).toBe(etag0);

    const a = await added(server, "user:sig", { actor: "system:x", verb: "post", object: "o" });
    const changed = await signal({ "if-none-match": etag0 as string });
    expect(changed.status).toBe(200);
    expect(changed.body.head).toBe(a.id);
    expect(changed.body.version).not.toBe(empty.body.version);
    const etag1 = changed.headers.get("etag") as string;
    expect(etag1).not.toBe(etag0);
    expect((await signal({ "if-none-match": etag1 })).status).toBe(304);
    // A user token reads any feed's signal; a delete changes it too.
    expect((await http("GET", "/v1/feeds/user/sig/signal", { token: await t.user("x"), headers: { "if-none-match": etag1 } })).status).toBe(304);
    await http("DELETE", `/v1/activities/${a.id}`, { token: server });
    const afterDelete = await signal({ "if-none-match": etag1 });
    expect(afterDelete.status).toBe(200);
    expect(afterDelete.body.head).toBeNull();
  });
});

describe("operator inspector", () => {
  it("inspect a feed: the feed read's body without own_reactions; staff 403", async () => {
    const t = await newTenant();
    const server = await t.server();
    await http("PUT", "/v1/users/ann", { token: server, body: { custom: { name: "Ann" } } });
    for (let i = 0; i < 3; i++) {
      await added(server, "user:ann", { actor: "user:ann", verb: "post", object: `o${i}`, time: `2024-01-0${i + 1}T00:00:00Z`, refs: i === 0 ? ["post:none"] : [] });
    }
    const member = await newOperator(t.id, "member");
    const owner = await newOperator(t.id, "owner");
    const viaServer = await read(server, "user:ann", "?limit=2");
    for (const op of [member, owner]) {
      const res = await http("GET", "/operator/inspect/feeds/user/ann?limit=2", { token: op.token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(viaServer.body);
    }
    const viaUser = await read(await t.user("ann"), "user:ann", "?limit=2");
    expect(viaUser.body.results[0].own_reactions).toEqual([]);
    const page2 = await http("GET", `/operator/inspect/feeds/user/ann?limit=2&cursor=${encodeURIComponent(viaServer.body.next)}`, { token: member.token });
    expect(page2.body.results).toHaveLength(1);
    expect(page2.body.objects).toEqual({});
    expect(page2.body.results[0]).not.toHaveProperty("own_reactions");

    expect((await http("GET", "/operator/inspect/feeds/user/ann", { token: await staffToken() })).status).toBe(403);
    expect((await http("GET", "/operator/inspect/activities", { token: await staffToken() })).status).toBe(403);
    expect((await http("GET", "/operator/inspect/activities", { token: server })).status).toBe(401);
    expect((await http("GET", "/operator/inspect/feeds/user/ann", {})).status).toBe(401);
  });

  it("inspect activities: keyset pages over the whole tenant, tombstones included", async () => {
    const t = await newTenant();
    const server = await t.server();
    const ids: string[] = [];
    for (const [i, feed] of ["user:a", "user:b", "topic:c", "user:a", "user:b"].entries()) {
      ids.push((await added(server, feed, { actor: "system:x", verb: "post", object: "o", time: `2024-01-0${i + 1}T00:00:00Z` })).id);
    }
    await http("DELETE", `/v1/activities/${ids[1]}`, { token: server });
    const member = await newOperator(t.id, "member");
    const seen: any[] = [];
    let next: string | null = null;
    do {
      const q: string = next ? `&next=${encodeURIComponent(next)}` : "";
      const res = await http("GET", `/operator/inspect/activities?limit=2${q}`, { token: member.token });
      expect(res.status).toBe(200);
      seen.push(...res.body.results);
      next = res.body.next;
    } while (next);
    expect(seen.map((a) => a.id)).toEqual([...ids].reverse());
    expect(seen.map((a) => a.deleted_at !== null)).toEqual([false, false, false, true, false]);
    expect(seen.map((a) => a.origin_feed)).toEqual(["user:b", "user:a", "topic:c", "user:b", "user:a"]);
    for (const q of ["?limit=0", "?limit=101", "?next=!!!"]) {
      const res = await http("GET", `/operator/inspect/activities${q}`, { token: member.token });
      expect(res.status, q).toBe(400);
      expect(envelope(res).code).toBe("VALIDATION_FAILED");
    }
  });
});

describe("tenancy and fan-out", () => {
  it("a second tenant sees none of it", async () => {
    const t = await newTenant();
    const other = await newTenant();
    const server = await t.server();
    const a = await added(server, "user:alice", { actor: "system:x", verb: "post", object: "o", foreign_id: "shared", time: "2024-01-01T00:00:00Z" });
    const os = await other.server();
    expect((await read(os, "user:alice")).body).toEqual({ results: [], next: null, promoted: [] });
    expect((await read(await other.user("alice"), "user:alice")).body.results).toEqual([]);
    for (const [method, body] of [["GET", undefined], ["PATCH", { set: { "custom.x": 1 } }], ["DELETE", undefined]] as const) {
      const res = await http(method, `/v1/activities/${a.id}`, { token: os, body });
      expect(res.status, method).toBe(404);
    }
    expect((await http("GET", "/v1/feeds/user/alice/signal", { token: os })).body.head).toBeNull();
    const otherMember = await newOperator(other.id, "member");
    expect((await http("GET", "/operator/inspect/activities", { token: otherMember.token })).body.results).toEqual([]);
    expect((await http("GET", "/operator/inspect/feeds/user/alice", { token: otherMember.token })).body.results).toEqual([]);
    // The same dedupe identity in the other tenant is a new activity.
    const mine = await added(os, "user:alice", { actor: "system:x", verb: "post", object: "o", foreign_id: "shared", time: "2024-01-01T00:00:00Z" });
    expect(mine.id).not.toBe(a.id);
    // And the first tenant still sees exactly its own.
    expect((await read(server, "user:alice")).body.results.map((x: any) => x.id)).toEqual([a.id]);
  });

  it("a follower's timeline receives a new activity (fan-out)", async () => {
    const t = await newTenant();
    const u = await t.user("u");
    const follow = await http("POST", "/v1/feeds/timeline/u/follows", { token: u, body: { target: "user:a" } });
    expect([200, 201], JSON.stringify(follow.body)).toContain(follow.status);
    const a = noWarnings(await added(await t.user("a"), "user:a", { verb: "post", object: "o" }));
    const seen = await until(
      "the activity on timeline:u",
      async () => {
        const res = await read(u, "timeline:u");
        return res.body.results?.find((x: any) => x.id === a.id);
      },
      10_000,
    );
    expect(seen).toEqual({ ...a, own_reactions: [] });
  });

  it("fan-out follows the graph as it changes: a follow and an unfollow between two posts count for the second", async () => {
    // The first post's fan-out reads (and caches) user:a's followers; the second must see the change.
    const t = await newTenant();
    const [a, stays, joins, leaves] = await Promise.all([t.user("a"), t.user("stays"), t.user("joins"), t.user("leaves")]);
    const follow = (token: string, id: string) => http("POST", `/v1/feeds/timeline/${id}/follows`, { token, body: { target: "user:a" } });
    for (const [token, id] of [[stays, "stays"], [leaves, "leaves"]] as const) expect([200, 201]).toContain((await follow(token, id)).status);
    const ids = async (token: string, id: string) => ((await read(token, `timeline:${id}`)).body.results ?? []).map((x: any) => x.id);
    const first = await added(a, "user:a", { verb: "post", object: "o1" });
    await until("the first post on both timelines", async () => ((await ids(stays, "stays")).includes(first.id) && (await ids(leaves, "leaves")).includes(first.id) ? true : undefined), 10_000);
    expect([200, 201]).toContain((await follow(joins, "joins")).status);
    const unfollow = await http("DELETE", "/v1/feeds/timeline/leaves/follows/user/a?keep_history=true", { token: leaves });
    expect(unfollow.status, JSON.stringify(unfollow.body)).toBe(204);
    const second = await added(a, "user:a", { verb: "post", object: "o2" });
    await until("the second post on the timelines that follow", async () => ((await ids(stays, "stays")).includes(second.id) && (await ids(joins, "joins")).includes(second.id) ? true : undefined), 10_000);
    // The fan-out that reached both followers is done with user:a's followers: none went to the one that left.
    await new Promise((r) => setTimeout(r, 500));
    expect(await ids(leaves, "leaves")).toEqual([first.id]);
  });

  it("own_reactions come from the engagement service in one call per page", async () => {
    const t = await newTenant();
    const server = await t.server();
    const a = await http("POST", "/v1/feeds/user/rx/activities", { token: server, body: { actor: "user:rx", verb: "post", object: "note:1" } });
    const b = await http("POST", "/v1/feeds/user/rx/activities", { token: server, body: { actor: "user:rx", verb: "post", object: "note:2" } });
    for (const [activity, user, kind] of [[a, "fan", "like"], [a, "fan", "clap"], [b, "other", "like"]] as const) {
      const res = await http("POST", `/v1/activities/${activity.body.id}/reactions`, { token: server, body: { kind, user_id: user } });
      expect(res.status).toBe(201);
    }
    const page = await http("GET", "/v1/feeds/user/rx", { token: await t.user("fan") });
    const own = Object.fromEntries(page.body.results.map((x: any) => [x.id, x.own_reactions]));
    expect(own).toEqual({ [a.body.id]: ["clap", "like"], [b.body.id]: [] });
    const asServer = await http("GET", "/v1/feeds/user/rx", { token: server });
    expect(asServer.body.results.some((x: any) => "own_reactions" in x)).toBe(false);
  });
});
