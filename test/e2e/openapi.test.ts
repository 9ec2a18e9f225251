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

  it("documents every route's answers: a schema for each success status with a body, none for 204 and 304", async () => {
    const doc = (await http("GET", "/openapi.json")).body;
    const react = doc.paths["/v1/activities/{id}/reactions"].post.responses;
    expect(Object.keys(react).sort()).toEqual(["200", "201", "default"]);
    expect(react["201"].content["application/json"].schema).toMatchObject({
      type: "object",
      required: ["id", "activity_id", "user_id", "kind", "created_at"],
      properties: { id: { type: "string", format: "uuid" }, created_at: { type: "string", format: "date-time" } },
    });
    expect(doc.paths["/v1/comments/{id}"].delete.responses["204"]).toEqual({ description: "No Content" });
    expect(doc.paths["/v1/notifications/signal"].get.responses["304"]).not.toHaveProperty("content");
    const unread = doc.paths["/v1/notifications"].get.responses["200"].content["application/json"].schema;
    expect(unread.required).toEqual(["results", "next", "unseen", "unread"]);
    expect(unread.properties.results.items.properties.seen_at).toMatchObject({ type: "string", format: "date-time", nullable: true });
    const undescribed: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, any> }>>)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, answer] of Object.entries(op.responses)) {
          const bodiless = status === "204" || status === "304";
          if (status !== "default" && bodiless === (answer.content !== undefined)) undescribed.push(`${method} ${path} ${status}`);
        }
      }
    }
    expect(undescribed).toEqual([]);
  });
});
