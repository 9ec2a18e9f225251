import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A request as the fake API saw it. */
export interface Seen {
  method: string;
  /** Path and query as sent, e.g. `/v1/feeds/user/a%20b?limit=5`. */
  url: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string;
  json: unknown;
  at: number;
}

export interface FakeReply {
  status: number;
  headers?: Record<string, string>;
  /** Objects are sent as JSON; strings verbatim; undefined → empty body. */
  body?: unknown;
  /** Destroy the socket instead of answering (a network failure). */
  destroy?: boolean;
  /** Never answer (for timeouts). */
  hang?: boolean;
}

export type FakeHandler = (req: Seen, index: number) => FakeReply | Promise<FakeReply>;

export interface FakeServer {
  baseUrl: string;
  requests: Seen[];
  close(): Promise<void>;
}

export const envelope = (code: string, message = code.toLowerCase(), extra: Record<string, unknown> = {}) => ({
  error: { code, message, requestId: "req-123", ...extra },
});

/**
 * Starts a tiny HTTP server on 127.0.0.1 (port 0). `handler` is a function, or a list of replies
 * answered in order (the last one repeats).
 */
export async function startFakeServer(handler: FakeHandler | FakeReply[]): Promise<FakeServer> {
  const requests: Seen[] = [];
  const fn: FakeHandler = Array.isArray(handler)
    ? (_req, i) => handler[Math.min(i, handler.length - 1)] ?? { status: 500 }
    : handler;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const u = new URL(req.url ?? "/", "http://127.0.0.1");
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      const seen: Seen = {
        method: req.method ?? "",
        url: req.url ?? "",
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body,
        json,
        at: Date.now(),
      };
      const index = requests.length;
      requests.push(seen);
      void Promise.resolve(fn(seen, index)).then((reply) => {
        if (reply.destroy) {
          req.socket.destroy();
          return;
        }
        if (reply.hang) return;
        const headers: Record<string, string> = { ...(reply.headers ?? {}) };
        let payload = "";
        if (typeof reply.body === "string") payload = reply.body;
        else if (reply.body !== undefined) {
          payload = JSON.stringify(reply.body);
          headers["content-type"] ??= "application/json";
        }
        res.writeHead(reply.status, headers);
        res.end(payload);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A base URL on which nothing listens. */
export async function deadBaseUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
