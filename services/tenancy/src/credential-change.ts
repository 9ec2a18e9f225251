import { randomUUID } from "node:crypto";
import { internal, notFound, type Logger } from "@feeds/kit";
import type { CredentialChange, TenantDoc, TenantRepository } from "./tenant-repository.js";

export interface CredentialChangeDeps {
  tenants: Pick<TenantRepository, "byId" | "change" | "undo">;
  /** Tells every gateway replica that a tenant's credential, status or origins changed (Redis). */
  signalChange: (tenantId: string, change: CredentialChange) => Promise<void>;
  log: Logger;
}

/** What `change` replaced in `before`. */
function restoreOf(before: TenantDoc, change: CredentialChange): CredentialChange {
  if ("secret" in change) return { secret: before.secret };
  if ("status" in change) return { status: before.status };
  return { allowed_origins: before.allowed_origins ?? [] };
}

/** Attempts of a change that other changes of the same tenant keep coming before. */
const MAX_ATTEMPTS = 20;

/**
 * Changes a tenant's secret, status or allowed origins all or nothing, as far as its callers can tell: the change
 * is answered only once every gateway was told (they cache credentials for up to a minute, so a
 * change they were not told of would surface later, unannounced: a rotated secret nobody was
 * handed would lock the tenant out). Redis is signalled before the write, so that while it is
 * down nothing changes; when the signal after the write fails, the change is undone (only while
 * it is still the stored one) and the caller gets INTERNAL. A change that can be neither
 * signalled nor undone stands and is answered: its caller then holds the secret that is stored.
 *
 * Concurrent changes of one tenant: each applies only to the state it read (its change id), so
 * what it would undo is exactly what it replaced. One that finds another came first reads again
 * and applies after it: two rotations both answer, one after the other, as if in turn.
 */
export function createCredentialChanges(deps: CredentialChangeDeps) {
  const { tenants, signalChange, log } = deps;

  /** One attempt: the tenant after the change, or null when another change came first. */
  async function attempt(id: string, change: CredentialChange): Promise<TenantDoc | null> {
    const before = await tenants.byId(id);
    if (!before) throw notFound("tenant not found");
    await signalChange(id, change);
    const changeId = randomUUID();
    let after: TenantDoc | null = null;
    try {
      after = await tenants.change(id, change, changeId, before.change_id ?? null);
      if (!after) return null;
      await signalChange(id, change);
      return after;
    } catch (err) {
      // The write may have landed even when its answer was lost: undo it all the same.
      const restore = restoreOf(before, change);
      let undone: boolean;
      try {
        undone = await tenants.undo(id, changeId, { ...restore, updated_at: before.updated_at });
      } catch (undoErr) {
        log.error({ err: String(err), undoErr: String(undoErr), tenant: id }, "credential change neither signalled nor undone");
        // Stored for sure: answered, so that its caller holds what the gateways will verify.
        if (after) return after;
        throw internal(err);
      }
      // Undone, or never stored (or replaced by a later change): ours is not stored.
      if (undone) await signalChange(id, change).catch(() => undefined);
      throw internal(err);
    }
  }

  return {
    async apply(id: string, change: CredentialChange): Promise<TenantDoc> {
      for (let i = 0; i < MAX_ATTEMPTS; i++) {
        const after = await attempt(id, change);
        if (after) return after;
      }
      throw internal(new Error(`tenant ${id}: other changes kept coming first`));
    },
  };
}

export type CredentialChanges = ReturnType<typeof createCredentialChanges>;
