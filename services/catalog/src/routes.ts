import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  MAX_CUSTOM_BYTES,
  callerOf,
  forbidden,
  internal,
  isId,
  notFound,
  requireTenant,
  toTimestamp,
  validationFailed,
  type FieldError,
} from "@feeds/kit";
import { CatalogService, FeedObjectSchema, type FeedObject, type ObjectRef } from "@feeds/proto/feeds/catalog/v1/catalog";
import type { ObjectDoc, ObjectInput, ObjectKey, ObjectRepository } from "./object-repository.js";

export interface CatalogServiceDeps {
  objects: ObjectRepository;
}

/** Items of one bulk upsert (the gateway allows 1..100). */
export const MAX_BULK_OBJECTS = 100;
/** Refs of one batch read: the gateway allows 100; a feed page of 100 activities holds at most 400. */
export const MAX_READ_REFS = 1000;
/** Compare-and-set rounds of a patch racing puts and deletes of the same object. */
const PATCH_ATTEMPTS = 5;

type JsonObject = Record<string, unknown>;

export const objectToProto = (d: ObjectDoc): FeedObject =>
  create(FeedObjectSchema, {
    type: d.type,
    id: d.id,
    customJson: d.custom_json,
    updatedAt: toTimestamp(d.updated_at),
  });

const ID_RULE = "must match ^[A-Za-z0-9_\\-.@]{1,128}$";
const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

function checkRef(type: string, id: string): FieldError[] {
  const errors: FieldError[] = [];
  if (!isId(type)) errors.push({ path: "type", message: ID_RULE });
  if (!isId(id)) errors.push({ path: "id", message: ID_RULE });
  return errors;
}

/** Checks one object item; answers its field errors (empty when valid). */
function checkObject(o: ObjectInput): FieldError[] {
  const errors = checkRef(o.type, o.id);
  if (Buffer.byteLength(o.customJson) > MAX_CUSTOM_BYTES) {
    errors.push({ path: "custom", message: "must be at most 64 KB" });
  } else {
    try {
      if (!isObject(JSON.parse(o.customJson || "{}"))) throw new Error("not an object");
    } catch {
      errors.push({ path: "custom", message: "must be an object" });
    }
  }
  return errors;
}

// ---------------------------------------------------------------------------------------------
// Patch paths: `set` keys and `unset` entries name a field inside custom, `custom.a.b`.

/** `custom.` followed by one or more non-empty segments separated by dots. */
export const PATCH_PATH = /^custom\.[^.]+(?:\.[^.]+)*$/;
const MAX_PATH_LENGTH = 1024;
const MAX_UNSET = 100;
const PATH_RULE = "must be a path under custom. (e.g. custom.title)";

/**
 * The rules of a patch that need no stored data: at least one path, every path has the
 * `custom.` shape, and no two paths overlap (the same field twice, or a field and one inside
 * it), since their order would be ambiguous. Errors name `set.<key>` or `unset.<index>`.
 */
export function checkPatchPaths(setKeys: readonly string[], unset: readonly string[]): FieldError[] {
  const errors: FieldError[] = [];
  if (setKeys.length === 0 && unset.length === 0) return [{ path: "", message: "set or unset is required" }];
  if (unset.length > MAX_UNSET) errors.push({ path: "unset", message: `at most ${MAX_UNSET} paths` });
  const fields = new Set<string>();
  const parents = new Map<string, string>(); // a field above some path → that path
  const entries = [
    ...setKeys.map((path) => ({ path, at: `set.${path}` })),
    ...unset.map((path, i) => ({ path, at: `unset.${i}` })),
  ];
  for (const { path, at } of entries) {
    if (path.length > MAX_PATH_LENGTH || !PATCH_PATH.test(path)) {
      errors.push({ path: at, message: PATH_RULE });
      continue;
    }
    const segments = path.split(".");
    const prefixes: string[] = [];
    for (let k = 2; k < segments.length; k++) prefixes.push(segments.slice(0, k).join("."));
    const clash = fields.has(path) ? path : (parents.get(path) ?? prefixes.find((p) => fields.has(p)));
    if (clash !== undefined) {
      errors.push({ path: at, message: `conflicts with ${clash}` });
      continue;
    }
    fields.add(path);
    for (const p of prefixes) if (!parents.has(p)) parents.set(p, path);
  }
  return errors;
}

const own = (o: JsonObject, k: string): unknown => (Object.hasOwn(o, k) ? o[k] : undefined);
// A plain own property even for names such as `__proto__`: stored JSON never reaches a prototype.
const define = (o: JsonObject, k: string, value: unknown) =>
  Object.defineProperty(o, k, { value, writable: true, enumerable: true, configurable: true });

/**
 * Applies checked paths to `custom` (changed in place): `set` creates missing parents, `unset` of
 * a missing field is a no-op. Setting below a value that is not an object is an error naming
 * `set.<key>`; arrays are values, never traversed.
 */
export function applyPatch(
  custom: JsonObject,
  set: Readonly<JsonObject>,
  unset: readonly string[],
): { custom: JsonObject; errors: FieldError[] } {
  const errors: FieldError[] = [];
  for (const [path, value] of Object.entries(set)) {
    const segments = path.split(".").slice(1);
    const leaf = segments.pop() as string;
    let node: JsonObject | null = custom;
    for (const [i, segment] of segments.entries()) {
      const child: unknown = own(node, segment);
      if (child === undefined) {
        const created: JsonObject = {};
        define(node, segment, created);
        node = created;
      } else if (isObject(child)) {
        node = child;
      } else {
        const parent = ["custom", ...segments.slice(0, i + 1)].join(".");
        errors.push({ path: `set.${path}`, message: `${parent} is not an object` });
        node = null;
        break;
      }
    }
    if (node) define(node, leaf, value);
  }
  for (const path of unset) {
    const segments = path.split(".").slice(1);
    const leaf = segments.pop() as string;
    let node: JsonObject | null = custom;
    for (const segment of segments) {
      const child: unknown = own(node, segment);
      node = isObject(child) ? child : null;
      if (!node) break;
    }
    if (node && Object.hasOwn(node, leaf)) delete node[leaf];
  }
  return { custom, errors };
}

