import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  callerOf,
  checkPatchPaths,
  conflict,
  decodeCursor,
  encodeCursor,
  forbidden,
  isId,
  fromTimestamp,
  notFound,
  pageLimit,
  patchCustomJson,
  requireTenant,
  scope,
  toTimestamp,
  validationFailed,
  type Clients,
  type CountSignal,
  type Logger,
} from "@feeds/kit";
import { ActivitySchema, FeedService, type Activity, type NewActivity } from "@feeds/proto/feeds/feed/v1/feed";
import type { User } from "@feeds/proto/feeds/identity/v1/identity";
import type { ActivityDoc, ActivityRepository } from "./activity-repository.js";
import type { EntryRepository } from "./entry-repository.js";
import type { ActivityEvents, ActivityEventType } from "./events.js";
import type { ActivityWrites } from "./writes.js";
import { EMPTY_VERSION, type Signals } from "./signals.js";
import { HEAD_CAP, type HeadEntry, type Heads } from "./heads.js";
import type { ActivityCache } from "./activity-cache.js";
import { checkActivity, checkRefs, feedKey, parseCustom } from "./validate.js";
import { applyReactionChange, clearReactionChanges, retiredSetReactionCounts } from "./reaction-counts.js";

export interface FeedServiceDeps {
  activities: ActivityRepository;
  entries: EntryRepository;
  signals: Signals;
  heads: Heads;
  cache: ActivityCache;
  /** Adds, patches and deletes, each one conditional single-document write with what it owes pending. */
  writes: ActivityWrites;
  events: ActivityEvents;
  /** The console's change signal of activities (count, version). */
  consoleSignal: CountSignal;
  peers: () => Pick<Clients, "users">;
  log: Logger;
}

const CLAMP_MS = 10 * 60 * 1000;
/** How long a patch or delete keeps retrying against newer versions before answering 409. */
const CHANGE_BUDGET_MS = 5000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const activityToProto = (d: ActivityDoc): Activity =>
  create(ActivitySchema, {
    id: d._id,
    actor: d.actor,
    verb: d.verb,
    object: d.object,
    ...(d.target !== null ? { target: d.target } : {}),
    ...(d.foreign_id !== null ? { foreignId: d.foreign_id } : {}),
    time: toTimestamp(d.time),
    customJson: d.custom_json,
    originFeed: d.origin_feed,
    reactionCounts: Object.fromEntries(Object.entries(d.reaction_counts).map(([k, v]) => [k, BigInt(v)])),
    refs: d.refs,
    ...(d.edited_at ? { editedAt: toTimestamp(d.edited_at) } : {}),
    version: BigInt(d.version),
    ...(d.deleted_at ? { deletedAt: toTimestamp(d.deleted_at) } : {}),
  });


