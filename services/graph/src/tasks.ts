import type { Nats, OutboxMessage } from "@feeds/kit";

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

const decoder = new TextDecoder();

/** The history tasks of edge changes, as outbox messages (message id `fh:<change id>`: a writer's and a relay's publish are one). */
export function historyTasks(nats: Nats) {
  const subject = nats.subject("fanout", "follow");
  return {
    subject,
    message: (changeId: string, task: HistoryTask): OutboxMessage => ({ subject, msgId: `fh:${changeId}`, data: JSON.stringify(task) }),
  };
}

export type HistoryTasks = ReturnType<typeof historyTasks>;

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
