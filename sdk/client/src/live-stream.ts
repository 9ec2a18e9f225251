import { FeedsApiError } from "@feeds/contract/errors";
import { routeTable } from "@feeds/contract/routes";
import type { HttpClient } from "./http.js";
import type { Activity, Notification } from "@feeds/contract";

// The live stream with automatic resume (docs/stream.md): each connection is opened with a fresh
// single-use ticket (minted with the client's token) and `last_event_id` = the id of the last
// frame read, so a reconnect after a dropped connection, a draining gateway or a slow read
// continues exactly after what was received. A GET that carries no header also needs no CORS
// preflight.

export type StreamEventType = "activity.added" | "activity.updated" | "activity.deleted" | "notification.added" | "notification.counts" | "reset";

/** One event of the stream; `id` is its cursor (pass it as `lastEventId` to resume after it later). */
export type StreamEvent =
  | { id: string; type: "activity.added" | "activity.updated" | "activity.deleted"; data: { feed: string; activity: Activity } }
  | {
      id: string;
      type: "notification.added";
      data: {
        notification: Notification;
        unseen: number;
        unread: number;
        /** The notification's group after it, and the owner's groups with an unseen (unread) member. */
        group: { group_key: string; activity_count: number; actor_count: number };
        groups_unseen: number;
        groups_unread: number;
      };
    }
  | { id: string; type: "notification.counts"; data: { unseen: number; unread: number; groups_unseen: number; groups_unread: number } }
  /** Events were missed (`cursor_too_old`): refetch over REST. */
  | { id: string; type: "reset"; data: { reason: string } };

export interface StreamOptions {
  /** Feeds to watch (`group:id`, at most 20). */
  feeds?: readonly string[];
  /** Watch the caller's notifications. */
  notifications?: boolean;
  /** Server tokens: whose notifications. */
  owner?: string;
  /** Resume after this event (an earlier `StreamEvent.id`). */
  lastEventId?: string;
  /** Ends the iteration. */
  signal?: AbortSignal;
}

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
}

/** The frames of an SSE body, as they arrive. */
async function* framesOf(body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let frame: Frame = {};
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        if (line === "") {
          yield frame;
          frame = {};
        } else if (!line.startsWith(":")) {
          const at = line.indexOf(":");
          const field = at < 0 ? line : line.slice(0, at);
          const v = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
          if (field === "id") frame.id = v;
          else if (field === "event") frame.event = v;
          else if (field === "data") frame.data = frame.data === undefined ? v : `${frame.data}\n${v}`;
          else if (field === "retry" && /^\d+$/.test(v)) frame.retry = Number(v);
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

const wait = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });

/**
 * The stream as an async iterator: every event in order, each once, across reconnects. Errors
 * a retry cannot fix (400, 401 after the token refresh, 403) end it by throwing FeedsApiError.
 */
export async function* liveStream(http: HttpClient, mint: (body: unknown) => Promise<{ ticket: string }>, o: StreamOptions): AsyncGenerator<StreamEvent, void, undefined> {
  let cursor = o.lastEventId;
  let retryMs = 3000;
  const body = { feeds: [...(o.feeds ?? [])], notifications: o.notifications ?? false, ...(o.owner !== undefined ? { owner: o.owner } : {}) };
  const query = { feeds: (o.feeds ?? []).join(",") || undefined, notifications: o.notifications ? "true" : undefined, owner: o.owner };
  while (!o.signal?.aborted) {
    let res: Response;
    try {
      // The route caller retries a 429 or 500 of its own and asks the token provider after a 401.
      const { ticket } = await mint(body);
      res = await http.openStream(routeTable.stream.openStream.path, { ...query, ticket, last_event_id: cursor }, o.signal);
    } catch (e) {
      if (o.signal?.aborted) return;
      if (e instanceof FeedsApiError && !e.retryable && e.status !== 0) throw e;
      await wait(retryMs, o.signal);
      continue;
    }
    if (res.status !== 200) {
      const err = FeedsApiError.fromResponse({ status: res.status, headers: res.headers, bodyText: await res.text(), url: res.url, method: "GET" });
      if (err.status === 400 && cursor !== undefined && err.fields.some((f) => f.path === "last_event_id")) {
        // A cursor this service cannot resume from: start afresh, and say so as the server would.
        cursor = undefined;
        yield { id: "", type: "reset", data: { reason: "cursor_too_old" } };
        continue;
      }
      // A ticket refused (expired meanwhile) is minted again; 429 and 5xx after their wait.
      if (err.status !== 401 && !err.retryable) throw err;
      await wait(err.retryAfterSeconds !== undefined ? err.retryAfterSeconds * 1000 : retryMs, o.signal);
      continue;
    }
    if (!res.body) throw new TypeError("the fetch implementation does not stream answers");
    try {
      for await (const f of framesOf(res.body)) {
        if (f.retry !== undefined) retryMs = f.retry;
        if (f.id !== undefined) cursor = f.id;
        if (f.event === undefined) continue;
        const data = f.data === undefined ? undefined : (JSON.parse(f.data) as unknown);
        // consumer_too_slow and server_draining are the transport's: the reconnect resumes.
        if (f.event === "reset" && (data as { reason?: unknown } | undefined)?.reason !== "cursor_too_old") continue;
        yield { id: cursor ?? "", type: f.event, data } as StreamEvent;
      }
    } catch (e) {
      if (o.signal?.aborted) return;
      if (e instanceof SyntaxError) throw e;
    }
    await wait(retryMs, o.signal);
  }
}
