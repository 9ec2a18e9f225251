import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventOutbox, decodeEvent, eventSubject, type FeedEvent } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { createCommentRepository, type CommentDoc } from "../src/comment-repository.js";
import { commentEvent, createConfirm, reactionEvent } from "../src/events.js";
import { createReactionRepository, reactionKey, type ReactionDoc } from "../src/reaction-repository.js";

// The engagement outbox's relay against real MongoDB-wire storage and NATS JetStream, in a
// namespace of its own: for a writer that died between recording its events and publishing
// them, the relay publishes exactly the events whose write took effect (the confirm path).

const T = "tenant-1";

describe("engagement outbox confirm", { timeout: 30_000 }, () => {
  const env = createTestEnv("engagement_confirm", { db: true, nats: { queues: ["notify"] } });
  beforeAll(env.open);
  afterAll(env.close);

  async function published(): Promise<string[]> {
    const { nats } = env;
    const info = await nats.jsm.streams.info(nats.stream("notify"));
    const out: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await nats.jsm.streams.getMessage(nats.stream("notify"), { seq }).catch(() => null);
      if (m && m.subject === eventSubject(nats)) out.push(decodeEvent(m.data).id);
    }
    return out;
  }

  const reaction = (user: string): ReactionDoc => ({
    _id: reactionKey(T, "a1", user, "like"),
    id: randomUUID(),
    tenant_id: T,
    activity_id: "a1",
    user_id: user,
    kind: "like",
    created_at: new Date(),
  });
  const comment = (): CommentDoc => ({
    _id: randomUUID(),
    tenant_id: T,
    activity_id: "a1",
    parent_id: null,
    user_id: "u",
    text: "hi",
    reply_count: 0,
    created_at: new Date(),
    edited_at: null,
    deleted_at: null,
  });

  it("publishes a dead writer's events whose write happened and drops the others; recounts the activities of reaction records", async () => {
    const { db, nats, log } = env;
    const reactions = createReactionRepository(db);
    const comments = createCommentRepository(db);
    const recounted: string[] = [];
    const recount = async (tenantId: string, activityId: string) => {
      recounted.push(`${tenantId}/${activityId}`);
    };
    const outbox = createEventOutbox({ db, nats, log, collection: "engagement_outbox", confirm: createConfirm({ reactions, comments, recount }) });
    const at = new Date();

    const stored = reaction("stored");
    const neverStored = reaction("never");
    const removed = reaction("removed");
    const stillThere = reaction("still");
    await reactions.insert(stored);
    await reactions.insert(stillThere);
    const added = comment();
    const neverAdded = comment();
    const softDeleted = comment();
    const live = comment();
    for (const c of [added, softDeleted, live]) await comments.insert(c);
    await comments.markDeleted(T, softDeleted._id, at);

    const yes: FeedEvent[] = [
      reactionEvent("reaction.added", stored, "user:o", at),
      reactionEvent("reaction.deleted", removed, "user:o", at),
      commentEvent("comment.added", added, "user:o", null, at),
      commentEvent("comment.deleted", softDeleted, "user:o", null, at),
    ];
    const no: FeedEvent[] = [
      reactionEvent("reaction.added", neverStored, "user:o", at),
      reactionEvent("reaction.deleted", stillThere, "user:o", at),
      commentEvent("comment.added", neverAdded, "user:o", null, at),
      commentEvent("comment.deleted", live, "user:o", null, at),
    ];
    // What writers that died between recording and publishing leave behind: one record each.
    const old = new Date(Date.now() - 10_000);
    await db.collection("engagement_outbox").insertMany(
      [...yes, ...no].map((e) => ({ _id: randomUUID() as never, tenant_id: T, events: [e], written: false, at: old })),
    );
    expect(await outbox.relayOnce()).toBe(8);
    expect(await outbox.relayOnce()).toBe(0);
    const ids = await published();
    for (const e of yes) expect(ids.filter((id) => id === e.id), e.type).toHaveLength(1);
    for (const e of no) expect(ids, e.type).not.toContain(e.id);
    expect(await db.collection("engagement_outbox").countDocuments()).toBe(0);
    // Each reaction record is also its activity's recount mark: recounted before the question.
    expect(recounted).toEqual(Array(4).fill(`${T}/a1`));
  });
});
