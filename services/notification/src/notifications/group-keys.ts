import { createHash } from "node:crypto";
import type { NotificationDoc, NotificationVerb } from "./notification-repository.js";

// What groups notifications (issue 23): follows of one feed; reactions of one kind on one
// activity; comments on one activity; replies to one comment. A group collects for
// GROUP_WINDOW_MS from its first member, measured on the acts' times (`created_at`); the next
// member after that opens the base's next group. A group's key names the owner, the base and the
// group's number within the base, hashed: the same group always has the same key.

/** How long a group collects from its first member. */
export const GROUP_WINDOW_MS = 24 * 60 * 60 * 1000;

/** The shared part of a group's members: what the group shows of them. */
export interface GroupBase {
  /** What members share (verb and the thing acted on), unique per owner and kind of group. */
  base: string;
  verb: NotificationVerb;
  reaction_kind: string | null;
  /** follow: the followed feed; react, comment: the activity; replies: the parent comment. */
  object: string;
  activity_id: string | null;
}

const sha = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 32);

/** The group base of a notification. */
export function groupBaseOf(n: Pick<NotificationDoc, "verb" | "object" | "reaction_kind" | "activity_id" | "parent_id">): GroupBase {
  switch (n.verb) {
    case "follow":
      return { base: `follow\n${n.object}`, verb: "follow", reaction_kind: null, object: n.object, activity_id: null };
    case "react":
      return { base: `react\n${n.object}\n${n.reaction_kind ?? ""}`, verb: "react", reaction_kind: n.reaction_kind, object: n.object, activity_id: null };
    case "comment": {
      const activity = n.activity_id ?? "";
      if (n.parent_id) return { base: `reply\n${n.parent_id}`, verb: "comment", reaction_kind: null, object: n.parent_id, activity_id: n.activity_id };
      return { base: `comment\n${activity}`, verb: "comment", reaction_kind: null, object: activity, activity_id: n.activity_id };
    }
  }
}

/** The key of group `seq` (1, 2, ...) of `base` in `owner`'s notifications: 32 hex characters. */
export const groupKeyOf = (tenantId: string, owner: string, base: string, seq: number): string => sha(`${tenantId}\n${owner}\n${base}\n${seq}`);

/** The id of the document that holds which group of `base` collects now. */
export const headIdOf = (tenantId: string, owner: string, base: string): string => `${tenantId}/${owner}/${sha(base)}`;

/** A group key as the routes take it. */
export const GROUP_KEY = /^[0-9a-f]{32}$/;
