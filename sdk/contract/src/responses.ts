import { z } from "zod";
import { queueParams } from "./schemas.js";

// Response schemas: the answers of the routes (interface section 2, contract section 2), shared
// by the gateway (its OpenAPI document) and the SDK (its types, and `validateResponses`). This
// module holds the parts every area uses, users, batch results and health; the areas have their
// own `responses-*.ts`.

/** An ISO 8601 date-time in UTC, as every answer writes it (`2024-05-01T12:00:00.000Z`). */
export const isoDateTime = z.iso.datetime();
/** Activity, reaction, comment, notification, promoted and destination ids. */
export const uuidString = z.uuid();
/** Arbitrary JSON object (`custom`). */
export const jsonObjectSchema = z.record(z.string(), z.unknown());
const count = z.number().int().min(0);

/** `{results, next}`: `next` is null on the last page. */
export const pageOf = <T extends z.ZodType>(item: T) => z.object({ results: z.array(item), next: z.string().nullable() });

/** `actor_user` on activities and notifications: the actor's user record when actor is `user:<id>`. */
export const actorUserSchema = z.object({ id: z.string(), custom: jsonObjectSchema });

// Users

export const userSchema = z.object({ id: z.string(), custom: jsonObjectSchema, created_at: isoDateTime, updated_at: isoDateTime });
export const revokeTokensSchema = z.object({ revoked_before: isoDateTime });

// Batch import

export const batchResultItemSchema = z.object({
  index: z.number().int().min(0).describe("position in the input"),
  ok: z.boolean(),
  id: z.string().optional().describe("present when ok, for users and activities"),
  code: z.string().optional().describe("error code, present when not ok"),
});
export const batchResultSchema = z.object({ results: z.array(batchResultItemSchema) });

// Health and monitoring

export const healthSchema = z.object({ status: z.string(), version: z.string().describe("the running build") });
export const readinessCheckSchema = z.object({ name: z.string(), ok: z.boolean() });
/** 200 `{status: "ok", checks}`; 503 `{status: "unavailable", checks}` naming the failing check. */
export const readinessSchema = z.object({ status: z.enum(["ok", "unavailable"]), checks: z.array(readinessCheckSchema) });
export const queueDepthSchema = z.object({ queue: queueParams.shape.queue, pending: count, dlq_depth: count });
export const adminQueuesSchema = z.object({ queues: z.array(queueDepthSchema) });
