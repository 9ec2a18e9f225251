import {
  eventMessages,
  internal,
  notFound,
  validationFailed,
  workScope,
  type FeedEvent,
  type Finish,
  type Logger,
  type Nats,
  type Outbox,
  type PendingChange,
} from "@feeds/kit";
import { notAfter, whenSettled } from "./changes.js";
import { COMMENTS, type CommentDoc, type CommentRepository } from "./comment-repository.js";

/** What a comment's pending change asks (`change.data`): a parent's reply_count, or a thread's removal. */
interface CommentChange {
  /** The top-level comment whose reply_count moves by `delta`. */
  parent?: string;
  delta?: 1 | -1;
  /** A top-level comment deleted: its replies go with it. */
  thread?: true;
}

/**
 * Comments and replies added and deleted, each with its event in the comment's own document
 * (kit's outbox). A reply's change also moves its parent's reply_count, once: the reply is
 * stored first, then the parent's `$inc` is conditioned on the change not being applied yet and
 * on the parent being live (so no reply lands on a parent being deleted: one that finds it
 * deleted goes again, 400). A deletion marks the comment deleted (it leaves every read at once),
 * moves the count, and the document goes after its event is out. The outbox relay finishes what a
 * writer that died left (`finish`).
 */
export function createCommentChanges(deps: {
  comments: Pick<CommentRepository, "insert" | "live" | "markDeleted" | "changeReplies" | "applied" | "remove" | "removeReplies">;
  outbox: Pick<Outbox, "change" | "forInsert" | "settle" | "discard">;
  nats: Nats;
  log: Logger;
}) {
  const { comments, outbox, nats, log } = deps;
  const later = (what: string, change: PendingChange, fn: () => Promise<unknown>) =>
    void workScope.exit(() => fn().catch((err: unknown) => log.debug({ err: String(err), change: change.id }, `${what} left to the outbox relay`)));

  /** The parent's count for a writer: within its window (else the relay's), once. */
  async function moveReplies(c: CommentDoc, parentId: string, delta: 1 | -1, change: PendingChange): Promise<boolean> {
    if (Date.now() > notAfter(change.at)) throw internal(new Error("reply count past its writer's window: left to the outbox relay"));
    return comments.changeReplies(c.tenant_id, parentId, delta, change.id);
  }

  return {
    /** Stores `c` (a top-level comment, or a reply of a live top-level one) with its event `event`. */
    async add(c: CommentDoc, event: FeedEvent): Promise<void> {
      const parentId = c.parent_id;
      const data: CommentChange = parentId !== null ? { parent: parentId, delta: 1 } : {};
      const change = outbox.change(eventMessages(nats, [event]), {
        targets: parentId !== null ? [{ collection: COMMENTS, id: parentId }] : [],
        data: { ...data },
        at: c.created_at,
      });
      await comments.insert({ ...c, ...outbox.forInsert(change) });
      if (parentId !== null && !(await moveReplies(c, parentId, 1, change))) {
        // The parent was deleted meanwhile: the reply goes again, unannounced.
        await comments.remove(c.tenant_id, c._id);
        throw validationFailed([{ path: "parent_id", message: "names no comment" }]);
      }
      later("comment event", change, () => outbox.settle(COMMENTS, c._id, change));
    },

    /**
     * Deletes the live comment `id` (404 when there is none), with the event `eventOf` makes of it.
     * An earlier change of it still pending (its own add, counted) is made first.
     */
    async delete(tenantId: string, id: string, eventOf: (current: CommentDoc, at: Date) => FeedEvent): Promise<void> {
      const { c, change } = await whenSettled(async () => {
        const current = await comments.live(tenantId, id);
        if (!current) throw notFound("comment not found");
        const at = new Date();
        const parentId = current.parent_id;
        const data: CommentChange = parentId !== null ? { parent: parentId, delta: -1 } : { thread: true };
        const pending = outbox.change(eventMessages(nats, [eventOf(current, at)]), {
          targets: parentId !== null ? [{ collection: COMMENTS, id: parentId }] : [],
          data: { ...data },
          at,
        });
        if (!(await comments.markDeleted(tenantId, id, at, pending))) return "busy";
        return { c: current, change: pending };
      });
      // A parent deleted meanwhile has no count to move.
      if (c.parent_id !== null) await moveReplies(c, c.parent_id, -1, change);
      // After the answer: the event, then the rows (a thread's replies first).
      later("comment deletion", change, async () => {
        if (!(await outbox.settle(COMMENTS, c._id, change, { clear: false }))) return;
        if (c.parent_id === null) await comments.removeReplies(tenantId, c._id);
        await comments.remove(tenantId, c._id);
        outbox.discard(COMMENTS, c._id, change);
      });
    },

    /**
     * The relay's finish of a change whose writer did not: a reply's count (once); a reply whose
     * parent went before its count was made goes unannounced; a deletion removes the rows.
     */
    finish: (async (doc, change) => {
      const c = doc as unknown as CommentDoc;
      const { parent, delta, thread } = (change.data ?? {}) as CommentChange;
      if (parent && delta) {
        const moved = await comments.changeReplies(c.tenant_id, parent, delta, change.id);
        if (delta < 0) return "delete";
        if (!moved && !(await comments.applied(c.tenant_id, parent, change.id))) {
          await comments.remove(c.tenant_id, c._id);
          return "drop";
        }
        return undefined;
      }
      if (thread) {
        await comments.removeReplies(c.tenant_id, c._id);
        return "delete";
      }
      return undefined;
    }) satisfies Finish,
  };
}

export type CommentChanges = ReturnType<typeof createCommentChanges>;
