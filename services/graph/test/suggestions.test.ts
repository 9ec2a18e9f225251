import { describe, expect, it } from "vitest";
import { contenders, countMutuals, rankSuggestions, suggestionExclusion } from "../src/routes.js";

// The suggestion ranking is a pure function of what the repository gathered.

const edge = (source: string, target: string) => ({ source_feed: source, target_feed: target });

describe("suggestion exclusion", () => {
  it("excludes other groups, the feed itself, its owner's user feed and what it follows", () => {
    const excluded = suggestionExclusion({ group: "timeline", id: "me" }, new Set(["user:a"]));
    expect(excluded("user:a")).toBe(true);
    expect(excluded("user:me")).toBe(true);
    expect(excluded("timeline:x")).toBe(true);
    expect(excluded("user:b")).toBe(false);
    expect(suggestionExclusion({ group: "user", id: "me" }, new Set())("user:me")).toBe(true);
  });
});

describe("mutuals", () => {
  it("counts, per candidate, the followed feeds that follow it", () => {
    const excluded = suggestionExclusion({ group: "user", id: "me" }, new Set(["user:a", "user:b"]));
    const mutuals = countMutuals(
      [edge("user:a", "user:x"), edge("user:b", "user:x"), edge("user:a", "user:y"), edge("user:a", "user:me"), edge("user:a", "user:b"), edge("user:b", "topic:t")],
      excluded,
    );
    expect([...mutuals]).toEqual([
      ["user:x", 2],
      ["user:y", 1],
    ]);
  });

  it("keeps every candidate tied at the cut as a contender", () => {
    const mutuals = new Map([
      ["user:a", 3],
      ["user:b", 1],
      ["user:c", 1],
      ["user:d", 1],
      ["user:e", 2],
    ]);
    expect(contenders(mutuals, 2)).toEqual(["user:a", "user:e"]);
    expect(contenders(mutuals, 3)).toEqual(["user:a", "user:e", "user:b", "user:c", "user:d"]);
    expect(contenders(mutuals, 3, 1)).toEqual(["user:a", "user:e", "user:b"]);
    expect(contenders(new Map(), 3)).toEqual([]);
  });
});

describe("ranking", () => {
  const none = () => false;

  it("orders by mutuals, then follower_count, then id", () => {
    const ranked = rankSuggestions({
      mutuals: new Map([
        ["user:z", 1],
        ["user:w", 1],
        ["user:x", 3],
        ["user:v", 1],
        ["user:y", 2],
      ]),
      followerCounts: new Map([
        ["user:z", 5],
        ["user:w", 2],
        ["user:v", 2],
      ]),
      popular: [],
      excluded: none,
      limit: 10,
    });
    expect(ranked).toEqual([
      { feed: "user:x", mutuals: 3 },
      { feed: "user:y", mutuals: 2 },
      { feed: "user:z", mutuals: 1 },
      { feed: "user:v", mutuals: 1 },
      { feed: "user:w", mutuals: 1 },
    ]);
  });

  it("tops up from popularity with mutuals 0, skipping chosen and excluded feeds", () => {
    const ranked = rankSuggestions({
      mutuals: new Map([["user:x", 1]]),
      followerCounts: new Map(),
      popular: [
        { feed: "user:x", follower_count: 9 },
        { feed: "user:followed", follower_count: 8 },
        { feed: "user:p", follower_count: 7 },
        { feed: "user:q", follower_count: 7 },
        { feed: "user:r", follower_count: 1 },
      ],
      excluded: (f) => f === "user:followed",
      limit: 3,
    });
    expect(ranked).toEqual([
      { feed: "user:x", mutuals: 1 },
      { feed: "user:p", mutuals: 0 },
      { feed: "user:q", mutuals: 0 },
    ]);
  });

  it("cuts mutual candidates at the limit and answers fewer when the graph has fewer", () => {
    const mutuals = new Map([
      ["user:a", 2],
      ["user:b", 1],
    ]);
    expect(rankSuggestions({ mutuals, followerCounts: new Map(), popular: [], excluded: none, limit: 1 })).toEqual([{ feed: "user:a", mutuals: 2 }]);
    expect(rankSuggestions({ mutuals: new Map(), followerCounts: new Map(), popular: [], excluded: none, limit: 5 })).toEqual([]);
  });
});
