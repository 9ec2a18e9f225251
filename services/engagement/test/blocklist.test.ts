import { describe, expect, it } from "vitest";
import { isCode } from "@feeds/kit";
import { blocklistMatcher, normalizeTerms } from "../src/blocklist.js";

// The blocklist's rules without storage: how terms are stored and what a list rejects.

const rejects = (terms: string[], text: string) => blocklistMatcher(normalizeTerms(terms))?.test(text) ?? false;

describe("blocklist", () => {
  it("stores terms trimmed, lower-cased, inner whitespace collapsed, without repeats, sorted", () => {
    expect(normalizeTerms(["  Darn ", "darn", "Foul \t Play", "ÄRGER"])).toEqual(["darn", "foul play", "ärger"]);
  });

  it("refuses empty or over-long terms and over-long lists, naming the term", () => {
    for (const [terms, path] of [
      [["ok", "  "], "terms.1"],
      [["x".repeat(101)], "terms.0"],
      [Array(1001).fill("a"), "terms"],
    ] as const) {
      let caught: unknown;
      try {
        normalizeTerms(terms);
      } catch (e) {
        caught = e;
      }
      expect(isCode(caught, "VALIDATION_FAILED")).toBe(true);
      expect((caught as { fields: { path: string }[] }).fields[0]?.path).toBe(path);
    }
  });

  it("matches whole words, case-insensitively, anywhere in the text", () => {
    const terms = ["darn", "foul play", "c++", "a.b", "straße"];
    for (const text of ["darn", "DARN", "oh Darn it", "darn!", "(darn)", "x,darn,y", "foul   play", "FOUL\nPLAY", "I like C++.", "see a.b here", "STRASSE? no: Straße"]) {
      expect(rejects(terms, text), text).toBe(true);
    }
    for (const text of ["darned", "undarn", "darn_it", "darn9", "foulplay", "foul", "c+", "aXb", "", "dárn"]) {
      expect(rejects(terms, text), text).toBe(false);
    }
  });

  it("treats letters of every script as word characters, and regex syntax in terms as text", () => {
    expect(rejects(["ärger"], "viel Ärger heute")).toBe(true);
    expect(rejects(["ärger"], "verärgert")).toBe(false);
    expect(rejects(["(x)"], "this (x) that")).toBe(true);
    expect(rejects([".*"], "anything")).toBe(false);
    expect(blocklistMatcher([])).toBeNull();
  });
});
