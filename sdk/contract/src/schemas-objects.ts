import { z } from "zod";
import { idPattern, idString } from "./schemas.js";
import { customObject } from "./schemas-custom.js";
import { patchPathIssues, patchSet, patchUnset } from "./schemas-patch.js";

// Request schemas of the object routes (`type:id`). Object type and id follow the contract's
// id rule (section 4); custom follows the one custom rule (schemas-custom.ts).

/** Items of `POST /v1/objects/bulk` and `POST /v1/batch/objects`, refs of `GET /v1/objects`. */
export const MAX_OBJECTS_PER_CALL = 100;

export const objectParams = z.object({ type: idString, id: idString });

export const putObjectBody = z.object({ custom: customObject });

/**
 * Patch body: `set` maps `custom.<path>` to a value, `unset` lists `custom.<path>`s. At least
 * one path; no path may repeat or contain another (named `set.<key>` or `unset.<index>`);
 * counts, lengths, depth and size within `requestLimits`.
 */
export const patchObjectBody = z
  .object({
    set: patchSet.optional(),
    unset: patchUnset.optional(),
  })
  .superRefine((b, ctx) => {
    for (const issue of patchPathIssues(b.set, b.unset, { dollarSegments: true })) ctx.addIssue({ code: "custom", ...issue });
    if (Object.keys(b.set ?? {}).length === 0 && (b.unset ?? []).length === 0) {
      ctx.addIssue({ code: "custom", path: [], message: "set or unset is required" });
    }
  });

/** One object of a bulk upsert or batch import: type, id and custom are all required. */
export const batchObjectItem = z.object({ type: idString, id: idString, custom: customObject });

/** Bulk upsert validates every item: a bad one answers 400 naming it (`objects.3.id`). */
export const bulkObjectsBody = z.object({
  objects: z.array(batchObjectItem).min(1, "at least 1 item").max(MAX_OBJECTS_PER_CALL, `at most ${MAX_OBJECTS_PER_CALL} items`),
});

/** Batch import answers 400 only for the list itself; each item is checked on its own (batchObjectItem). */
export const batchObjectsBody = z.object({
  objects: z
    .array(z.looseObject({}))
    .min(1, "at least 1 item")
    .max(MAX_OBJECTS_PER_CALL, `at most ${MAX_OBJECTS_PER_CALL} items`),
});

const refPattern = new RegExp(`^${idPattern.source.slice(1, -1)}:${idPattern.source.slice(1, -1)}$`);

/** `refs=a:1,b:2`: 1..100 comma-separated `type:id` refs; parsed to distinct {type, id}. */
export const objectRefsQuery = z.object({
  refs: z
    .string()
    .superRefine((s, ctx) => {
      const refs = s.split(",");
      if (refs.length > MAX_OBJECTS_PER_CALL) ctx.addIssue({ code: "custom", message: `at most ${MAX_OBJECTS_PER_CALL} refs` });
      const bad = refs.find((r) => !refPattern.test(r));
      if (bad !== undefined) ctx.addIssue({ code: "custom", message: `each ref must be type:id (got ${JSON.stringify(bad.slice(0, 300))})` });
    })
    .transform((s) => [...new Set(s.split(","))].map((r) => ({ type: r.slice(0, r.indexOf(":")), id: r.slice(r.indexOf(":") + 1) }))),
});
