import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { FeedsError, limits, validationFailed } from "@feeds/kit";
import { foldTerm, foldText, textUnits } from "./blocklist-text.js";
import { createTermAutomaton } from "./term-automaton.js";

interface BlocklistDoc {
  _id: string; // tenant id
  terms: string[];
  /** Changes with every write: this process recompiles its matcher when it moves. */
  version: string;
  updated_at: Date;
}

/** The longest term accepted before trimming, as the gateway's schema has it. */
const RAW_TERM_CHARS = 10 * limits.blocklistTermChars;

/**
 * Folded (NFKC, invisible characters removed, lower-cased), inner whitespace collapsed, trimmed,
 * without repeats, sorted; within the bounds of terms, characters per term and words in all.
 */
export function normalizeTerms(terms: readonly string[]): string[] {
  if (terms.length > limits.blocklistTerms) throw validationFailed([{ path: "terms", message: `at most ${limits.blocklistTerms} terms` }]);
  const out = new Set<string>();
  terms.forEach((raw, i) => {
    const t = raw.length > RAW_TERM_CHARS ? "" : foldTerm(raw);
    if (t.length < 1 || t.length > limits.blocklistTermChars) {
      const message = `must be 1 to ${limits.blocklistTermChars} characters once trimmed and normalised`;
      throw validationFailed([{ path: `terms.${i}`, message }]);
    }
    out.add(t);
  });
  let words = 0;
  for (const t of out) words += [...textUnits(t)].length;
  if (words > limits.blocklistWords) {
    const message = `at most ${limits.blocklistWords} words across all terms (a punctuation mark or symbol counts as a word)`;
    throw validationFailed([{ path: "terms", message }]);
  }
  return [...out].sort();
}

export interface BlocklistMatcher {
  /** True when `text` holds a term: in time linear in the text, whatever the terms. */
  test(text: string): boolean;
}

/**
 * All terms in one automaton. A term matches as whole words, case-insensitively and after NFKC
 * (full-width letters are letters), ignoring invisible characters; whitespace inside a term matches
 * any whitespace. Terms are folded here too, so stored lists that were only lower-cased match alike.
 */
export function createBlocklistMatcher(terms: readonly string[]): BlocklistMatcher | null {
  if (terms.length === 0) return null;
  const automaton = createTermAutomaton(terms.map((t) => [...textUnits(foldTerm(t))]));
  return { test: (text) => automaton.matches(textUnits(foldText(text))) };
}

/** The tenant blocklist: stored in MongoDB, compiled once per version in this process. */
export function createModeration(db: Db) {
  const lists: Collection<BlocklistDoc> = db.collection<BlocklistDoc>("blocklists");
  const compiled = new Map<string, { version: string; matcher: BlocklistMatcher | null }>();

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
        entry = { version: doc.version, matcher: createBlocklistMatcher(doc.terms) };
        // A bounded memo: forget the oldest tenant past 1000.
        if (compiled.size >= 1000) compiled.delete(compiled.keys().next().value as string);
        compiled.set(tenantId, entry);
      }
      if (entry.matcher?.test(text)) {
        throw new FeedsError("CONTENT_REJECTED", "the text contains a term of the tenant's blocklist");
      }
    },
  };
}

export type Moderation = ReturnType<typeof createModeration>;
