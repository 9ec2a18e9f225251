import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox, decodeEvent, eventSubject, notFound, onceFilter, onceUpdate, type Outbox } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { activityTarget, type Activities } from "../src/activities.js";
import { reactionEvent } from "../src/events.js";
import { createReactionChanges } from "../src/reaction-changes.js";
import { createReactionRepository, reactionKey, REACTIONS, type ReactionDoc } from "../src/reaction-repository.js";

// A reaction change whose writer died, finished by the outbox relay, against real MongoDB-wire
// storage and NATS JetStream in a namespace of its own. The activity's count update stands in for
// the feed service's (ApplyReactionChange): the same once-only update (kit's onceFilter and
// onceUpdate, change id in `applied`) on an activity document, NOT_FOUND when there is none.

const T = "tenant-1";
const GRACE = 100;
const old = () => new Date(Date.now() - 10 * GRACE);

interface ActivityStandIn {
  _id: string;
  tenant_id: string;
  reaction_counts: Record<string, number>;
  version: number;
  applied?: string[];
}

describe("reaction changes finished by the outbox relay", { timeout: 30_000 }, () => {
  const env = createTestEnv("engagement_relay", { db: true, nats: { queues: ["notify"] } });
  beforeAll(env.open);
  afterAll(env.close);

  const activitiesOf = () => env.db.collection<ActivityStandIn>("activities_standin");
  const applied: string[] = [];
  const standIn: Pick<Activities, "actorOf" | "live" | "apply"> = {
    actorOf: async () => "user:owner",
    live: async () => {
      throw new Error("not used");
    },
    async apply(tenantId, id, { kind, delta, changeId }) {
      const updated = await activitiesOf().findOneAndUpdate(
        onceFilter({ _id: id, tenant_id: tenantId }, changeId),
        onceUpdate({ $inc: { [`reaction_counts.${kind}`]: delta, version: 1 } }, changeId),
        { returnDocument: "after" },
      );
      if (updated) applied.push(changeId);
      else if (!(await activitiesOf().findOne({ _id: id, tenant_id: tenantId }))) throw notFound("activity not found");
    },
  };

  /** One replica's outbox and reaction changes (`graceMs`: how long a change is its writer's). */
  function replica(graceMs = GRACE): { outbox: Outbox; changes: ReturnType<typeof createReactionChanges> } {
    const { db, nats, log } = env;
    const outbox = createOutbox({
      db,
      nats,
      log,
      graceMs,
      clearTargets: {
        activities: async (items) => {
          for (const it of items) await activitiesOf().updateOne({ _id: it.id.split("/")[1] }, { $pullAll: { applied: it.changes } });
        },
      },
    });
    const changes = createReactionChanges({ reactions: createReactionRepository(db), activities: standIn, outbox, own: { invalidate: async () => undefined }, nats, log });
    outbox.register(REACTIONS, changes.finish);
    return { outbox, changes };
  }

  async function activity(): Promise<string> {
    const id = randomUUID();
    await activitiesOf().insertOne({ _id: id, tenant_id: T, reaction_counts: {}, version: 1 });
    return id;
  }

  /** What a writer leaves when it dies right after storing its reaction (or its removal mark). */
  async function died(outbox: Outbox, activityId: string, user: string, delta: 1 | -1): Promise<{ doc: ReactionDoc; change: ReturnType<Outbox["change"]>; eventId: string }> {
    const doc: ReactionDoc = {
      _id: reactionKey(T, activityId, user, "like"),
      id: randomUUID(),
      tenant_id: T,
      activity_id: activityId,
      user_id: user,
      kind: "like",
      created_at: old(),
      activity_actor: "user:owner",
    };
    const event = reactionEvent(delta > 0 ? "reaction.added" : "reaction.deleted", doc, "user:owner", old());
    const change = outbox.change([{ subject: eventSubject(env.nats), msgId: `ev:${event.id}`, data: JSON.stringify(event) }], {
      targets: [activityTarget(T, activityId)],
      data: { kind: "like", delta },
      at: old(),
    });
    await env.db.collection<ReactionDoc>(REACTIONS).insertOne({ ...doc, ...outbox.forInsert(change), ...(delta < 0 ? { removing: true as const } : {}) });
    return { doc, change, eventId: event.id };
  }

  async function published(eventId: string): Promise<number> {
    const { nats } = env;
    const info = await nats.jsm.streams.info(nats.stream("notify"));
    let n = 0;
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await nats.jsm.streams.getMessage(nats.stream("notify"), { seq }).catch(() => null);
      if (m && m.subject === eventSubject(nats) && decodeEvent(m.data).id === eventId) n++;
    }
    return n;
  }

  const stored = (id: string) => activitiesOf().findOne({ _id: id });
  const reaction = (doc: ReactionDoc) => env.db.collection<ReactionDoc>(REACTIONS).findOne({ _id: doc._id });

  it("a crashed writer's added reaction: the relay makes its count update exactly once, however often it runs", async () => {
    const { outbox } = replica();
    const id = await activity();
    const { doc, change, eventId } = await died(outbox, id, "ghost", 1);
    await outbox.relayOnce();
    await outbox.relayOnce();
    const after = await stored(id);
    console.log(`after two relay passes: reaction_counts ${JSON.stringify(after?.reaction_counts)}, version ${after?.version}, applied ${JSON.stringify(after?.applied)}`);
    expect(after).toMatchObject({ reaction_counts: { like: 1 }, version: 2 });
    expect(applied.filter((c) => c === change.id)).toHaveLength(1);
    // The change is cleared from the reaction, its id from the activity; the event is out once.
    expect(await reaction(doc)).not.toHaveProperty("outbox_pending");
    expect(after?.applied ?? []).toEqual([]);
    expect(await published(eventId)).toBe(1);
  });

  it("the increment was applied but the clear never ran: the relay publishes and clears, no second count", async () => {
    const { outbox } = replica();
    const id = await activity();
    const { doc, change, eventId } = await died(outbox, id, "half", 1);
    // The writer's count update went through; it died before its event and clear.
    await standIn.apply(T, id, { kind: "like", delta: 1, changeId: change.id });
    await outbox.relayOnce();
    await outbox.relayOnce();
    const after = await stored(id);
    console.log(`applied before the relay: reaction_counts ${JSON.stringify(after?.reaction_counts)}, version ${after?.version}`);
    expect(after).toMatchObject({ reaction_counts: { like: 1 }, version: 2 });
    expect(await reaction(doc)).not.toHaveProperty("outbox_pending");
    expect(after?.applied ?? []).toEqual([]);
    expect(await published(eventId)).toBe(1);
  });

  it("two replicas' relays racing over many crashed writers' changes make each count update once", async () => {
    const a = replica();
    const b = replica();
    // One activity per change: a change made twice shows as a 2.
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(await activity());
      await died(a.outbox, ids[i] as string, `racer${i}`, 1);
    }
    await Promise.all([a.outbox.relayOnce(), b.outbox.relayOnce(), a.outbox.relayOnce(), b.outbox.relayOnce()]);
    await Promise.all([a.outbox.relayOnce(), b.outbox.relayOnce()]);
    const after = await activitiesOf().find({ _id: { $in: ids } }).toArray();
    expect(after.map((x) => x.reaction_counts.like)).toEqual(ids.map(() => 1));
    expect(after.map((x) => x.version)).toEqual(ids.map(() => 2));
    expect(await env.db.collection(REACTIONS).countDocuments({ activity_id: { $in: ids }, outbox_pending: true })).toBe(0);
  });

  it("a removal whose writer died after its count update: the relay publishes it and deletes the reaction, no second count", async () => {
    const { outbox } = replica();
    const id = await activity();
    await activitiesOf().updateOne({ _id: id }, { $set: { reaction_counts: { like: 2 }, version: 3 } });
    const { doc, change, eventId } = await died(outbox, id, "leaver", -1);
    await standIn.apply(T, id, { kind: "like", delta: -1, changeId: change.id });
    await outbox.relayOnce();
    await outbox.relayOnce();
    expect(await stored(id)).toMatchObject({ reaction_counts: { like: 1 }, version: 4, applied: [] });
    expect(await reaction(doc)).toBeNull();
    expect(await published(eventId)).toBe(1);
  });

  it("an added reaction whose activity is gone: the relay drops it, unannounced", async () => {
    const { outbox } = replica();
    const { doc, eventId } = await died(outbox, randomUUID(), "orphan", 1);
    await outbox.relayOnce();
    expect(await reaction(doc)).toBeNull();
    expect(await published(eventId)).toBe(0);
  });

  it("a live writer: the count update before the answer, the event and the clears after it", async () => {
    // A writer clears its target ids only when it finished within the grace (after it, a relay
    // may be replaying the change); 100 ms is less than a loaded machine's add, publish and clear.
    const { outbox, changes } = replica(10_000);
    /**
     * The writer's background (its publish, then its clear: the document's, then the activity's
     * ids, which a check between the two would miss) has run: flushed clears until `done` holds,
     * for up to 10 s (a loaded machine takes more than a tick; the relay never runs here).
     */
    const settled = async (done: () => Promise<boolean>) => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
        await outbox.flush();
        if (await done()) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const id = await activity();
    const { doc, created } = await changes.add(T, id, "live", "like");
    expect(created).toBe(true);
    expect(await stored(id)).toMatchObject({ reaction_counts: { like: 1 }, version: 2 });
    await settled(async () => !(await reaction(doc))?.outbox_pending && !(await stored(id))?.applied?.length);
    expect(await reaction(doc)).not.toHaveProperty("outbox_pending");
    expect((await stored(id))?.applied ?? []).toEqual([]);
    // The same reaction again answers the stored one; the removal waits for nothing and counts once.
    await changes.remove(T, () => createReactionRepository(env.db).get(T, id, "live", "like"));
    expect(await stored(id)).toMatchObject({ reaction_counts: { like: 0 }, version: 3 });
    await settled(async () => (await reaction(doc)) === null && !(await stored(id))?.applied?.length);
    expect(await reaction(doc)).toBeNull();
    expect((await stored(id))?.applied ?? []).toEqual([]);
    expect(await outbox.relayOnce()).toBe(0);
  });
});
