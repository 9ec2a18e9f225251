import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbox } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { createDestinationRepository, type DestinationDoc } from "../src/webhooks/destination-repository.js";
import { createSecretBox } from "../src/webhooks/secret-box.js";
import { newSigningSecret } from "../src/webhooks/signing.js";

// Webhook signing secrets at rest, on real MongoDB-wire storage and Redis in a namespace of their
// own: sealed when registered, opened for delivery, bound to their destination, and records an
// older release stored in plaintext still read, then sealed.

/** Every form the secret could take in a stored document: as shown, its base64 body, its bytes in hex. */
const formsOf = (secret: string) => {
  const body = secret.slice("whsec_".length);
  return [secret, body, Buffer.from(body, "base64").toString("hex")];
};

describe("webhook signing secrets at rest", () => {
  const env = createTestEnv("webhook_secrets", { db: true, redis: true, nats: true });
  const key = randomBytes(32);
  const repository = (k = key) => createDestinationRepository(env.db, env.redis, createSecretBox(k), createOutbox({ db: env.db, nats: env.nats, log: env.log }));
  const raw = () => env.db.collection<DestinationDoc>("webhook_destinations");

  beforeAll(async () => {
    await env.open();
    await repository().ensureIndexes();
  });
  afterAll(env.close);

  const destination = (tenant: string) => ({ _id: randomUUID(), tenant_id: tenant, url: "https://hooks.example/x", events: [], created_at: new Date() });

  it("a registered secret is stored sealed, opens for delivery, and opens nowhere else", async () => {
    const secret = newSigningSecret();
    const d = destination(`t-${randomBytes(4).toString("hex")}`);
    await repository().create({ ...d, secret });

    const stored = await raw().findOne({ _id: d._id });
    const text = JSON.stringify(stored);
    for (const form of formsOf(secret)) expect(text).not.toContain(form);
    expect(stored?.secret).toBeUndefined();
    expect(Object.keys(stored?.sealed_secret ?? {}).sort()).toEqual(["data", "iv", "tag"]);
    expect(await repository().forDelivery(d.tenant_id, d._id)).toEqual({ url: d.url, secret });

    // Under another key, or copied onto another tenant's destination, it does not open.
    await expect(repository(randomBytes(32)).forDelivery(d.tenant_id, d._id)).rejects.toThrow();
    const copy = { ...destination(`t-${randomBytes(4).toString("hex")}`), sealed_secret: stored?.sealed_secret };
    await raw().insertOne(copy);
    await expect(repository().forDelivery(copy.tenant_id, copy._id)).rejects.toThrow();
    await raw().deleteOne({ _id: copy._id });
  });

  it("a plaintext record of an older release is delivered with its secret, then sealed in place", async () => {
    const secret = newSigningSecret();
    const d = { ...destination(`t-${randomBytes(4).toString("hex")}`), secret };
    await raw().insertOne(d);
    expect(await repository().forDelivery(d.tenant_id, d._id)).toEqual({ url: d.url, secret });

    expect(await repository().sealPlaintext(new AbortController().signal)).toBeGreaterThanOrEqual(1);
    const stored = await raw().findOne({ _id: d._id });
    const text = JSON.stringify(stored);
    for (const form of formsOf(secret)) expect(text).not.toContain(form);
    expect(stored?.sealed_secret).toBeDefined();
    expect(await repository().forDelivery(d.tenant_id, d._id)).toEqual({ url: d.url, secret });
    expect(await raw().countDocuments({ secret: { $exists: true } })).toBe(0);
    // Nothing left to seal.
    expect(await repository().sealPlaintext(new AbortController().signal)).toBe(0);
  });
});
