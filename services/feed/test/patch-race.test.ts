import { randomBytes } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox, eventMessages, fromRpcError, newEvent, scope, type FeedEvent, type Outbox } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import type { FeedService } from "@feeds/proto/feeds/feed/v1/feed";
import type { ActivityDoc, ActivityRepository } from "../src/activity-repository.js";
import { localFeedService } from "./local-feed-service.js";

// Patches and deletes take no lock: each is a findOneAndUpdate conditioned on the version its
// writer read, with its event pending in the same update. Of N writers that read one version
// exactly one matches; the patch route retries the others against the version that won, so
// concurrent patches all land, one version each, none lost. Real MongoDB-wire storage, Redis and
// NATS JetStream in a namespace of their own.

const N = 12;

describe("patch race", { timeout: 60_000 }, () => {
  const env = createTestEnv("feed_patch_race", { db: true, redis: true, nats: { queues: ["fanout", "notify"] } });
  let client: Client<typeof FeedService>;
  let activities: ActivityRepository;
  let outbox: Outbox;
  const tenant = `t-${randomBytes(4).toString("hex")}`;
  const call = scope({ tenantId: tenant, caller: { kind: "server" } });

  beforeAll(async () => {
    await env.open();
    ({ client, activities, outbox } = localFeedService(env));
  });

  afterAll(async () => {
    await outbox.stop();
    await env.close();
  });

  const add = async (object: string) =>
    (await client.addActivity({ feed: { group: "user", id: "a" }, activity: { actor: "service:x", verb: "post", object, customJson: "{}", refs: [] } }, call))
      .activity!;
  const stored = (id: string) => env.db.collection<ActivityDoc>("activities").findOne({ _id: id });

  /** The activity.updated events published to the notify stream for `id`, by version. */
  async function updatedVersions(id: string): Promise<number[]> {
    const stream = env.nats.stream("notify");
    const { state } = await env.nats.jsm.streams.info(stream);
    const out: number[] = [];
    for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
      const m = await env.nats.jsm.streams.getMessage(stream, { seq }).catch(() => null);
      const e = m && (JSON.parse(new TextDecoder().decode(m.data)) as FeedEvent);
      if (e?.type === "activity.updated" && e.data.id === id) out.push(Number(e.data.version));
    }
    return out.sort((x, y) => x - y);
  }

  it(`${N} conditional updates expecting the same version: exactly one matches, with its one pending change`, async () => {
    const a = await add("o:cas");
    const doc = (await activities.get(tenant, a.id))!;
    const changes = createOutbox({ db: env.db, nats: env.nats, log: env.log });
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) => {
        const change = changes.change(eventMessages(env.nats, [newEvent("activity.updated", tenant, { id: a.id, i })]), { data: { kind: "update" } });
        return activities.updateIfVersion(doc, doc.version, { custom_json: JSON.stringify({ i }), version: doc.version + 1 }, changes.forUpdate(change));
      }),
    );
    const winners = results.filter((r) => r !== null);
    expect(winners, `${winners.length} of ${N} conditional updates matched`).toHaveLength(1);
    const after = (await stored(a.id))!;
    expect(after.version).toBe(2);
    expect(after.custom_json).toBe(winners[0]?.custom_json);
    // The add's change may be cleared already; of the updates, the winner's alone is pending.
    expect(after.outbox?.filter((c) => c.data?.kind === "update")).toHaveLength(1);
  });

  it(`${N} concurrent patches of one activity all land: versions 2..${N + 1}, every key kept, one event each`, async () => {
    const a = await add("o:patches");
    const answers = await Promise.all(
      Array.from({ length: N }, (_, i) => client.patchActivity({ id: a.id, setJson: JSON.stringify({ [`custom.k${i}`]: i }), unset: [] }, call)),
    );
    const versions = answers.map((r) => Number(r.activity?.version)).sort((x, y) => x - y);
    expect(versions).toEqual(Array.from({ length: N }, (_, i) => i + 2));
    const after = (await client.getActivity({ id: a.id }, call)).activity!;
    expect(Number(after.version)).toBe(N + 1);
    expect(JSON.parse(after.customJson)).toEqual(Object.fromEntries(Array.from({ length: N }, (_, i) => [`k${i}`, i])));
    await outbox.flush();
    expect((await stored(a.id))?.outbox ?? []).toEqual([]);
    expect(await updatedVersions(a.id)).toEqual(versions);
  });

  it("a delete racing patches: the delete lands once, later patches answer NOT_FOUND, nothing lands after the tombstone", async () => {
    const a = await add("o:delete-race");
    const patches = Array.from({ length: N }, (_, i) =>
      client.patchActivity({ id: a.id, setJson: JSON.stringify({ [`custom.k${i}`]: i }), unset: [] }, call).then(
        (r) => Number(r.activity?.version),
        (e: unknown) => fromRpcError(e).code,
      ),
    );
    const deletes = [0, 1].map(() => client.deleteActivity({ id: a.id }, call).then(() => "OK", (e: unknown) => fromRpcError(e).code));
    const [p, d] = await Promise.all([Promise.all(patches), Promise.all(deletes)]);
    expect(d.filter((x) => x === "OK"), JSON.stringify(d)).toHaveLength(1);
    const after = (await stored(a.id))!;
    expect(after.deleted_at).toBeInstanceOf(Date);
    const landed = p.filter((x): x is number => typeof x === "number");
    // Every patch that landed did so before the tombstone: the tombstone is the last version.
    expect(after.version).toBe(landed.length + 2);
    expect(p.filter((x) => typeof x !== "number").every((x) => x === "NOT_FOUND"), JSON.stringify(p)).toBe(true);
  });
});
