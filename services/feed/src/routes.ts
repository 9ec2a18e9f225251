import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  callerOf,
  checkPatchPaths,
  conflict,
  decodeCursor,
  encodeCursor,
  forbidden,
  fromTimestamp,
  isDuplicateKey,
  notFound,
  pageLimit,
  patchCustomJson,
  requireTenant,
  scope,
  toTimestamp,
  validationFailed,
  type Clients,
  type CountSignal,
  type EventOutbox,
  type Locks,
  type Logger,
} from "@feeds/kit";
import { ActivitySchema, FeedService, type Activity, type NewActivity } from "@feeds/proto/feeds/feed/v1/feed";
import type { User } from "@feeds/proto/feeds/identity/v1/identity";
import type { ActivityDoc, ActivityRepository } from "./activity-repository.js";
import type { EntryRepository } from "./entry-repository.js";
import type { Fanout } from "./fanout.js";
import type { ActivityEvents } from "./events.js";
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
  fanout: Fanout;
  /** Serialises changes to one activity (FerretDB v1 has no atomic compare-and-set). */
  locks: Locks;
  /** activity.updated and activity.deleted: recorded before the write, published after it. */
  outbox: EventOutbox;
  events: ActivityEvents;
  /** The console's change signal of activities (count, version). */
  consoleSignal: CountSignal;
  peers: () => Pick<Clients, "users">;
  log: Logger;
}

const CLAMP_MS = 10 * 60 * 1000;
/** An activity's lock, under its tenant: a caller naming another tenant's id must not take (or wait for) that tenant's lock. */
const activityLock = (tenantId: string, id: string) => `activity/${tenantId}/${id}`;
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

const burned = () => conflict("this (foreign_id, time) identity belongs to a deleted activity");