export function createFeedService(deps: FeedServiceDeps): ServiceImpl<typeof FeedService> {
  const { activities, entries, signals, heads, cache, writes } = deps;

  /** Activities by id: the cache first, MongoDB for the rest (which then fills the cache). */
  async function activitiesById(tenantId: string, ids: string[]): Promise<Map<string, ActivityDoc>> {
    const found = await cache.getMany(tenantId, ids);
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length) {
      const docs = await activities.getMany(tenantId, missing);
      for (const d of docs) found.set(d._id, d);
      await cache.putMany(docs);
    }
    return found;
  }

  /** The first page from the feed's head when it can answer alone, else from MongoDB (which
   * rebuilds the head). Answers the page's entries and whether more exist. */
  async function firstPage(tenantId: string, feed: string, limit: number): Promise<{ page: HeadEntry[]; more: boolean }> {
    const head = await heads.newest(tenantId, feed, limit + 1);
    if (head && (head.entries.length > limit || head.complete)) {
      return { page: head.entries.slice(0, limit), more: head.entries.length > limit };
    }
    const rows = await entries.page(tenantId, feed, HEAD_CAP, null);
    const newest = rows.slice(0, HEAD_CAP).map((e) => ({ id: e.activity_id, timeMs: e.time.getTime() }));
    // An empty feed keeps nothing in Redis: reads of any feed name must not leave keys behind.
    if (rows.length > 0) await heads.rebuild(tenantId, feed, newest, rows.length <= HEAD_CAP);
    return { page: newest.slice(0, limit), more: rows.length > limit };
  }

  /** A user token may act only on its own activities (actor `user:<id>`). */
  function mayChange(ctx: HandlerContext, doc: ActivityDoc): void {
    const c = callerOf(ctx);
    if (c.kind === "user" && doc.actor !== `user:${c.userId}`) throw forbidden("not your activity");
  }

  async function live(tenantId: string, id: string): Promise<ActivityDoc> {
    const doc = UUID.test(id) ? await activities.get(tenantId, id) : null;
    if (!doc || doc.deleted_at) throw notFound("activity not found");
    return doc;
  }

  /** The actor's user record, and `actor_user_unresolved` when the actor names a user with none. */
  async function actorOf(tenantId: string, actor: string): Promise<{ user?: User; warnings: string[] }> {
    if (!actor.startsWith("user:")) return { warnings: [] };
    const res = await deps.peers().users.getUsers({ ids: [actor.slice(5)] }, scope({ tenantId, caller: { kind: "system" } }));
    const user = res.users[0];
    return user ? { user, warnings: [] } : { warnings: ["actor_user_unresolved"] };
  }

  /**
   * Changes the live activity `id` (a patch or a delete): `change` makes the new fields from the
   * version read, and the write is conditioned on that version. A write that lost to another
   * change reads the activity again and retries against the new version (as a lock's waiter once
   * ran after the holder), for up to CHANGE_BUDGET_MS, then answers 409. A delete that won answers
   * 404 to the retry.
   */
  async function changeActivity(
    ctx: HandlerContext,
    tenantId: string,
    id: string,
    type: Exclude<ActivityEventType, "activity.added">,
    change: (doc: ActivityDoc, now: Date) => Partial<ActivityDoc>,
  ) {
    const deadline = Date.now() + CHANGE_BUDGET_MS;
    for (;;) {
      const doc = await live(tenantId, id);
      mayChange(ctx, doc);
      const now = new Date();
      const set = change(doc, now);
      const event = await deps.events.of(type, { ...doc, ...set }, now);
      const done = await writes.changeIfVersion(doc, set, event, type === "activity.deleted" ? "delete" : "update");
      if (done) return done;
      if (Date.now() > deadline) throw conflict("the activity changed concurrently; retry");
    }
  }

  return {
    async addActivity(req, ctx) {
      const tenantId = requireTenant(ctx);
      const origin = feedKey(req.feed);
      const caller = callerOf(ctx);
      const a = { ...req.activity } as NewActivity;
      if (caller.kind === "user") {
        if (req.feed?.id !== caller.userId) throw forbidden("a user token writes only its own feeds");
        a.actor = `user:${caller.userId}`;
      }
      const errors = checkActivity(a);
      if (errors.length) throw validationFailed(errors);
      const now = Date.now();
      let time = fromTimestamp(a.time) ?? new Date(now);
      if (caller.kind === "user") time = new Date(Math.min(now, Math.max(now - CLAMP_MS, time.getTime())));
      const [stored, { user, warnings }] = await Promise.all([writes.add(tenantId, origin, a, time, false), actorOf(tenantId, a.actor)]);
      return { activity: activityToProto(stored.doc), created: stored.created, warnings, ...(user ? { actorUser: user } : {}) };
    },

    async getActivity(req, ctx) {
      return { activity: activityToProto(await live(requireTenant(ctx), req.id)) };
    },

    async getActivities(req, ctx) {
      const tenantId = requireTenant(ctx);
      const ids = [...new Set(req.ids)].filter((id) => UUID.test(id));
      const docs = await activities.getMany(tenantId, ids);
      return { activities: docs.filter((d) => !d.deleted_at).map(activityToProto) };
    },

    async patchActivity(req, ctx) {
      const tenantId = requireTenant(ctx);
      const set = req.setJson ? (parseCustom(req.setJson, "set")) : {};
      const errors = [...checkPatchPaths(Object.keys(set), req.unset), ...(req.hasRefs ? checkRefs(req.refs) : [])];
      if (errors.length) throw validationFailed(errors);
      const updated = await changeActivity(ctx, tenantId, req.id, "activity.updated", (doc, now) => ({
        custom_json: patchCustomJson(doc.custom_json, set, req.unset),
        ...(req.hasRefs ? { refs: req.refs } : {}),
        version: doc.version + 1,
        edited_at: doc.edited_at ?? now,
      }));
      // Settled once its live events are out (else the relay's: NATS down, the write still stands).
      if (await writes.showChange(updated.doc)) await updated.settle();
      return { activity: activityToProto(updated.doc) };
    },

    async deleteActivity(req, ctx) {
      const tenantId = requireTenant(ctx);
      const deleted = await changeActivity(ctx, tenantId, req.id, "activity.deleted", (doc, now) => ({ deleted_at: now, version: doc.version + 1 }));
      if (await writes.removeEverywhere(deleted.doc)) await deleted.settle();
      return {};
    },

    async readFeed(req, ctx) {
      const tenantId = requireTenant(ctx);
      const feed = feedKey(req.feed);
      const limit = pageLimit(req.page?.limit);
      const after = req.page?.cursor ? decodeCursor(req.page.cursor, ["number", "string"] as const) : null;
      let page: HeadEntry[];
      let more: boolean;
      if (after) {
        const rows = await entries.page(tenantId, feed, limit, { time: new Date(after[0]), id: after[1] });
        page = rows.slice(0, limit).map((e) => ({ id: e.activity_id, timeMs: e.time.getTime() }));
        more = rows.length > limit;
      } else {
        ({ page, more } = await firstPage(tenantId, feed, limit));
      }
      const byId = await activitiesById(tenantId, page.map((e) => e.id));
      const last = page[page.length - 1];
      return {
        activities: page.flatMap((e) => {
          const d = byId.get(e.id);
          return d && !d.deleted_at ? [activityToProto(d)] : [];
        }),
        next: more && last ? encodeCursor([last.timeMs, last.id]) : "",
      };
    },

    async getSignal(req, ctx) {
      const tenantId = requireTenant(ctx);
      const feed = feedKey(req.feed);
      // Redis alone while the feed's head is warm; a missing head is rebuilt once from MongoDB.
      const [stored, head] = await Promise.all([signals.peek(tenantId, feed), heads.newest(tenantId, feed, 1)]);
      const newest = head ? head.entries[0] : (await firstPage(tenantId, feed, 1)).page[0];
      // An empty feed that was never read has the one stable version EMPTY_VERSION and stores
      // none: any feed name may be polled, and only feeds with something in them cost a key.
      if (stored === null && !newest) return { version: BigInt(EMPTY_VERSION), head: "" };
      const version = stored ?? (await signals.version(tenantId, feed));
      return { version: BigInt(version), head: newest?.id ?? "" };
    },

    async copyHistory(req, ctx) {
      const tenantId = requireTenant(ctx);
      const source = feedKey(req.source);
      const target = feedKey(req.target);
      const limit = Math.max(0, Math.min(1000, req.limit));
      if (!limit) return { copied: 0 };
      const docs = await activities.newestOf(tenantId, target, limit);
      const inserted = await entries.insertNew(
        tenantId,
        docs.map((d) => ({ feed: source, activity_id: d._id, time: d.time, origin: target })),
      );
      // Also when every entry was there already: a batch import's fan-out writes entries without
      // touching heads, so the source's head may not show them yet.
      if (docs.length) {
        await heads.invalidate(tenantId, source);
        await signals.bump(tenantId, [source]);
      }
      return { copied: inserted.length, inserted };
    },

    async removeHistory(req, ctx) {
      const tenantId = requireTenant(ctx);
      const source = feedKey(req.source);
      // Only the named activities' entries (a copy taking back what it added), else all from the target.
      const only = req.activityIds.length ? req.activityIds.filter(isId) : undefined;
      if (only && only.length === 0) return { removed: 0 };
      const r = await entries.removeOrigin(tenantId, source, feedKey(req.target), only);
      if (r.deletedCount) {
        await heads.invalidate(tenantId, source);
        await signals.bump(tenantId, [source]);
      }
      return { removed: r.deletedCount };
    },

    async importActivities(req, ctx) {
      const tenantId = requireTenant(ctx);
      // Items are independent and run in order: a rerun with foreign_id+time finds its rows.
      const results = [];
      for (const [index, item] of req.items.entries()) {
        try {
          const origin = feedKey(item.feed);
          const a = item.activity;
          const errors = checkActivity(a);
          if (!a || errors.length) throw validationFailed(errors);
          const { doc } = await writes.add(tenantId, origin, a, fromTimestamp(a.time) ?? new Date(), true);
          results.push({ index, ok: true, id: doc._id, code: "" });
        } catch (e) {
          const code = (e as { code?: unknown }).code;
          results.push({ index, ok: false, id: "", code: typeof code === "string" ? code : "INTERNAL" });
        }
      }
      return { results };
    },

    async setReactionCounts() {
      return retiredSetReactionCounts();
    },

    async applyReactionChange(req, ctx) {
      return { activity: activityToProto(await applyReactionChange({ activities, cache, signals, consoleSignal: deps.consoleSignal }, ctx, req)) };
    },

    async clearReactionChanges(req, ctx) {
      await clearReactionChanges({ activities }, ctx, req.activities);
      return {};
    },

    async getActivitySignal(_req, ctx) {
      const tenantId = requireTenant(ctx);
      const { count, version } = await deps.consoleSignal.read(tenantId, () => activities.count(tenantId));
      return { count: BigInt(count), version: BigInt(version) };
    },

    async listActivities(req, ctx) {
      const tenantId = requireTenant(ctx);
      const limit = pageLimit(req.page?.limit);
      const after = req.page?.cursor ? decodeCursor(req.page.cursor, ["number", "string"] as const) : null;
      const rows = await activities.page(tenantId, limit, after ? { time: new Date(after[0]), id: after[1] } : null);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        activities: page.map(activityToProto),
        next: rows.length > limit && last ? encodeCursor([last.time.getTime(), last._id]) : "",
      };
    },
  };
}
