import { readFileSync } from "node:fs";
import SwaggerParser from "@apidevtools/swagger-parser";
import { describe, expect, it } from "vitest";
import { http } from "../support/api.js";

/** Every schema object of the document, wherever it sits (parameters, bodies, components). */
function schemasOf(doc: unknown): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const walk = (node: unknown, isSchema: boolean) => {
    if (Array.isArray(node)) return node.forEach((n) => walk(n, isSchema));
    if (typeof node !== "object" || node === null) return;
    const o = node as Record<string, unknown>;
    if (isSchema) found.push(o);
    for (const [k, v] of Object.entries(o)) {
      const schemaValued = k === "schema" || k === "items" || k === "additionalProperties" || k === "not";
      const schemaMap = isSchema && k === "properties";
      const schemaList = isSchema && (k === "anyOf" || k === "oneOf" || k === "allOf");
      if (schemaMap) for (const p of Object.values(v as object)) walk(p, true);
      else walk(v, schemaValued || schemaList);
    }
  };
  walk(doc, false);
  return found;
}

describe("the published OpenAPI document", () => {
  it("is a valid OpenAPI 3.0 document by a standard parser", async () => {
    const res = await http("GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\.0\.\d+$/);
    // validate() dereferences in place: hand it a copy.
    await expect(SwaggerParser.validate(structuredClone(res.body))).resolves.toBeDefined();
  });

  it("carries no JSON Schema 2020-12 keywords (3.0 forms instead)", async () => {
    const doc = (await http("GET", "/openapi.json")).body;
    const schemas = schemasOf(doc);
    expect(schemas.length).toBeGreaterThan(100);
    const foreign = ["$schema", "const", "prefixItems", "$defs", "unevaluatedProperties", "propertyNames", "contentEncoding"];
    const notOpenApi30 = (s: Record<string, unknown>) =>
      foreign.some((k) => k in s) ||
      (s.type !== undefined && typeof s.type !== "string") ||
      ["exclusiveMinimum", "exclusiveMaximum"].some((k) => k in s && typeof s[k] !== "boolean");
    expect(schemas.filter(notOpenApi30)).toEqual([]);
    // A nullable field (add activity's actor) uses 3.0's `nullable`, not a "null" type.
    const add = doc.components.schemas.AddActivityRequest;
    expect(add.properties.actor).toMatchObject({ type: "string", nullable: true });
  });

  it("is the committed docs/openapi.json, naming \"/\" as its server while PUBLIC_URL is unset", async () => {
    const res = await http("GET", "/openapi.json");
    expect(res.status).toBe(200);
    const { servers, ...served } = res.body as { servers: { url: string }[] };
    const { servers: _placeholder, ...committed } = JSON.parse(readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8")) as {
      servers: unknown;
    };
    expect(served, "the served /openapi.json differs from docs/openapi.json: run `npx tsc -b && npm run openapi`").toEqual(committed);
    // Resolved against where the document was fetched: right behind any proxy (PUBLIC_URL names
    // an absolute one; kit/test/config.test.ts).
    expect(servers).toEqual([{ url: "/" }]);
  });

  it("answers with the envelope's $ref on every documented error, and the Activity by reference", async () => {
    const doc = (await http("GET", "/openapi.json")).body;
    const react = doc.paths["/v1/activities/{id}/reactions"].post;
    expect(react.operationId).toBe("react");
    expect(react.responses["201"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Reaction" });
    expect(react.responses["429"]).toEqual({ $ref: "#/components/responses/RateLimited" });
    expect(doc.components.responses.RateLimited.headers).toHaveProperty("Retry-After");
    expect(doc.paths["/v1/comments/{id}"].delete.responses["204"]).not.toHaveProperty("content");
  });
});
