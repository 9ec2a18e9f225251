import { createHmac } from "node:crypto";
import type { Config, ServiceName, Signer } from "./config.js";
import { callersOf, namedSigners } from "./call-policy.js";

// Every process signs as itself with a key of its own, derived from one root:
//   signing key of P       = HMAC-SHA256(root, "feeds service key:" + P)
//   key of P's calls to S  = HMAC-SHA256(signing key of P, "feeds service audience:" + S)
// A caller holds its signing key; service S holds only the call keys of the processes the
// allow-list lets call it, so neither can sign as anyone else, toward anyone else.

const hmac = (key: Buffer, data: string) => createHmac("sha256", key).update(data).digest();
export const signingKeyOf = (root: Buffer, signer: Signer): Buffer => hmac(root, `feeds service key:${signer}`);
export const callKeyOf = (signingKey: Buffer, audience: ServiceName): Buffer => hmac(signingKey, `feeds service audience:${audience}`);

/** The keys of one process, by who signs and which service the call is for. */
export interface InternalKeys {
  /** The key `signer` signs its calls to `audience` with; undefined: this process cannot sign as `signer`. */
  signing(signer: Signer, audience: ServiceName): Buffer | undefined;
  /** The key a call of `signer` to `audience` is verified with; undefined: this process takes no such call. */
  verifying(signer: Signer, audience: ServiceName): Buffer | undefined;
}

/** Every key, derived from the root (each derived once). */
export function rootKeys(root: Buffer): InternalKeys {
  const derived = new Map<string, Buffer>();
  const callKey = (signer: Signer, audience: ServiceName) => {
    const id = `${signer}>${audience}`;
    let key = derived.get(id);
    if (!key) derived.set(id, (key = callKeyOf(signingKeyOf(root, signer), audience)));
    return key;
  };
  return { signing: callKey, verifying: callKey };
}

/** A process's own keys: its signing key (if it calls anyone) and, for a service, its callers' keys. */
export function processKeys(own: { signer: Signer; key?: Buffer | undefined; serves?: ServiceName | undefined; callers?: Map<Signer, Buffer> | undefined }): InternalKeys {
  const signing = new Map<ServiceName, Buffer>();
  return {
    signing(signer, audience) {
      if (signer !== own.signer || !own.key) return undefined;
      let key = signing.get(audience);
      if (!key) signing.set(audience, (key = callKeyOf(own.key, audience)));
      return key;
    },
    verifying: (signer, audience) => (audience === own.serves ? own.callers?.get(signer) : undefined),
  };
}

const invalid = (lines: string[]) => new Error(`invalid configuration:\n${lines.map((l) => `  ${l}`).join("\n")}`);

/**
 * The keys of a standalone process signing as `signer` and serving `serves` (none for a worker):
 * the root when given, else its own keys, each required only where the allow-list needs it.
 */
export function keysFromConfig(config: Pick<Config, "FEEDS_INTERNAL_KEY" | "FEEDS_SERVICE_KEY" | "FEEDS_CALLER_KEYS">, signer: Signer, serves?: ServiceName): InternalKeys {
  if (config.FEEDS_INTERNAL_KEY) return rootKeys(Buffer.from(config.FEEDS_INTERNAL_KEY, "base64"));
  const missing: string[] = [];
  if (!config.FEEDS_SERVICE_KEY && namedSigners().includes(signer)) missing.push(`FEEDS_SERVICE_KEY: required: the ${signer} process signs its calls with it (FEEDS_SERVICE_KEY_${envSuffix(signer)} of npm run service-keys)`);
  if (!config.FEEDS_CALLER_KEYS && serves) missing.push(`FEEDS_CALLER_KEYS: required: the ${serves} service verifies its callers with them (FEEDS_CALLER_KEYS_${envSuffix(serves)} of npm run service-keys)`);
  if (missing.length) throw invalid(missing);
  const key = config.FEEDS_SERVICE_KEY ? Buffer.from(config.FEEDS_SERVICE_KEY, "base64") : undefined;
  return processKeys({ signer, key, serves, callers: config.FEEDS_CALLER_KEYS });
}

/** `notification-worker` → `NOTIFICATION_WORKER`: the suffix of its variables in the key set. */
export const envSuffix = (name: string): string => name.toUpperCase().replace(/-/g, "_");

/**
 * What each process of a deployment is given, from the root: FEEDS_SERVICE_KEY_<P> for every
 * process the allow-list names, FEEDS_CALLER_KEYS_<S> for every service (`npm run service-keys`).
 */
export function serviceKeySet(root: Buffer): Record<string, string> {
  const set: Record<string, string> = {};
  for (const signer of namedSigners()) set[`FEEDS_SERVICE_KEY_${envSuffix(signer)}`] = signingKeyOf(root, signer).toString("base64");
  for (const [service, callers] of callersOf()) {
    set[`FEEDS_CALLER_KEYS_${envSuffix(service)}`] = callers.map((c) => `${c}:${callKeyOf(signingKeyOf(root, c), service).toString("base64")}`).join(",");
  }
  return set;
}

/** The variables of one process, from the root: its own key (if the allow-list names it) and, for a service, its callers'. */
export function processKeyEnv(root: Buffer, signer: Signer, serves?: ServiceName): { FEEDS_SERVICE_KEY?: string; FEEDS_CALLER_KEYS?: string } {
  const set = serviceKeySet(root);
  const own = set[`FEEDS_SERVICE_KEY_${envSuffix(signer)}`];
  const callers = serves ? set[`FEEDS_CALLER_KEYS_${envSuffix(serves)}`] : undefined;
  return { ...(own ? { FEEDS_SERVICE_KEY: own } : {}), ...(callers ? { FEEDS_CALLER_KEYS: callers } : {}) };
}
