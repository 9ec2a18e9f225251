import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  MAX_CUSTOM_BYTES,
  checkPatchPaths,
  internal,
  isId,
  notFound,
  patchCustomJson,
  requireServer,
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
/** Compare-and-set rounds of a patch racing other writes of the same object (each round one of
 * the racers wins, so this many racing patches of one object all land). */
const PATCH_ATTEMPTS = 64;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
// Patches: kit's one path walker (`checkPatchPaths`, `patchCustomJson`) holds the path rules.

/** At least one path; the rest is kit's: `custom.` paths, no reserved segments, no overlaps. */
function checkPatch(setKeys: readonly string[], unset: readonly string[]): FieldError[] {
  if (setKeys.length === 0 && unset.length === 0) return [{ path: "", message: "set or unset is required" }];
  return checkPatchPaths(setKeys, unset);
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
      const tenant = requireServer(ctx);
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
      const tenant = requireServer(ctx);
      const { set, errors: setErrors } = parseSet(req.setJson);
      const errors = [
        ...checkRef(req.ref?.type ?? "", req.ref?.id ?? ""),
        ...(setErrors.length ? setErrors : checkPatch(Object.keys(set), req.unset)),
      ];
      if (errors.length) throw validationFailed(errors);
      const { type, id } = refOf(req.ref);
      // Read, apply, write back conditioned on the version read: a write landing meanwhile (a
      // patch, put or delete) makes us read and apply again.
      for (let attempt = 0; attempt < PATCH_ATTEMPTS; attempt++) {
        const current = await objects.get(tenant, type, id);
        if (!current) throw notFound("object not found");
        const next = await objects.replaceCustom(tenant, current, patchCustomJson(current.custom_json, set, req.unset));
        if (next) return { object: objectToProto(next) };
        // Racers that lost together do not all come back together.
        await sleep(Math.random() * Math.min(attempt + 1, 10));
      }
      throw internal(new Error("object kept changing during patch"));
    },

    async deleteObject(req, ctx) {
      const tenant = requireServer(ctx);
      const { type, id } = refOf(req.ref);
      if (!(await objects.delete(tenant, type, id))) throw notFound("object not found");
      return {};
    },

    async bulkPutObjects(req, ctx) {
      const tenant = requireServer(ctx);
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
