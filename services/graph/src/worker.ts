import type { JsMsg } from "nats";
import { createQueueWorker, scope, type Clients, type Locks, type Logger, type Nats, type WorkerBeats } from "@feeds/kit";
import { feedKeyOf, type FollowRepository } from "./follow-repository.js";
import { decodeTask, type HistoryTask } from "./tasks.js";

/** Deliveries before a task goes to the dead-letter stream, and the waits between them. */
export const MAX_DELIVER = 5;
const BACKOFF_MS = [250, 500, 1000, 2000];
/**
 * One pair's tasks run one at a time, in every replica. A copy of up to 1,000 activities takes a
 * second or two (the lease is renewed while it runs); the lease is what a task waits when the
 * holder died, so the wait outlasts it.
 */
const PAIR_LEASE_MS = 5_000;
const PAIR_WAIT_MS = 6_000;
/**
 * How soon a task held by a process that died is delivered again: a running task beats every
 * third of it (`heartbeat`), so a long copy is not redelivered while it runs.
 */
const ACK_WAIT_MS = 5_000;
const IN_FLIGHT = 8;

export interface HistoryWorkerDeps {
  nats: Nats;
  follows: Pick<FollowRepository, "exists">;
  locks: Locks;
  peers: () => Pick<Clients, "feed">;
  log: Logger;
  /** Readiness names the follow worker when its loop stops beating. */
  beats?: WorkerBeats;
}

/**
 * Consumes the history tasks of follows and unfollows. Each task is reconciled against the edge
 * as it is when it runs, under a lock per (source, target): a copy only while the edge exists
 * (and is not being removed), a removal only while it does not. So a follow and a quick unfollow
 * (or the reverse) end in the state of the last edge change, whatever order their tasks run in,
 * and repeats change nothing. The lock is what makes the check and the copy (or removal) one
 * step: without it a copy that saw the edge could land after the removal of an unfollow that
 * came meanwhile, and the removed history would be back. (A check again after the copy would
 * undo a copy that an unfollow with keep_history asked to keep.)
 */
export function createHistoryWorker(deps: HistoryWorkerDeps) {
  const { nats, follows, locks, log } = deps;

  async function run(task: HistoryTask): Promise<void> {
    await locks.withLock(
      `history/${task.t}/${task.s}/${task.g}`,
      async () => {
        const exists = await follows.exists(task.t, task.s, task.g);
        const call = scope({ tenantId: task.t, caller: { kind: "system" } });
        const edge = { source: feedKeyOf(task.s), target: feedKeyOf(task.g) };
        if (task.k === "copy" && exists) await deps.peers().feed.copyHistory({ ...edge, limit: task.n ?? 0 }, call);
        if (task.k === "remove" && !exists) await deps.peers().feed.removeHistory(edge, call);
      },
      { leaseMs: PAIR_LEASE_MS, waitMs: PAIR_WAIT_MS },
    );
  }

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
