import { createHmac, timingSafeEqual } from "node:crypto";
import type { WebhookEvent } from "@feeds/contract";

// Verifies a webhook delivery the service signed (Standard Webhooks, contract section on
// webhooks): `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed by the
// base64-decoded bytes after the signing secret's `whsec_`.

/** Headers as Fetch's `Headers`, or as Node's `req.headers` (names in any case). */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyWebhookInput {
  /** The destination's signing secret, `whsec_…` (shown once by createWebhook). */
  secret: string;
  headers: WebhookHeaders;
  /** The raw request body, exactly as received (not re-serialized JSON). */
  body: string | Uint8Array;
  /** Largest accepted distance between `webhook-timestamp` and now, in seconds. Default 300. */
  toleranceSeconds?: number | undefined;
  /** The current time (tests). Default: now. */
  now?: Date | undefined;
}

/** A delivery that is not the service's: a header missing, a stale timestamp, no matching signature. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

const PREFIX = "whsec_";

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(" ") : (v as string | undefined);
  }
  return undefined;
}

function keyOf(secret: string): Buffer {
  if (typeof secret !== "string" || secret === "") throw new TypeError("secret must be the destination's signing secret (whsec_…)");
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
  if (key.length === 0) throw new TypeError("secret holds no key bytes");
  return key;
}

/**
 * Checks a delivery's signature and timestamp and returns its parsed event. Accepts it when any
 * `v1,` signature of the (space-separated) `webhook-signature` header matches, compared in
 * constant time, and `webhook-timestamp` is within `toleranceSeconds` of now (either side).
 * Throws WebhookVerificationError otherwise.
 */
export function verifyWebhook<D = unknown>(input: VerifyWebhookInput): WebhookEvent<D> {
  const key = keyOf(input.secret);
  const id = header(input.headers, "webhook-id");
  const timestamp = header(input.headers, "webhook-timestamp");
  const signatures = header(input.headers, "webhook-signature");
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  if (!/^\d{1,12}$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not seconds since the epoch");
  const tolerance = input.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((input.now ?? new Date()).getTime() / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s from now`);
  }
  const body = typeof input.body === "string" ? Buffer.from(input.body, "utf8") : Buffer.from(input.body);
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  const matches = signatures.split(" ").some((entry) => {
    const [version, mac] = entry.split(",", 2);
    if (version !== "v1" || !mac) return false;
    const given = Buffer.from(mac, "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError("no webhook-signature matches the body");
  try {
    return JSON.parse(body.toString("utf8")) as WebhookEvent<D>;
  } catch {
    throw new WebhookVerificationError("the signed body is not JSON");
  }
}
