import { createHash, randomBytes } from "node:crypto";
import type { RedisConn } from "@feeds/kit";

// Stream tickets (docs/stream.md): `EventSource` cannot send an Authorization header, so a client
// mints a ticket with its token and opens the stream with `?ticket=`. A ticket is 256 random bits,
// kept in Redis only as a hash, for TICKET_TTL_S, and taken once (GETDEL). It holds the token that
// minted it (the stream authenticates as that token: a token revoked or expired since, or a
// suspended tenant, is refused) and the selection it was minted for, which the stream must name.

export const TICKET_TTL_S = 60;

export interface Selection {
  feeds: string[];
  notifications: boolean;
  /** Whose notifications (server tokens). */
  owner: string | null;
}

interface Stored {
  authorization: string;
  selection: Selection;
}

const hashOf = (ticket: string) => createHash("sha256").update(ticket).digest("base64url");

export const sameSelection = (a: Selection, b: Selection) =>
  a.notifications === b.notifications && a.owner === b.owner && a.feeds.length === b.feeds.length && a.feeds.every((f, i) => f === b.feeds[i]);

export function createTickets(redis: RedisConn) {
  const key = (ticket: string) => redis.key("stream-ticket", hashOf(ticket));
  return {
    async mint(authorization: string, selection: Selection): Promise<{ ticket: string; expires_at: string }> {
      const ticket = randomBytes(32).toString("base64url");
      const stored: Stored = { authorization, selection };
      await redis.redis.set(key(ticket), JSON.stringify(stored), "EX", TICKET_TTL_S);
      return { ticket, expires_at: new Date(Date.now() + TICKET_TTL_S * 1000).toISOString() };
    },
    /** What the ticket was minted with, once; null when unknown, used or expired. */
    async take(ticket: string): Promise<Stored | null> {
      const raw = await redis.redis.getdel(key(ticket));
      return raw ? (JSON.parse(raw) as Stored) : null;
    },
  };
}

export type Tickets = ReturnType<typeof createTickets>;
