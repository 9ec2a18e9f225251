import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { CatalogService } from "@feeds/proto/feeds/catalog/v1/catalog";
import { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { FeedService, PromotedService } from "@feeds/proto/feeds/feed/v1/feed";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";
import { OperatorService, UserService } from "@feeds/proto/feeds/identity/v1/identity";
import { NotificationService } from "@feeds/proto/feeds/notification/v1/notification";
import { WebhookService } from "@feeds/proto/feeds/notification/v1/webhook";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { serviceNames, signers, type ServiceName, type Signer } from "./config.js";

// Which process may call which RPC: every RPC of every service, from its real call sites. A
// service's own name covers its background work too where it runs in the service's process
// (FEEDS_ROLE=all); `<service>-worker` is that work in a process of its own. docs/service-auth.md
// holds this table (kit/test/call-policy.test.ts keeps the two equal).

export interface CallRule {
  /** `package.Service/Method`, as tokens name it. */
  method: string;
  /** The service that serves it. */
  audience: ServiceName;
  callers: readonly Signer[];
  /** Answers a secret, or changes tenants or operators: the gateway alone, always. */
  sensitive: boolean;
}

type Callers = readonly Signer[];
/** Every method of `S`: a mapped type, so a new RPC without a rule does not compile. */
type Rules<S extends DescService> = { [K in keyof S["method"]]: Callers | { sensitive: Callers } };

const gateway: Callers = ["gateway"];
const secret = { sensitive: gateway };

function rules<S extends DescService>(audience: ServiceName, service: S, given: Rules<S>): CallRule[] {
  return Object.entries(given as Record<string, Callers | { sensitive: Callers }>).map(([local, c]) => {
    const m = service.method[local] as DescMethod;
    const sensitive = "sensitive" in c;
    return { method: `${service.typeName}/${m.name}`, audience, callers: sensitive ? c.sensitive : c, sensitive };
  });
}

const table: CallRule[] = [
  ...rules("tenancy", TenancyService, {
    createTenant: secret, getTenant: gateway, listTenants: gateway, setTenantStatus: secret, rotateSecret: secret, getCredential: secret,
    setAllowedOrigins: secret, listAllowedOrigins: gateway,
  }),
  ...rules("identity", UserService, {
    upsertUser: gateway, getUser: gateway, getUsers: ["gateway", "feed", "feed-worker", "notification"], listUsers: gateway,
    importUsers: gateway, revokeTokens: gateway, getRevocation: gateway, getUserSignal: gateway,
  }),
  ...rules("identity", OperatorService, {
    login: secret, acceptInvite: secret, authenticate: secret, logout: secret, ensureStaff: secret,
    createInvite: secret, listTeam: gateway, changeRole: secret, setOperatorStatus: secret,
  }),
  ...rules("feed", FeedService, {
    addActivity: gateway, getActivity: ["gateway", "engagement", "engagement-worker"], getActivities: [], patchActivity: gateway,
    deleteActivity: gateway, readFeed: gateway, getSignal: gateway, copyHistory: ["graph", "graph-worker"],
    removeHistory: ["graph", "graph-worker"], importActivities: gateway, listActivities: gateway,
    setReactionCounts: [], applyReactionChange: ["engagement", "engagement-worker"], clearReactionChanges: ["engagement", "engagement-worker"],
    getActivitySignal: gateway,
  }),
  ...rules("feed", PromotedService, { createPromoted: gateway, listPromoted: gateway, retractPromoted: gateway, servePromoted: gateway }),
  ...rules("graph", GraphService, {
    follow: gateway, unfollow: gateway, listFollows: gateway, listFollowers: gateway, streamFollowerFeeds: ["feed", "feed-worker"],
    getStats: gateway, suggestions: gateway, importFollows: gateway,
  }),
  ...rules("catalog", CatalogService, {
    putObject: gateway, getObject: gateway, getObjects: gateway, patchObject: gateway, deleteObject: gateway, bulkPutObjects: gateway,
  }),
  ...rules("engagement", EngagementService, {
    listOwnReactions: gateway, react: gateway, listReactions: gateway, unreact: gateway, deleteReaction: gateway, addComment: gateway,
    listComments: gateway, listReplies: gateway, editComment: gateway, deleteComment: gateway, setBlocklist: gateway, getBlocklist: gateway,
    setReactionKinds: gateway, getReactionKinds: gateway,
  }),
  ...rules("notification", NotificationService, {
    listNotifications: gateway, markNotifications: gateway, getNotificationSignal: gateway,
    listNotificationGroups: gateway, listNotificationGroupMembers: gateway, markNotificationGroups: gateway,
  }),
  ...rules("notification", WebhookService, {
    listDestinations: gateway, createDestination: secret, deleteDestination: gateway, listEvents: gateway, sendTest: gateway, getEventSignal: gateway,
  }),
];

const byMethod = new Map(table.map((r) => [r.method, r]));

/** Every rule, in the order above. */
export const callRules = (): readonly CallRule[] => table;

// Looked up twice a call (signing, verifying): by the descriptor itself, its name built once.
const byDescriptor = new WeakMap<DescMethod, CallRule | null>();

/** The rule of a method; undefined for one no service call may reach (grpc.health.v1 is open instead). */
export function callRuleOf(method: DescMethod): CallRule | undefined {
  let rule = byDescriptor.get(method);
  if (rule === undefined) byDescriptor.set(method, (rule = byMethod.get(`${method.parent.typeName}/${method.name}`) ?? null));
  return rule ?? undefined;
}

/** Each service's callers: every process some rule of it names. */
export function callersOf(): Map<ServiceName, Signer[]> {
  return new Map(serviceNames.map((s) => [s, [...new Set(table.filter((r) => r.audience === s).flatMap((r) => r.callers))]]));
}

/** The processes some rule names: only these sign calls, so only these get a key. */
export function namedSigners(): Signer[] {
  const named = new Set(table.flatMap((r) => r.callers));
  return signers.filter((s) => named.has(s));
}

/** The markdown table of docs/service-auth.md. */
export function callPolicyTable(): string {
  const rows = table.map((r) => `| \`${r.method}\` | ${r.callers.length ? r.callers.map((c) => `\`${c}\``).join(", ") : "nobody (no call site)"} |${r.sensitive ? " yes |" : " |"}`);
  return ["| RPC | May call it | Sensitive |", "|---|---|---|", ...rows].join("\n");
}
