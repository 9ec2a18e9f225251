import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningSystem } from "../../scripts/lib/system.mjs";
import { envelope, http, type RawAnswer, react, tenantWithActivity } from "../support/api.js";
import { startReplica } from "../support/replica.js";

// Reaction kinds: at most 25 distinct kinds per activity (a kind counted 0 frees its slot, and
// concurrent first reactions of new kinds through two replicas stop at exactly 25), and the
// tenant's declared kinds (PUT/GET /v1/reactions/kinds), which the next reaction on any replica
// honours.

const BOUND = 25;
const kindsOf = (n: number, prefix = "k") => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

const countsOf = async (token: string, id: string): Promise<Record<string, number>> =>
  (await http("GET", `/v1/activities/${id}`, { token })).body.reaction_counts;
const putKinds = (token: string, body: unknown, url?: string) => http("PUT", "/v1/reactions/kinds", { token, body, url });

/** 400 VALIDATION_FAILED naming exactly `path`. */
function expectRefused(a: RawAnswer, path: string) {
  expect(a.status, JSON.stringify(a.body)).toBe(400);
  const e = envelope(a);
  expect(e.code).toBe("VALIDATION_FAILED");
  expect(e.fields?.map((f) => f.path)).toEqual([path]);
}

/** Reactions of `kinds` by user `u`, one after another, each 201. */
async function reactAll(server: string, activityId: string, kinds: string[], user = "u") {
  for (const kind of kinds) expect((await react(server, activityId, { kind, user_id: user })).status, kind).toBe(201);
}

