import type { Nats } from "@feeds/kit";
import type { PendingDoc } from "./pending-repository.js";

/**
 * A history task on the `fanout` work queue, under a subject of its own (the feed worker's
 * consumer filters on `<ns>.fanout.task`, ours on `<ns>.fanout.follow`): copy the target's newest
 * `n` activities into the source feed, or remove what came from the target. The worker decides
 * against the edge as it is when the task runs, so the task carries no edge state.
 */
export interface HistoryTask {
  t: string; // tenant
  s: string; // source feed `group:id`
  g: string; // target feed `group:id`
  k: "copy" | "remove";
  n?: number; // copy limit
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function createHistoryTasks(nats: Nats) {
  const subject = nats.subject("fanout", "follow");
  return {
    subject,

    /**
     * Publishes the record's history task. The writer and the relay use different message ids:
     * a relay that takes a slow writer's record for a dead one publishes before the edge change,
     * and must not swallow the writer's own publish after it as a duplicate.
     */
    async publish(p: PendingDoc, by: "writer" | "relay"): Promise<void> {
      if (!p.effect || !p.source || !p.target) return;
      const task: HistoryTask =
        p.effect.kind === "copy"
          ? { t: p.tenant_id, s: p.source, g: p.target, k: "copy", n: p.effect.limit }
          : { t: p.tenant_id, s: p.source, g: p.target, k: "remove" };
      await nats.js.publish(subject, encoder.encode(JSON.stringify(task)), { msgID: `f${by === "writer" ? "w" : "r"}:${p._id}` });
    },
  };
}

export type HistoryTasks = ReturnType<typeof createHistoryTasks>;

const isFeed = (v: unknown): v is string => typeof v === "string" && v.indexOf(":") > 0;

/** Parses a task off the queue; answers null for anything malformed (it is dead-lettered). */
export function decodeTask(data: Uint8Array): HistoryTask | null {
  let v: Partial<HistoryTask>;
  try {
    v = JSON.parse(decoder.decode(data)) as Partial<HistoryTask>;
  } catch {
    return null;
  }
  if (typeof v.t !== "string" || !isFeed(v.s) || !isFeed(v.g)) return null;
  if (v.k === "remove") return { t: v.t, s: v.s, g: v.g, k: "remove" };
  if (v.k === "copy" && Number.isInteger(v.n) && (v.n ?? 0) > 0) return { t: v.t, s: v.s, g: v.g, k: "copy", n: v.n };
  return null;
}
