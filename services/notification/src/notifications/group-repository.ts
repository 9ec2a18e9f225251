import type { Collection, Db, Filter } from "mongodb";
import { APPLIED_FIELD, createInsertBatcher, isDuplicateKey, type AppliedIds, type OutboxTarget } from "@feeds/kit";
import { GROUP_WINDOW_MS, groupBaseOf, groupKeyOf, headIdOf, type GroupBase } from "./group-keys.js";
import type { NotificationDoc } from "./notification-repository.js";

// Notification groups in three collections, each moved by single-document atomic updates:
//
// - heads (`tenant/owner/hash(base)`): which group of a base collects now (`seq`) and since when
//   (`opened_at`, the first member's act time). A member after the window advances `seq` with an
//   update conditioned on the seq it read (or inserts the head uniquely): of racing openers
//   exactly one wins, the others read again and join the group it opened.
// - groups (`_id` the group key): counts moved by `$inc` once per member notification: the
//   notification's pending change (kit's outbox) names the group as a target, and the update is
//   conditioned on the change id not being in `applied` and pushes it there, so a redelivered
//   event or the relay's replay counts nothing twice. `unseen` and `unread` count the members
//   without seen_at (read_at): +1 each with the member, minus what a mark stamped in the group,
//   once per mark the same way. A group is unseen while `unseen > 0`, so the owner's unseen groups
//   are counted among the owner's groups, never among the notifications. (A mark may stamp a
//   member whose +1 has not landed yet: the group's count is then briefly one lower, never
//   counted twice.)
// - actors (`group_key/actor`): one per distinct actor of a group, inserted uniquely (kit's insert
//   batcher: the notify worker's concurrent members share commands); it keeps the change that
//   created it (`by`), so a replay of that change knows the actor was its own. An actor there
//   already only moves its `last_at`.

export const GROUPS = "notification_groups";
const HEADS = "notification_group_heads";
const ACTORS = "notification_group_actors";

export interface GroupDoc extends Omit<GroupBase, "base"> {
  _id: string;
  tenant_id: string;
  owner: string;
  activity_count: number;
  actor_count: number;
  first_at: Date;
  /** The newest member's act time: the page order. */
  updated_at: Date;
  /** The last mark that set a member seen (read): shown once no member is unseen (unread). */
  seen_at?: Date;
  read_at?: Date;
  /** Members without seen_at (read_at): the group is unseen (unread) while above 0. */
  unseen?: number;
  unread?: number;
  applied?: string[];
}

/** What one mark stamped in one group: members it set seen, members it set read. */
export interface MarkedInGroup {
  seen: number;
  read: number;
}

interface HeadDoc {
  _id: string;
  tenant_id: string;
  seq: number;
  opened_at: Date;
}

interface ActorDoc {
  _id: string;
  tenant_id: string;
  group_key: string;
  actor: string;
  last_at: Date;
  /** The change (member notification) that found this actor new to the group. */
  by: string;
}

/** Where a page of groups resumes: the last group's sort keys. */
export interface GroupCursor {
  updated_at: Date;
  key: string;
}

export const groupTarget = (groupKey: string): OutboxTarget => ({ collection: GROUPS, id: groupKey });

/**
 * The target a mark's pending change names for the owner's groups (which groups it stamps is
 * known only once it ran): the marks outbox clears it with `pullMarks`, not a direct update.
 */
export const GROUP_MARKS = "notification_group_marks";
export const groupMarksTarget = (tenantId: string, owner: string): OutboxTarget => ({ collection: GROUP_MARKS, id: JSON.stringify([tenantId, owner]) });

/** How long a process keeps a group head it read (assign), and how many it keeps. */
const HEAD_CACHE_MS = 60_000;
const HEAD_CACHE_MAX = 10_000;

