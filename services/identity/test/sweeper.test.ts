import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInternalAuth, createLocalTransport, fromRpcError, sha256, rootKeys } from "@feeds/kit";
import { createTestEnv } from "@feeds/kit/testing";
import { OperatorService } from "@feeds/proto/feeds/identity/v1/identity";
import { createOperatorRepository, type OperatorDoc, type SessionDoc } from "../src/operator-repository.js";
import { createIdentityModule } from "../src/module.js";
import { createSweeper } from "../src/sweeper.js";

// Housekeeping of operator sessions and invites (FerretDB v1 has no TTL index), against real
// MongoDB-wire storage (FerretDB here) in a database of its own dropped afterwards.

const HOUR = 3600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("sweeping expired sessions and spent or expired invites", () => {
  // The module's user.updated outbox needs a NATS connection; nothing here publishes on it.
  const env = createTestEnv("identity_sweep", { db: true, redis: true, nats: true });
  const { log } = env;
  beforeAll(env.open);
  afterAll(env.close);

  const sessions = () => env.db.collection<SessionDoc>("operator_sessions");
  const operators = () => env.db.collection<OperatorDoc>("operators");
  const session = (label: string, expiresInMs: number): SessionDoc => ({
    _id: sha256(`${label}-${randomBytes(4).toString("hex")}`),
    operator_id: "op_x",
    expires_at: new Date(Date.now() + expiresInMs),
    created_at: new Date(),
  });
  function operator(label: string, invite: OperatorDoc["invite"], passwordHash: string | null): OperatorDoc {
    const now = new Date();
    return {
      _id: `op_${label}_${randomBytes(4).toString("hex")}`,
      tenant_id: `t_${randomBytes(4).toString("hex")}`,
      email: `${label}-${randomBytes(4).toString("hex")}@example.com`,
      name: label,
      role: "member",
      status: "active",
      password_hash: passwordHash,
      invite,
      created_at: now,
      updated_at: now,
    };
  }
  const invite = (expiresInMs: number, acceptedAt: Date | null) => ({
    token_hash: sha256(randomBytes(8).toString("hex")),
    expires_at: new Date(Date.now() + expiresInMs),
    accepted_at: acceptedAt,
  });

  it("one sweep removes expired sessions, spent invite tokens and expired invites, in batches, and keeps the live ones", async () => {
    const repo = createOperatorRepository(env.db);
    await repo.ensureIndexes();
    const expired = Array.from({ length: 5 }, (_, i) => session(`expired-${i}`, -HOUR));
    const live = session("live", HOUR);
    await sessions().insertMany([...expired, live]);
    const used = operator("used", invite(HOUR, new Date(Date.now() - HOUR)), "hash");
    const usedAndExpired = operator("used-expired", invite(-HOUR, new Date(Date.now() - 2 * HOUR)), "hash");
    const lapsed = operator("lapsed", invite(-HOUR, null), null);
    const pending = operator("pending", invite(HOUR, null), null);
    const staff = { ...operator("staff", null, "hash"), tenant_id: null, role: "staff" as const };
    await operators().insertMany([used, usedAndExpired, lapsed, pending, staff]);

    // Batches of two: five expired sessions take three.
    const sweeper = createSweeper({ operators: repo, log, options: { batchSize: 2 } });
    expect(await sweeper.sweepOnce()).toEqual({ sessions: 5, usedInvites: 2, expiredInvites: 1 });

    expect((await sessions().find({}).toArray()).map((s) => s._id)).toEqual([live._id]);
    // Spent invites lose their token; the operators stay as they were.
    expect(await operators().findOne({ _id: used._id })).toEqual({ ...used, invite: null });
    expect(await operators().findOne({ _id: usedAndExpired._id })).toEqual({ ...usedAndExpired, invite: null });
    // An operator that never was more than an invite that lapsed is gone (its email can be invited again).
    expect(await operators().findOne({ _id: lapsed._id })).toBeNull();
    expect(await operators().findOne({ _id: pending._id })).toEqual(pending);
    expect(await operators().findOne({ _id: staff._id })).toEqual(staff);
    // A second sweep finds nothing left.
    expect(await sweeper.sweepOnce()).toEqual({ sessions: 0, usedInvites: 0, expiredInvites: 0 });
  });

  it("a spent invite's token still fails acceptance after the sweep", async () => {
    const repo = createOperatorRepository(env.db);
    const token = randomBytes(16).toString("hex");
    const used = operator("spent", { token_hash: sha256(token), expires_at: new Date(Date.now() + HOUR), accepted_at: new Date() }, "hash");
    await operators().insertOne(used);
    await createSweeper({ operators: repo, log }).sweepOnce();
    const { db, redis, nats } = env;
    const module = await createIdentityModule({ db, redis, nats, sessionTtlSeconds: 60, log });
    const client = createClient(
      OperatorService,
      createLocalTransport((router) => module.routes(router), log, createInternalAuth(rootKeys(randomBytes(32))), "gateway"),
    );
    const code = await client.acceptInvite({ token, password: "a long enough password" }).then(
      () => "OK",
      (e: unknown) => fromRpcError(e).code,
    );
    expect(code).toBe("UNAUTHENTICATED");
  });

  it("the identity module sweeps on its own once started, at the interval it was given", { timeout: 15_000 }, async () => {
    const { db, redis, nats } = env;
    const module = await createIdentityModule({ db, redis, nats, sessionTtlSeconds: 60, log, sweep: { intervalMs: 100 } });
    const expired = session("module-expired", -HOUR);
    await sessions().insertOne(expired);
    await module.start?.();
    try {
      const deadline = Date.now() + 5_000;
      while ((await sessions().countDocuments({ _id: expired._id })) && Date.now() < deadline) await sleep(50);
      expect(await sessions().countDocuments({ _id: expired._id })).toBe(0);
    } finally {
      await module.stop?.();
    }
  });
});
