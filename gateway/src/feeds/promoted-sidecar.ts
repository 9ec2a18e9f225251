import type { CallOptions } from "@connectrpc/connect";
import { isoOf } from "@feeds/kit";
import type { PromotedRecord } from "@feeds/proto/feeds/feed/v1/feed";
import { customOf } from "../json.js";
import type { Clients } from "@feeds/kit";

// Promoted activities as JSON: the sidecar entry of a feed read (interface section 2) and the
// stored record the server-token routes answer (contract section 2).

/** Entry of the `promoted` sidecar: no audience, no served_count, no time (interface section 2). */
export interface PromotedJson {
  id: string;
  actor: string;
  verb: string;
  object: string;
  custom: Record<string, unknown>;
  promoted: true;
}

/** The stored record (answer to create, entries of `GET /v1/promoted`). */
export interface PromotedRecordJson extends PromotedJson {
  audience: { users: string[]; feeds: string[] } | null;
  served_count: number;
  created_at: string | null;
  retracted_at: string | null;
}

export const promotedJson = (r: PromotedRecord): PromotedJson => ({
  id: r.id,
  actor: r.actor,
  verb: r.verb,
  object: r.object,
  custom: customOf(r.customJson),
  promoted: true,
});

export const promotedRecordJson = (r: PromotedRecord): PromotedRecordJson => ({
  ...promotedJson(r),
  audience: r.audience ? { users: [...r.audience.users], feeds: [...r.audience.feeds] } : null,
  served_count: Number(r.servedCount),
  created_at: isoOf(r.createdAt),
  retracted_at: isoOf(r.retractedAt),
});

/**
 * The `promoted` sidecar of a first-page feed read: the live promoted activities this read is
 * eligible for (no audience → every read; else a feed in `audience.feeds`, or the user of a user
 * token in `audience.users`), newest first. Each entry counts one delivery toward served_count.
 * Callers include it only when the request carried no next/cursor, and never let it affect `next`.
 * `userId` is the end-user of a user token; null for server tokens and operators.
 */
export async function promotedSidecar(
  clients: Pick<Clients, "promoted">,
  call: CallOptions,
  feed: { group: string; id: string },
  userId: string | null,
): Promise<PromotedJson[]> {
  const res = await clients.promoted.servePromoted({ feed: { group: feed.group, id: feed.id }, userId: userId ?? "" }, call);
  return res.records.map(promotedJson);
}
