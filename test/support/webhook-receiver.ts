import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Webhook } from "standardwebhooks";

// A real HTTP receiver on loopback for webhook tests. Every request is kept; each one to a path
// with a known secret is verified with the `standardwebhooks` package (as a tenant's backend
// would). A path's behaviour decides the answer of its n-th request: a status, an answer after a
// delay, or "hang" (never answer; the sender has to cut the attempt off). The receiver can count
// the requests under a path prefix that are open at once (headers in, no answer begun).

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The verified payload, or null when verification failed (or the path has no secret). */
  event: any;
  status: number | "hang";
  at: number;
  /** When the sender closed a request that was never answered. */
  closedAt?: number;
}

export type Behaviour = (n: number) => number | "hang" | { status: number; headers?: Record<string, string>; delayMs?: number };

export interface Receiver {
  url(path: string): string;
  port: number;
  requests: Received[];
  /** Requests to `path` that were answered 2xx with a verified signature. */
  delivered(path: string): Received[];
  secret(path: string, secret: string): void;
  behave(path: string, b: Behaviour): void;
  /** From now on, counts the requests to paths under `prefix` open at once; answers the most seen so far. */
  track(prefix: string): () => number;
  waitFor<T>(what: string, check: () => T | undefined | false, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const requests: Received[] = [];
  const secrets = new Map<string, string>();
  const behaviours = new Map<string, Behaviour>();
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const tracked = new Map<string, { open: number; peak: number }>();
  /** Moves the open count of every tracked prefix `path` is under. */
  const opened = (path: string, by: 1 | -1) => {
    for (const [prefix, t] of tracked) {
      if (!path.startsWith(prefix)) continue;
      t.open += by;
      t.peak = Math.max(t.peak, t.open);
    }
  };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    // Open from its headers to the start of its answer (or the sender closing it).
    let open = true;
    opened(path, 1);
    const close = () => {
      if (open) opened(path, -1);
      open = false;
    };
    res.on("close", close);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      const body = Buffer.concat(chunks).toString("utf8");
      const answer = behaviours.get(path)?.(n) ?? 200;
      const status = typeof answer === "object" ? answer.status : answer;
      const secret = secrets.get(path);
      let event: any = null;
      if (secret) {
        try {
          event = new Webhook(secret).verify(body, req.headers as Record<string, string>);
        } catch {
          event = null;
        }
      }
      const r: Received = { path, headers: req.headers, body, event, status, at: Date.now() };
      requests.push(r);
      if (status === "hang") {
        res.on("close", () => (r.closedAt = Date.now()));
        return;
      }
      const respond = () => {
        close();
        res.writeHead(status, typeof answer === "object" ? answer.headers : {}).end();
      };
      const delayMs = typeof answer === "object" ? (answer.delayMs ?? 0) : 0;
      if (delayMs > 0) setTimeout(respond, delayMs);
      else respond();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    delivered: (path) => requests.filter((r) => r.path === path && typeof r.status === "number" && r.status < 300 && r.event !== null),
    secret: (path, s) => void secrets.set(path, s),
    behave: (path, b) => void behaviours.set(path, b),
    track(prefix) {
      const t = { open: 0, peak: 0 };
      tracked.set(prefix, t);
      return () => t.peak;
    },
    async waitFor(what, check, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const v = check();
        if (v !== undefined && v !== false) return v;
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
