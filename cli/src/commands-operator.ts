import type { OperatorSession } from "@feeds/node";
import { required, str, type Command } from "./command.js";
import type { Context } from "./context.js";
import { CliError, usageError } from "./errors.js";
import { id, integer } from "./inputs.js";
import { readPassword } from "./password.js";

// The operator's commands: the session (/operator/login, /operator/logout, /operator/me), tenants
// (/admin/tenants, platform staff) and teammates (/admin/tenants/{id}/operators for staff,
// /operator/team/invite for owners; /operator/invite/accept).

/** Keeps a new session in the profile; a session for another system replaces the old one wholly. */
function keepSession(ctx: Context, url: string, session: OperatorSession): void {
  const old = ctx.profile;
  const sameSystem = old.url === undefined || old.url === url;
  ctx.saveProfile({
    ...(sameSystem ? old : {}),
    url,
    session: { token: session.token, expires_at: session.expires_at, operator: session.operator },
  });
  if (!sameSystem) ctx.note(`profile "${ctx.store.name}" was for ${old.url}: its session and tenants are replaced`);
}

const sessionLine = (url: string, s: OperatorSession) =>
  `logged in to ${url} as ${s.operator.email} (${s.operator.role}); session until ${s.expires_at}`;

const login: Command = {
  name: "login",
  args: "[email]",
  summary: "log in as an operator (platform staff, owner or member); keeps the session in the profile",
  options: {},
  optionHelp: ["email: the argument, else FEEDS_EMAIL; password: FEEDS_PASSWORD, else asked"],
  positionals: [0, 1],
  async run(ctx, [emailArg]) {
    const email = emailArg ?? ctx.env["FEEDS_EMAIL"];
    if (!email) throw usageError("no email: feeds login <email>, or set FEEDS_EMAIL");
    const url = ctx.baseUrl();
    const password = await readPassword(ctx.env, `Password for ${email}: `);
    const session = await ctx.anonymous().login(email, password);
    keepSession(ctx, url, session);
    ctx.print({ ...session, token: "(kept in the profile)" }, () => [sessionLine(url, session)]);
  },
};

const logout: Command = {
  name: "logout",
  args: "",
  summary: "end the profile's operator session",
  options: {},
  optionHelp: [],
  positionals: [0, 0],
  async run(ctx) {
    const url = ctx.baseUrl();
    await ctx.operator().logout();
    const { session: _, ...rest } = ctx.profile;
    ctx.saveProfile(rest);
    ctx.print({ logged_out: url }, () => [`logged out of ${url}`]);
  },
};

const whoami: Command = {
  name: "whoami",
  args: "",
  summary: "the profile's operator (GET /operator/me), system, file and tenant",
  options: {},
  optionHelp: [],
  positionals: [0, 0],
  async run(ctx) {
    const me = await ctx.operator().currentOperator();
    const tenant = ctx.currentTenant();
    const profile = ctx.profile;
    ctx.print({ operator: me, url: profile.url, expires_at: profile.session?.expires_at, profile: ctx.store.path, tenant: tenant?.id ?? null }, () => [
      `${me.email} (${me.role}${me.tenant_id ? ` of ${me.tenant_id}` : ""}) at ${profile.url}; session until ${profile.session?.expires_at}`,
      `profile ${ctx.store.path}; tenant ${tenant ? `${tenant.id} "${tenant.name}" (${tenant.api_key})` : "none"}`,
    ]);
  },
};

