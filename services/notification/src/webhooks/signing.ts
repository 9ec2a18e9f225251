import { createHmac, randomBytes } from "node:crypto";

// Standard Webhooks signatures (contract section 3): `webhook-signature: v1,<base64 HMAC-SHA256
// of "id.timestamp.body">`, keyed by the base64-decoded bytes after the secret's `whsec_`.

const PREFIX = "whsec_";
/** Random bytes of a signing secret (the contract asks for at least 24). */
const SECRET_BYTES = 32;

export const newSigningSecret = (): string => `${PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`;

/** The three headers of one delivery attempt; `timestamp` in seconds since the epoch. */
export function signedHeaders(secret: string, id: string, timestamp: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
  const mac = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
  return { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": `v1,${mac}` };
}
