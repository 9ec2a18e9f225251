import type { FastifyInstance, FastifyRequest } from "fastify";
import { decodeJwt } from "jose";
import {
  FeedsError,
  forbidden,
  LIVE_AGE_MARGIN_MS,
  markWatched,
  ownerWatchName,
  processMetrics,
  liveFeedSubject,
  liveOwnerSubject,
  unauthenticated,
  validationFailed,
  type Config,
  type Logger,
  type Nats,
  type RedisConn,
} from "@feeds/kit";
import { feedSet, operations } from "@feeds/contract";
import { bearerOf, type TenantAuth } from "../auth.js";
import { corsHeadersOf } from "../cors.js";
import type { RouteTable } from "../define.js";
import { decodeCursor } from "../stream/cursor.js";
import type { LiveHub } from "../stream/hub.js";
import { createSession, type Session } from "../stream/session.js";
import type { StreamSlots } from "../stream/slots.js";
import { sameSelection, type Selection, type Tickets } from "../stream/tickets.js";

// GET /v1/stream and POST /v1/stream/tickets (docs/stream.md).

export interface StreamDeps {
  hub: LiveHub;
  tickets: Tickets;
  slots: StreamSlots;
  /** Where the watched feeds and owners are marked (kit's markWatched: producers buffer only their events). */
  redis: RedisConn;
  nats: Nats;
  log: Logger;
  config: Pick<Config, "STREAM_REPLAY_WINDOW_MS" | "STREAM_MAX_PER_USER" | "STREAM_MAX_PER_SERVER" | "STREAM_MAX_PER_PROCESS" | "STREAM_MARK_RENEW_MS">;
  /** Milliseconds between comment frames (at most 15 s). */
  heartbeatMs?: number;
}

/** When the token a stream authenticated with expires (ms), or null when it does not. */
function expiryOf(authorization: string | undefined): number | null {
  try {
    const exp = decodeJwt(bearerOf(authorization)).exp;
    return typeof exp === "number" ? exp * 1000 : null;
  } catch {
    return null;
  }
}

/** A comment frame at least this often: proxies keep the connection, clients see it alive. */
export const HEARTBEAT_MS = 15_000;
/** The Retry-After of a 429 for a principal's sixth stream, or a process at its limit (seconds). */
const STREAM_RETRY_AFTER_S = 5;

/** The selection a request names, checked against its caller (403 for another user's notifications). */
function selectionOf(t: TenantAuth, feeds: readonly string[], notifications: boolean, owner: string | undefined): Selection {
  if (feeds.length === 0 && !notifications) throw validationFailed([{ path: "feeds", message: "name feeds and/or notifications=true" }]);
  let who: string | null = null;
  if (notifications) {
    if (t.kind === "user") {
      if (owner !== undefined && owner !== t.userId) throw forbidden("another user's notifications");
      who = t.userId;
    } else {
      if (owner === undefined) throw validationFailed([{ path: "owner", message: "server tokens name whose notifications (owner)" }]);
      who = owner;
    }
  }
  return { feeds: feedSet(feeds), notifications, owner: who };
}

