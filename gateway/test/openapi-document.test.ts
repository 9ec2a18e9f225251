import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ErrorCodes, operations, routesById, type RouteDef } from "@feeds/contract";
import { openApiDocument, placeholderServer } from "../src/openapi/document.js";

// docs/openapi.json is the document generated from @feeds/contract's route table: regenerate it
// here and hold the committed file to it, then check what generators rely on.

const committedPath = new URL("../../docs/openapi.json", import.meta.url);
const doc = openApiDocument(operations, { serverUrl: placeholderServer });

type Op = {
  operationId: string;
  security: Record<string, unknown>[];
  parameters: { $ref?: string }[];
  responses: Record<string, { $ref?: string; headers?: Record<string, unknown> }>;
};
const ops = Object.values(doc.paths).flatMap((item) => Object.entries(item as Record<string, Op>).map(([method, op]) => ({ method, op })));

describe("docs/openapi.json", () => {
  it("is what the route table generates (run `npx tsc -b && npm run openapi` to rewrite it)", () => {
    const committed = JSON.parse(readFileSync(committedPath, "utf8")) as unknown;
    expect(committed, "docs/openapi.json is stale: run `npx tsc -b && npm run openapi` and commit it").toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it("has one operation per route of the table, each with its key as operationId", () => {
    expect(ops.map((o) => o.op.operationId).sort()).toEqual(Object.keys(routesById).sort());
    expect(Object.keys(operations).sort()).toEqual(Object.keys(routesById).sort());
  });

  it("names the shared shapes once and refers to them", () => {
    for (const name of ["Activity", "Follow", "Reaction", "Comment", "Notification", "Tenant", "FeedPage", "FollowPage", "Error", "ErrorCode"]) {
      expect(doc.components.schemas, name).toHaveProperty(name);
    }
    const text = JSON.stringify(doc.paths);
    expect(text.match(/"#\/components\/schemas\/Activity"/g)?.length ?? 0).toBeGreaterThan(0);
    // The Activity's own fields appear nowhere in paths: every use is a $ref.
    expect(text).not.toContain('"origin_feed"');
    expect((doc.components.schemas.ErrorCode as { enum: string[] }).enum).toEqual(Object.values(ErrorCodes));
  });

  it("documents the error envelope on every 4xx/5xx and a security per token kind", () => {
    for (const { method, op } of ops) {
      const errors = Object.keys(op.responses).filter((s) => Number(s) >= 400 && s !== "503");
      expect(errors, `${method} ${op.operationId}`).toContain("500");
      for (const s of errors) expect(op.responses[s]?.$ref, `${op.operationId} ${s}`).toMatch(/^#\/components\/responses\//);
      expect(op.parameters[0]?.$ref).toBe("#/components/parameters/RequestId");
      const write = method !== "get";
      expect(op.parameters.some((p) => p.$ref === "#/components/parameters/IdempotencyKey"), op.operationId).toBe(write);
    }
    const securityOf = (id: keyof typeof operations) => ops.find((o) => o.op.operationId === id)?.op.security;
    expect(securityOf("readFeed")).toEqual([{ serverToken: [] }, { userToken: [] }]);
    expect(securityOf("upsertUser")).toEqual([{ serverToken: [] }]);
    expect(securityOf("me")).toEqual([{ userToken: [] }]);
    expect(securityOf("listTenants")).toEqual([{ operatorSession: [] }]);
    expect(securityOf("login")).toEqual([]);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["operatorSession", "serverToken", "userToken"]);
  });

  it("documents ETag and If-None-Match where a route answers 304", () => {
    const signal = ops.find((o) => o.op.operationId === "feedSignal")?.op;
    expect(signal?.parameters).toContainEqual({ $ref: "#/components/parameters/IfNoneMatch" });
    expect(signal?.responses["200"]?.headers).toHaveProperty("ETag");
  });

  it("names the placeholder server, the licence and a version", () => {
    expect(doc.servers).toEqual([{ url: "http://localhost:8080" }]);
    expect(doc.info.license.name).toBe("Apache-2.0");
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("refuses a table whose two groups share a key (operationIds must be unique)", async () => {
    const { byOperationId } = await import("@feeds/contract");
    const def = operations.health as RouteDef;
    expect(() => byOperationId({ a: { x: def }, b: { x: def } })).toThrow(/operationId x is a key of both a and b/);
  });
});
