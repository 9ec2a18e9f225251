import type { JsMsg } from "nats";
import { createQueueWorker, scope, type Clients, type Logger, type Nats, type WorkerBeats } from "@feeds/kit";
import { feedKeyOf, type FollowRepository } from "./follow-repository.js";
import { decodeTask, type HistoryTask } from "./tasks.js";

/** Deliveries before a task goes to the dead-letter stream, and the waits between them. */
export const MAX_DELIVER = 5;
const BACKOFF_MS = [250, 500, 1000, 2000];
/**
 * How soon a task held by a process that died is delivered again: a running task beats every
 * third of it (`heartbeat`), so a long copy is not redelivered while it runs.
 */
const ACK_WAIT_MS = 5_000;
const IN_FLIGHT = 8;

export interface HistoryWorkerDeps {
  nats: Nats;
  follows: Pick<FollowRepository, "live">;
  peers: () => Pick<Clients, "feed">;
  log: Logger;
  /** Readiness names the follow worker when its loop stops beating. */
  beats?: WorkerBeats;
}

/**
 * Consumes the history tasks of follows and unfollows, each reconciled against the edge as it is
 * after its own writes, so that a follow and a quick unfollow (or the reverse) end in the state of
 * the last edge change whatever order their tasks run in, without a lock between them:
 * - a copy writes the target's newest activities into the source feed, then reads the edge: gone
 *   (or being removed), it takes back the entries it created (those there before stay: an earlier
 *   unfollow may have kept them). An unfollow that came after that read removes them itself.
 * - a removal does nothing while the edge exists; else it removes what came from the target, then
 *   reads the edge: followed again meanwhile, that follow's copy may have landed before the
 *   removal, so it copies again with the edge's limit.
 * A target with nothing to copy costs one read. Repeats change nothing.
 */
export function createHistoryWorker(deps: HistoryWorkerDeps) {
  const { nats, log } = deps;
  const run = historyReconciler(deps);

  async function handle(m: JsMsg): Promise<void> {
    const task = decodeTask(m.data);
    if (!task) throw new Error("malformed history task");
    await run(task);
  }

  // `<ns>.fanout.follow` on the fan-out queue, dead letters to `<ns>.fanout_dlq.follow`.
  return createQueueWorker({
    nats,
    log,
    queue: "fanout",
    durable: "follow",
    subject: "follow",
    handle,
    maxDeliver: MAX_DELIVER,
    backoffMs: BACKOFF_MS,
    ackWaitMs: ACK_WAIT_MS,
    concurrency: IN_FLIGHT,
    heartbeat: true,
    ...(deps.beats ? { beats: { worker: "follow" as const, beats: deps.beats } } : {}),
  });
}

/** A history task's reconciliation with the edge (the worker's handler; tests drive it directly). */
export function historyReconciler(deps: Pick<HistoryWorkerDeps, "follows" | "peers">): (task: HistoryTask) => Promise<void> {
  const { follows } = deps;

  /** The task's edge as the feed service names it, and the system call its RPCs run as. */
  const pairOf = (task: HistoryTask) => ({
    edge: { source: feedKeyOf(task.s), target: feedKeyOf(task.g) },
    call: scope({ tenantId: task.t, caller: { kind: "system" } }),
  });

  async function copy(task: HistoryTask, limit: number): Promise<void> {
    const { edge, call } = pairOf(task);
    const { inserted } = await deps.peers().feed.copyHistory({ ...edge, limit }, call);
    if (inserted.length === 0 || (await follows.live(task.t, task.s, task.g))) return;
    await deps.peers().feed.removeHistory({ ...edge, activityIds: inserted }, call);
  }

  async function run(task: HistoryTask): Promise<void> {
    if (task.k === "copy") return copy(task, task.n ?? 0);
    if (await follows.live(task.t, task.s, task.g)) return;
    const { edge, call } = pairOf(task);
    await deps.peers().feed.removeHistory(edge, call);
    const again = await follows.live(task.t, task.s, task.g);
    if (again && (again.copy_limit ?? 0) > 0) await copy(task, again.copy_limit ?? 0);
  }

  return run;
}
