import { describe, expect, it } from "vitest";
import { isCode, limits } from "@feeds/kit";
import { createBlocklistMatcher, normalizeTerms } from "../src/blocklist.js";

// The blocklist's rules without storage: how terms are stored and what a list rejects.

const rejects = (terms: string[], text: string) => createBlocklistMatcher(normalizeTerms(terms))?.test(text) ?? false;

/** The VALIDATION_FAILED field of a refused list. */
function refusal(terms: readonly string[]): { path: string; message: string } | undefined {
  try {
    normalizeTerms(terms);
  } catch (e) {
    expect(isCode(e, "VALIDATION_FAILED")).toBe(true);
    return (e as { fields: { path: string; message: string }[] }).fields[0];
  }
  return undefined;
}

/** `count` terms of `words` words: `x x … x q00001`, sharing every word but the last. */
const sharedPrefixes = (count: number, words: number) =>
  Array.from({ length: count }, (_, i) => [...Array<string>(words - 1).fill("x"), `q${String(i).padStart(5, "0")}`].join(" "));

describe("blocklist terms", () => {
  it("are stored folded (NFKC, invisible characters removed, lower-cased), whitespace collapsed, without repeats, sorted", () => {
    expect(normalizeTerms(["  Darn ", "darn", "Foul \t Play", "ÄRGER", "ＨＥＣＫ", "fo\u200Bo", "b\u00ADar", "\uFEFFbaz"])).toEqual(["bar", "baz", "darn", "foo", "foul play", "heck", "ärger"]);
    // Folding is stable: a list read back and written again is the same list.
    const once = normalizeTerms(["ﬁne", "Ǆ", "ΟΔΟΣ", "c＋＋", "ⅷ"]);
    expect(normalizeTerms(once)).toEqual(once);
  });

  it("refuses empty, invisible-only or over-long terms and over-long lists, naming the term", () => {
    for (const [terms, path] of [
      [["ok", "  "], "terms.1"],
      [["\u200B\u200D\u2060"], "terms.0"],
      [["x".repeat(101)], "terms.0"],
      // 6 characters sent, 108 once NFKC has spelled each one out.
      [["ﷺ".repeat(6)], "terms.0"],
      [Array(1001).fill("a"), "terms"],
    ] as const) {
      expect(refusal(terms)?.path, JSON.stringify(terms).slice(0, 40)).toBe(path);
    }
  });

  it(`bounds the words across all terms at ${limits.blocklistWords}, repeats counted once and each symbol as a word`, () => {
    expect(limits.blocklistWords).toBe(5000);
    expect(refusal(sharedPrefixes(1000, 5))).toBeUndefined();
    // 100 terms of 50 one-letter words (99 characters each), and the first again in capitals.
    const fifty = Array.from({ length: 100 }, (_, i) => `${"x ".repeat(48)}${i % 10} ${Math.floor(i / 10)}`);
    expect(refusal([...fifty, fifty[0]?.toUpperCase() ?? ""])).toBeUndefined();
    const over = refusal([...sharedPrefixes(999, 5), "one two three four five six"]);
    expect(over?.path).toBe("terms");
    expect(over?.message).toContain("at most 5000 words across all terms");
    expect(refusal([...sharedPrefixes(999, 5), "x x x x +"])).toBeUndefined();
    expect(refusal([...sharedPrefixes(999, 5), "x x x x ++"])?.path).toBe("terms");
  });
});

