import { validationFailed } from "./errors.js";

// Opaque keyset cursors: base64url of a JSON array of the last row's sort keys.
export type CursorKey = string | number;

export function encodeCursor(keys: CursorKey[]): string {
  return Buffer.from(JSON.stringify(keys)).toString("base64url");
}

/** Decodes a cursor whose keys must have the given types; anything else is VALIDATION_FAILED on `next`. */
export function decodeCursor<const T extends readonly ("string" | "number")[]>(
  cursor: string,
  shape: T,
): { [K in keyof T]: T[K] extends "string" ? string : number } {
  const bad = () => validationFailed([{ path: "next", message: "malformed cursor" }]);
  if (!/^[A-Za-z0-9_-]{1,2048}$/.test(cursor)) throw bad();
  let keys: unknown;
  try {
    keys = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw bad();
  }
  if (!Array.isArray(keys) || keys.length !== shape.length) throw bad();
  shape.forEach((t, i) => {
    const k: unknown = keys[i];
    if (typeof k !== t || (t === "number" && !Number.isFinite(k))) throw bad();
  });
  return keys as { [K in keyof T]: T[K] extends "string" ? string : number };
}

/** Page limit of a list RPC (the gateway has validated 1..100 already; services re-check). */
export function pageLimit(limit: number | undefined, fallback = 20): number {
  const n = limit && limit > 0 ? limit : fallback;
  if (n > 100) throw validationFailed([{ path: "limit", message: "must be between 1 and 100" }]);
  return n;
}
