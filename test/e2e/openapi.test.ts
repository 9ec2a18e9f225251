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
    const add = doc.paths["/v1/feeds/{group}/{id}/activities"].post.requestBody.content["application/json"].schema;
    expect(add.properties.actor).toMatchObject({ type: "string", nullable: true });
  });

  it("still lists every route with its parameters and bodies", async () => {
    const doc = (await http("GET", "/openapi.json")).body;
    const put = doc.paths["/v1/users/{id}"].put;
    expect(put.parameters).toEqual([expect.objectContaining({ name: "id", in: "path", required: true })]);
    expect(put.requestBody.content["application/json"].schema.type).toBe("object");
    expect(doc.paths["/v1/objects/{type}/{id}"].patch.requestBody).toBeDefined();
  });
});
