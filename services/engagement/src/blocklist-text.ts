// How the blocklist reads text: one folding for terms and comments alike, then a stream of units.

/** Zero-width spaces and joiners, soft hyphens, BOMs, bidi controls, variation selectors, ... */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * NFKC with invisible characters removed, lower-cased: `ｄａｒｎ`, `da\u200Brn` and `DARN` all
 * read `darn`. Removal runs before NFKC too, so a joiner cannot keep a letter and its accent apart.
 * Final sigma becomes σ: lower-casing picks ς or σ by position, which case-insensitive matching
 * does not.
 */
export function foldText(text: string): string {
  return text.replace(INVISIBLE, "").normalize("NFKC").replace(INVISIBLE, "").toLowerCase().replace(/ς/gu, "σ");
}

/** A term as stored: folded, inner whitespace collapsed to one space, trimmed. */
export const foldTerm = (term: string): string => foldText(term).replace(/\s+/gu, " ").trim();

export interface TextUnit {
  /** A word (a run of letters, digits, marks and `_`) or one other character that is not whitespace. */
  text: string;
  word: boolean;
  /** Whitespace (or the start of the text) comes right before it. */
  gap: boolean;
  /** A character that is not a word, right after a word with no whitespace between (the `+` of `c+`). */
  glued: boolean;
}

// Each match is maximal and the gaps between matches are whitespace only, so one pass is linear.
const UNIT = /[\p{L}\p{N}\p{M}_]+|\S/gu;
const WORD = /^[\p{L}\p{N}\p{M}_]/u;

/** The units of folded text, in order. */
export function* textUnits(folded: string): Generator<TextUnit> {
  let end = 0;
  let afterWord = false;
  for (const m of folded.matchAll(UNIT)) {
    const gap = m.index === 0 || m.index > end;
    const word = WORD.test(m[0]);
    yield { text: m[0], word, gap, glued: !word && afterWord && !gap };
    end = m.index + m[0].length;
    afterWord = word;
  }
}
