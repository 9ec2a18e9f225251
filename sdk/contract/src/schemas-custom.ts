import { z } from "zod";
import { requestLimits } from "./limits.js";

// The one `custom` rule of every body that carries one (activities, objects, users, promoted):
// a JSON object at most `customDepth` levels deep and `customBytes` serialized. Depth is walked
// first, without recursion, because the size check (JSON.stringify) and everything after it
// recurse; both run before zod walks the object's keys.

const { customBytes, customDepth } = requestLimits;

/** Serialized JSON's size in UTF-8 bytes; call it only on a value whose depth is bounded. */
export const jsonBytes = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value) ?? "").length;

const isContainer = (v: unknown): v is object => typeof v === "object" && v !== null;
const childrenOf = (v: object): unknown[] => (Array.isArray(v) ? v : Object.values(v));

/**
 * Whether `value` nests objects and arrays more than `max` levels deep (an object or array is
 * level 1, scalars add none). Iterative, and stops at the first container past `max`.
 */
export function depthExceeds(value: unknown, max: number): boolean {
  if (!isContainer(value)) return false;
  if (max < 1) return true;
  const nodes: object[] = [value];
  const levels: number[] = [1];
  for (let node = nodes.pop(); node !== undefined; node = nodes.pop()) {
    const level = levels.pop() as number;
    for (const child of childrenOf(node)) {
      if (!isContainer(child)) continue;
      if (level + 1 > max) return true;
      nodes.push(child);
      levels.push(level + 1);
    }
  }
  return false;
}

const depthRule = `must be at most ${customDepth} levels deep`;
const bytesRule = `must be at most ${customBytes / 1024} KB serialized`;

/** A `custom` object: its depth, then its size, are checked before zod walks its keys. */
export const customObject = z.preprocess((raw: Record<string, unknown>, ctx) => {
  const value: unknown = raw; // the declared type is the schema's input; the value is any JSON
  if (!isContainer(value) || Array.isArray(value)) return value; // the record's own type error
  if (depthExceeds(value, customDepth)) ctx.addIssue({ code: "custom", message: depthRule });
  else if (jsonBytes(value) > customBytes) ctx.addIssue({ code: "custom", message: bytesRule });
  return value;
}, z.record(z.string(), z.unknown()));
