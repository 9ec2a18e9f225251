import { describe, expect, it } from "vitest";
import { openApiSchema, routes, type RouteDef } from "@feeds/node";
import { http } from "../support/api.js";

// The SDK's route table (what its clients call; sdk/test/routes.test.ts holds each method to its
// entry) against the running gateway's /openapi.json: the same routes both ways, each with the same
// auth kind and the same request and answer schemas, rendered as the gateway renders them.

interface Operation {
  "x-auth"?: string;
  parameters: { name: string; in: string; required: boolean; schema: unknown }[];
  requestBody?: { content: { "application/json": { schema: unknown } } };
  responses: Record<string, { content?: { "application/json": { schema: unknown } } }>;
}

/** `GET /v1/feeds/{}/{}`: verb and path template with the parameter names left out. */
const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, "{}")}`;

const sdkRoutes = new Map<string, { name: string; def: RouteDef }>();
for (const [group, defs] of Object.entries(routes)) {
  for (const [name, def] of Object.entries(defs as Record<string, RouteDef>)) {
    sdkRoutes.set(routeKey(def.method, def.path), { name: `${group}.${name}`, def });
  }
}

async function documented(): Promise<Map<string, Operation>> {
  const res = await http("GET", "/openapi.json");
  expect(res.status).toBe(200);
  const ops = new Map<string, Operation>();
  for (const [path, item] of Object.entries(res.body.paths as Record<string, Record<string, Operation>>)) {
    for (const [method, op] of Object.entries(item)) ops.set(routeKey(method, path), op);
  }
  return ops;
}

/** The parameters the gateway documents for a route's params and query schemas. */
function parametersOf(def: RouteDef) {
  const out: Operation["parameters"] = [];
  for (const [where, schema] of [["path", def.params], ["query", def.query]] as const) {
    if (!schema) continue;
    const js = openApiSchema(schema, "input") as { properties?: Record<string, unknown>; required?: string[] };
    for (const [name, s] of Object.entries(js.properties ?? {})) {
      out.push({ name, in: where, required: where === "path" || (js.required ?? []).includes(name), schema: s });
    }
  }
  return out;
}

describe("the SDK's routes and /openapi.json", () => {
  it("name the same routes: every route the SDK calls is documented, every documented route has an SDK method", async () => {
    const ops = await documented();
    expect(sdkRoutes.size).toBeGreaterThan(70);
    const undocumented = [...sdkRoutes].filter(([key]) => !ops.has(key)).map(([key, r]) => `${key} (sdk ${r.name})`);
    const withoutMethod = [...ops.keys()].filter((key) => !sdkRoutes.has(key));
    // Both lists in one assertion, so a failure shows each direction.
    expect({ undocumented, withoutMethod }, "routes the SDK calls that /openapi.json does not list; routes there with no SDK method").toEqual({
      undocumented: [],
      withoutMethod: [],
    });
  });

  it("give each route the same auth kind, parameters, body and answers", async () => {
    const ops = await documented();
    for (const [key, { name, def }] of sdkRoutes) {
      const op = ops.get(key);
      if (!op) continue; // reported by the test above
      const where = `${key} (sdk ${name})`;
      expect(op["x-auth"], `${where}: auth`).toBe(def.auth);
      expect(op.parameters, `${where}: parameters`).toEqual(parametersOf(def));
      expect(op.requestBody?.content["application/json"].schema, `${where}: request body`).toEqual(
        def.body ? openApiSchema(def.body, "input") : undefined,
      );
      const { default: _errors, ...answers } = op.responses;
      expect(Object.keys(answers).sort(), `${where}: answer statuses`).toEqual(Object.keys(def.responses).sort());
      for (const [status, schema] of Object.entries(def.responses)) {
        expect(answers[status]?.content?.["application/json"].schema, `${where}: ${status} body`).toEqual(
          schema ? openApiSchema(schema, "output") : undefined,
        );
      }
    }
  });
});
