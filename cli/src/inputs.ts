import { graphFeedRefPattern, idPattern, parseDuration, type JsonObject } from "@feeds/node";
import { usageError } from "./errors.js";

// Checks of what the command line hands over, so that bad input is named before any request.

/** `group:id`, as the API's feed refs are. */
export function feedRef(value: string, what = "feed"): string {
  if (!graphFeedRefPattern.test(value)) {
    throw usageError(`${what} "${value}" is not a feed ref group:id (group ^[A-Za-z0-9_]{1,64}$, id ^[A-Za-z0-9_\\-.@]{1,128}$)`);
  }
  return value;
}

/** A user, feed or object id of contract section 4. */
export function id(value: string, what: string): string {
  if (!idPattern.test(value)) throw usageError(`${what} "${value}" must match ${idPattern.source}`);
  return value;
}

/** A JSON object given as text (`--custom '{"name":"Alice"}'`). */
export function jsonObject(value: string | undefined, option: string): JsonObject | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw usageError(`${option} is not JSON: ${value}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw usageError(`${option} must be a JSON object, e.g. '{"name":"Alice"}'`);
  }
  return parsed as JsonObject;
}

/** A whole number within bounds (`--limit 20`); without `max`, the API checks the upper bound. */
export function integer(value: string | undefined, option: string, min: number, max?: number): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) {
    throw usageError(`${option} must be a whole number ${max === undefined ? `of at least ${min}` : `from ${min} to ${max}`}`);
  }
  return n;
}

/** A token lifetime the SDK's helpers take (`30s`, `15m`, `1h`, `7d`). */
export function duration(value: string | undefined, option: string): string | undefined {
  if (value === undefined) return undefined;
  try {
    parseDuration(value);
  } catch {
    throw usageError(`${option} "${value}" is not a duration: a whole number and s, m, h or d (30s, 15m, 1h, 7d)`);
  }
  return value;
}

/** An ISO 8601 date-time (`--time`). */
export function dateTime(value: string | undefined, option: string): string | undefined {
  if (value === undefined) return undefined;
  if (Number.isNaN(Date.parse(value))) throw usageError(`${option} "${value}" is not a date-time (e.g. 2026-01-31T12:00:00Z)`);
  return value;
}