export function createFeedService(deps: FeedServiceDeps): ServiceImpl<typeof FeedService> {
  const { activities, entries, signals, heads, cache, fanout, log } = deps;

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
   * Stores one activity: claims its (foreign_id, time) identity, then completes the claim.
   * Answers the first writer's activity for a live duplicate.
   */
  async function store(
    tenantId: string,
    origin: string,
    a: NewActivity,
    time: Date,
    batch: boolean,
  ): Promise<{ doc: ActivityDoc; created: boolean }> {
    const doc: ActivityDoc = {
      _id: randomUUID(),
      tenant_id: tenantId,
      actor: a.actor,
      verb: a.verb,
      object: a.object,
      target: a.target ?? null,
      foreign_id: a.foreignId ?? null,
      time,
      custom_json: JSON.stringify(parseCustom(a.customJson)),
      origin_feed: origin,
      refs: a.refs,
      reaction_counts: {},
      version: 1,
      edited_at: null,
      deleted_at: null,
      created_at: new Date(),
      batch,
      fanout_pending: true,
    };
    if (!a.foreignId) return complete(doc);
    // The claim carries the whole activity, so whoever completes it (its writer, a racing
    // duplicate, a retry after the writer died) stores the first writer's body under its id.
    const claim = await activities.claimIdentity(doc, a.foreignId);
    if (!claim) return complete(doc);
    if (claim.deleted) throw burned();
    // A claim written before claims carried their activity names only the id.
    const claimed = claim.activity ?? { ...doc, _id: claim.activity_id };
    // Mostly a retry of a finished write: one read answers it.
    const existing = await activities.get(tenantId, claimed._id);
    if (existing?.deleted_at) throw burned();
    if (existing && !existing.fanout_pending) return { doc: existing, created: false };
    return complete(claimed);
  }

  /**
   * Stores `doc` unless it is stored already, then its origin entry, head, signal and cache, and
   * publishes its fan-out. Before the insert, a fan-out intent goes to JetStream, so that a write
   * dying after its insert still gets its fan-out (the intent relay publishes it); while NATS does
   * not take the intent, the activity is stored with an outbox mark instead, which the outbox relay
   * publishes once NATS answers. A duplicate that finds the activity stored without a mark starts
   * nothing: its writer, or a relay, publishes the fan-out; one that finds a mark finishes the
   * origin entry, head, signal and cache again, idempotently (the write that stored it may have
   * died before them).
   */
  async function complete(doc: ActivityDoc): Promise<{ doc: ActivityDoc; created: boolean }> {
    const { tenant_id: tenantId, _id: activityId, origin_feed: origin, time } = doc;
    const intent = await fanout.intend(doc);
    const intended = intent !== null;
    const mine: ActivityDoc = { ...doc };
    if (intended) delete mine.fanout_pending;
    else mine.fanout_pending = true;
    let stored = mine;
    try {
      await activities.insert(mine);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      const existing = await activities.get(tenantId, activityId);
      if (!existing) throw e;
      if (existing.deleted_at) throw burned();
      if (!existing.fanout_pending) return { doc: existing, created: false };
      stored = existing;
    }
    const created = stored === mine;
    // Read your own writes: the origin feed and its signal show it before we answer. The console's
    // count moves beside the entry write (every pass: a retry finishing a died write moves it too).
    await Promise.all([
      entries.upsertMany(tenantId, [{ feed: origin, activity_id: activityId, time, origin }]),
      deps.consoleSignal.bump(tenantId, created ? 1 : 0),
    ]);
    // The head, signal and cache first, then (in the same tick, so usually behind them) the
    // publish: it needs the origin entry only, and the worker reads the activity from the cache.
    // Only the write that stored it publishes, and only after its intent: a marked activity is
    // the outbox relay's to publish (NATS did not answer a moment ago). Once the task is out, the
    // intent is deleted, so the intent relay does not publish it a second time.
    const cached = stored.batch
      ? Promise.all([cache.putMany([stored]), fanout.showIn(tenantId, [origin], stored)])
      : heads.addAndBump(tenantId, origin, { id: activityId, timeMs: time.getTime() }, cache.entry(stored));
    const published =
      created && intended
        ? fanout.publishTask(mine, true).then(
            () => fanout.forget(intent),
            (err: unknown) => {
              log.warn({ err: String(err), activity: activityId }, "fan-out publish deferred to the intent relay");
            },
          )
        : undefined;
    await Promise.all([cached, published]);
    return { doc: stored, created };
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
      const [stored, { user, warnings }] = await Promise.all([store(tenantId, origin, a, time, false), actorOf(tenantId, a.actor)]);
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
      return deps.locks.withLock(activityLock(tenantId, req.id), async () => {
        const doc = await live(tenantId, req.id);
        mayChange(ctx, doc);
        const now = new Date();
        const change = {
          custom_json: patchCustomJson(doc.custom_json, set, req.unset),
          ...(req.hasRefs ? { refs: req.refs } : {}),
          version: doc.version + 1,
          edited_at: doc.edited_at ?? now,
        };
        const event = await deps.events.of("activity.updated", { ...doc, ...change }, now);
        const updated = await deps.outbox.emit(tenantId, [event], () => activities.replaceIfVersion(doc, doc.version, change), {
          publishIf: (u) => u !== null,
        });
        if (!updated) throw conflict("the activity changed concurrently; retry");
        await cache.putMany([updated]);
        await signals.bump(tenantId, await entries.feedsOf(tenantId, doc._id));
        return { activity: activityToProto(updated) };
      });
    },

    async deleteActivity(req, ctx) {
      const tenantId = requireTenant(ctx);
      return deps.locks.withLock(activityLock(tenantId, req.id), async () => {
        const doc = await live(tenantId, req.id);
        mayChange(ctx, doc);
        const now = new Date();
        const change = { deleted_at: now, version: doc.version + 1 };
        const event = await deps.events.of("activity.deleted", { ...doc, ...change }, now);
        const deleted = await deps.outbox.emit(tenantId, [event], () => activities.replaceIfVersion(doc, doc.version, change), {
          publishIf: (d) => d !== null,
        });
        if (!deleted) throw conflict("the activity changed concurrently; retry");
        // A crash before the burn still answers 409 to a re-post: the claim leads to this tombstone.
        if (doc.foreign_id) await activities.burnIdentity(tenantId, doc.foreign_id, doc.time);
        await cache.putMany([deleted]);
        const feeds = [...new Set([doc.origin_feed, ...(await entries.feedsOf(tenantId, doc._id))])];
        await entries.removeActivity(tenantId, doc._id);
        await heads.remove(tenantId, feeds, doc._id);
        await signals.bump(tenantId, feeds);
        return {};
      });
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
      const copied = await entries.upsertMany(
        tenantId,
        docs.map((d) => ({ feed: source, activity_id: d._id, time: d.time, origin: target })),
      );
      // Also when every entry was there already: a batch import's fan-out writes entries without
      // touching heads, so the source's head may not show them yet.
      if (docs.length) {
        await heads.invalidate(tenantId, source);
        await signals.bump(tenantId, [source]);
      }
      return { copied };
    },

    async removeHistory(req, ctx) {
      const tenantId = requireTenant(ctx);
      const source = feedKey(req.source);
      const r = await entries.removeOrigin(tenantId, source, feedKey(req.target));
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
          const { doc } = await store(tenantId, origin, a, fromTimestamp(a.time) ?? new Date(), true);
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
