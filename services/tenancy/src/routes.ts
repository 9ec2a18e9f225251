import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  decodeCursor,
  encodeCursor,
  notFound,
  pageLimit,
  randomToken,
  seal,
  toTimestamp,
  unseal,
  validationFailed,
} from "@feeds/kit";
import {
  TenancyService,
  TenantSchema,
  TenantStatus,
  type Tenant,
} from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { distinctOrigins, originLimits, originProblem } from "@feeds/contract";
import type { TenantDoc, TenantRepository } from "./tenant-repository.js";
import type { CredentialChanges } from "./credential-change.js";

export interface TenancyDeps {
  tenants: TenantRepository;
  masterKey: Buffer;
  /** Secret and status changes: answered only once every gateway replica was told. */
  changes: CredentialChanges;
}

const toProto = (d: TenantDoc): Tenant =>
  create(TenantSchema, {
    id: d._id,
    name: d.name,
    apiKey: d.api_key,
    status: d.status === "active" ? TenantStatus.ACTIVE : TenantStatus.SUSPENDED,
    createdAt: toTimestamp(d.created_at),
    rateLimitPerMinute: d.rate_limit_per_minute ?? 0,
    allowedOrigins: d.allowed_origins ?? [],
  });

// 256 random bits, base64url: 43 characters.
const newSecret = () => randomToken(32);

export function createTenancyService(deps: TenancyDeps): ServiceImpl<typeof TenancyService> {
  const { tenants, masterKey } = deps;
  const sealSecret = (tenantId: string, secret: string) => seal(masterKey, secret, `tenant:${tenantId}`);

  async function mustGet(id: string): Promise<TenantDoc> {
    const doc = await tenants.byId(id);
    if (!doc) throw notFound("tenant not found");
    return doc;
  }

  return {
    async createTenant(req) {
      const name = req.name.trim();
      if (!name || name.length > 200) throw validationFailed([{ path: "name", message: "1 to 200 characters" }]);
      if (req.rateLimitPerMinute < 0) {
        throw validationFailed([{ path: "rate_limit_per_minute", message: "must be positive" }]);
      }
      const id = `t_${randomBytes(9).toString("hex")}`;
      const secret = newSecret();
      const now = new Date();
      const doc: TenantDoc = {
        _id: id,
        name,
        api_key: `ak_${randomBytes(12).toString("hex")}`,
        secret: sealSecret(id, secret),
        status: "active",
        rate_limit_per_minute: req.rateLimitPerMinute || null,
        created_at: now,
        updated_at: now,
      };
      await tenants.insert(doc);
      return { tenant: toProto(doc), apiSecret: secret };
    },

    async getTenant(req) {
      return { tenant: toProto(await mustGet(req.id)) };
    },

    async listTenants(req) {
      const limit = pageLimit(req.page?.limit);
      const after = req.page?.cursor ? decodeCursor(req.page.cursor, ["number", "string"] as const) : null;
      const rows = await tenants.page(limit, after ? { created_at: new Date(after[0]), id: after[1] } : null);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const next = rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : "";
      return { tenants: page.map(toProto), next };
    },

    async setTenantStatus(req) {
      if (req.status !== TenantStatus.ACTIVE && req.status !== TenantStatus.SUSPENDED) {
        throw validationFailed([{ path: "status", message: "active or suspended" }]);
      }
      const status = req.status === TenantStatus.ACTIVE ? "active" : "suspended";
      return { tenant: toProto(await deps.changes.apply(req.id, { status })) };
    },

    async rotateSecret(req) {
      const secret = newSecret();
      // The old secret stops at once on every gateway: the change answers once they were told.
      await deps.changes.apply(req.id, { secret: sealSecret(req.id, secret) });
      return { apiSecret: secret };
    },

    async setAllowedOrigins(req) {
      if (req.origins.length > originLimits.origins) {
        throw validationFailed([{ path: "origins", message: `at most ${originLimits.origins} origins` }]);
      }
      const fields = req.origins.flatMap((o, i) => {
        const problem = originProblem(o);
        return problem ? [{ path: `origins.${i}`, message: problem }] : [];
      });
      if (fields.length) throw validationFailed(fields);
      // Answered once every gateway was told: the gateways answer CORS from memory.
      return { tenant: toProto(await deps.changes.apply(req.id, { allowed_origins: distinctOrigins(req.origins) })) };
    },

    async listAllowedOrigins() {
      return { origins: await tenants.allowedOrigins() };
    },

    async getCredential(req) {
      const doc = await tenants.byApiKey(req.apiKey);
      if (!doc) throw notFound("no such api key");
      return { tenant: toProto(doc), apiSecret: unseal(masterKey, doc.secret, `tenant:${doc._id}`) };
    },
  };
}
