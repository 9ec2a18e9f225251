import type { Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256 } from "@feeds/kit";
import { Role } from "@feeds/proto/feeds/identity/v1/identity";
import type { SessionDoc } from "../src/operator-repository.js";
import { codeOf, eventually, identityHarness, PASSWORD, sleep } from "./harness.js";

// What expires goes by TTL index (the store removes it some time after: about a minute on
// MongoDB, seconds on the local launcher), and is refused from the moment it expired by the
// read-time check.

/** Long enough for a TTL pass on either store. */
const TTL_PASS_MS = 75_000;

describe("expiry", { timeout: 120_000 }, () => {
  const h = identityHarness("identity_expiry", { sessionTtlSeconds: 1 });
  beforeAll(h.open);
  afterAll(h.close);

  const ttlOf = async (collection: string, field: string) =>
    ((await h.env.db.collection(collection).listIndexes().toArray()) as Document[]).find((ix) => (ix.key as Record<string, number>)[field] === 1)
      ?.expireAfterSeconds as number | undefined;

  it("an expired session is refused at once and removed by its TTL index later", async () => {
    expect(await ttlOf("operator_sessions", "expires_at")).toBe(0);
    const t = h.newTenant();
    const a = await h.invite(t, "owner");
    const login = await h.operators.login({ email: a.email, password: PASSWORD });
    const token = login.session?.token ?? "";
    expect(await codeOf(h.operators.authenticate({ token }))).toBe("OK");
    await sleep(1100);
    // Read-time check: refused the moment it expired, whether or not the TTL pass came yet.
    expect(await codeOf(h.operators.authenticate({ token }))).toBe("UNAUTHENTICATED");
    const sessions = h.env.db.collection<SessionDoc>("operator_sessions");
    expect(await eventually(async () => (await sessions.findOne({ _id: sha256(token) })) === null, TTL_PASS_MS)).toBe(true);
  });

  it("an invite that expired unaccepted is refused at once, and its operator removed by the TTL index (the email is free again)", async () => {
    expect(await ttlOf("operators", "invite.expires_at")).toBe(0);
    const t = h.newTenant();
    const a = await h.invite(t, "owner");
    const invited = await h.invite(t, "member", false);
    await h.operatorDocs().updateOne({ _id: invited.id }, { $set: { "invite.expires_at": new Date(Date.now() - 1000) } });
    expect(await codeOf(h.operators.acceptInvite({ token: invited.token, password: PASSWORD }))).toBe("UNAUTHENTICATED");
    // Accepted operators carry no invite: the TTL index never takes them.
    expect((await h.operatorDocs().findOne({ _id: a.id }))?.invite).toBeNull();
    expect(await eventually(async () => (await h.operatorDocs().findOne({ _id: invited.id })) === null, TTL_PASS_MS)).toBe(true);
    expect((await h.operatorDocs().findOne({ _id: a.id }))?._id).toBe(a.id);
    // The email can be invited again.
    const again = await h.operators.createInvite({ email: invited.email, name: "again", role: Role.MEMBER }, h.as(t, a.id));
    expect(again.operator?.email).toBe(invited.email);
  });
});
