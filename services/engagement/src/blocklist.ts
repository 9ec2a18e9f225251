import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { FeedsError, validationFailed } from "@feeds/kit";

/** A tenant's blocklist: at most this many terms, each 1..100 characters once trimmed. */
export const MAX_TERMS = 1000;
export const MAX_TERM_LENGTH = 100;

interface BlocklistDoc {
  _id: string; // tenant id
  terms: string[];
  /** Changes with every write: this process recompiles its matcher when it moves. */
  version: string;
  updated_at: Date;
}

/** Trimmed, inner whitespace collapsed, lower-cased, without repeats, sorted. */
export function normalizeTerms(terms: readonly string[]): string[] {
  if (terms.length > MAX_TERMS) throw validationFailed([{ path: "terms", message: `at most ${MAX_TERMS} terms` }]);
  const out = new Set<string>();
  terms.forEach((raw, i) => {
    const t = raw.normalize("NFC").trim().replace(/\s+/gu, " ").toLowerCase();
    if (t.length < 1 || t.length > MAX_TERM_LENGTH) {
      throw validationFailed([{ path: `terms.${i}`, message: `must be 1 to ${MAX_TERM_LENGTH} characters once trimmed` }]);
    }
    out.add(t);
  });
  return [...out].sort();
}

/** Escapes what a `u`-mode pattern treats as syntax (it refuses escapes of anything else). */
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/**
 * One regular expression for all terms: a term matches as a whole word (no letter, digit or `_`
 * right before or after it), case-insensitively; whitespace inside a term matches any whitespace.
 */
export function blocklistMatcher(terms: readonly string[]): RegExp | null {
  if (terms.length === 0) return null;
  const alternatives = terms.map((t) => t.split(" ").map(escape).join("\\s+")).join("|");
  return new RegExp(`(?<![\\p{L}\\p{N}\\p{M}_])(?:${alternatives})(?![\\p{L}\\p{N}\\p{M}_])`, "iu");
}

/** The tenant blocklist: stored in MongoDB, compiled once per version in this process. */
export function createModeration(db: Db) {
  const lists: Collection<BlocklistDoc> = db.collection<BlocklistDoc>("blocklists");
  const compiled = new Map<string, { version: string; matcher: RegExp | null }>();

  return {
    async get(tenantId: string): Promise<string[]> {
      return (await lists.findOne({ _id: tenantId }))?.terms ?? [];
    },
    async set(tenantId: string, terms: readonly string[]): Promise<string[]> {
      const normalized = normalizeTerms(terms);
      await lists.replaceOne(
        { _id: tenantId },
        { terms: normalized, version: randomUUID(), updated_at: new Date() },
        { upsert: true },
      );
      return normalized;
    },
    /** CONTENT_REJECTED (422) when `text` holds a term of the tenant's blocklist. */
    async check(tenantId: string, text: string): Promise<void> {
      const doc = await lists.findOne({ _id: tenantId });
      if (!doc || doc.terms.length === 0) return;
      let entry = compiled.get(tenantId);
      if (entry?.version !== doc.version) {
        entry = { version: doc.version, matcher: blocklistMatcher(doc.terms) };
        // A bounded memo: forget the oldest tenant past 1000.
        if (compiled.size >= 1000) compiled.delete(compiled.keys().next().value as string);
        compiled.set(tenantId, entry);
      }
      if (entry.matcher?.test(text.normalize("NFC"))) {
        throw new FeedsError("CONTENT_REJECTED", "the text contains a term of the tenant's blocklist");
      }
    },
  };
}

export type Moderation = ReturnType<typeof createModeration>;
