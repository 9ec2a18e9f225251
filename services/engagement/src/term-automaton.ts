import type { TextUnit } from "./blocklist-text.js";

/**
 * Aho–Corasick over units instead of characters: one pass over a text's units finds whether any
 * term's units appear in it back to back, whatever the terms share, in time linear in the text.
 *
 * A term matches where a regular expression `(?<!\w)t1\s+t2…(?!\w)` of its units would (\w being
 * letters, digits, marks and `_`): units written apart in the term need whitespace between them in
 * the text and units written together need none; a term that starts or ends with a character that
 * is not a word does not match where a word touches it (`c++` is not in `c++d`). Words are whole by
 * construction: units never split one.
 */
export interface TermAutomaton {
  matches(units: Iterable<TextUnit>): boolean;
}

const NOW = 1; // a term ending in a word ends here
const UNLESS_A_WORD_TOUCHES = 2; // a term ending in any other character ends here

/** Inside a term a unit is read with the space before it, if any; a term may start anywhere. */
const midKey = (u: TextUnit) => (u.gap ? ` ${u.text}` : u.text);

export function createTermAutomaton(terms: readonly (readonly TextUnit[])[]): TermAutomaton {
  const size = terms.reduce((n, t) => n + t.length, 1); // at most one state per unit, plus the root
  const ids = new Map<string, number>();
  const idOf = (key: string) => ids.get(key) ?? ids.set(key, ids.size).size - 1;
  const edges = new Map<number, number>();
  const edge = (state: number, id: number) => (id < 0 ? undefined : edges.get(id * size + state));
  // Per state: how the unit that leads into it reads from the root (-1: it cannot start a term)
  // and from any other state; its parent, depth, failure link and the terms that end there.
  const rootId = new Int32Array(size);
  const midId = new Int32Array(size);
  const parent = new Int32Array(size);
  const depth = new Int32Array(size);
  const fail = new Int32Array(size);
  const ends = new Uint8Array(size);

  /** The state after `s` reads a unit, following failure links where `s` has no edge for it. */
  const step = (s: number, root: number, mid: number): number => {
    for (;;) {
      const next = edge(s, s === 0 ? root : mid);
      if (next !== undefined) return next;
      if (s === 0) return 0;
      s = fail[s] ?? 0;
    }
  };

  let states = 1;
  for (const term of terms) {
    let s = 0;
    term.forEach((unit, i) => {
      const id = i === 0 ? idOf(unit.text) : idOf(midKey(unit));
      let next = edge(s, id);
      if (next === undefined) {
        next = states++;
        edges.set(id * size + s, next);
        rootId[next] = unit.glued ? -1 : idOf(unit.text);
        midId[next] = idOf(midKey(unit));
        parent[next] = s;
        depth[next] = (depth[s] ?? 0) + 1;
      }
      s = next;
    });
    if (term.length > 0) ends[s] = (ends[s] ?? 0) | (term.at(-1)?.word ? NOW : UNLESS_A_WORD_TOUCHES);
  }

  // Breadth-first, so every shorter state's failure link is known before it is followed.
  const byDepth = Array.from({ length: states }, (_, i) => i).sort((a, b) => (depth[a] ?? 0) - (depth[b] ?? 0));
  for (const t of byDepth) {
    if ((depth[t] ?? 0) < 2) continue;
    const f = step(fail[parent[t] ?? 0] ?? 0, rootId[t] ?? -1, midId[t] ?? -1);
    fail[t] = f;
    ends[t] = (ends[t] ?? 0) | (ends[f] ?? 0);
  }

  return {
    matches(units) {
      let s = 0;
      let pending = false;
      for (const u of units) {
        if (pending && !(u.word && !u.gap)) return true;
        s = step(s, u.glued ? -1 : (ids.get(u.text) ?? -1), ids.get(midKey(u)) ?? -1);
        const e = ends[s] ?? 0;
        if (e & NOW) return true;
        pending = (e & UNLESS_A_WORD_TOUCHES) !== 0;
      }
      return pending;
    },
  };
}
