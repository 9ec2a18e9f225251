import { internal, isoOf, validationFailed } from "@feeds/kit";
import { batchObjectItem, operations } from "@feeds/contract";
import type { FeedObject } from "@feeds/proto/feeds/catalog/v1/catalog";
import type { RouteTable } from "../define.js";
import { runBatch } from "../batch.js";
import type { Clients } from "@feeds/kit";
import { customOf } from "../json.js";
import { bulkObjectsWeight } from "../rate-weights.js";

/** The interface's Object: `{type, id, custom, updated_at}`. */
export const objectJson = (o: FeedObject | undefined) =>
  o && { type: o.type, id: o.id, custom: customOf(o.customJson), updated_at: isoOf(o.updatedAt) };

/** Objects (`type:id`) and their batch import: reads open to any token, writes server only. */
export function objectRoutes(r: RouteTable, clients: Pick<Clients, "catalog">) {
  const refOf = (p: { type: string; id: string }) => ({ ref: { type: p.type, id: p.id } });

  r.handle(operations.putObject, {
    async handler({ params, body, call, reply }) {
      const res = await clients.catalog.putObject({ type: params.type, id: params.id, customJson: JSON.stringify(body.custom) }, call);
      reply.code(res.created ? 201 : 200);
      return objectJson(res.object);
    },
  });

  r.handle(operations.getObject, {
    async handler({ params, call }) {
      const res = await clients.catalog.getObject(refOf(params), call);
      return objectJson(res.object);
    },
  });

  r.handle(operations.patchObject, {
    async handler({ params, body, call }) {
      const res = await clients.catalog.patchObject(
        { ...refOf(params), setJson: JSON.stringify(body.set ?? {}), unset: body.unset ?? [] },
        call,
      );
      return objectJson(res.object);
    },
  });

  r.handle(operations.deleteObject, {
    async handler({ params, call }) {
      await clients.catalog.deleteObject(refOf(params), call);
    },
  });

  r.handle(operations.getObjects, {
    async handler({ query, call }) {
      const res = await clients.catalog.getObjects({ refs: query.refs }, call);
      const objects: Record<string, ReturnType<typeof objectJson>> = {};
      for (const o of res.objects) objects[`${o.type}:${o.id}`] = objectJson(o);
      return { objects };
    },
  });

  r.handle(operations.bulkObjects, {
    weight: bulkObjectsWeight,
    async handler({ body, call }) {
      const res = await clients.catalog.bulkPutObjects(
        { objects: body.objects.map((o) => ({ type: o.type, id: o.id, customJson: JSON.stringify(o.custom) })) },
        call,
      );
      // Items were validated here; a failed one can only be a server fault, and a rerun is safe.
      const failed = res.results.find((x) => !x.ok);
      if (failed) {
        if (failed.code === "VALIDATION_FAILED") {
          throw validationFailed([{ path: `objects.${failed.index}`, message: "invalid object" }]);
        }
        throw internal(new Error(`bulk upsert: objects.${failed.index} failed with ${failed.code}`));
      }
      return { results: res.results.map((x) => objectJson(x.object)) };
    },
  });

  r.handle(operations.batchObjects, {
    batch: true,
    async handler({ body, call }) {
      return runBatch(
        body.objects,
        (raw) => {
          const c = batchObjectItem.safeParse(raw);
          return c.success ? { type: c.data.type, id: c.data.id, customJson: JSON.stringify(c.data.custom) } : null;
        },
        async (objects) => (await clients.catalog.bulkPutObjects({ objects }, call)).results.map((r) => ({ ...r, id: "" })),
      );
    },
  });
}
