import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  callerOf,
  decodeCursor,
  encodeCursor,
  forbidden,
  isGroup,
  isId,
  pageLimit,
  requireServer,
  requireTenant,
  toTimestamp,
  validationFailed,
  type FieldError,
} from "@feeds/kit";
import type { FeedRef } from "@feeds/proto/feeds/common/v1/common";
import { FollowSchema, GraphService, type Follow } from "@feeds/proto/feeds/graph/v1/graph";
import {
  edgeOfDoc,
  feedKeyOf,
  feedString,
  type EdgeCursor,
  type EdgeOutcome,
  type FeedKey,
  type FollowDoc,
  type FollowRepository,
} from "./follow-repository.js";
import type { CountRepository } from "./count-repository.js";
import type { FollowWrites } from "./follow-writes.js";
import type { FollowerSets } from "./follower-sets.js";

export interface GraphServiceDeps {
  follows: Pick<FollowRepository, "followsOf" | "followersOf" | "targetsOf" | "edgesFrom" | "followedAmong">;
  counts: Pick<CountRepository, "get" | "followerCounts" | "popular">;
  writes: Pick<FollowWrites, "follow" | "unfollow" | "importMany">;
  followerSets: Pick<FollowerSets, "stream">;
}

/** Internal callers (the fan-out worker) page followers in chunks of up to this many. */
export const MAX_INTERNAL_PAGE = 1000;
/** Batch size of StreamFollowerFeeds when the caller names none. */
export const STREAM_BATCH_DEFAULT = 500;
/** Follow copies at most this many of the target's newest activities. */
export const COPY_LIMIT_MAX = 1000;
export const SUGGESTIONS_DEFAULT = 25;
export const SUGGESTIONS_MAX = 50;
/** Suggestions look at no more than this many of the feed's follows (newest first)... */
export const SUGGESTION_FOLLOWS_SCANNED = 1000;
/** ...and no more than this many of their follows. */
export const SUGGESTION_EDGES_SCANNED = 20_000;
/** Candidates whose follower counts are read to break ties at the cut. */
const SUGGESTION_CONTENDERS = 1000;
/** Suggestions are `user:` feeds. */
const SUGGESTED_GROUP = "user";

export const followToProto = (d: FollowDoc): Follow =>
  create(FollowSchema, {
    source: feedKeyOf(d.source_feed),
    target: feedKeyOf(d.target_feed),
    createdAt: toTimestamp(d.created_at),
  });

/** Checks one feed ref; answers its field errors (empty when valid). */
function checkRef(ref: FeedRef | undefined, path: string): FieldError[] {
  if (!ref) return [{ path, message: "required" }];
  const errors: FieldError[] = [];
  if (!isGroup(ref.group)) errors.push({ path: `${path}.group`, message: "must match ^[A-Za-z0-9_]{1,64}$" });
  if (!isId(ref.id)) errors.push({ path: `${path}.id`, message: "must match ^[A-Za-z0-9_\\-.@]{1,128}$" });
  return errors;
}

/** Checks an edge's refs, and that it is no self-follow; answers its field errors (empty when valid). */
function checkEdge(source: FeedRef | undefined, target: FeedRef | undefined): FieldError[] {
  const errors = [...checkRef(source, "source"), ...checkRef(target, "target")];
  if (!errors.length && isSelfFollow(source, target)) errors.push(selfFollow);
  return errors;
}

const isSelfFollow = (source: FeedKey | undefined, target: FeedKey | undefined) =>
  source?.group === target?.group && source?.id === target?.id;
const selfFollow: FieldError = { path: "target", message: "a feed cannot follow itself" };

function requireFeed(ref: FeedRef | undefined, path = "feed"): FeedKey {
  const errors = checkRef(ref, path);
  if (errors.length || !ref) throw validationFailed(errors);
  return { group: ref.group, id: ref.id };
}

/** Both ends of an edge, valid refs (field errors of both otherwise). */
function requireEdge(req: { source?: FeedRef; target?: FeedRef }): { source: FeedKey; target: FeedKey } {
  const errors = [...checkRef(req.source, "source"), ...checkRef(req.target, "target")];
  if (errors.length || !req.source || !req.target) throw validationFailed(errors);
  return { source: { group: req.source.group, id: req.source.id }, target: { group: req.target.group, id: req.target.id } };
}

/** A user token acts only on feeds whose id is its user id (any group). */
function requireActor(ctx: HandlerContext, source: FeedKey) {
  const caller = callerOf(ctx);
  if (caller.kind === "user" && caller.userId !== source.id) throw forbidden("a user may act only on its own feeds");
}