const tenantCreate: Command = {
  name: "tenant create",
  args: "<name>",
  summary: "create a tenant (platform staff); keeps its api key and secret in the profile and acts for it",
  options: { "rate-limit": { type: "string" } },
  optionHelp: ["--rate-limit <n>   requests per minute (default: the system's, 6000)"],
  positionals: [1, 1],
  async run(ctx, [name = ""], values) {
    const rate = integer(str(values, "rate-limit"), "--rate-limit", 1);
    const op = ctx.operator();
    const created = await op.createTenant({ name, ...(rate === undefined ? {} : { rate_limit_per_minute: rate }) });
    const t = created.tenant;
    const profile = ctx.profile;
    ctx.saveProfile({
      ...profile,
      tenant: t.id,
      tenants: { ...profile.tenants, [t.id]: { id: t.id, name: t.name, api_key: t.api_key, api_secret: created.api_secret } },
    });
    ctx.print(created, () => [
      `tenant ${t.id} "${t.name}" created`,
      `api_key     ${t.api_key}`,
      `api_secret  ${created.api_secret}`,
      `kept in profile "${ctx.store.name}", which now acts for this tenant (the API answers the secret only this once)`,
    ]);
  },
};

const tenantUse: Command = {
  name: "tenant use",
  args: "<tenant-id>",
  summary: "act for another tenant this profile created",
  options: {},
  optionHelp: [],
  positionals: [1, 1],
  async run(ctx, [tenantId = ""]) {
    const profile = ctx.profile;
    const tenant = profile.tenants?.[tenantId];
    if (!tenant) {
      const known = Object.keys(profile.tenants ?? {});
      throw new CliError(`profile "${ctx.store.name}" holds no tenant ${tenantId}${known.length ? ` (it holds ${known.join(", ")})` : ""}`);
    }
    ctx.saveProfile({ ...profile, tenant: tenant.id });
    ctx.print({ tenant: tenant.id, api_key: tenant.api_key }, () => [`acting for tenant ${tenant.id} "${tenant.name}" (${tenant.api_key})`]);
  },
};

const operatorInvite: Command = {
  name: "operator invite",
  args: "<email>",
  summary: "invite an operator: staff name the tenant (default: the profile's), owners invite to their own",
  options: { name: { type: "string" }, role: { type: "string" }, tenant: { type: "string" } },
  optionHelp: ["--name <name>      required", "--role owner|member  required", "--tenant <id>      staff only; default: the profile's tenant"],
  positionals: [1, 1],
  async run(ctx, [email = ""], values) {
    const name = required(values, "name");
    const role = required(values, "role");
    if (role !== "owner" && role !== "member") throw usageError(`--role must be owner or member, not "${role}"`);
    const op = ctx.operator();
    const staff = ctx.profile.session?.operator.role === "staff";
    let tenantId: string | undefined;
    if (staff) {
      tenantId = str(values, "tenant") ?? ctx.currentTenant()?.id;
      if (!tenantId) throw usageError("staff invite into a tenant: pass --tenant <id> (the profile has none)");
      id(tenantId, "--tenant");
    } else if (str(values, "tenant") !== undefined) {
      throw usageError("--tenant is for platform staff: an owner invites into their own tenant");
    }
    const input = { email, name, role } as const;
    const invited = tenantId === undefined ? await op.invite(input) : await op.createTenantOperator(tenantId, input);
    ctx.print(invited, () => [
      `invited ${invited.teammate.email} as ${invited.teammate.role}${tenantId ? ` of ${tenantId}` : ""}`,
      `invite_token  ${invited.invite_token}`,
      `expires_at    ${invited.expires_at}`,
      "they set a password with: feeds operator accept <invite_token>",
    ]);
  },
};

const operatorAccept: Command = {
  name: "operator accept",
  args: "<invite-token>",
  summary: "accept an invite: set a password (12 to 1024 characters) and keep the session",
  options: {},
  optionHelp: ["password: FEEDS_PASSWORD, else asked"],
  positionals: [1, 1],
  async run(ctx, [token = ""]) {
    const url = ctx.baseUrl();
    const password = await readPassword(ctx.env, "New password (12 to 1024 characters): ");
    const session = await ctx.anonymous().acceptInvite(token, password);
    keepSession(ctx, url, session);
    ctx.print({ ...session, token: "(kept in the profile)" }, () => [sessionLine(url, session)]);
  },
};

export const operatorCommands: Command[] = [login, logout, whoami, tenantCreate, tenantUse, operatorInvite, operatorAccept];
