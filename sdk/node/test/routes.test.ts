import { afterEach, describe, expect, it } from "vitest";
import {
  OperatorClient,
  ResponseValidationError,
  ServerClient,
  UserClient,
  checkAnswer,
  feedApiRoutes,
  routes,
  type AuthKind,
  type BaseClient,
  type RouteDef,
} from "../src/index.js";
import { startFakeServer, type FakeServer } from "./fake-server.js";

// The SDK's methods against its route table: every public method of a client is a route of the
// table's groups for that client, and sends that route's verb and path (with or without a token
// as the route's auth says); every route of those groups is a method. The gateway serves the same
// table (gateway/src/define.ts), so there is no second one to compare with.

type Group = keyof typeof routes;
const clientGroups: Record<"ServerClient" | "UserClient" | "OperatorClient", Group[]> = {
  ServerClient: ["health", "feedApi", "server"],
  UserClient: ["health", "feedApi", "user"],
  OperatorClient: ["health", "operator", "admin"],
};
/** Who may call the routes of each group. */
const groupAuth: Record<Group, AuthKind[]> = {
  health: ["none"],
  feedApi: ["tenant"],
  server: ["server"],
  user: ["user"],
  // The live stream: its routes are called by the clients' stream() iterator, not by methods of their own.
  stream: ["tenant"],
  operator: ["none", "operator", "member", "owner"],
  admin: ["staff"],
};
/**
 * Methods that are not routes: raw access, tokens, the protected route callers, the iterators over
 * paged routes, and the live stream's iterator (built on the stream group's two routes).
 */
const notRoutes = new Set(["constructor", "raw", "request", "call", "getToken", "setToken", "send", "route", "signalOf"]);
const iterators = ["stream", "feed", "activity", "allReplies", "allNotifications", "allNotificationGroups", "allNotificationGroupMembers", "allWebhooks", "allPromoted", "allTeam", "allUsers", "allActivities", "allWebhookEvents", "allTenants"];
for (const name of iterators) notRoutes.add(name);
/** Arguments a method cannot take as plain strings. */
const argsOf: Record<string, unknown[]> = { getObjects: [["song:1", "album:2"]] };

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function newClient(name: keyof typeof clientGroups, baseUrl: string): BaseClient {
  const options = { baseUrl, token: "tok", maxRetries: 0 };
  if (name === "ServerClient") return new ServerClient(options);
  if (name === "UserClient") return new UserClient(options);
  return new OperatorClient(options);
}

/** Every method name on an object's prototype chain (getters excluded). */
function methodsOf(client: object): string[] {
  const names = new Set<string>();
  for (let proto: unknown = Object.getPrototypeOf(client); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(proto))) {
      if (typeof d.value === "function" && !notRoutes.has(name)) names.add(name);
    }
  }
  return [...names].sort();
}

const pathPattern = (def: RouteDef) =>
  new RegExp(`^${def.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[A-Za-z_]+\}/g, "[^/]+")}$`);

describe("the SDK's clients and its route table", () => {
  it("groups routes by who may call them", () => {
    for (const [group, defs] of Object.entries(routes) as [Group, Record<string, RouteDef>][]) {
      for (const [name, def] of Object.entries(defs)) expect(groupAuth[group], `${group}.${name}`).toContain(def.auth);
    }
  });

  for (const [clientName, groups] of Object.entries(clientGroups) as [keyof typeof clientGroups, Group[]][]) {
    it(`${clientName}: one method per route of ${groups.join(", ")}, each sending its route's verb and path`, async () => {
      server = await startFakeServer([{ status: 200, body: {} }]);
      const table = Object.assign({}, ...groups.map((g) => routes[g])) as Record<string, RouteDef>;
      expect(methodsOf(newClient(clientName, server.baseUrl))).toEqual(Object.keys(table).sort());

      for (const [name, def] of Object.entries(table)) {
        const client = newClient(clientName, server.baseUrl) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
        const method = client[name] as (...a: unknown[]) => Promise<unknown>;
        const args = argsOf[name] ?? Array.from({ length: method.length }, () => "g:i");
        await method.apply(client, args);
        const seen = server.requests.at(-1);
        expect(`${seen?.method} ${seen?.path}`, name).toMatch(new RegExp(`^${def.method} `));
        expect(seen?.path, `${name}: ${seen?.path} is not ${def.path}`).toMatch(pathPattern(def));
        expect(seen?.headers.authorization, `${name} (auth ${def.auth})`).toBe(def.auth === "none" ? undefined : "Bearer tok");
      }
      expect(server.requests).toHaveLength(Object.keys(table).length);
    });
  }
});

describe("validateResponses", () => {
  const reaction = {
    id: "0b7e3a52-6f0e-4d8e-9a49-3c1e2f4a5b6c",
    activity_id: "9d2c1b0a-8f7e-4d6c-8b5a-493827160504",
    user_id: "u",
    kind: "like",
    created_at: "2024-05-01T12:00:00.000Z",
  };

  it("accepts an answer of the declared shape and refuses others, naming the field", () => {
    expect(() => checkAnswer(feedApiRoutes.react, 201, reaction)).not.toThrow();
    expect(() => checkAnswer(feedApiRoutes.react, 200, reaction)).not.toThrow();
    const problems = (status: number, body: unknown) => {
      try {
        checkAnswer(feedApiRoutes.react, status, body);
      } catch (e) {
        expect(e).toBeInstanceOf(ResponseValidationError);
        return (e as ResponseValidationError).problems;
      }
      return [];
    };
    expect(problems(201, { ...reaction, kind: 3 })).toEqual(["body.kind: Invalid input: expected string, received number"]);
    expect(problems(201, { ...reaction, secret: "x" })).toEqual(["body.secret: not in the schema"]);
    expect(problems(204, undefined)).toEqual(["the route does not declare status 204"]);
    expect(problems(204, undefined)).toHaveLength(1);
    expect(() => checkAnswer(feedApiRoutes.deleteReaction, 204, undefined)).not.toThrow();
    expect(() => checkAnswer(feedApiRoutes.deleteReaction, 204, {})).toThrow(/expected no body/);
  });

  it("makes a client throw on an answer its route does not describe", async () => {
    server = await startFakeServer([{ status: 201, body: { ...reaction, created_at: "yesterday" } }]);
    const checked = new ServerClient({ baseUrl: server.baseUrl, token: "t", validateResponses: true });
    await expect(checked.react("a", "like", { user_id: "u" })).rejects.toThrow(
      'POST /v1/activities/{id}/reactions answered 201 with a body its schema does not describe: body.created_at: Invalid ISO datetime',
    );
    const unchecked = new ServerClient({ baseUrl: server.baseUrl, token: "t" });
    await expect(unchecked.react("a", "like", { user_id: "u" })).resolves.toMatchObject({ created_at: "yesterday" });
  });
});
