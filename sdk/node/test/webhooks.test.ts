import { describe, expect, it } from "vitest";
import { WebhookVerificationError, verifyWebhook } from "../src/index.js";
// The service's own signing code (built), so the test holds the SDK to what is really sent.
import { newSigningSecret, signedHeaders } from "../../../services/notification/dist/webhooks/signing.js";

const body = JSON.stringify({ id: "evt_1", type: "activity.added", created_at: "2026-01-01T00:00:00Z", tenant_id: "t1", data: { id: "a1" } });
const now = new Date("2026-01-01T00:00:10Z");
const ts = Math.floor(now.getTime() / 1000);

describe("verifyWebhook (Standard Webhooks)", () => {
  it("accepts a delivery signed by the service and returns its event", () => {
    const secret = newSigningSecret();
    const headers = signedHeaders(secret, "evt_1", ts, body);
    expect(verifyWebhook({ secret, headers, body, now })).toMatchObject({ id: "evt_1", type: "activity.added", data: { id: "a1" } });
    expect(verifyWebhook({ secret, headers: new Headers(headers), body: new TextEncoder().encode(body), now }).id).toBe("evt_1");
  });

  it("accepts when any of several signatures matches (a secret being rotated)", () => {
    const secret = newSigningSecret();
    const old = signedHeaders(newSigningSecret(), "evt_1", ts, body)["webhook-signature"];
    const headers = signedHeaders(secret, "evt_1", ts, body);
    headers["webhook-signature"] = `${old} ${headers["webhook-signature"]}`;
    expect(verifyWebhook({ secret, headers, body, now }).id).toBe("evt_1");
  });

  it("refuses another secret, a changed body, a changed id and a missing header", () => {
    const secret = newSigningSecret();
    const headers = signedHeaders(secret, "evt_1", ts, body);
    expect(() => verifyWebhook({ secret: newSigningSecret(), headers, body, now })).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook({ secret, headers, body: body.replace("a1", "a2"), now })).toThrow(/no webhook-signature matches/);
    expect(() => verifyWebhook({ secret, headers: { ...headers, "webhook-id": "evt_2" }, body, now })).toThrow(WebhookVerificationError);
    const { "webhook-signature": _dropped, ...unsigned } = headers;
    expect(() => verifyWebhook({ secret, headers: unsigned, body, now })).toThrow(/missing/);
    expect(() => verifyWebhook({ secret, headers: { ...headers, "webhook-signature": "v2,abc" }, body, now })).toThrow(WebhookVerificationError);
  });

  it("refuses a timestamp outside the tolerance (default 300 s), either side", () => {
    const secret = newSigningSecret();
    const at = (seconds: number) => signedHeaders(secret, "evt_1", seconds, body);
    expect(verifyWebhook({ secret, headers: at(ts - 300), body, now }).id).toBe("evt_1");
    expect(() => verifyWebhook({ secret, headers: at(ts - 301), body, now })).toThrow(/more than 300 s/);
    expect(() => verifyWebhook({ secret, headers: at(ts + 301), body, now })).toThrow(/more than 300 s/);
    expect(verifyWebhook({ secret, headers: at(ts - 1000), body, now, toleranceSeconds: 1000 }).id).toBe("evt_1");
  });
});
