import { z } from "zod";
import { groupPattern, groupString, idPattern, idString, pageQuery } from "./schemas.js";
import { customObject } from "./schemas-custom.js";
import { patchPathIssues, patchSet, patchUnset } from "./schemas-patch.js";

// Request schemas of the activity and feed routes (interface section 4, contract sections 2 and 4).

// Only route schemas are exported: sibling schema modules share the package's namespace.

/** refs per activity: at most 4, no duplicates, each `type:id`. */
const MAX_REFS = 4;

const idChars = "[A-Za-z0-9_\\-.@]{1,128}";
/** `type:id` where type and id each match the contract's id pattern. */
const refPattern = new RegExp(`^${idChars}:${idChars}$`);
const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** Activity ids are UUIDs: anything else names no activity. */
export const isActivityId = (id: string): boolean => uuidPattern.test(id);

const refString = z.string().regex(refPattern, "must be type:id, each matching ^[A-Za-z0-9_\\-.@]{1,128}$");

/** At most 4 `type:id` refs, no duplicates (a duplicate is named by its index, e.g. `refs.2`). */
const refsList = z
  .array(refString)
  .max(MAX_REFS, `at most ${MAX_REFS} refs`)
  .superRefine((refs, ctx) => {
    const seen = new Set<string>();
    refs.forEach((ref, i) => {
      if (seen.has(ref)) ctx.addIssue({ code: "custom", path: [i], message: "duplicate ref" });
      seen.add(ref);
    });
  });

/** ISO 8601 date-time with a zone (`Z` or an offset) that names a real instant. */
const dateTime = z.iso
  .datetime({ offset: true })
  .refine((s) => !Number.isNaN(Date.parse(s)), { message: "must be a valid date-time" });

const text = (max: number) => z.string().min(1).max(max);

/** `{group, id}` of a feed path. */
export const feedParams = z.object({ group: groupString, id: idString });
export type FeedParams = z.infer<typeof feedParams>;

/** `{id}` of an activity path. The gateway answers 404 for an id that is not a UUID. */
export const activityIdParams = z.object({ id: z.string().min(1).max(2048) });

/** Feed and inspector pages: `limit` 1..100 (default 20), `next`, `cursor` (next wins). */
export const feedPageQuery = pageQuery.extend({ limit: z.coerce.number().int().min(1).max(100).default(20) });
export type FeedPageQuery = z.infer<typeof feedPageQuery>;

/**
 * Add activity body. `verb` and `object` are required; `actor` is required for server tokens
 * (checked by the gateway, which knows the token) and overwritten for user tokens. `foreign_id`
 * requires `time`. `custom` defaults to `{}`, `refs` to `[]`, `time` to now. A null optional
 * field counts as absent.
 */
export const addActivityBody = z
  .object({
    actor: text(256).nullish(),
    verb: text(64),
    object: text(256),
    target: text(256).nullish(),
    foreign_id: text(256).nullish(),
    time: dateTime.nullish(),
    custom: customObject.default({}),
    refs: refsList.default([]),
  })
  .superRefine((b, ctx) => {
    if (b.foreign_id != null && b.time == null) {
      ctx.addIssue({ code: "custom", path: ["time"], message: "required when foreign_id is set" });
    }
  });
export type AddActivityBody = z.infer<typeof addActivityBody>;

/**
 * Patch body: `set` maps `custom.<path>` to a value, `unset` lists `custom.<path>`s (no segment
 * starting with `$`), `refs` replaces the refs. At least one change; no path may repeat or
 * contain another; counts, lengths, depth and size within `requestLimits`.
 */
export const patchActivityBody = z
  .object({
    set: patchSet.optional(),
    unset: patchUnset.optional(),
    refs: refsList.optional(),
  })
  .superRefine((b, ctx) => {
    for (const issue of patchPathIssues(b.set, b.unset, { dollarSegments: false })) ctx.addIssue({ code: "custom", ...issue });
    if (Object.keys(b.set ?? {}).length === 0 && (b.unset ?? []).length === 0 && b.refs === undefined) {
      ctx.addIssue({ code: "custom", path: [], message: "set, unset or refs is required" });
    }
  });
export type PatchActivityBody = z.infer<typeof patchActivityBody>;

/** `POST /v1/batch/activities`: 400 only for the list itself; each item is checked on its own. */
export const batchActivitiesBody = z.object({
  activities: z.array(z.looseObject({})).min(1, "at least 1 item").max(100, "at most 100 items"),
});

/**
 * One item of a batch import of activities: the destination feed ref and an add-activity body
 * whose `actor` is required (batch routes are server-only). An item that fails this fails alone;
 * the feed service checks the rest of each activity.
 */
export const batchActivityItem = z.object({
  feed: z.string().refine((f) => {
    const i = f.indexOf(":");
    return i > 0 && groupPattern.test(f.slice(0, i)) && idPattern.test(f.slice(i + 1));
  }, "must be group:id"),
  activity: z.object({
    actor: z.string(),
    verb: z.string(),
    object: z.string(),
    target: z.string().optional(),
    foreign_id: z.string().optional(),
    time: z.iso.datetime({ offset: true }).optional(),
    custom: customObject.default({}),
    refs: z.array(z.string()).default([]),
  }),
});