describe("the blocklist matcher", () => {
  it("matches whole words, case-insensitively, anywhere in the text", () => {
    const terms = ["darn", "foul play", "c++", "a.b", "straße"];
    for (const text of ["darn", "DARN", "DaRn", "oh Darn it", "darn!", "(darn)", "x,darn,y", "foul   play", "FOUL\nPLAY", "I like C++.", "see a.b here", "STRASSE? no: Straße"]) {
      expect(rejects(terms, text), text).toBe(true);
    }
    for (const text of ["darned", "undarn", "darn_it", "darn9", "foulplay", "foul", "foul-play", "play foul", "c+", "c ++", "c++d", "aXb", "a. b", "", "dárn"]) {
      expect(rejects(terms, text), text).toBe(false);
    }
  });

  it("finds a term at the very start and the very end of the text", () => {
    for (const text of ["darn", "darn it", "well, darn", "c++ rocks", "I write c++", "foul play", "a foul play"]) {
      expect(rejects(["darn", "c++", "foul play"], text), text).toBe(true);
    }
  });

  it("finds terms that overlap each other or restart inside a near miss", () => {
    expect(rejects(["a b c d", "b c e"], "a b c e")).toBe(true);
    expect(rejects(["a b c"], "a b a b c")).toBe(true);
    expect(rejects(["h e", "s h e", "h i s", "h e r s"], "u s h e r s")).toBe(true);
    expect(rejects(["a b c d"], "a b c a b c x d")).toBe(false);
    // After a near miss, a term that starts with a symbol still cannot start where a word touches it.
    expect(rejects(["c+.", "+d"], "c+d")).toBe(false);
    expect(rejects(["c+.", "+d"], "c +d")).toBe(true);
    expect(rejects(sharedPrefixes(1000, 5), "x x x x x x x q00999 x")).toBe(true);
    expect(rejects(sharedPrefixes(1000, 5), "x x x q00999 x x x x q01000")).toBe(false);
  });

  it("reads full-width and compatibility spellings as the letters they show", () => {
    for (const text of ["ｄａｒｎ", "ＤＡＲＮ", "oh ｄａｒｎ!", "ｆｏｕｌ　ｐｌａｙ", "Ｃ＋＋"]) {
      expect(rejects(["darn", "foul play", "c++"], text), text).toBe(true);
    }
    expect(rejects(["ｆｉｎｅ"], "that's ﬁne")).toBe(true);
  });

  it("ignores zero-width and other invisible characters inside words", () => {
    for (const text of ["da\u200Brn", "da\u200Crn", "d\u200Darn", "da\u2060rn", "\uFEFFdarn", "dar\u00ADn", "d\u200Ba\u200Br\u200Bn", "c\u200B++", "oh\u00A0DA\u200BRN"]) {
      expect(rejects(["darn", "c++"], text), JSON.stringify(text)).toBe(true);
    }
    // An invisible character does not make two words one or one word two.
    expect(rejects(["foul play"], "foul\u200Bplay")).toBe(false);
  });

  it("matches what old lists stored (NFC, lower-cased, not folded)", () => {
    const matcher = createBlocklistMatcher(["ｄａｒｎ", "he\u200Bck", "οδος"]);
    for (const text of ["darn", "HECK", "ΟΔΟΣ"]) expect(matcher?.test(text), text).toBe(true);
  });

  it("treats letters of every script as word characters, and regex syntax in terms as text", () => {
    expect(rejects(["ärger"], "viel Ärger heute")).toBe(true);
    expect(rejects(["ärger"], "verärgert")).toBe(false);
    expect(rejects(["(x)"], "this (x) that")).toBe(true);
    expect(rejects([".*"], "anything")).toBe(false);
    expect(rejects(["!!!"], "wow!!!!")).toBe(true);
    expect(rejects(["!!!"], "wow!!")).toBe(false);
    expect(createBlocklistMatcher([])).toBeNull();
  });

  it("agrees with the regular expression it replaces on random short lists and texts", () => {
    // The regular expression whose matches the automaton keeps, as the reference: sound on short
    // input, slow only on long shared prefixes.
    // The alphabet is ASCII, where \w is the old [\p{L}\p{N}\p{M}_] (and compiles far faster).
    const escape = (t: string) => t.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    const reference = (terms: string[]) => new RegExp(`(?<!\\w)(?:${terms.map((t) => t.split(" ").map(escape).join("\\s+")).join("|")})(?!\\w)`);
    let seed = 18; // mulberry32: a fixed sequence
    const random = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0;
      let r = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      r ^= r + Math.imul(r ^ (r >>> 7), 61 | r);
      return ((r ^ (r >>> 14)) >>> 0) % n;
    };
    const pick = (of: readonly string[]) => of[random(of.length)] ?? "";
    const pieces = (n: number) => Array.from({ length: n }, () => pick(["a", "b", "ab", "+", ".", "("]) + pick([" ", "", "  ", "\n"])).join("");
    let hits = 0;
    for (let i = 0; i < 3000; i++) {
      const terms = normalizeTerms(Array.from({ length: 1 + random(3) }, () => pieces(1 + random(4)).trim()));
      const text = pieces(random(14));
      const expected = reference(terms).test(text);
      expect(createBlocklistMatcher(terms)?.test(text), `${JSON.stringify(terms)} in ${JSON.stringify(text)}`).toBe(expected);
      if (expected) hits++;
    }
    // Both answers come up often enough to mean something.
    expect(hits).toBeGreaterThan(500);
    expect(hits).toBeLessThan(2500);
  });

  it("checks the worst list allowed against a 5,000-character comment in linear time", () => {
    const text = "x ".repeat(2500);
    for (const terms of [sharedPrefixes(1000, 5), sharedPrefixes(166, 30)]) {
      const matcher = createBlocklistMatcher(normalizeTerms(terms));
      const started = performance.now();
      expect(matcher?.test(text)).toBe(false);
      // A backtracking matcher takes seconds here.
      expect(performance.now() - started).toBeLessThan(250);
    }
  });
});
