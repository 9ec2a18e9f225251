import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createLogger, fromRpcError, scope, type Caller, createInternalAuth, createLocalTransport, rootKeys } from "@feeds/kit";
import { CatalogService } from "@feeds/proto/feeds/catalog/v1/catalog";
import { createCatalogService } from "../src/routes.js";
import type { ObjectDoc, ObjectInput, ObjectKey, ObjectRepository } from "../src/object-repository.js";

// Unit rung: the catalog service with its repository replaced by an in-memory stand-in, served
// over Connect's in-memory router transport with the real plumbing.

function fakeRepository(opts: { failIds?: string[]; casMisses?: number } = {}) {
  const docs = new Map<string, ObjectDoc>();
  const calls: { getMany: ObjectKey[][]; replaces: number } = { getMany: [], replaces: 0 };
  let casMisses = opts.casMisses ?? 0;
  const k = (t: string, type: string, id: string) => `${t}/${type}/${id}`;
  const store = (t: string, o: ObjectInput): ObjectDoc => {
    const doc = { _id: k(t, o.type, o.id), tenant_id: t, type: o.type, id: o.id, custom_json: o.customJson, updated_at: new Date() };
    docs.set(doc._id, doc);
    return doc;
  };
  const repo: ObjectRepository = {
    get: async (t, type, id) => docs.get(k(t, type, id)) ?? null,
    getMany: async (t, refs) => {
      calls.getMany.push(refs);
      return refs.flatMap((r) => docs.get(k(t, r.type, r.id)) ?? []);
    },
    put: async (t, o) => {
      const created = !docs.has(k(t, o.type, o.id));
      return { doc: store(t, o), created };
    },
    putMany: async (t, items) => items.map((o) => (opts.failIds?.includes(o.id) ? { ok: false } : { ok: true, doc: store(t, o) })),
    replaceCustom: async (t, prev, customJson) => {
      calls.replaces++;
      if (casMisses-- > 0) return null;
      return store(t, { type: prev.type, id: prev.id, customJson });
    },
    delete: async (t, type, id) => docs.delete(k(t, type, id)),
  };
  return { repo, docs, calls };
}

function client(repo: ObjectRepository) {
  const log = createLogger({ LOG_LEVEL: "silent" }, "test");
  const transport = createLocalTransport((router) => router.service(CatalogService, createCatalogService({ objects: repo })), log, createInternalAuth(rootKeys(randomBytes(32))), "gateway");
  return createClient(CatalogService, transport);
}

const as = (caller: Caller, tenantId = "t1") => scope({ tenantId, caller });
const server = as({ kind: "server" });

async function failure(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    const err = fromRpcError(e);
    return { code: err.code, paths: err.fields.map((f) => f.path) };
  }
  throw new Error("expected a failure");
}

