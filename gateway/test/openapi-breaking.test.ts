import { describe, expect, it } from "vitest";
import { operations } from "@feeds/contract";
import { breakingChanges, notedBreaks } from "../src/openapi/breaking.js";
import { openApiDocument } from "../src/openapi/document.js";

// The breaking-change check of scripts/check-openapi.mjs, on the real document and edits of it.

const current = () => structuredClone(openApiDocument(operations, { serverUrl: "http://localhost:8080" })) as unknown as Doc;
type Schema = { type?: string; properties: Record<string, unknown>; required?: string[] };
type Doc = { paths: Record<string, Record<string, { operationId: string }>>; components: { schemas: Record<string, Schema> } };

describe("breaking changes of the OpenAPI document", () => {
  it("finds none between a document and itself", () => {
    expect(breakingChanges(current(), current())).toEqual([]);
  });

  it("catches a removed answer field, in a shared component, for every operation answering it", () => {
    const after = current();
    delete after.components.schemas.Reaction?.properties.kind;
    const found = breakingChanges(current(), after);
    expect(found).toContainEqual({ operationId: "react", change: "answer field kind removed" });
    expect(found.map((c) => c.operationId)).toContain("reactions");
  });

  it("accepts an added optional request field and an added answer field", () => {
    const after = current();
    const follow = after.components.schemas.FollowRequest as Schema;
    follow.properties.note = { type: "string" };
    (after.components.schemas.Follow as Schema).properties.note = { type: "string" };
    expect(breakingChanges(current(), after)).toEqual([]);
  });

  it("catches a request field added as required, a type change, a removed success status and a removed operation", () => {
    const after = current();
    const follow = after.components.schemas.FollowRequest as Schema;
    follow.properties.note = { type: "string" };
    follow.required = [...(follow.required ?? []), "note"];
    (after.components.schemas.FollowStats as Schema).properties.follower_count = { type: "string" };
    const upsert = after.paths["/v1/users/{id}"]?.put as unknown as { responses: Record<string, unknown> };
    delete upsert.responses["201"];
    delete after.paths["/v1/me"];
    expect(breakingChanges(current(), after)).toEqual(
      expect.arrayContaining([
        { operationId: "follow", change: "request field note is added as required" },
        { operationId: "stats", change: "answer follower_count changed type from integer to string" },
        { operationId: "upsertUser", change: "success status 201 removed" },
        { operationId: "me", change: "operation removed (GET /v1/me)" },
      ]),
    );
  });

  it("reads the notes: BREAKING lines of the Unreleased section name operationIds in backticks", () => {
    const log = "# Changelog\n\n## [Unreleased]\n\n### Changed\n- BREAKING: `follow` needs a note.\n- `react` is faster\n\n## [0.1.0]\n- BREAKING: `me` gone\n";
    expect([...notedBreaks(log)]).toEqual(["follow"]);
  });
});
