import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { createServerToken } from "@feeds/node";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { http, newIp, uniqueEmail } from "./api.js";
import { testInfra } from "./infra.js";
import { dropNamespace, newNamespace } from "./namespace.js";

type StartOptions = Parameters<typeof startSystem>[0];

export interface OwnSystem {
  system: RunningSystem;
  infra: Awaited<ReturnType<typeof testInfra>>;
  namespace: string;
  /** The tenant created for the test, with its server token. */
  tenant: { id: string; apiKey: string; apiSecret: string; token: string };
  /** Stops every process, then drops the namespace. */
  stop(): Promise<void>;
}

/**
 * A system of the test's own (split, workers, replicas, gateways as `opts` ask) in a fresh
 * namespace, with bootstrap staff, one tenant named `name` and its server token. `env` is laid
 * over the defaults (TRUST_PROXY 1, LOG_LEVEL error); each test says why it sets anything else.
 * The caller stops it in afterAll (`await own?.stop()`).
 */
export async function startOwnSystem(name: string, opts: Omit<StartOptions, "env"> & { env?: Record<string, string> } = {}): Promise<OwnSystem> {
  const infra = await testInfra();
  const namespace = newNamespace(name.replace(/[^A-Za-z0-9_]/g, "_"));
  const staff = { email: uniqueEmail("staff"), password: randomBytes(12).toString("base64url") };
  const drop = () => dropNamespace(namespace, infra);
  let system: RunningSystem;
  try {
    system = await startSystem({
      ...opts,
      env: {
        ...infra.env,
        FEEDS_NAMESPACE: namespace,
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        LOG_LEVEL: "error",
        ...opts.env,
      },
    });
  } catch (err) {
    await drop();
    throw err;
  }
  const stop = async () => {
    await system.stop();
    await drop();
  };
  try {
    const login = await http("POST", "/operator/login", { url: system.url, ip: newIp(), body: staff });
    expect(login.status).toBe(200);
    const created = await http("POST", "/admin/tenants", { url: system.url, token: login.body.token, body: { name } });
    expect(created.status).toBe(201);
    const { id, api_key: apiKey } = created.body.tenant as { id: string; api_key: string };
    const apiSecret = created.body.api_secret as string;
    return { system, infra, namespace, tenant: { id, apiKey, apiSecret, token: await createServerToken(apiKey, apiSecret) }, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
