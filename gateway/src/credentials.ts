import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { fromRpcError, internal, isApiKey, tenantVersionKey, type RedisConn } from "@feeds/kit";
import type { Tenant, TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";

export interface Credential {
  tenant: Tenant;
  key: Uint8Array;
  /** The Redis version stamp this credential was read under. */
  version: string;
}

// A credential entry is trusted for at most this long even if no change signal arrives.
const CREDENTIAL_TTL_MS = 60_000;
// An unknown kid is answered from memory this long: a tenant created meanwhile waits at most this.
const UNKNOWN_TTL_MS = 5_000;
const MAX_UNKNOWN = 10_000;

/**
 * Tenant credentials by api key, cached per process. A kid that is not shaped like an api key is
 * never looked up; an unknown one is looked up once per UNKNOWN_TTL_MS however many requests name
 * it, and leaves nothing in Redis. Each cached credential carries the version stamp it was read
 * under, so that callers can tell when a rotation or status change has made it stale.
 */
export function createCredentialStore(deps: { tenancy: Pick<Client<typeof TenancyService>, "getCredential">; redis: RedisConn }) {
  const { tenancy, redis } = deps;
  const known = new Map<string, { cred: Credential; at: number }>();
  const unknown = new Map<string, number>(); // kid → answered from memory until (epoch ms)
  const pending = new Map<string, Promise<Credential | null>>();

  async function fetch(apiKey: string): Promise<Omit<Credential, "version"> | null> {
    try {
      const res = await tenancy.getCredential({ apiKey });
      return res.tenant ? { tenant: res.tenant, key: new TextEncoder().encode(res.apiSecret) } : null;
    } catch (e) {
      const err = fromRpcError(e);
      if (err.code === "NOT_FOUND") return null;
      throw err;
    }
  }

  function remember(apiKey: string, cred: Credential): Credential {
    unknown.delete(apiKey);
    known.set(apiKey, { cred, at: Date.now() });
    return cred;
  }

  function forget(apiKey: string): null {
    known.delete(apiKey);
    if (unknown.size >= MAX_UNKNOWN) unknown.delete(unknown.keys().next().value as string);
    unknown.set(apiKey, Date.now() + UNKNOWN_TTL_MS);
    return null;
  }

  async function load(apiKey: string): Promise<Credential | null> {
    // The stamp is the tenant's (its key carries the tenant's hash tag, beside the rate windows it
    // is checked with): a kid's tenant never changes, so a kid seen before names it, and a kid
    // seen first is looked up once to learn it.
    let tenantId = known.get(apiKey)?.cred.tenant.id;
    let first: Omit<Credential, "version"> | null = null;
    if (tenantId === undefined) {
      first = await fetch(apiKey);
      if (!first) return forget(apiKey);
      tenantId = first.tenant.id;
    }
    const vk = tenantVersionKey(redis, tenantId);
    for (let attempt = 0; attempt < 2; attempt++) {
      // The stamp is read before MongoDB: a change after this point moves it.
      const version = await redis.redis.get(vk);
      // A missing stamp means no change was ever signalled (a change stamps before it writes), so
      // the first look-up is as current as a second one would be.
      const found = version === null && first ? first : await fetch(apiKey);
      first = null;
      if (!found) return forget(apiKey);
      if (found.tenant.id !== tenantId) throw internal(new Error(`api key ${apiKey} changed tenant`));
      if (version !== null) return remember(apiKey, { ...found, version });
      // First sight of this tenant: stamp it only now that it exists. If our NX wins, no change
      // was signalled since our read (a signal writes the key) and any later one replaces our
      // stamp; if it loses, a change may have landed after our read: read again under the stamp.
      const stamp = randomUUID();
      if ((await redis.redis.set(vk, stamp, "NX")) === "OK") return remember(apiKey, { ...found, version: stamp });
    }
    throw internal(new Error(`version stamp of ${apiKey} keeps disappearing`));
  }

  /** The answer memory holds for a kid (a credential, or null for none), or undefined: look it up. */
  function fromMemory(apiKey: string): Credential | null | undefined {
    if (!isApiKey(apiKey)) return null;
    const hit = known.get(apiKey);
    if (hit && Date.now() - hit.at < CREDENTIAL_TTL_MS) return hit.cred;
    if ((unknown.get(apiKey) ?? 0) > Date.now()) return null;
    return undefined;
  }

  return {
    /** Whether `get` answers this kid from memory, without a lookup. */
    answersFromMemory: (apiKey: string): boolean => fromMemory(apiKey) !== undefined,
    /** The credential of a kid, or null when no tenant has it. */
    get(apiKey: string): Promise<Credential | null> {
      const remembered = fromMemory(apiKey);
      if (remembered !== undefined) return Promise.resolve(remembered);
      // One lookup at a time per kid: a burst naming the same kid shares it.
      let p = pending.get(apiKey);
      if (!p) {
        p = load(apiKey).finally(() => pending.delete(apiKey));
        pending.set(apiKey, p);
      }
      return p;
    },
    /** Reads the credential again now (its stamp moved since it was cached). */
    reload: (apiKey: string): Promise<Credential | null> => load(apiKey),
  };
}

export type CredentialStore = ReturnType<typeof createCredentialStore>;