/** 1..100, and up to 1000 for internal callers (the fan-out worker reads followers in chunks). */
function listLimit(ctx: HandlerContext, limit: number | undefined): number {
  if (callerOf(ctx).kind !== "system") return pageLimit(limit);
  const n = limit && limit > 0 ? limit : 20;
  if (n > MAX_INTERNAL_PAGE) throw validationFailed([{ path: "limit", message: `must be between 1 and ${MAX_INTERNAL_PAGE}` }]);
  return n;
}

const cursorOf = (cursor: string | undefined): EdgeCursor | null => {
  if (!cursor) return null;
  const [ms, edge] = decodeCursor(cursor, ["number", "string"] as const);
  return { created_at: new Date(ms), edge };
};

function pageOf(rows: FollowDoc[], limit: number) {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    follows: page.map(followToProto),
    next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), edgeOfDoc(last)]) : "",
  };
}

// ---- Suggestions: the ranking is pure, the service only gathers its inputs. ----

export interface RankedSuggestion {
  feed: string;
  mutuals: number;
}

/**
 * Which feeds may never be suggested to `self`: other groups than `user`, `self` itself, the
 * owner's own user feed (same id), and what it already follows.
 */
export function suggestionExclusion(self: FeedKey, followed: ReadonlySet<string>) {
  const own = feedString(self);
  const ownUser = feedString({ group: SUGGESTED_GROUP, id: self.id });
  return (feed: string) => !feed.startsWith(`${SUGGESTED_GROUP}:`) || feed === own || feed === ownUser || followed.has(feed);
}

/** Mutual overlap: for each candidate, how many of the feeds `self` follows also follow it. */
export function countMutuals(
  edges: readonly { source_feed: string; target_feed: string }[],
  excluded: (feed: string) => boolean,
): Map<string, number> {
  const mutuals = new Map<string, number>();
  for (const e of edges) {
    if (excluded(e.target_feed)) continue;
    mutuals.set(e.target_feed, (mutuals.get(e.target_feed) ?? 0) + 1);
  }
  return mutuals;
}