export function streamRoutes(app: FastifyInstance, r: RouteTable, deps: StreamDeps) {
  const { hub, tickets, slots, nats, log, config } = deps;
  const sessions = new Set<Session>();
  /**
   * The tenant and what each open session watches: its feeds, and `ownerWatchName(owner)` for its
   * notifications (their marks are renewed while it is open).
   */
  const watching = new Map<Session, { tenantId: string; feeds: readonly string[] }>();
  const markTtlMs = config.STREAM_REPLAY_WINDOW_MS + LIVE_AGE_MARGIN_MS;

  /** The mark (its sequence) this gateway last saw for each watched feed, by `<tenant>\n<feed>`. */
  const seen = new Map<string, number>();
  const markKey = (tenantId: string, feed: string) => `${tenantId}\n${feed}`;
  /**
   * Takes note of the marks a stream open or a renewal found. A mark other than the one seen
   * before was made anew, by this gateway or another: Redis lost the old one, and producers may
   * have left events out meanwhile. The sessions on those feeds end (their clients' resumes are
   * told `reset`), except `keep` (the stream being opened, whose own check covers it).
   */
  function noteMarks(tenantId: string, since: ReadonlyMap<string, number>, keep?: Session): void {
    const lost = new Set<string>();
    for (const [feed, seq] of since) {
      const k = markKey(tenantId, feed);
      const before = seen.get(k);
      if (before !== undefined && Number.isFinite(before) && seq !== before) lost.add(feed);
      seen.set(k, seq);
    }
    if (lost.size === 0) return;
    log.warn({ tenant: tenantId, feeds: lost.size }, "live stream marks were made anew; the streams on those feeds end and resume with a reset");
    for (const [s, w] of watching) if (s !== keep && w.tenantId === tenantId && w.feeds.some((f) => lost.has(f))) s.end();
  }

  /**
   * Renews every watched feed's mark (every STREAM_MARK_RENEW_MS; a mark lasts the replay window
   * and an hour after), and forgets the marks of feeds no session watches any more.
   */
  async function renewMarks(): Promise<void> {
    const byTenant = new Map<string, Set<string>>();
    for (const { tenantId, feeds } of watching.values()) {
      const set = byTenant.get(tenantId) ?? new Set<string>();
      for (const f of feeds) set.add(f);
      byTenant.set(tenantId, set);
    }
    for (const k of seen.keys()) {
      const [tenantId = "", feed = ""] = k.split("\n");
      if (!byTenant.get(tenantId)?.has(feed)) seen.delete(k);
    }
    for (const [tenantId, feeds] of byTenant) noteMarks(tenantId, (await markWatched(nats, deps.redis, tenantId, [...feeds], markTtlMs)).since);
  }
  const renewTimer = setInterval(() => {
    renewMarks().catch((err: unknown) => log.warn({ err: String(err) }, "live stream marks not renewed"));
  }, config.STREAM_MARK_RENEW_MS);
  renewTimer.unref();
  app.addHook("onClose", async () => clearInterval(renewTimer));
  /** The selection and token of the ticket a request was authenticated by. */
  const ticketSelection = new WeakMap<FastifyRequest, Selection>();
  const ticketToken = new WeakMap<FastifyRequest, string>();

  // A draining gateway ends its streams with a last frame; their clients resume elsewhere.
  app.addHook("preClose", async () => {
    for (const s of [...sessions]) s.end("server_draining");
  });

  r.handle(operations.streamTicket, {
    async handler({ req, body, tenant }) {
      const selection = selectionOf(tenant as TenantAuth, body.feeds, body.notifications, body.owner);
      return tickets.mint(req.headers.authorization ?? "", selection);
    },
  });

  r.handle(operations.openStream, {
    admission: "stream",
    async credential(req) {
      const ticket = (req.query as Record<string, unknown> | undefined)?.ticket;
      if (ticket === undefined) return undefined;
      if (typeof ticket !== "string" || !/^[A-Za-z0-9_-]{1,128}$/.test(ticket)) throw unauthenticated("malformed ticket");
      const stored = await tickets.take(ticket);
      if (!stored) throw unauthenticated("unknown, used or expired ticket");
      ticketSelection.set(req, stored.selection);
      ticketToken.set(req, stored.authorization);
      return stored.authorization;
    },
    async handler({ req, reply, query, tenant }) {
      const t = tenant as TenantAuth;
      const selection = selectionOf(t, query.feeds, query.notifications === "true", query.owner);
      const bound = ticketSelection.get(req);
      if (bound && !sameSelection(bound, selection)) throw unauthenticated("the ticket was minted for another selection");
      const header = req.headers["last-event-id"];
      const given = typeof header === "string" && header !== "" ? header : query.last_event_id;
      const after = given === undefined ? null : decodeCursor(given);
      if (given !== undefined && !after) throw validationFailed([{ path: "last_event_id", message: "malformed cursor" }]);

      if (sessions.size >= config.STREAM_MAX_PER_PROCESS) {
        throw new FeedsError("RATE_LIMITED", "this gateway holds its most streams; retry after the wait", [], { retryAfterSeconds: STREAM_RETRY_AFTER_S });
      }
      const principal = t.kind === "user" ? `user:${t.userId}` : "server";
      const slot = await slots.take(t.tenant.id, principal, t.kind === "user" ? config.STREAM_MAX_PER_USER : config.STREAM_MAX_PER_SERVER);
      if (!slot) throw new FeedsError("RATE_LIMITED", "too many open streams; retry after the wait", [], { retryAfterSeconds: STREAM_RETRY_AFTER_S });

      const subjects = [
        ...selection.feeds.map((f) => liveFeedSubject(nats, t.tenant.id, f)),
        ...(selection.owner !== null ? [liveOwnerSubject(nats, t.tenant.id, selection.owner)] : []),
      ];
      const res = reply.raw;
      const session = createSession({
        res,
        hub,
        subjects,
        heartbeatMs: deps.heartbeatMs ?? HEARTBEAT_MS,
        log,
        onBeat: () => void slot.renew().catch((err: unknown) => log.warn({ err: String(err) }, "stream lease not renewed")),
        onEnd: () => {
          watching.delete(session);
          if (sessions.delete(session)) processMetrics().streamsOpen.dec();
          void slot.release().catch((err: unknown) => log.warn({ err: String(err) }, "stream slot not released"));
        },
      });
      // Marked as watched: the feeds, and the owner's notifications.
      const watched = [...selection.feeds, ...(selection.owner !== null ? [ownerWatchName(selection.owner)] : [])];
      let at, stale;
      let marks: Awaited<ReturnType<typeof markWatched>>;
      try {
        // The watcher is registered (in createSession) before the stream's end is read: every
        // event after `at` reaches it.
        // The feeds (and the owner) are marked watched from here on: their events go into the
        // buffer. A resume is complete only where each mark is at or before its cursor. The stream's end is
        // read after the marks (a new mark's message is behind it).
        marks = await markWatched(nats, deps.redis, t.tenant.id, watched, markTtlMs);
        at = await hub.position();
        if (after && after.seq > at.seq) throw validationFailed([{ path: "last_event_id", message: "cursor from the future" }]);
        const unmarked = after !== null && watched.some((f) => !((marks.since.get(f) ?? NaN) <= after.seq));
        stale = after ? unmarked || (await hub.tooOld(subjects, after, config.STREAM_REPLAY_WINDOW_MS)) : false;
      } catch (e) {
        session.cancel();
        await slot.release().catch(() => undefined);
        throw e;
      }
      sessions.add(session);
      watching.set(session, { tenantId: t.tenant.id, feeds: watched });
      noteMarks(t.tenant.id, marks.since, session);
      processMetrics().streamsOpen.inc();
      reply.hijack();
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = String(v);
      res.writeHead(200, {
        ...headers,
        ...corsHeadersOf(req.headers.origin, t.tenant),
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
      });
      // The stream ends when its token expires: the client resumes with a fresh one (checked anew
      // for revocation and suspension), losing nothing.
      const exp = expiryOf(ticketToken.get(req) ?? req.headers.authorization);
      if (exp !== null) {
        const timer = setTimeout(() => session.end(), Math.min(Math.max(0, exp - Date.now()), 2 ** 31 - 1));
        timer.unref();
        res.once("close", () => clearTimeout(timer));
      }
      session.run(at, after, stale).catch((err: unknown) => {
        log.warn({ err: String(err), requestId: req.id }, "stream replay failed; the client resumes");
        session.end();
      });
      return reply;
    },
  });

  return { open: () => sessions.size };
}
