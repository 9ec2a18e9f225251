import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  conflict,
  decodeCursor,
  encodeCursor,
  forbidden,
  isDuplicateKey,
  pageLimit,
  randomToken,
  requireOperator,
  requireTenant,
  sha256,
  toTimestamp,
  unauthenticated,
  validationFailed,
} from "@feeds/kit";
import {
  OperatorSchema,
  OperatorService,
  OperatorStatus,
  Role,
  type Operator,
} from "@feeds/proto/feeds/identity/v1/identity";
import type { OperatorDoc, OperatorRepository, RoleValue } from "./operator-repository.js";
import { hashPassword, verifyPassword } from "./passwords.js";
import type { Team } from "./team.js";

export interface OperatorServiceDeps {
  operators: OperatorRepository;
  /** Team changes and invite acceptance (the owner count moves with them). */
  team: Team;
  dummyHash: string;
  sessionTtlSeconds: number;
}

const INVITE_TTL_MS = 7 * 24 * 3600 * 1000;
// Every failed login or invite acceptance answers no sooner than this after it began, so the
// failure kinds cannot be told apart by time even where their storage lookups differ.
const FAILURE_FLOOR_MS = 250;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn`; a failure is answered only once the floor has passed since `started`. */
async function flooredFailure<T>(fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } catch (e) {
    await sleep(Math.max(0, FAILURE_FLOOR_MS - (performance.now() - started)));
    throw e;
  }
}
const roleToProto: Record<RoleValue, Role> = { staff: Role.STAFF, owner: Role.OWNER, member: Role.MEMBER };
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const invitePending = (d: OperatorDoc) => d.password_hash === null;

export const operatorToProto = (d: OperatorDoc): Operator =>
  create(OperatorSchema, {
    id: d._id,
    name: d.name,
    email: d.email,
    role: roleToProto[d.role],
    tenantId: d.tenant_id ?? "",
    status: d.status === "active" ? OperatorStatus.ACTIVE : OperatorStatus.DISABLED,
    createdAt: toTimestamp(d.created_at),
    invitePending: invitePending(d),
  });

/** Creates a staff operator unless one with the email exists (idempotent, race-safe). */
export async function createStaffOperator(
  operators: OperatorRepository,
  input: { email: string; name: string; password: string },
): Promise<{ doc: OperatorDoc; created: boolean }> {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL.test(email)) throw validationFailed([{ path: "email", message: "must be an email" }]);
  if (input.password.length < 12 || input.password.length > 1024) {
    throw validationFailed([{ path: "password", message: "12 to 1024 characters" }]);
  }
  const existing = await operators.byEmail(email);
  if (existing) return { doc: existing, created: false };
  const now = new Date();
  const doc: OperatorDoc = {
    _id: `op_${randomBytes(9).toString("hex")}`,
    tenant_id: null,
    email,
    name: input.name || email,
    role: "staff",
    status: "active",
    password_hash: await hashPassword(input.password),
    invite: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await operators.insert(doc);
  } catch (e) {
    if (!isDuplicateKey(e)) throw e;
    const raced = await operators.byEmail(email);
    if (raced) return { doc: raced, created: false };
    throw e;
  }
  return { doc, created: true };
}

export function createOperatorService(deps: OperatorServiceDeps): ServiceImpl<typeof OperatorService> {
  const { operators } = deps;
  const loginFailed = () => unauthenticated("invalid email or password");
  const inviteFailed = () => unauthenticated("invalid or expired invite");

  async function openSession(op: OperatorDoc) {
    const token = randomToken(32);
    const now = new Date();
    const expiresAt = new Date(now.getTime() + deps.sessionTtlSeconds * 1000);
    await operators.insertSession({ _id: sha256(token), operator_id: op._id, expires_at: expiresAt, created_at: now });
    return { token, expiresAt: toTimestamp(expiresAt), operator: operatorToProto(op) };
  }

  /** The caller, when it may manage the context tenant's team: an active owner of that tenant. */
  async function owningCaller(ctx: HandlerContext): Promise<{ tenantId: string; caller: OperatorDoc }> {
    const tenantId = requireTenant(ctx);
    const caller = await operators.byId(requireOperator(ctx));
    if (!caller || caller.status !== "active") throw unauthenticated();
    if (caller.role !== "owner" || caller.tenant_id !== tenantId) throw forbidden();
    return { tenantId, caller };
  }

  return {
    async login(req) {
      return flooredFailure(async () => {
        const op = await operators.byEmail(req.email.trim().toLowerCase());
        // Exactly one argon2id verification whatever the failure, so all four cost the same work.
        const ok = await verifyPassword(op?.password_hash ?? deps.dummyHash, req.password);
        if (!op || !op.password_hash || op.status !== "active" || !ok) throw loginFailed();
        return { session: await openSession(op) };
      });
    },

    async acceptInvite(req) {
      if (req.password.length < 12 || req.password.length > 1024) {
        throw validationFailed([{ path: "password", message: "12 to 1024 characters" }]);
      }
      return flooredFailure(async () => {
        // Hash first: every outcome costs the same work.
        const passwordHash = await hashPassword(req.password);
        const tokenHash = sha256(req.token);
        // One conditional update: of racing acceptances exactly one finds the token unspent.
        const accepted = await deps.team.accept(tokenHash, passwordHash);
        if (!accepted) throw inviteFailed();
        return { session: await openSession(accepted) };
      });
    },

    async authenticate(req) {
      const session = await operators.session(sha256(req.token));
      if (!session || session.expires_at.getTime() <= Date.now()) throw unauthenticated();
      const op = await operators.byId(session.operator_id);
      if (!op || op.status !== "active" || invitePending(op)) throw unauthenticated();
      return { operator: operatorToProto(op) };
    },

    async logout(req) {
      await operators.deleteSession(sha256(req.token));
      return {};
    },

    async ensureStaff(req) {
      const { doc, created } = await createStaffOperator(operators, req);
      return { operator: operatorToProto(doc), created };
    },

    async createInvite(req, ctx) {
      const tenantId = requireTenant(ctx);
      const caller = await operators.byId(requireOperator(ctx));
      if (!caller || caller.status !== "active") throw unauthenticated();
      // Platform staff provision any tenant's operators; otherwise only an owner of this tenant.
      if (caller.role !== "staff" && !(caller.role === "owner" && caller.tenant_id === tenantId)) throw forbidden();
      const role: RoleValue | null = req.role === Role.OWNER ? "owner" : req.role === Role.MEMBER ? "member" : null;
      if (!role) throw validationFailed([{ path: "role", message: "owner or member" }]);
      const email = req.email.trim().toLowerCase();
      if (!EMAIL.test(email) || email.length > 254) throw validationFailed([{ path: "email", message: "must be an email" }]);
      const token = randomToken(32);
      const now = new Date();
      const expiresAt = new Date(now.getTime() + INVITE_TTL_MS);
      const doc: OperatorDoc = {
        _id: `op_${randomBytes(9).toString("hex")}`,
        tenant_id: tenantId,
        email,
        name: req.name.trim() || email,
        role,
        status: "active",
        password_hash: null,
        invite: { token_hash: sha256(token), expires_at: expiresAt },
        created_at: now,
        updated_at: now,
      };
      try {
        await operators.insert(doc);
      } catch (e) {
        if (isDuplicateKey(e)) throw conflict("an operator with this email already exists");
        throw e;
      }
      return { operator: operatorToProto(doc), inviteToken: token, expiresAt: toTimestamp(expiresAt) };
    },

    async listTeam(req, ctx) {
      const tenantId = requireTenant(ctx);
      const caller = await operators.byId(requireOperator(ctx));
      if (!caller || caller.status !== "active") throw unauthenticated();
      if (caller.tenant_id !== tenantId) throw forbidden();
      const limit = pageLimit(req.page?.limit);
      const after = req.page?.cursor ? decodeCursor(req.page.cursor, ["number", "string"] as const) : null;
      const rows = await operators.page(tenantId, limit, after ? { created_at: new Date(after[0]), id: after[1] } : null);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        operators: page.map(operatorToProto),
        next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : "",
      };
    },

    async changeRole(req, ctx) {
      const role: RoleValue | null = req.role === Role.OWNER ? "owner" : req.role === Role.MEMBER ? "member" : null;
      if (!role) throw validationFailed([{ path: "role", message: "owner or member" }]);
      const { tenantId, caller } = await owningCaller(ctx);
      const updated = await deps.team.change(tenantId, caller._id, req.operatorId, { role });
      return { operator: operatorToProto(updated) };
    },

    async setOperatorStatus(req, ctx) {
      const status =
        req.status === OperatorStatus.ACTIVE ? "active" : req.status === OperatorStatus.DISABLED ? "disabled" : null;
      if (!status) throw validationFailed([{ path: "status", message: "active or disabled" }]);
      const { tenantId, caller } = await owningCaller(ctx);
      const updated = await deps.team.change(tenantId, caller._id, req.operatorId, { status });
      // Disabling ends the operator's sessions at once.
      if (status === "disabled") await operators.deleteSessionsOf(updated._id);
      return { operator: operatorToProto(updated) };
    },
  };
}
