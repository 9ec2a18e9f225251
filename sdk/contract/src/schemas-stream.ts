import { z } from "zod";
import { groupPattern, idPattern, idString } from "./schemas.js";

// The live stream (docs/stream.md): `GET /v1/stream` as Server-Sent Events and the single-use
// tickets a browser's EventSource opens it with.

export const streamLimits = {
  /** Feeds one stream watches. */
  feeds: 20,
  /** Characters of a cursor (`Last-Event-ID`, `last_event_id`) or a ticket. */
  tokenChars: 128,
} as const;

const problemOfFeed = (ref: string): string | null => {
  const at = ref.indexOf(":");
  if (at < 0) return `${JSON.stringify(ref.slice(0, 40))} is not a feed (group:id)`;
  if (!groupPattern.test(ref.slice(0, at))) return `group of ${JSON.stringify(ref.slice(0, 40))} must match ^[A-Za-z0-9_]{1,64}$`;
  if (!idPattern.test(ref.slice(at + 1))) return `id of ${JSON.stringify(ref.slice(0, 40))} must match ^[A-Za-z0-9_\\-.@]{1,128}$`;
  return null;
};

/** Feed refs, each once, sorted: the feed set a ticket is bound to and a stream watches. */
export const feedSet = (refs: readonly string[]): string[] => [...new Set(refs)].sort();

const feedList = z.array(z.string().max(194)).superRefine((refs, ctx) => {
  if (refs.length > streamLimits.feeds) ctx.addIssue({ code: "custom", message: `at most ${streamLimits.feeds} feeds` });
  for (const r of refs) {
    const problem = problemOfFeed(r);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }
});

const opaque = z.string().min(1).max(streamLimits.tokenChars).regex(/^[A-Za-z0-9_-]+$/, "malformed");

/** `GET /v1/stream`: `feeds` comma-separated (at most 20), `notifications=true`, `owner` (server tokens). */
export const streamQuery = z.object({
  feeds: z
    .string()
    .max(streamLimits.feeds * 200)
    .optional()
    .transform((s) => (s ? s.split(",") : []))
    .pipe(feedList)
    .describe(`feeds to watch, comma-separated group:id (at most ${streamLimits.feeds})`),
  notifications: z.enum(["true", "false"]).optional().describe("true: watch the caller's notifications (server tokens name owner)"),
  owner: idString.optional().describe("server tokens: whose notifications"),
  last_event_id: opaque.optional().describe("resume after this event (as the Last-Event-ID header; the header wins)"),
  ticket: opaque.optional().describe("a ticket from POST /v1/stream/tickets instead of Authorization (single use, 60 s)"),
});
export type StreamQuery = z.output<typeof streamQuery>;

/** `POST /v1/stream/tickets`: the feed set and notification choice the ticket opens. */
export const streamTicketBody = z.object({
  feeds: feedList.default([]).describe(`feeds to watch, group:id (at most ${streamLimits.feeds})`),
  notifications: z.boolean().default(false),
  owner: idString.optional(),
});
export type StreamTicketBody = z.output<typeof streamTicketBody>;

export const streamTicketSchema = z.object({
  ticket: z.string(),
  expires_at: z.string().datetime(),
});

/** The answer of `GET /v1/stream`, as text. */
export const eventStreamSchema = z
  .string()
  .describe(
    "text/event-stream. `retry: 3000` first, then frames `id: <cursor>`, `event: <type>`, `data: <JSON>`; a comment at least every 15 s. " +
      "Events: activity.added, activity.updated, activity.deleted `{feed, activity}`; notification.added `{notification, unseen, unread, group, groups_unseen, groups_unread}`; " +
      'notification.counts `{unseen, unread, groups_unseen, groups_unread}`; reset `{reason}` (cursor_too_old, consumer_too_slow, server_draining).',
  );