/** Candidates that can still reach the first `limit` places: every one tied with the cut needs its follower count. */
export function contenders(mutuals: ReadonlyMap<string, number>, limit: number, cap = SUGGESTION_CONTENDERS): string[] {
  const ordered = [...mutuals].sort((a, b) => b[1] - a[1] || cmp(a[0], b[0]));
  const cut = ordered[Math.min(limit, ordered.length) - 1]?.[1] ?? 0;
  return ordered
    .filter(([, m]) => m >= cut)
    .slice(0, Math.max(cap, limit))
    .map(([feed]) => feed);
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Best first: by mutuals desc, then follower_count desc, then id asc; then topped up to `limit`
 * from `popular` (already by follower_count desc, id asc) with `mutuals: 0`.
 */
export function rankSuggestions(input: {
  mutuals: ReadonlyMap<string, number>;
  followerCounts: ReadonlyMap<string, number>;
  popular: readonly { feed: string; follower_count: number }[];
  excluded: (feed: string) => boolean;
  limit: number;
}): RankedSuggestion[] {
  const { mutuals, followerCounts, popular, excluded, limit } = input;
  const count = (f: string) => followerCounts.get(f) ?? 0;
  const ranked = [...mutuals]
    .filter(([feed, m]) => m > 0 && !excluded(feed))
    .sort((a, b) => b[1] - a[1] || count(b[0]) - count(a[0]) || cmp(feedKeyOf(a[0]).id, feedKeyOf(b[0]).id))
    .slice(0, limit)
    .map(([feed, m]) => ({ feed, mutuals: m }));
  const chosen = new Set(ranked.map((s) => s.feed));
  for (const p of popular) {
    if (ranked.length >= limit) break;
    if (chosen.has(p.feed) || excluded(p.feed)) continue;
    chosen.add(p.feed);
    ranked.push({ feed: p.feed, mutuals: 0 });
  }
  return ranked;
}

export function createGraphService(deps: GraphServiceDeps): ServiceImpl<typeof GraphService> {
  const { follows, counts, writes, followerSets } = deps;

  async function suggest(tenant: string, self: FeedKey, limit: number): Promise<RankedSuggestion[]> {
    const own = feedString(self);
    const targets = await follows.targetsOf(tenant, own, SUGGESTION_FOLLOWS_SCANNED);
    const followed = new Set(targets);
    // Beyond the scanned follows, "already followed" is checked exactly on the answer; over-fetch for it.
    const truncated = targets.length >= SUGGESTION_FOLLOWS_SCANNED;
    const want = truncated ? limit + SUGGESTIONS_MAX : limit;
    const excluded = suggestionExclusion(self, followed);
    const edges = await follows.edgesFrom(tenant, targets, SUGGESTED_GROUP, SUGGESTION_EDGES_SCANNED);
    const mutuals = countMutuals(edges, excluded);
    const [followerCounts, popular] = await Promise.all([
      counts.followerCounts(tenant, contenders(mutuals, want)),
      counts.popular(tenant, SUGGESTED_GROUP, 2 * want + followed.size + 2),
    ]);
    let ranked = rankSuggestions({ mutuals, followerCounts, popular, excluded, limit: want });
    if (truncated) {
      const already = await follows.followedAmong(tenant, own, ranked.map((s) => s.feed));
      ranked = ranked.filter((s) => !already.has(s.feed));
    }
    return ranked.slice(0, limit);
  }

  return {
    async follow(req, ctx) {
      const tenant = requireTenant(ctx);
      const { source, target } = requireEdge(req);
      requireActor(ctx, source);
      if (isSelfFollow(source, target)) throw validationFailed([selfFollow], "a feed cannot follow itself");
      if (req.activityCopyLimit > COPY_LIMIT_MAX) {
        throw validationFailed([{ path: "activity_copy_limit", message: `must be between 0 and ${COPY_LIMIT_MAX}` }]);
      }
      const { doc, created } = await writes.follow(tenant, feedString(source), feedString(target), req.activityCopyLimit);
      return { follow: followToProto(doc), created };
    },

    async unfollow(req, ctx) {
      const tenant = requireTenant(ctx);
      const { source, target } = requireEdge(req);
      requireActor(ctx, source);
      return { removed: await writes.unfollow(tenant, feedString(source), feedString(target), req.keepHistory) };
    },

    async listFollows(req, ctx) {
      const tenant = requireTenant(ctx);
      const feed = requireFeed(req.feed);
      const limit = listLimit(ctx, req.page?.limit);
      const rows = await follows.followsOf(tenant, feedString(feed), limit, cursorOf(req.page?.cursor));
      return pageOf(rows, limit);
    },

    async listFollowers(req, ctx) {
      const tenant = requireTenant(ctx);
      const feed = requireFeed(req.feed);
      const limit = listLimit(ctx, req.page?.limit);
      const rows = await follows.followersOf(tenant, feedString(feed), limit, cursorOf(req.page?.cursor));
      return pageOf(rows, limit);
    },

    async *streamFollowerFeeds(req, ctx) {
      const tenant = requireTenant(ctx);
      const feed = requireFeed(req.feed);
      if (callerOf(ctx).kind !== "system") throw forbidden("internal callers only");
      const size = req.batchSize > 0 ? req.batchSize : STREAM_BATCH_DEFAULT;
      if (size > MAX_INTERNAL_PAGE) throw validationFailed([{ path: "batch_size", message: `must be between 1 and ${MAX_INTERNAL_PAGE}` }]);
      // A small follower set comes from its cache (one Redis read); any other from one MongoDB pass.
      for await (const feeds of followerSets.stream(tenant, feedString(feed), size)) yield { feeds };
    },

    async getStats(req, ctx) {
      const tenant = requireTenant(ctx);
      const feed = requireFeed(req.feed);
      const doc = await counts.get(tenant, feedString(feed));
      return {
        // A follow's +1 may land after an unfollow's -1 of the same edge (two writers at once); never show that.
        followerCount: BigInt(Math.max(0, doc?.follower_count ?? 0)),
        followingCount: BigInt(Math.max(0, doc?.following_count ?? 0)),
      };
    },

    async suggestions(req, ctx) {
      const tenant = requireTenant(ctx);
      const feed = requireFeed(req.feed);
      const limit = req.limit > 0 ? req.limit : SUGGESTIONS_DEFAULT;
      if (limit > SUGGESTIONS_MAX) throw validationFailed([{ path: "limit", message: `must be between 1 and ${SUGGESTIONS_MAX}` }]);
      const ranked = await suggest(tenant, feed, limit);
      return {
        suggestions: ranked.map((s) => ({ ...feedKeyOf(s.feed), mutuals: BigInt(s.mutuals) })),
      };
    },

    async importFollows(req, ctx) {
      const tenant = requireServer(ctx);
      // Quiet and per item: one failure never rolls back the others; a duplicate edge is ok.
      const valid = req.follows.flatMap((f, index) =>
        f.source && f.target && !checkEdge(f.source, f.target).length
          ? [{ index, source: feedString(f.source), target: feedString(f.target) }]
          : [],
      );
      let outcome: EdgeOutcome[];
      try {
        outcome = valid.length ? await writes.importMany(tenant, valid) : [];
      } catch {
        outcome = valid.map(() => "failed");
      }
      const results = req.follows.map((_, index) => ({ index, ok: false, code: "VALIDATION_FAILED" }));
      valid.forEach((v, i) => {
        results[v.index] = outcome[i] === "failed" ? { index: v.index, ok: false, code: "INTERNAL" } : { index: v.index, ok: true, code: "" };
      });
      return { results };
    },
  };
}
