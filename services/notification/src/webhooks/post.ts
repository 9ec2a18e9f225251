import * as http from "node:http";
import * as https from "node:https";
import { guardedLookup, hostOf, parseDestinationUrl, refusedHost, RefusedAddressError, type Resolve } from "./url-policy.js";

// One delivery attempt: a POST that follows no redirect (a 3xx is a failure), is cut off at the
// attempt's time limit, and connects only to addresses the URL policy accepted.

export interface PostOutcome {
  /** Answered 2xx. */
  ok: boolean;
  /** The URL or the address it resolved to is refused: retrying cannot help. */
  refused: boolean;
  status?: number;
  error?: string;
}

export interface PostOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  /** Idle sockets kept open per host (keep-alive). */
  idleSocketsPerHost?: number;
  resolve?: Resolve;
}

export type Post = (url: string, body: string, headers: Record<string, string>) => Promise<PostOutcome>;

export function createPost(o: PostOptions): Post & { close(): void } {
  // No cap on sockets per host: destinations that share a host (two paths, two tenants of one
  // provider) must not queue behind each other's stuck requests. The delivery worker's
  // per-destination slots bound the attempts in flight.
  const agentOptions = { keepAlive: true, maxFreeSockets: o.idleSocketsPerHost ?? 16 };
  const agents = { "http:": new http.Agent(agentOptions), "https:": new https.Agent(agentOptions) };
  const lookup = guardedLookup(o.allowPrivate, o.resolve);

  const post = (url: string, body: string, headers: Record<string, string>): Promise<PostOutcome> => {
    const u = parseDestinationUrl(url);
    if (typeof u === "string") return Promise.resolve({ ok: false, refused: true, error: `url ${u}` });
    // An address literal connects without a lookup: it is checked here.
    if (!o.allowPrivate && refusedHost(u)) return Promise.resolve({ ok: false, refused: true, error: "refused address" });
    const protocol = u.protocol as "http:" | "https:";
    return new Promise((resolve) => {
      let status: number | undefined;
      let settled = false;
      const finish = (outcome: PostOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const byStatus = (s: number): PostOutcome => ({ ok: s >= 200 && s < 300, refused: false, status: s });
      const req = (protocol === "https:" ? https : http).request(
        {
          protocol,
          host: hostOf(u),
          port: u.port || undefined,
          path: `${u.pathname}${u.search}`,
          method: "POST",
          agent: agents[protocol],
          lookup,
          headers: {
            ...headers,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            "user-agent": "feeds-webhooks/1",
          },
        },
        (res) => {
          status = res.statusCode ?? 0;
          // Read and drop the body so the socket can serve the next delivery.
          res.resume();
          res.on("end", () => finish(byStatus(status ?? 0)));
          res.on("error", () => finish(byStatus(status ?? 0)));
        },
      );
      req.on("error", (err) => finish({ ok: false, refused: err instanceof RefusedAddressError, error: String(err) }));
      const timer = setTimeout(() => {
        // Answered but slow to finish its body: the status stands. Never answered: a failure.
        finish(status !== undefined ? byStatus(status) : { ok: false, refused: false, error: "attempt timed out" });
        req.destroy();
      }, o.timeoutMs);
      req.end(body);
    });
  };

  return Object.assign(post, {
    close() {
      agents["http:"].destroy();
      agents["https:"].destroy();
    },
  });
}
