import { createHash } from "node:crypto";
import { requestLimits } from "@feeds/contract";

// Identifier and size rules of the contract (section 4), shared by gateway and services.
export const ID_PATTERN = /^[A-Za-z0-9_\-.@]{1,128}$/;
export const GROUP_PATTERN = /^[A-Za-z0-9_]{1,64}$/;
/** custom objects: serialized JSON bytes at most (the SDK's request limit, checked again here). */
export const MAX_CUSTOM_BYTES = requestLimits.customBytes;

export const isId = (s: string): boolean => ID_PATTERN.test(s);
export const isGroup = (s: string): boolean => GROUP_PATTERN.test(s);

/** A tenant's api_key as tenancy issues it (`ak_` + 24 hex): the gateway looks up no other `kid`. */
export const API_KEY_PATTERN = /^ak_[0-9a-f]{24}$/;
export const isApiKey = (s: string): boolean => API_KEY_PATTERN.test(s);

/**
 * A UUID (version 8, name-based) derived from `parts`: the same parts give the same id, so a
 * redelivered task that creates a record or an event with it creates it once.
 */
export function uuidFrom(...parts: string[]): string {
  const b = createHash("sha256").update(parts.join("\u0000")).digest().subarray(0, 16);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x80;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
/** Reaction kinds: keys of `reaction_counts` (stored as field names), so no `.`, `$` or
 * prototype names. */
export const REACTION_KIND_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const RESERVED_KINDS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
export const isReactionKind = (s: string): boolean => REACTION_KIND_PATTERN.test(s) && !RESERVED_KINDS.has(s);
