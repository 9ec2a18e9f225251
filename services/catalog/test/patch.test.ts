import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createInternalAuth, createLocalTransport, createLogger, fromRpcError, scope, rootKeys } from "@feeds/kit";
import { CatalogService } from "@feeds/proto/feeds/catalog/v1/catalog";
import { createCatalogService } from "../src/routes.js";
import type { ObjectDoc, ObjectRepository } from "../src/object-repository.js";

// The catalog's patch goes through kit's one path walker (its rules are tested in
// kit/test/json-path*.test.ts): here, that the service uses it, before and after the lookup.

/** One stored object `a:b`, counting lookups; only what patchObject calls. */
function oneObject(customJson: string) {
  let doc: ObjectDoc = { _id: "t1/a/b", tenant_id: "t1", type: "a", id: "b", custom_json: customJson, updated_at: new Date() };
  const calls = { get: 0 };
  const unused = () => Promise.reject(new Error("not used by patchObject"));
  const repo: ObjectRepository = {
    get: async (_t, type, id) => {
      calls.get++;
      return type === doc.type && id === doc.id ? doc : null;
    },
    replaceCustom: async (_t, _prev, custom_json) => (doc = { ...doc, custom_json, updated_at: new Date() }),
    getMany: unused,
    put: unused,
    putMany: unused,
    delete: unused,
  };
  const log = createLogger({ LOG_LEVEL: "silent" }, "test");
  const transport = createLocalTransport(
    (router) => router.service(CatalogService, createCatalogService({ objects: repo })),
    log,
    createInternalAuth(rootKeys(randomBytes(32))),
    "gateway",
  );
  return { c: createClient(CatalogService, transport), calls, stored: () => doc.custom_json };
}

const server = scope({ tenantId: "t1", caller: { kind: "server" } });
const ref = { type: "a", id: "b" };

async function failure(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    const err = fromRpcError(e);
    return { code: err.code, fields: err.fields };
  }
  throw new Error("expected a failure");
}

describe("catalog patchObject", () => {
  it("refuses __proto__, constructor and prototype segments before the lookup, changing nothing", async () => {
    const { c, calls, stored } = oneObject('{"k":1}');
    const setJson = '{"custom.__proto__.polluted":"yes","custom.constructor.prototype.polluted":"yes"}';
    expect(await failure(c.patchObject({ ref, setJson, unset: ["custom.__proto__.hasOwnProperty"] }, server))).toEqual({
      code: "VALIDATION_FAILED",
      fields: [
        { path: "set.custom.__proto__.polluted", message: "must not contain a __proto__, constructor or prototype segment" },
        { path: "set.custom.constructor.prototype.polluted", message: "must not contain a __proto__, constructor or prototype segment" },
        { path: "unset.0", message: "must not contain a __proto__, constructor or prototype segment" },
      ],
    });
    expect(calls.get).toBe(0);
    expect(stored()).toBe('{"k":1}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(typeof Object.prototype.hasOwnProperty).toBe("function");
  });

  it("needs set or unset, and names paths outside custom.", async () => {
    const { c } = oneObject("{}");
    expect(await failure(c.patchObject({ ref, setJson: "{}" }, server))).toEqual({
      code: "VALIDATION_FAILED",
      fields: [{ path: "", message: "set or unset is required" }],
    });
    expect((await failure(c.patchObject({ ref, setJson: '{"title":1,"custom.a":1,"custom.a.b":2}', unset: ["x"] }, server))).fields.map((f) => f.path)).toEqual([
      "set.title",
      "set.custom.a.b",
      "unset.0",
    ]);
  });

  it("writes inherited names (toString, hasOwnProperty) as plain own data", async () => {
    const { c, stored } = oneObject('{"k":1}');
    const res = await c.patchObject({ ref, setJson: '{"custom.toString.x":1,"custom.hasOwnProperty":2}', unset: ["custom.valueOf"] }, server);
    expect(res.object?.customJson).toBe('{"k":1,"toString":{"x":1},"hasOwnProperty":2}');
    expect(stored()).toBe(res.object?.customJson);
  });

  it("below a stored value that is not an object: VALIDATION_FAILED naming the path", async () => {
    const { c, stored } = oneObject('{"s":"str"}');
    expect(await failure(c.patchObject({ ref, setJson: '{"custom.s.x":1,"custom.ok":1}' }, server))).toEqual({
      code: "VALIDATION_FAILED",
      fields: [{ path: "set.custom.s.x", message: "custom.s is not an object" }],
    });
    expect(stored()).toBe('{"s":"str"}');
  });
});
