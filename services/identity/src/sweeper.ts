import type { Logger } from "@feeds/kit";
import type { OperatorRepository } from "./operator-repository.js";

export interface SweepOptions {
  /** Mean time between sweeps (each wait is jittered by ±25%, so replicas drift apart). */
  intervalMs?: number;
  /** Rows read and removed per batch. */
  batchSize?: number;
  /** Batches per kind and sweep: a backlog is worked off over several sweeps. */
  maxBatches?: number;
}

export interface SweepResult {
  sessions: number;
  usedInvites: number;
  expiredInvites: number;
}

const DEFAULTS = { intervalMs: 60_000, batchSize: 500, maxBatches: 20 } satisfies Required<SweepOptions>;

/**
 * Housekeeping of what a TTL index would remove (FerretDB v1 has none): expired operator sessions,
 * spent invite tokens, and operators that never were more than an invite that expired. Every
 * replica may sweep: each removal re-checks its condition, and writes to a teammate take the same
 * locks as the requests that write it.
 */
export function createSweeper(deps: {
  operators: Pick<
    OperatorRepository,
    "deleteExpiredSessions" | "usedInvites" | "clearUsedInvites" | "expiredInvites" | "deleteExpiredInvite" | "withTeamLock" | "withInviteLock"
  >;
  log: Logger;
  options?: SweepOptions;
}) {
  const { operators, log } = deps;
  const { intervalMs, batchSize, maxBatches } = { ...DEFAULTS, ...deps.options };
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;

  async function sweepUsedInvites(): Promise<number> {
    let cleared = 0;
    for (let i = 0; i < maxBatches; i++) {
      const rows = await operators.usedInvites(batchSize);
      const byTenant = new Map<string, string[]>();
      for (const r of rows) if (r.tenant_id) byTenant.set(r.tenant_id, [...(byTenant.get(r.tenant_id) ?? []), r._id]);
      for (const [tenantId, ids] of byTenant) cleared += await operators.withTeamLock(tenantId, () => operators.clearUsedInvites(ids));
      if (rows.length < batchSize) break;
    }
    return cleared;
  }

  async function sweepExpiredInvites(now: Date): Promise<number> {
    let deleted = 0;
    for (let i = 0; i < maxBatches; i++) {
      const rows = await operators.expiredInvites(now, batchSize);
      for (const r of rows) {
        if (!r.invite) continue;
        // Under the invite's lock: an acceptance that checked the expiry a moment earlier finishes first.
        if (await operators.withInviteLock(r.invite.token_hash, () => operators.deleteExpiredInvite(r._id, now))) deleted++;
      }
      if (rows.length < batchSize) break;
    }
    return deleted;
  }

  /** One sweep of every kind, in bounded batches. */
  async function sweepOnce(now = new Date()): Promise<SweepResult> {
    let sessions = 0;
    for (let i = 0; i < maxBatches; i++) {
      const n = await operators.deleteExpiredSessions(now, batchSize);
      sessions += n;
      if (n < batchSize) break;
    }
    return { sessions, usedInvites: await sweepUsedInvites(), expiredInvites: await sweepExpiredInvites(now) };
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweepOnce()
        .then((r) => {
          if (r.sessions || r.usedInvites || r.expiredInvites) log.info(r, "swept expired sessions and invites");
        })
        .catch((err: unknown) => log.warn({ err: String(err) }, "sweep failed; the next one retries"))
        .finally(schedule);
    }, intervalMs * (0.75 + Math.random() * 0.5));
    timer.unref();
  }

  return {
    sweepOnce,
    start(): void {
      stopped = false;
      schedule();
    },
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

export type Sweeper = ReturnType<typeof createSweeper>;
