import { z } from "zod";
import { idString, pageQuery } from "./schemas.js";
import { customObject } from "./schemas-custom.js";

// Request schemas of the promoted-activity routes (contract section 2: create, list, retract;
// lengths and patterns of section 4). Only route schemas are exported: sibling schema modules
// share the package's namespace.

/** Entries per audience list (users, feeds). */
const MAX_AUDIENCE = 1000;

const text = (max: number) => z.string().min(1).max(max);

/** A feed ref `group:id` (group ^[A-Za-z0-9_]{1,64}$, id ^[A-Za-z0-9_\-.@]{1,128}$). */
const feedRefString = z
  .string()
  .regex(/^[A-Za-z0-9_]{1,64}:[A-Za-z0-9_\-.@]{1,128}$/, "must be a feed ref group:id (group ^[A-Za-z0-9_]{1,64}$, id ^[A-Za-z0-9_\\-.@]{1,128}$)");

/**
 * Targeting: users (end-user ids) and/or feeds (`group:id`), at most 1000 of each. It must name
 * at least one user or feed; omit it (or send null) to show the record to every read.
 */
const audience = z
  .object({
    users: z.array(idString).max(MAX_AUDIENCE, `at most ${MAX_AUDIENCE} users`).optional(),
    feeds: z.array(feedRefString).max(MAX_AUDIENCE, `at most ${MAX_AUDIENCE} feeds`).optional(),
  })
  .refine((a) => (a.users?.length ?? 0) + (a.feeds?.length ?? 0) > 0, {
    message: "must name at least one user or feed (omit audience to show to every read)",
  });

/** `POST /v1/promoted`: actor, verb and object required; custom defaults to `{}`. */
export const createPromotedBody = z.object({
  actor: text(256),
  verb: text(64),
  object: text(256),
  custom: customObject.default({}),
  audience: audience.nullish(),
});
export type CreatePromotedBody = z.infer<typeof createPromotedBody>;

/** `GET /v1/promoted`: `limit` 1..100 (default 20), `next`, `cursor` (next wins). */
export const promotedPageQuery = pageQuery.extend({ limit: z.coerce.number().int().min(1).max(100).default(20) });

const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** Promoted ids are UUIDs: anything else names no promoted activity. */
export const isPromotedId = (id: string): boolean => uuidPattern.test(id);

/** `{id}` of `/v1/promoted/{id}`. The gateway answers 404 for an id that is not a UUID. */
export const promotedIdParams = z.object({ id: z.string().min(1).max(2048) });