describe("catalog service", () => {
  it("put validates ref and custom, answers created then replaced", async () => {
    const { repo } = fakeRepository();
    const c = client(repo);
    expect(await failure(c.putObject({ type: "bad type", id: "", customJson: "[1]" }, server))).toEqual({
      code: "VALIDATION_FAILED",
      paths: ["type", "id", "custom"],
    });
    expect((await failure(c.putObject({ type: "a", id: "b", customJson: JSON.stringify({ s: "x".repeat(65 * 1024) }) }, server))).paths).toEqual(["custom"]);
    const first = await c.putObject({ type: "a", id: "b", customJson: "" }, server);
    expect(first.created).toBe(true);
    expect(first.object?.customJson).toBe("{}");
    expect((await c.putObject({ type: "a", id: "b", customJson: '{"x":1}' }, server)).created).toBe(false);
  });

  it("writes refuse users, operators and anonymous callers; reads are open", async () => {
    const { repo } = fakeRepository();
    const c = client(repo);
    await c.putObject({ type: "a", id: "b", customJson: "{}" }, server);
    for (const caller of [{ kind: "user", userId: "u" }, { kind: "operator", operatorId: "o" }, { kind: "anonymous" }] as const) {
      const call = as(caller);
      expect((await failure(c.putObject({ type: "a", id: "b", customJson: "{}" }, call))).code).toBe("FORBIDDEN");
      expect((await failure(c.patchObject({ ref: { type: "a", id: "b" }, setJson: '{"custom.x":1}' }, call))).code).toBe("FORBIDDEN");
      expect((await failure(c.deleteObject({ ref: { type: "a", id: "b" } }, call))).code).toBe("FORBIDDEN");
      expect((await failure(c.bulkPutObjects({ objects: [{ type: "a", id: "b", customJson: "{}" }] }, call))).code).toBe("FORBIDDEN");
      expect((await c.getObject({ ref: { type: "a", id: "b" } }, call)).object?.id).toBe("b");
    }
    expect((await failure(c.getObject({ ref: { type: "a", id: "b" } }, scope({ caller: { kind: "server" } })))).code).toBe("UNAUTHENTICATED");
  });

  it("get and delete answer NOT_FOUND when missing; tenants are apart", async () => {
    const { repo } = fakeRepository();
    const c = client(repo);
    await c.putObject({ type: "a", id: "b", customJson: "{}" }, server);
    expect((await failure(c.getObject({ ref: { type: "a", id: "b" } }, as({ kind: "server" }, "t2")))).code).toBe("NOT_FOUND");
    expect((await failure(c.getObject({}, server))).paths).toEqual(["type", "id"]);
    await c.deleteObject({ ref: { type: "a", id: "b" } }, server);
    expect((await failure(c.deleteObject({ ref: { type: "a", id: "b" } }, server))).code).toBe("NOT_FOUND");
  });

  it("get many: one repository call with distinct well-formed refs, none for nothing", async () => {
    const { repo, calls } = fakeRepository();
    const c = client(repo);
    await c.putObject({ type: "a", id: "1", customJson: "{}" }, server);
    const res = await c.getObjects({ refs: [{ type: "a", id: "1" }, { type: "a", id: "2" }, { type: "a", id: "1" }, { type: "bad:", id: "x" }] }, server);
    expect(res.objects.map((o) => `${o.type}:${o.id}`)).toEqual(["a:1"]);
    expect(calls.getMany).toEqual([[{ type: "a", id: "1" }, { type: "a", id: "2" }]]);
    expect((await c.getObjects({ refs: [{ type: "", id: "" }] }, server)).objects).toEqual([]);
    expect(calls.getMany).toHaveLength(1);
  });

  it("patch: paths checked before lookup, re-applied after a lost compare-and-set", async () => {
    const { repo, docs, calls } = fakeRepository({ casMisses: 2 });
    const c = client(repo);
    expect(await failure(c.patchObject({ ref: { type: "a", id: "missing" }, setJson: '{"title":1}', unset: ["x"] }, server))).toEqual({
      code: "VALIDATION_FAILED",
      paths: ["set.title", "unset.0"],
    });
    expect((await failure(c.patchObject({ ref: { type: "a", id: "b" }, setJson: "[1]" }, server))).paths).toEqual(["set"]);
    expect((await failure(c.patchObject({ ref: { type: "a", id: "missing" }, setJson: '{"custom.x":1}' }, server))).code).toBe("NOT_FOUND");
    await c.putObject({ type: "a", id: "b", customJson: '{"keep":1,"drop":2}' }, server);
    const res = await c.patchObject({ ref: { type: "a", id: "b" }, setJson: '{"custom.n.m":3}', unset: ["custom.drop"] }, server);
    expect(JSON.parse(res.object?.customJson ?? "")).toEqual({ keep: 1, n: { m: 3 } });
    expect(docs.get("t1/a/b")?.custom_json).toBe(res.object?.customJson);
    expect(calls.replaces).toBe(3);
  });

  it("bulk: an invalid item fails alone, a failed write is INTERNAL, over 100 is refused", async () => {
    const { repo, docs } = fakeRepository({ failIds: ["boom"] });
    const c = client(repo);
    const res = await c.bulkPutObjects(
      {
        objects: [
          { type: "a", id: "1", customJson: '{"n":1}' },
          { type: "a", id: "bad id", customJson: "{}" },
          { type: "a", id: "boom", customJson: "{}" },
          { type: "a", id: "2", customJson: "7" },
          { type: "a", id: "3", customJson: "" },
        ],
      },
      server,
    );
    expect(res.results.map((r) => [r.index, r.ok, r.code, r.object?.id ?? null])).toEqual([
      [0, true, "", "1"],
      [1, false, "VALIDATION_FAILED", null],
      [2, false, "INTERNAL", null],
      [3, false, "VALIDATION_FAILED", null],
      [4, true, "", "3"],
    ]);
    expect([...docs.keys()].sort()).toEqual(["t1/a/1", "t1/a/3"]);
    const many = Array.from({ length: 101 }, (_, i) => ({ type: "a", id: `${i}`, customJson: "{}" }));
    expect(await failure(c.bulkPutObjects({ objects: many }, server))).toEqual({ code: "VALIDATION_FAILED", paths: ["objects"] });
  });
});
