import { fromRpcError, type Logger } from "@feeds/kit";
import type { CountedWrites } from "./counted-writes.js";
import type { MarkDoc, MarkRepository } from "./mark-repository.js";

/** Marks older than this are the relay's (their writer died or failed); a live writer's mark is
 * harmless to take too: the recount waits for its lock. */
export const MARK_STALE_MS = 3_000;
const INTERVAL_MS = 1_000;
const BATCH = 100;
/** How often a pass also drops old count claims (`count-claims.ts`). */
const SWEEP_EVERY_MS = 60_000;

/**
 * Recounts the targets of stale recount marks, then drops those marks. Safe on every replica at
 * once: each recount runs under its target's lock and sets the count from the records.
 */
export function createRecountRelay(deps: {
  marks: Pick<MarkRepository, "stale" | "drop">;
  counted: Pick<CountedWrites, "repair">;
  /** Housekeeping run with a pass now and then (old count claims). */
  sweep?: () => Promise<unknown>;
  log: Logger;
}) {
  const { marks, counted, log } = deps;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let sweptAt = 0;

  /** One pass over the marks stale now; answers how many targets were recounted. */
  async function recountPass(): Promise<number> {
    const groups = new Map<string, MarkDoc[]>();
    for (const m of await marks.stale(new Date(Date.now() - MARK_STALE_MS), BATCH)) {
      const key = `${m.kind}/${m.tenant_id}/${m.target}`;
      groups.set(key, [...(groups.get(key) ?? []), m]);
    }
    let done = 0;
    for (const group of groups.values()) {
      const { kind, tenant_id, target } = group[0] as MarkDoc;
      try {
        await counted.repair(kind, tenant_id, target);
      } catch (err) {
        // A deleted activity has no counts to repair; anything else is tried again next pass.
        if (fromRpcError(err).code !== "NOT_FOUND") {
          log.warn({ err: String(err), kind, target }, "recount failed; will retry");
          continue;
        }
      }
      await marks.drop(group.map((m) => m._id));
      done++;
    }
    return done;
  }

  const tick = async () => {
    try {
      await recountPass();
      if (deps.sweep && Date.now() - sweptAt > SWEEP_EVERY_MS) {
        sweptAt = Date.now();
        await deps.sweep();
      }
    } catch (err) {
      log.debug({ err: String(err) }, "recount relay pass failed");
    }
    if (!stopped) timer = setTimeout(() => void tick(), INTERVAL_MS);
  };

  return {
    recountPass,
    start() {
      timer = setTimeout(() => void tick(), INTERVAL_MS);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
