// The ceilings of benches 9 and 14 (info): the plain writes of the notification a reaction or a
// follow makes, as a bare route would do them inline and awaited: the notification's insertOne,
// the `$inc` upsert of its owner's unseen/unread, the `$inc` upsert of its group (activity, actor,
// unseen, unread counts). No outbox, no once-only condition, no distinct-actor record, no group
// head, no clears: the least the store does per notification.
//
// `prefix` names the scratch collections `<prefix>_notifications`, `<prefix>_counts`,
// `<prefix>_groups` (the bench copies the real ones' indexes onto them).
import { randomUUID } from "node:crypto";

export function notifyWrites(db, prefix, tenant) {
  const notifications = db.collection(`${prefix}_notifications`);
  const counts = db.collection(`${prefix}_counts`);
  const groups = db.collection(`${prefix}_groups`);
  /** The notification of `owner` that `actor` did `verb` on `object` at `at`, in group `base`. */
  return async ({ owner, verb, actor, object, reactionKind = null, activityId = null, at, base }) => {
    const groupKey = `${tenant}/${owner}/${base}/1`;
    await notifications.insertOne({
      _id: randomUUID(),
      tenant_id: tenant,
      owner,
      verb,
      actor,
      object,
      reaction_kind: reactionKind,
      activity_id: activityId,
      created_at: at,
      seen_at: null,
      read_at: null,
      group_key: groupKey,
    });
    await counts.updateOne({ _id: `${tenant}/${owner}` }, { $inc: { unseen: 1, unread: 1, v: 1 }, $setOnInsert: { tenant_id: tenant, owner } }, { upsert: true });
    await groups.updateOne(
      { _id: groupKey, tenant_id: tenant },
      { $inc: { activity_count: 1, actor_count: 1, unseen: 1, unread: 1 }, $max: { updated_at: at }, $setOnInsert: { owner, verb } },
      { upsert: true },
    );
  };
}

/** Copies the notification collections' indexes onto the ceiling's scratch ones (`prefix`). */
export async function copyNotifyIndexes(copyIndexes, db, prefix) {
  for (const [from, to] of [
    ["notifications", `${prefix}_notifications`],
    ["notification_counts", `${prefix}_counts`],
    ["notification_groups", `${prefix}_groups`],
  ])
    await copyIndexes(db, from, to);
}
