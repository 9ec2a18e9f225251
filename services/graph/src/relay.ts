import type { FeedEvent, Logger } from "@feeds/kit";
import type { Counter } from "./counter.js";
import type { FollowEventConfirm } from "./follow-events.js";
import { STALE_MS, type PendingRepository } from "./pending-repository.js";
import type { HistoryTasks } from "./tasks.js";
import type { FollowerSets } from "./follower-sets.js";

const INTERVAL_MS = 1_000;
const BATCH = 100;

/**
 * Finishes the edge changes whose writer died or could not publish: every outbox record older
 * than STALE_MS gets its feeds recounted from the edges (unless the writer's counts were
 * written) and their cached follower sets invalidated, then its history task and the events the edges confirm (all of them, when the
 * writer confirmed them) published, then goes. Each step is safe to repeat (events keep their
 * ids: a repeat is one notification), so several replicas may run this at once, and safe while
 * the writer still lives: its own count moves happen under the same locks. Recounts go on while
 * NATS is down; only publishing waits for it.
 */
export function createRelay(deps: {
  pending: Pick<PendingRepository, "stale" | "markCounted" | "done">;
  counter: Pick<Counter, "recount">;
  followerSets: Pick<FollowerSets, "invalidate">;
  tasks: Pick<HistoryTasks, "publish">;
  publishEvents: (events: FeedEvent[]) => Promise<void>;
  confirm: FollowEventConfirm;
  log: Logger;
}) {
  const { pending, counter, tasks, log } = deps;

  async function confirmed(events: FeedEvent[]): Promise<FeedEvent[]> {
    const flags = await Promise.all(events.map((e) => deps.confirm(e)));
    return events.filter((_, i) => flags[i]);
  }
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function recountPass(olderThan: Date): Promise<void> {
    for (const p of await pending.stale(olderThan, false, BATCH)) {
      try {
        await counter.recount(p.tenant_id, p.feeds);
        // The writer may have died before invalidating the fan-out's follower sets.
        await deps.followerSets.invalidate(p.tenant_id, p.feeds);
      } catch (err) {
        log.warn({ err: String(err), pending: p._id }, "outbox recount failed; will retry");
        continue;
      }
      await (p.effect || p.events?.length ? pending.markCounted(p._id) : pending.done(p._id));
    }
  }

  async function publishPass(olderThan: Date): Promise<void> {
    for (const p of await pending.stale(olderThan, true, BATCH)) {
      try {
        await tasks.publish(p, "relay");
        const events = p.confirmed ? (p.events ?? []) : await confirmed(p.events ?? []);
        if (events.length) await deps.publishEvents(events);
      } catch (err) {
        log.debug({ err: String(err), pending: p._id }, "outbox publish failed; NATS is likely down, will retry");
        return;
      }
      await pending.done(p._id);
    }
  }

  /** One pass over what is stale now. */
  async function pass(): Promise<void> {
    const olderThan = new Date(Date.now() - STALE_MS);
    await recountPass(olderThan);
    await publishPass(olderThan);
  }

  const tick = async () => {
    try {
      await pass();
    } catch (err) {
      log.debug({ err: String(err) }, "graph outbox relay pass failed");
    }
    if (!stopped) timer = setTimeout(() => void tick(), INTERVAL_MS);
  };

  return {
    pass,
    start() {
      timer = setTimeout(() => void tick(), INTERVAL_MS);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
