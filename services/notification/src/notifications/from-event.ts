import { createHash } from "node:crypto";
import { isEventType, isId, type FeedEvent } from "@feeds/kit";
import type { NotificationDoc } from "./notification-repository.js";

// Which events notify whom (contract, "Notifications are created for"): a follow of a `user:<id>`
// feed notifies that user (actor `user:<source feed id>`); a reaction or a comment on an activity
// whose actor is `user:<id>` notifies that user; a reply notifies the parent comment's author.
// Nobody is notified of their own act. Deletions (unfollow, unreact, comment removal) keep the
// notifications of the acts before them: they reported something that did happen.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The name space of notification ids (a random uuid, fixed forever). */
const NAMESPACE = Buffer.from("5b0c6f0e2f6a4c1f9d3e8a7b1c2d3e4f", "hex");

/** A name-based uuid (version 5, SHA-1): the same event always names the same notification. */
export function notificationIdOf(event: Pick<FeedEvent, "tenant_id" | "id">): string {
  const h = createHash("sha1").update(NAMESPACE).update(`${event.tenant_id}/${event.id}`).digest();
  h[6] = ((h[6] ?? 0) & 0x0f) | 0x50;
  h[8] = ((h[8] ?? 0) & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** The user id of a `user:<id>` ref, or null. */
export function userOf(ref: unknown): string | null {
  if (typeof ref !== "string" || !ref.startsWith("user:")) return null;
  const id = ref.slice("user:".length);
  return isId(id) ? id : null;
}

const str = (v: unknown): string | null => (typeof v === "string" && v.length > 0 && v.length <= 256 ? v : null);
const uuid = (v: unknown): string | null => (typeof v === "string" && UUID.test(v) ? v.toLowerCase() : null);

/** What an event means for the notification feeds. */
export type Outcome = { notify: NotificationDoc } | { skip: "not notified" | "own act" | "malformed" };

type Fields = Pick<NotificationDoc, "owner" | "verb" | "actor" | "object" | "reaction_kind" | "activity_id" | "parent_id">;

const record = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {});

function fieldsOf(e: FeedEvent): Fields | "not notified" | "malformed" {
  // Events are ours, but a queue is a boundary: nothing in them is trusted to be well formed.
  if (typeof e.type !== "string" || !isEventType(e.type)) return "not notified";
  if (typeof e.tenant_id !== "string" || !e.tenant_id || typeof e.id !== "string" || !e.id) return "malformed";
  const d = record(e.data);
  const meta = record(e.meta);
  switch (e.type) {
    case "follow.created": {
      if (d.target_group !== "user") return "not notified";
      const owner = str(d.target_id);
      const source = str(d.source_id);
      if (!owner || !isId(owner) || !source || !isId(source)) return "malformed";
      return { owner, verb: "follow", actor: `user:${source}`, object: `user:${owner}`, reaction_kind: null, activity_id: null, parent_id: null };
    }
    case "reaction.added": {
      const activity = uuid(d.activity_id);
      const kind = str(d.kind);
      const actor = str(meta.actor);
      if (!activity || !kind || !actor) return "malformed";
      const owner = userOf(meta.activity_actor);
      if (!owner) return "not notified";
      return { owner, verb: "react", actor, object: activity, reaction_kind: kind, activity_id: null, parent_id: null };
    }
    case "comment.added": {
      const comment = uuid(d.id);
      const activity = uuid(d.activity_id);
      const actor = str(meta.actor);
      if (!comment || !activity || !actor) return "malformed";
      // A reply notifies the parent comment's author; a top-level comment, the activity's user.
      const reply = d.parent_id !== null && d.parent_id !== undefined;
      const owner = reply ? str(meta.parent_user_id) : userOf(meta.activity_actor);
      if (reply && (!owner || !isId(owner))) return "malformed";
      if (!owner) return "not notified";
      const parent = reply ? uuid(d.parent_id) : null;
      if (reply && !parent) return "malformed";
      return { owner, verb: "comment", actor, object: comment, reaction_kind: null, activity_id: activity, parent_id: parent };
    }
    case "follow.deleted":
    case "reaction.deleted":
    case "comment.deleted":
    case "activity.added":
    case "activity.updated":
    case "activity.deleted":
    case "user.updated":
    case "webhook.test":
      return "not notified";
  }
}

/** The notification an event creates, if any; its id is derived from the event's. */
export function notificationOf(e: FeedEvent): Outcome {
  const fields = fieldsOf(e);
  if (typeof fields === "string") return { skip: fields };
  if (userOf(fields.actor) === fields.owner) return { skip: "own act" };
  const at = new Date(typeof e.created_at === "string" ? e.created_at : NaN);
  if (Number.isNaN(at.getTime())) return { skip: "malformed" };
  return {
    notify: { _id: notificationIdOf(e), tenant_id: e.tenant_id, ...fields, created_at: at, seen_at: null, read_at: null },
  };
}
