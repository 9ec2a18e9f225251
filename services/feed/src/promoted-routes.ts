import { randomUUID } from "node:crypto";
import type { Db } from "mongodb";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  callerOf,
  createReadCache,
  decodeCursor,
  encodeCursor,
  GROUP_PATTERN,
  ID_PATTERN,
  notFound,
  pageLimit,
  requireServer,
  requireTenant,
  toTimestamp,
  validationFailed,
  type FieldError,
  type Logger,
  type RedisConn,
  workScope,
} from "@feeds/kit";
import {
  PromotedRecordSchema,
  PromotedService,
  type Audience,
  type CreatePromotedRequest,
  type PromotedRecord,
} from "@feeds/proto/feeds/feed/v1/feed";
import {
  createPromotedRepository,
  isEligible,
  SERVE_LIMIT,
  type AudienceDoc,
  type PromotedDoc,
  type PromotedRepository,
} from "./promoted-repository.js";
import { createServedCounter } from "./promoted-served.js";
import { feedKey, parseCustom } from "./validate.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Entries per audience list (users, feeds). */
export const MAX_AUDIENCE = 1000;

export const promotedToProto = (d: PromotedDoc, servedCount: number): PromotedRecord =>
  create(PromotedRecordSchema, {
    id: d._id,
    actor: d.actor,
    verb: d.verb,
    object: d.object,
    customJson: d.custom_json,
    ...(d.audience ? { audience: { users: d.audience.users, feeds: d.audience.feeds } } : {}),
    servedCount: BigInt(servedCount),
    createdAt: toTimestamp(d.created_at),
    ...(d.retracted_at ? { retractedAt: toTimestamp(d.retracted_at) } : {}),
  });

/**
 * An audience as given → its stored form (duplicates dropped), with the errors of its entries:
 * users match the id pattern, feeds are `group:id`, at most 1000 of each, and at least one entry
 * (an audience naming nobody would be shown to nobody; omit it to show the record to every read).
 */
export function checkAudience(a: Audience | undefined): { audience: AudienceDoc | null; errors: FieldError[] } {
  if (!a) return { audience: null, errors: [] };
  const errors: FieldError[] = [];
  if (a.users.length > MAX_AUDIENCE) errors.push({ path: "audience.users", message: `at most ${MAX_AUDIENCE} users` });
  if (a.feeds.length > MAX_AUDIENCE) errors.push({ path: "audience.feeds", message: `at most ${MAX_AUDIENCE} feeds` });
  a.users.forEach((u, i) => {
    if (!ID_PATTERN.test(u)) errors.push({ path: `audience.users.${i}`, message: "must match ^[A-Za-z0-9_\\-.@]{1,128}$" });
  });
  a.feeds.forEach((f, i) => {
    const at = f.indexOf(":");
    if (at < 0 || !GROUP_PATTERN.test(f.slice(0, at)) || !ID_PATTERN.test(f.slice(at + 1))) {
      errors.push({ path: `audience.feeds.${i}`, message: "must be group:id" });
    }
  });
  if (a.users.length === 0 && a.feeds.length === 0) {
    errors.push({ path: "audience", message: "must name at least one user or feed (omit audience to show to every read)" });
  }
  return { audience: { users: [...new Set(a.users)], feeds: [...new Set(a.feeds)] }, errors };
}

/** The contract's rules for a promoted activity body (lengths of section 4, custom, audience). */
export function checkPromoted(req: CreatePromotedRequest): { custom: Record<string, unknown>; audience: AudienceDoc | null } {
  const errors: FieldError[] = [];
  const len = (v: string, path: string, max: number) => {
    if (v === "") errors.push({ path, message: "required" });
    else if (v.length > max) errors.push({ path, message: `at most ${max} characters` });
  };
  len(req.actor, "actor", 256);
  len(req.verb, "verb", 64);
  len(req.object, "object", 256);
  const { audience, errors: audienceErrors } = checkAudience(req.audience);
  errors.push(...audienceErrors);
  let custom: Record<string, unknown> = {};
  try {
    custom = parseCustom(req.customJson);
  } catch (e) {
    const fields = (e as { fields?: FieldError[] }).fields;
    if (!fields) throw e;
    errors.push(...fields);
  }
  if (errors.length) throw validationFailed(errors);
  return { custom, audience };
}


