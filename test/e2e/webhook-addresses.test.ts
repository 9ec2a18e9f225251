import { randomBytes, randomUUID } from "node:crypto";
import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createServerToken } from "@feeds/node";
import { startSystem, type RunningSystem } from "../../scripts/lib/system.mjs";
import { envelope, http, newIp } from "../support/api.js";
import { testInfra } from "../support/infra.js";
import { dropNamespace, newNamespace } from "../support/namespace.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";

// A deployment that does not allow private addresses (WEBHOOK_ALLOW_PRIVATE unset): such URLs are
// refused at registration, and a destination that reaches one anyway (as a name that rebinds to
// 127.0.0.1 after registration would leave it) is refused at delivery, after resolution.

describe("webhook destinations on a deployment without private addresses", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let url = "";
  let infra: Awaited<ReturnType<typeof testInfra>>;
  const namespace = newNamespace("whaddr");
  const staff = { email: "staff@whaddr.test", password: randomBytes(12).toString("base64url") };
  const mongo = new MongoClient(inject("mongoUrl"));

  beforeAll(async () => {
    infra = await testInfra();
    receiver = await startReceiver();
    await mongo.connect();
    system = await startSystem({
      env: {
        MONGO_URL: infra.mongoUrl,
        NATS_URL: infra.natsUrl,
        REDIS_URL: infra.redisUrl,
        FEEDS_NAMESPACE: namespace,
        FEEDS_MASTER_KEY: infra.env.FEEDS_MASTER_KEY,
        BUILD_VERSION: inject("buildVersion"),
        BOOTSTRAP_STAFF_EMAIL: staff.email,
        BOOTSTRAP_STAFF_PASSWORD: staff.password,
        TRUST_PROXY: "1",
        LOG_LEVEL: "fatal",
      },
    });
    url = system.url;
  });

  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
    await mongo.close();
    if (infra) await dropNamespace(namespace, infra);
  });

  let session = "";
  async function tenant() {
    // One login for the file: logins are limited per email and minute.
    if (!session) session = (await http("POST", "/operator/login", { url, ip: newIp(), body: staff })).body.token;
    const login = { body: { token: session } };
    const created = await http("POST", "/admin/tenants", { url, token: login.body.token, body: { name: `wa-${randomBytes(3).toString("hex")}` } });
    expect(created.status).toBe(201);
    const tenantId = created.body.tenant.id as string;
    const invite = await http("POST", `/admin/tenants/${tenantId}/operators`, {
      url,
      token: login.body.token,
      body: { email: `op-${randomBytes(4).toString("hex")}@whaddr.test`, name: "op", role: "member" },
    });
    const accepted = await http("POST", "/operator/invite/accept", { url, ip: newIp(), body: { token: invite.body.invite_token, password: "a long enough password" } });
    return { id: tenantId, server: await createServerToken(created.body.tenant.api_key, created.body.api_secret), operator: accepted.body.token as string };
  }

  let refusing: Awaited<ReturnType<typeof tenant>> | undefined;
  it.each([
    "http://127.0.0.1:8080/hook",
    "http://[::1]/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.0.0.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0/",
    "http://[::]/",
    "http://10.1.2.3/",
    "http://192.168.1.1/",
    "http://[fe80::1]/",
    "http://224.0.0.1/",
    "http://localhost/",
    "ftp://example.com/",
    // A name is resolved at registration too.
    `http://${hostname()}:8080/resolves-to-loopback`,
  ])("registering %s answers 400", async (target) => {
    const t = (refusing ??= await tenant());
    const res = await http("POST", "/v1/webhooks", { url, token: t.server, body: { url: target } });
    expect(res.status).toBe(400);
    const e = envelope(res);
    expect(e.code).toBe("VALIDATION_FAILED");
    expect(e.fields).toEqual([{ path: "url", message: expect.any(String) }]);
    expect((await http("GET", "/v1/webhooks", { url, token: t.server })).body.results).toEqual([]);
  });

  it("a destination whose name resolves to 127.0.0.1 is refused at delivery: the record fails and the receiver gets nothing", async () => {
    const t = await tenant();
    const secret = `whsec_${randomBytes(32).toString("base64")}`;
    // As a rebinding would leave it: stored when its name still resolved to a public address.
    // Registration refuses `localhost` outright, so the row is written straight into storage.
    // The machine's own name resolves to 127.0.0.1 through /etc/hosts: a name like any other,
    // which only the lookup at delivery can catch. `localhost` and a literal are refused on sight.
    const name = hostname();
    expect((await lookup(name, { all: true })).map((a) => a.address)).toContain("127.0.0.1");
    const targets = [`http://${name}:${receiver.port}/rebound`, `http://localhost:${receiver.port}/local`, `http://127.0.0.1:${receiver.port}/literal`];
    const rows = targets.map((u) => ({
      _id: randomUUID(),
      tenant_id: t.id,
      url: u,
      events: [],
      secret,
      created_at: new Date(),
    }));
    const db = mongo.db(namespace);
    await db.collection("webhook_destinations").insertMany(rows as never[]);
    const test = await http("POST", "/operator/webhooks/test", { url, token: t.operator });
    expect(test.body).toEqual({ published: 3 });
    const deadline = Date.now() + 20_000;
    let records: any[] = [];
    while (Date.now() < deadline) {
      records = (await http("GET", "/operator/webhooks/events", { url, token: t.operator })).body.results;
      if (records.length === 3 && records.every((r) => r.status === "failed")) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // Refused addresses are final: one attempt each, no retries, nothing reached the receiver.
    expect(records.map((r) => ({ status: r.status, attempts: r.attempts }))).toEqual(targets.map(() => ({ status: "failed", attempts: 1 })));
    expect(receiver.requests).toHaveLength(0);
  });
});