function parseSet(setJson: string): { set: JsonObject; errors: FieldError[] } {
  if (!setJson) return { set: {}, errors: [] };
  try {
    const v: unknown = JSON.parse(setJson);
    if (isObject(v)) return { set: v, errors: [] };
  } catch {
    /* reported below */
  }
  return { set: {}, errors: [{ path: "set", message: "must be an object" }] };
}

// ---------------------------------------------------------------------------------------------

/** Writes are for the tenant's server (and internal callers); users and operators are refused. */
function requireWriter(ctx: HandlerContext): string {
  const tenant = requireTenant(ctx);
  const kind = callerOf(ctx).kind;
  if (kind === "user" || kind === "operator") throw forbidden("server token required");
  return tenant;
}

function refOf(ref: ObjectRef | undefined): ObjectKey {
  const key = { type: ref?.type ?? "", id: ref?.id ?? "" };
  const errors = checkRef(key.type, key.id);
  if (errors.length) throw validationFailed(errors);
  return key;
}

export function createCatalogService(deps: CatalogServiceDeps): ServiceImpl<typeof CatalogService> {
  const { objects } = deps;

  return {
    async putObject(req, ctx) {
      const tenant = requireWriter(ctx);
      const errors = checkObject(req);
      if (errors.length) throw validationFailed(errors);
      const { doc, created } = await objects.put(tenant, { type: req.type, id: req.id, customJson: req.customJson || "{}" });
      return { object: objectToProto(doc), created };
    },

    async getObject(req, ctx) {
      const tenant = requireTenant(ctx);
      const { type, id } = refOf(req.ref);
      const doc = await objects.get(tenant, type, id);
      if (!doc) throw notFound("object not found");
      return { object: objectToProto(doc) };
    },

    async getObjects(req, ctx) {
      const tenant = requireTenant(ctx);
      // Malformed refs can name no object: they are absent like missing ones.
      const refs = new Map<string, ObjectKey>();
      for (const r of req.refs) if (isId(r.type) && isId(r.id)) refs.set(`${r.type}:${r.id}`, { type: r.type, id: r.id });
      if (refs.size > MAX_READ_REFS) throw validationFailed([{ path: "refs", message: `at most ${MAX_READ_REFS} refs` }]);
      if (refs.size === 0) return { objects: [] };
      return { objects: (await objects.getMany(tenant, [...refs.values()])).map(objectToProto) };
    },

    async patchObject(req, ctx) {
      const tenant = requireWriter(ctx);
      const { set, errors: setErrors } = parseSet(req.setJson);
      const errors = [
        ...checkRef(req.ref?.type ?? "", req.ref?.id ?? ""),
        ...(setErrors.length ? setErrors : checkPatchPaths(Object.keys(set), req.unset)),
      ];
      if (errors.length) throw validationFailed(errors);
      const { type, id } = refOf(req.ref);
      // Patches of one object take turns; a put or delete landing meanwhile makes us re-apply.
      const doc = await objects.withObjectLock(tenant, type, id, async () => {
        for (let attempt = 0; attempt < PATCH_ATTEMPTS; attempt++) {
          const current = await objects.get(tenant, type, id);
          if (!current) throw notFound("object not found");
          const patched = applyPatch(JSON.parse(current.custom_json || "{}") as JsonObject, set, req.unset);
          if (patched.errors.length) throw validationFailed(patched.errors);
          const customJson = JSON.stringify(patched.custom);
          if (Buffer.byteLength(customJson) > MAX_CUSTOM_BYTES) {
            throw validationFailed([{ path: "custom", message: "must be at most 64 KB after the patch" }]);
          }
          const next = await objects.replaceCustom(tenant, current, customJson);
          if (next) return next;
        }
        throw internal(new Error("object kept changing during patch"));
      });
      return { object: objectToProto(doc) };
    },

    async deleteObject(req, ctx) {
      const tenant = requireWriter(ctx);
      const { type, id } = refOf(req.ref);
      if (!(await objects.delete(tenant, type, id))) throw notFound("object not found");
      return {};
    },

    async bulkPutObjects(req, ctx) {
      const tenant = requireWriter(ctx);
      if (req.objects.length > MAX_BULK_OBJECTS) {
        throw validationFailed([{ path: "objects", message: `at most ${MAX_BULK_OBJECTS} items` }]);
      }
      // An invalid item fails alone; the valid ones are written together.
      const valid = req.objects.flatMap((o, index) =>
        checkObject(o).length ? [] : [{ index, item: { type: o.type, id: o.id, customJson: o.customJson || "{}" } }],
      );
      const outcomes = valid.length ? await objects.putMany(tenant, valid.map((v) => v.item)) : [];
      const outcomeOf = new Map(valid.map((v, i) => [v.index, outcomes[i]]));
      const results = req.objects.map((_, index) => {
        const outcome = outcomeOf.get(index);
        if (!outcome) return { index, ok: false, code: "VALIDATION_FAILED" };
        return outcome.ok ? { index, ok: true, object: objectToProto(outcome.doc) } : { index, ok: false, code: "INTERNAL" };
      });
      return { results };
    },
  };
}