export interface PromotedServiceDeps {
  repo: PromotedRepository;
  redis: RedisConn;
  log: Logger;
  /** Delay of the background fold after a delivery (default 200 ms). */
  foldDelayMs?: number;
  /** How often every process looks for tenants whose deliveries nobody folded (default 5 s). */
  sweepMs?: number;
}

/** Live records a tenant's serve cache holds; a tenant with more is also served from MongoDB. */
const LIVE_CACHED = 1000;
const LIVE_TTL_SECONDS = 300;
const liveCodec = {
  encode: (v: LiveSet) => ({ complete: v.complete, records: v.records.map((d) => ({ ...d, created_at: d.created_at.getTime() })) }),
  decode: (raw: unknown): LiveSet => {
    const o = raw as { complete: boolean; records: (Omit<PromotedDoc, "created_at"> & { created_at: number })[] };
    return { complete: o.complete, records: o.records.map((d) => ({ ...d, created_at: new Date(d.created_at) })) };
  },
};
/** The newest live records of a tenant; `complete` when they are all of them. */
interface LiveSet {
  complete: boolean;
  records: PromotedDoc[];
}

/**
 * The PromotedService, plus `close()` (stops background folding; tests) and `settle()` (runs
 * pending folds now; tests).
 */
export function createPromotedService(deps: PromotedServiceDeps) {
  const { repo, log } = deps;
  const foldDelayMs = deps.foldDelayMs ?? 200;
  const served = createServedCounter(deps.redis);
  // A first-page read asks Redis, not MongoDB: the live records come from a read cache that
  // create and retract invalidate before answering.
  const live = createReadCache(deps.redis, "promoted-live", liveCodec, { ttlSeconds: LIVE_TTL_SECONDS });
  const liveSet = async (tenantId: string): Promise<LiveSet> => {
    const found = await live.read(tenantId, ["live"], async () => {
      const docs = await repo.liveNewest(tenantId, LIVE_CACHED + 1);
      return new Map([["live", { complete: docs.length <= LIVE_CACHED, records: docs.slice(0, LIVE_CACHED) }]]);
    });
    return found.get("live") ?? { complete: false, records: [] };
  };
  /** Tenants with a background fold scheduled (its timer) or running (null) in this process. */
  const scheduled = new Map<string, NodeJS.Timeout | null>();
  /** Tenants delivered to while their fold ran: fold again when it ends. */
  const again = new Set<string>();
  const running = new Set<Promise<void>>();
  let closed = false;

  function runFold(tenantId: string, attempt: number): Promise<void> {
    scheduled.set(tenantId, null);
    const run = repo
      .fold(tenantId, served)
      .then(
        () => false,
        (err: unknown) => {
          log.warn({ err: String(err), tenant: tenantId }, "promoted served_count fold failed; retrying");
          return true;
        },
      )
      .then((retry) => {
        scheduled.delete(tenantId);
        if (retry && attempt < 20) scheduleFold(tenantId, Math.min(5_000, 250 * 2 ** Math.min(attempt, 4)), attempt + 1);
        else if (again.delete(tenantId)) scheduleFold(tenantId);
      })
      .finally(() => running.delete(run));
    running.add(run);
    return run;
  }

  /**
   * Background fold of a tenant's deliveries into served_count, soon after they happen (the
   * contract lets served_count trail by seconds). Deliveries during a fold are folded by
   * another one after it.
   */
  function scheduleFold(tenantId: string, delayMs = foldDelayMs, attempt = 0): void {
    if (closed) return;
    if (scheduled.has(tenantId)) {
      if (scheduled.get(tenantId) === null) again.add(tenantId);
      return;
    }
    // Background work: not counted as part of the read that happened to schedule it.
    const timer = workScope.exit(() => setTimeout(() => void runFold(tenantId, attempt), delayMs));
    timer.unref();
    scheduled.set(tenantId, timer);
  }

  // Deliveries counted by a process that died before folding them: any process folds them.
  const sweep = setInterval(() => {
    served.pendingTenants().then(
      (tenants) => tenants.forEach((t) => scheduleFold(t)),
      (err: unknown) => log.debug({ err: String(err) }, "promoted sweep failed"),
    );
  }, deps.sweepMs ?? 5_000);
  sweep.unref();

  const impl: ServiceImpl<typeof PromotedService> = {
    async createPromoted(req, ctx) {
      const tenantId = requireServer(ctx);
      const { custom, audience } = checkPromoted(req);
      const doc: PromotedDoc = {
        _id: randomUUID(),
        tenant_id: tenantId,
        actor: req.actor,
        verb: req.verb,
        object: req.object,
        custom_json: JSON.stringify(custom),
        audience,
        created_at: new Date(),
        retracted_at: null,
      };
      await repo.insert(doc);
      await live.invalidate(tenantId, ["live"]);
      return { record: promotedToProto(doc, 0) };
    },

    async listPromoted(req, ctx) {
      const tenantId = requireServer(ctx);
      const limit = pageLimit(req.page?.limit);
      const after = req.page?.cursor ? decodeCursor(req.page.cursor, ["number", "string"] as const) : null;
      // Deliveries so far become counts first.
      try {
        await repo.fold(tenantId, served);
      } catch (err) {
        log.warn({ err: String(err), tenant: tenantId }, "promoted served_count fold before listing failed");
      }
      const rows = await repo.page(tenantId, limit, after ? { createdAt: new Date(after[0]), id: after[1] } : null);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        records: page.map((d) => promotedToProto(d, d.served_count ?? 0)),
        next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : "",
      };
    },

    async retractPromoted(req, ctx) {
      const tenantId = requireServer(ctx);
      const id = req.id.toLowerCase();
      if (!UUID.test(id) || !(await repo.retract(tenantId, id, new Date()))) throw notFound("promoted activity not found");
      await live.invalidate(tenantId, ["live"]);
      return {};
    },

    async servePromoted(req, ctx) {
      const tenantId = requireTenant(ctx);
      const caller = callerOf(ctx);
      const feed = feedKey(req.feed);
      // A user token reads as its own user, whatever the request names.
      const userId = caller.kind === "user" ? caller.userId : req.userId || null;
      const read = { feed, userId };
      const cached = await liveSet(tenantId);
      let docs = cached.records.filter((d) => isEligible(d.audience, read)).slice(0, SERVE_LIMIT);
      // More live records than the cache holds: the newest eligible ones may lie beyond it.
      if (!cached.complete && docs.length < SERVE_LIMIT) docs = await repo.eligible(tenantId, read);
      if (docs.length === 0) return { records: [] };
      // Awaited before answering: a delivery that was answered is a delivery that is counted.
      await served.count(tenantId, docs.map((d) => d._id));
      scheduleFold(tenantId);
      // served_count is not read on this path (the sidecar never shows it): it answers 0.
      return { records: docs.map((d) => promotedToProto(d, 0)) };
    },
  };

  return {
    impl,
    /** Runs every pending background fold now and waits until none is pending or running. */
    async settle(): Promise<void> {
      for (let round = 0; round < 50; round++) {
        for (const [tenantId, timer] of [...scheduled]) {
          if (!timer) continue;
          clearTimeout(timer);
          scheduled.delete(tenantId);
          void runFold(tenantId, 0);
        }
        if (running.size === 0) return;
        await Promise.all([...running]);
      }
    },
    /** Stops background folding (pending deliveries stay stored and are folded later). */
    async close(): Promise<void> {
      closed = true;
      clearInterval(sweep);
      for (const timer of scheduled.values()) if (timer) clearTimeout(timer);
      scheduled.clear();
      again.clear();
      while (running.size) await Promise.all([...running]);
    },
  };
}

/** Promoted activities. */
export async function createPromotedModule(deps: { db: Db; redis: RedisConn; log: Logger }): Promise<ServiceImpl<typeof PromotedService>> {
  const repo = createPromotedRepository(deps.db);
  await repo.ensureIndexes();
  return createPromotedService({ repo, redis: deps.redis, log: deps.log }).impl;
}
