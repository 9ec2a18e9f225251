import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox, eventMessages, eventSubject, newEvent, scope } from "@feeds/kit";
import { createUserRepository, type UserDoc } from "../src/user-repository.js";
import { identityHarness } from "./harness.js";

// user.updated travels in the user's record: the upsert records it, the writer publishes it and
// clears it; a writer that died leaves it to the relay, which publishes it once.

describe("user.updated through the outbox", { timeout: 60_000 }, () => {
  const h = identityHarness("identity_users");
  beforeAll(h.open);
  afterAll(h.close);

  const records = () => h.env.db.collection<UserDoc>("users");
  /** Events published on the notify queue so far (the queue has no consumer here). */
  async function published(): Promise<number> {
    const subject = eventSubject(h.env.nats);
    const info = await h.env.nats.jsm.streams.info(h.env.nats.stream("notify"), { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  }

  it("an upsert publishes its event and leaves nothing pending in the record", async () => {
    const before = await published();
    const res = await h.users.upsertUser({ id: "u1", customJson: '{"a":1}' }, scope({ tenantId: "t_users" }));
    expect(res.created).toBe(true);
    expect(await published()).toBe(before + 1);
    await new Promise((r) => setTimeout(r, 200));
    const doc = await records().findOne({ _id: "t_users/u1" });
    expect(doc?.outbox).toBeUndefined();
    expect(doc?.outbox_pending).toBeUndefined();
  });

  it("an event whose writer died after the upsert is published by the relay, once", async () => {
    const repo = createUserRepository(h.env.db);
    const outbox = createOutbox({ db: h.env.db, nats: h.env.nats, log: h.env.log, graceMs: 0 });
    outbox.register("users");
    const event = newEvent("user.updated", "t_users", { id: "u2" });
    const change = outbox.change(eventMessages(h.env.nats, [event]));
    await repo.upsert("t_users", "u2", "{}", new Date(), outbox.forUpdate(change));
    expect((await records().findOne({ _id: "t_users/u2" }))?.outbox_pending).toBe(true);
    const before = await published();
    await outbox.relayOnce();
    await outbox.relayOnce();
    expect(await published()).toBe(before + 1);
    const doc = await records().findOne({ _id: "t_users/u2" });
    expect(doc?.outbox ?? []).toEqual([]);
    expect(doc?.custom_json).toBe("{}");
  });
});