export function createGroupRepository(db: Db) {
  const heads: Collection<HeadDoc> = db.collection<HeadDoc>(HEADS);
  /** Heads read or written by this process: which group of a base collects, since when. */
  const kept = new Map<string, { seq: number; openedAt: number; until: number }>();
  const groups: Collection<GroupDoc> = db.collection<GroupDoc>(GROUPS);
  const actors: Collection<ActorDoc> = db.collection<ActorDoc>(ACTORS);
  // Background work like the notifications' inserts: one command at a time, the rest leave together.
  const actorInserts = createInsertBatcher(actors, { maxInFlight: 1 });

  /** The upsert of `_id`, once more if a racing insert of the same key won (it then updates). */
  async function upsertOnce<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      return run();
    }
  }

  return {
    async ensureIndexes(): Promise<void> {
      await groups.createIndex({ tenant_id: 1, owner: 1, updated_at: -1, _id: -1 });
      await actors.createIndex({ tenant_id: 1, group_key: 1, last_at: -1 });
    },

    /**
     * The key of the group `n` joins: the base's collecting group, or the next one when its window
     * is over. The head last read (or written) here is kept for HEAD_CACHE_MS: a member within its
     * window joins it without a read. (Another process may have opened the base's next group
     * meanwhile; only a member acting before that group opened can still be within the kept
     * head's window, and it then joins the group whose window holds its act. Its notification's id
     * comes from its event, so a redelivery that lands elsewhere inserts nothing and counts
     * nothing twice.)
     */
    async assign(n: Pick<NotificationDoc, "tenant_id" | "owner" | "created_at" | "verb" | "object" | "reaction_kind" | "activity_id" | "parent_id">): Promise<string> {
      const { base } = groupBaseOf(n);
      const _id = headIdOf(n.tenant_id, n.owner, base);
      const at = n.created_at.getTime();
      const keep = (seq: number, openedAt: number) => {
        if (kept.size >= HEAD_CACHE_MAX) kept.clear();
        kept.set(_id, { seq, openedAt, until: Date.now() + HEAD_CACHE_MS });
      };
      const known = kept.get(_id);
      if (known && known.until > Date.now() && at < known.openedAt + GROUP_WINDOW_MS) return groupKeyOf(n.tenant_id, n.owner, base, known.seq);
      for (let attempt = 0; attempt < 20; attempt++) {
        const head = await heads.findOne({ _id, tenant_id: n.tenant_id });
        // A late member (acted before the window opened) joins the collecting group too.
        if (head && at < head.opened_at.getTime() + GROUP_WINDOW_MS) {
          keep(head.seq, head.opened_at.getTime());
          return groupKeyOf(n.tenant_id, n.owner, base, head.seq);
        }
        if (!head) {
          try {
            await heads.insertOne({ _id, tenant_id: n.tenant_id, seq: 1, opened_at: n.created_at });
            keep(1, at);
            return groupKeyOf(n.tenant_id, n.owner, base, 1);
          } catch (e) {
            if (!isDuplicateKey(e)) throw e;
            continue; // another member opened it: read again
          }
        }
        const seq = head.seq + 1;
        const moved = await heads.updateOne({ _id, tenant_id: n.tenant_id, seq: head.seq }, { $set: { seq, opened_at: n.created_at } });
        if (moved.modifiedCount === 1) {
          keep(seq, at);
          return groupKeyOf(n.tenant_id, n.owner, base, seq);
        }
      }
      throw new Error(`notification group head ${_id}: too many racing openers`);
    },

    /**
     * Counts member `n` (its pending change `changeId`) in its group once: +1 activity, +1 actor
     * when the actor is new to the group, +1 unseen and unread; the group moves to the member's
     * time. Answers the group as it is after (one `findOneAndUpdate`).
     */
    async addMember(n: NotificationDoc & { group_key: string }, changeId: string): Promise<GroupDoc | null> {
      const { base: _base, ...shown } = groupBaseOf(n);
      const _id = `${n.group_key}/${n.actor}`;
      const inserted = await actorInserts.insert([{ _id, tenant_id: n.tenant_id, group_key: n.group_key, actor: n.actor, last_at: n.created_at, by: changeId }]);
      // Inserted now, or by this very change before (a replay): the actor is new to the group.
      const actor = inserted.inserted === 1 ? { by: changeId } : await actors.findOneAndUpdate({ _id, tenant_id: n.tenant_id }, { $max: { last_at: n.created_at } });
      const newActor = actor?.by === changeId ? 1 : 0;
      const count = () =>
        groups.findOneAndUpdate(
          { _id: n.group_key, tenant_id: n.tenant_id, [APPLIED_FIELD]: { $ne: changeId } },
          {
            $inc: { activity_count: 1, actor_count: newActor, unseen: 1, unread: 1 },
            $max: { updated_at: n.created_at },
            $min: { first_at: n.created_at },
            $setOnInsert: { owner: n.owner, ...shown },
            $push: { [APPLIED_FIELD]: changeId },
          },
          { upsert: true, returnDocument: "after" },
        );
      try {
        const after = await upsertOnce(count);
        if (after) return after;
      } catch (e) {
        // The group exists and holds this change already: the upsert's insert collided.
        if (!isDuplicateKey(e)) throw e;
      }
      return groups.findOne({ _id: n.group_key, tenant_id: n.tenant_id });
    },

    /**
     * Takes what mark `changeId` stamped off each group's unseen and unread, once per group, and
     * records the mark's time as the group's seen_at (read_at). A group not stored yet (its first
     * member's +1 still to come) is created from `memberOf(key)`, a member of it, so the mark's
     * part is not lost. Answers the groups it touched.
     */
    async applyMark(
      tenantId: string,
      owner: string,
      changeId: string,
      at: Date,
      marked: ReadonlyMap<string, MarkedInGroup>,
      memberOf: (key: string) => Promise<NotificationDoc | null>,
    ): Promise<string[]> {
      const keys = [...marked.keys()];
      if (keys.length === 0) return [];
      const stored = new Set((await groups.find({ _id: { $in: keys }, tenant_id: tenantId }, { projection: { _id: 1 } }).toArray()).map((g) => g._id));
      const inserts = new Map<string, Record<string, unknown>>();
      for (const key of keys.filter((k) => !stored.has(k))) {
        const m = await memberOf(key);
        if (!m) continue;
        const { base: _base, ...shown } = groupBaseOf(m);
        inserts.set(key, { owner, ...shown, activity_count: 0, actor_count: 0, first_at: m.created_at, updated_at: m.created_at });
      }
      const ops = keys.map((key) => {
        const m = marked.get(key) as MarkedInGroup;
        const onInsert = inserts.get(key);
        return {
          updateOne: {
            filter: { _id: key, tenant_id: tenantId, [APPLIED_FIELD]: { $ne: changeId } },
            update: {
              $inc: { unseen: -m.seen, unread: -m.read },
              // The aggregate names only groups with a stamp: one of the two is set.
              $max: m.seen > 0 ? { seen_at: at, ...(m.read > 0 ? { read_at: at } : {}) } : { read_at: at },
              $push: { [APPLIED_FIELD]: changeId },
              ...(onInsert ? { $setOnInsert: onInsert } : {}),
            },
            ...(onInsert ? { upsert: true } : {}),
          },
        };
      });
      try {
        await groups.bulkWrite(ops, { ordered: false });
      } catch (e) {
        // An upsert whose group holds this mark already, or was inserted meanwhile by its first
        // member: once more (the filter then matches, or the mark is applied).
        if (!isDuplicateKey(e)) throw e;
        await groups.bulkWrite(ops.map((op) => ({ updateOne: { ...op.updateOne, upsert: false } })), { ordered: false });
      }
      return keys;
    },

    /** Takes settled marks' ids off the `applied` lists of their owners' groups (`groupMarksTarget`). */
    async pullMarks(applied: readonly AppliedIds[]): Promise<void> {
      await Promise.all(
        applied.map(async ({ id, changes }) => {
          const parsed: unknown = JSON.parse(id);
          if (!Array.isArray(parsed) || typeof parsed[0] !== "string" || typeof parsed[1] !== "string") return;
          await groups.updateMany({ tenant_id: parsed[0], owner: parsed[1], [APPLIED_FIELD]: { $in: changes } }, { $pullAll: { [APPLIED_FIELD]: changes } });
        }),
      );
    },

    /**
     * The owner's groups counted: those with an unseen member, those with an unread one. One
     * aggregate over the owner's groups with either (grouped by their two counts: few distinct
     * pairs), never over the notifications.
     */
    async counts(tenantId: string, owner: string): Promise<{ unseen: number; unread: number }> {
      const rows = await groups
        .aggregate<{ _id: { s?: unknown; r?: unknown }; n: number }>([
          { $match: { tenant_id: tenantId, owner, $or: [{ unseen: { $gt: 0 } }, { unread: { $gt: 0 } }] } },
          { $group: { _id: { s: "$unseen", r: "$unread" }, n: { $sum: 1 } } },
        ])
        .toArray();
      let unseen = 0;
      let unread = 0;
      for (const { _id, n } of rows) {
        if (typeof _id.s === "number" && _id.s > 0) unseen += n;
        if (typeof _id.r === "number" && _id.r > 0) unread += n;
      }
      return { unseen, unread };
    },

    /** Keyset page of the owner's groups, newest update first: `limit + 1` rows. */
    page(tenantId: string, owner: string, limit: number, after: GroupCursor | null): Promise<GroupDoc[]> {
      const base: Filter<GroupDoc> = { tenant_id: tenantId, owner };
      const filter: Filter<GroupDoc> = after
        ? { ...base, $or: [{ updated_at: { $lt: after.updated_at } }, { updated_at: after.updated_at, _id: { $lt: after.key } }] }
        : base;
      return groups.find(filter).sort({ updated_at: -1, _id: -1 }).limit(limit + 1).toArray();
    },

    /** One of the owner's groups, or null. */
    get: (tenantId: string, owner: string, key: string) => groups.findOne({ _id: key, tenant_id: tenantId, owner }),

    /** The `limit` most recent actors of groups `keys` together, most recent first. */
    async actorsOf(tenantId: string, keys: string[], limit: number): Promise<{ group_key: string; actor: string }[]> {
      const found = await actors.find({ tenant_id: tenantId, group_key: { $in: keys } }).sort({ last_at: -1, _id: -1 }).limit(limit).toArray();
      return found.map((a) => ({ group_key: a.group_key, actor: a.actor }));
    },

    /** Up to `n` distinct actors of a group, most recent first. */
    async actors(tenantId: string, key: string, n: number): Promise<string[]> {
      const found = await actors.find({ tenant_id: tenantId, group_key: key }).sort({ last_at: -1, _id: -1 }).limit(n).toArray();
      return found.map((a) => a.actor);
    },
  };
}

export type GroupRepository = ReturnType<typeof createGroupRepository>;
