import { isIP, isIPv4 } from "node:net";

/**
 * TRUST_PROXY as Fastify's `trustProxy` takes it: `true` (every hop: the left-most
 * X-Forwarded-For entry, which the client itself can write), `false` (none), a hop count (the
 * address that many proxies back from the socket), or the proxies' own addresses and CIDR
 * ranges, comma-separated (proxy-addr's `loopback`, `linklocal` and `uniquelocal` too).
 */
export type TrustProxy = boolean | number | string[];

const NAMED_RANGES = new Set(["loopback", "linklocal", "uniquelocal"]);
const MAX_HOPS = 32;

/** proxy-addr's IPv4 netmask form (`10.0.0.0/255.0.0.0`): ones, then zeros. */
function isNetmask(mask: string): boolean {
  const n = mask.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
  const inverted = 0xffffffff - n;
  return (inverted & (inverted + 1)) === 0;
}

function rangeProblem(entry: string): string | null {
  if (NAMED_RANGES.has(entry)) return null;
  const [address = "", prefix, ...rest] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || rest.length) return `"${entry}" is not an IP address or CIDR range`;
  if (prefix === undefined) return null;
  if (isIPv4(prefix)) return family === 4 && isNetmask(prefix) ? null : `"${entry}" has an invalid netmask`;
  const bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
  if (!(bits >= 0 && bits <= (family === 4 ? 32 : 128))) return `"${entry}" has an invalid prefix length`;
  return null;
}

/** The parsed value, or what is wrong with it (start-up fails with that message). */
export function parseTrustProxy(raw: string | undefined): { value: TrustProxy } | { error: string } {
  const v = (raw ?? "").trim();
  if (v === "" || v === "false") return { value: false };
  if (v === "true") return { value: true };
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops > MAX_HOPS) return { error: `a hop count is at most ${MAX_HOPS}` };
    return { value: hops };
  }
  const entries = v.split(",").map((e) => e.trim());
  for (const e of entries) {
    const problem = e === "" ? "an empty entry" : rangeProblem(e);
    if (problem) {
      return { error: `${problem}; use true, false, a hop count, or comma-separated proxy addresses/CIDR ranges` };
    }
  }
  return { value: entries };
}

export type FastifyTrustProxy = boolean | string[] | ((address: string, hop: number) => boolean);

/**
 * What Fastify's `trustProxy` is given. Fastify 5.12 turns a bare number into "trust none" (a
 * hop count cannot tell a proxy from a client that reached the gateway directly), so a hop count
 * becomes the trust function it used to be: the first `hops` addresses back from the socket.
 */
export function fastifyTrustProxy(v: TrustProxy): FastifyTrustProxy {
  if (typeof v !== "number") return v;
  return (_address, hop) => hop < v;
}