describe("reaction kinds", () => {
  let second: RunningSystem;

  beforeAll(async () => {
    // A second replica of every service (gateway, engagement, feed, ...) on the same namespace.
    second = await startReplica();
  });
  afterAll(async () => {
    await second?.stop();
  });

  it(`an activity carries at most ${BOUND} kinds: a new kind past them answers 400 on kind, more of a carried kind 201`, async () => {
    const { t, server, activity } = await tenantWithActivity();
    await reactAll(server, activity.id, kindsOf(BOUND));
    expectRefused(await react(server, activity.id, { kind: "one-more", user_id: "u" }), "kind");
    const fan = await t.user("fan");
    expectRefused(await react(fan, activity.id, { kind: "one-more" }), "kind");
    // Kinds that hold prototype names are kinds like any other.
    expectRefused(await react(fan, activity.id, { kind: "toString" }), "kind");
    expect((await react(fan, activity.id, { kind: "k7" })).status).toBe(201);
    const counts = await countsOf(server, activity.id);
    expect(Object.keys(counts).sort()).toEqual(kindsOf(BOUND).sort());
    expect(counts.k7).toBe(2);
    // The same reaction again still answers 200 with it.
    expect((await react(fan, activity.id, { kind: "k7" })).status).toBe(200);
  });

  it("a kind whose count falls to 0 leaves reaction_counts and frees its slot", async () => {
    const { t, server, activity } = await tenantWithActivity();
    await reactAll(server, activity.id, kindsOf(BOUND));
    const fan = await t.user("fan");
    expect((await react(fan, activity.id, { kind: "k3" })).status).toBe(201);
    expect((await http("DELETE", `/v1/activities/${activity.id}/reactions/k3?user_id=u`, { token: server })).status).toBe(204);
    // k3 still counts 1 (fan's): no slot yet.
    expectRefused(await react(fan, activity.id, { kind: "fresh" }), "kind");
    expect((await http("DELETE", `/v1/activities/${activity.id}/reactions/k3`, { token: fan })).status).toBe(204);
    const counts = await countsOf(server, activity.id);
    expect(Object.keys(counts)).toHaveLength(BOUND - 1);
    expect(counts).not.toHaveProperty("k3");
    expect((await react(fan, activity.id, { kind: "fresh" })).status).toBe(201);
    expectRefused(await react(fan, activity.id, { kind: "k3" }), "kind");
    expect(Object.keys(await countsOf(server, activity.id))).toHaveLength(BOUND);
  });

  it(`concurrent first reactions of new kinds through two replicas: exactly ${BOUND} kinds, the rest 400`, async () => {
    const { server, activity } = await tenantWithActivity();
    await reactAll(server, activity.id, kindsOf(BOUND - 5));
    const fresh = kindsOf(20, "new");
    const answers = await Promise.all(
      fresh.map((kind, i) => react(server, activity.id, { kind, user_id: `u${i % 4}` }, i % 2 ? second.url : undefined)),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201), JSON.stringify(statuses)).toHaveLength(5);
    for (const a of answers.filter((x) => x.status !== 201)) expectRefused(a, "kind");
    const counts = await countsOf(server, activity.id);
    expect(Object.keys(counts)).toHaveLength(BOUND);
    // The records agree: 25 kinds stored, one reaction each.
    const listed = await http("GET", `/v1/activities/${activity.id}/reactions?limit=100`, { token: server });
    expect(new Set(listed.body.results.map((r: { kind: string }) => r.kind)).size).toBe(BOUND);
    expect(listed.body.results).toHaveLength(BOUND);
  });

  it("PUT /v1/reactions/kinds: server tokens only; a list of at most 25 valid kinds without duplicates, each problem named", async () => {
    const { t, server } = await tenantWithActivity();
    const fan = await t.user("fan");
    expect((await putKinds(fan, { kinds: ["like"] })).status).toBe(403);
    expect((await http("GET", "/v1/reactions/kinds", { token: fan })).status).toBe(403);
    expect((await http("GET", "/v1/reactions/kinds")).status).toBe(401);
    expectRefused(await putKinds(server, { kinds: kindsOf(BOUND + 1) }), "kinds");
    expectRefused(await putKinds(server, { kinds: ["like", "love", "like"] }), "kinds.2");
    expectRefused(await putKinds(server, { kinds: ["like", "a.b"] }), "kinds.1");
    expectRefused(await putKinds(server, { kinds: ["__proto__"] }), "kinds.0");
    expectRefused(await putKinds(server, { kinds: ["x".repeat(65)] }), "kinds.0");
    expectRefused(await putKinds(server, { kinds: "like" }), "kinds");
    expectRefused(await putKinds(server, {}), "kinds");
    expect((await http("GET", "/v1/reactions/kinds", { token: server })).body).toEqual({ kinds: [] });
    const all = kindsOf(BOUND);
    expect(await putKinds(server, { kinds: all })).toMatchObject({ status: 200, body: { kinds: all } });
  });

  it("declared kinds: a kind outside them answers 400 on kind at once on either replica; inside 201; clearing restores any kind", async () => {
    const { t, server, activity } = await tenantWithActivity();
    const fan = await t.user("fan");
    // Both replicas react first: whatever they cached (no list) must not outlive the PUT.
    expect((await react(fan, activity.id, { kind: "wow" })).status).toBe(201);
    expect((await react(fan, activity.id, { kind: "haha" }, second.url)).status).toBe(201);
    const put = await putKinds(server, { kinds: ["love", "like"] });
    expect(put).toMatchObject({ status: 200, body: { kinds: ["love", "like"] } });
    expectRefused(await react(fan, activity.id, { kind: "clap" }, second.url), "kind");
    expectRefused(await react(fan, activity.id, { kind: "clap" }), "kind");
    // A kind reacted before the list: reacting again is refused too, removing it is not.
    expectRefused(await react(fan, activity.id, { kind: "wow" }), "kind");
    expect((await react(fan, activity.id, { kind: "like" }, second.url)).status).toBe(201);
    expect((await react(server, activity.id, { kind: "love", user_id: "other" })).status).toBe(201);
    expect((await http("DELETE", `/v1/activities/${activity.id}/reactions/wow`, { token: fan })).status).toBe(204);
    expect(await countsOf(server, activity.id)).toEqual({ haha: 1, like: 1, love: 1 });
    for (const url of [undefined, second.url]) {
      expect((await http("GET", "/v1/reactions/kinds", { token: server, url })).body).toEqual({ kinds: ["love", "like"] });
    }
    // Another tenant is not bound by this one's list.
    const other = await tenantWithActivity();
    expect((await react(other.server, other.activity.id, { kind: "clap", user_id: "u" })).status).toBe(201);
    // A new list replaces the old one at once, and an empty list clears it.
    expect((await putKinds(server, { kinds: ["clap"] }, second.url)).status).toBe(200);
    expectRefused(await react(fan, activity.id, { kind: "love" }), "kind");
    expect((await react(fan, activity.id, { kind: "clap" })).status).toBe(201);
    expect(await putKinds(server, { kinds: [] })).toMatchObject({ status: 200, body: { kinds: [] } });
    expect((await http("GET", "/v1/reactions/kinds", { token: server, url: second.url })).body).toEqual({ kinds: [] });
    expect((await react(fan, activity.id, { kind: "wow" }, second.url)).status).toBe(201);
  });
});
