import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newSigningSecret, signedHeaders } from "../src/webhooks/signing.js";

// Signatures as the Standard Webhooks libraries check them (contract section 3).

describe("webhook signing", () => {
  it("a secret is whsec_ and the base64 of 32 random bytes, never the same twice", () => {
    const a = newSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(a.slice(6), "base64")).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(a);
  });

  it("the standardwebhooks package verifies what we sign, and nothing altered", () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({ id: "e1", type: "webhook.test", created_at: new Date().toISOString(), tenant_id: "t", data: { x: 1 } });
    const headers = signedHeaders(secret, "e1", Math.floor(Date.now() / 1000), body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body.replace('"x":1', '"x":2'), headers)).toThrow();
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, "webhook-id": "e2" })).toThrow();
  });
});
