import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { validationFailed } from "@feeds/kit";
import { isForbiddenAddress } from "./address-policy.js";

// Destination URLs: http or https only, no credentials, and (unless private addresses are
// allowed) no host that is, names or resolves to a forbidden address. Checked when a destination
// is registered and again at every delivery, where the address a connection uses is the one the
// check resolved (see guardedLookup), so a name that rebinds to a private address after the
// registration check still cannot be reached.

export const MAX_URL_LENGTH = 2048;
const REFUSED = "must not point at a private, loopback, link-local, multicast or unspecified address";

/** A URL's host without IPv6 brackets, lower-cased, without a trailing dot. */
export const hostOf = (u: URL): string => u.hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");

/** Names that resolve to loopback by definition (RFC 6761), whatever DNS says. */
const isLocalName = (host: string) => host === "localhost" || host.endsWith(".localhost");

/** The URL as stored (normalised by WHATWG parsing, fragment dropped), or a reason to refuse it. */
export function parseDestinationUrl(raw: string): URL | string {
  if (raw.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "must be an absolute http or https URL";
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return "must use http or https";
  if (u.username || u.password) return "must not carry credentials";
  if (!hostOf(u)) return "must name a host";
  u.hash = "";
  return u;
}

/** Whether the URL's host is an address or local name that is refused without resolving it. */
export function refusedHost(u: URL): boolean {
  const host = hostOf(u);
  return isIP(host) ? isForbiddenAddress(host) : isLocalName(host);
}

export type Resolve = (host: string) => Promise<string[]>;

const DNS_TIMEOUT_MS = 2000;

/** Every address a name resolves to; rejects when it does not resolve within the time limit. */
export const resolveAll: Resolve = (host) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("dns timeout")), DNS_TIMEOUT_MS);
    dnsLookup(host, { all: true, verbatim: true }, (err, addrs) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(addrs.map((a) => a.address));
    });
  });

/**
 * Registration: answers the URL to store, or throws VALIDATION_FAILED (path `url`). A name that
 * does not resolve now is accepted: every delivery checks again.
 */
export async function checkDestinationUrl(raw: string, opts: { allowPrivate: boolean; resolve?: Resolve }): Promise<string> {
  const parsed = parseDestinationUrl(raw);
  if (typeof parsed === "string") throw validationFailed([{ path: "url", message: parsed }]);
  if (opts.allowPrivate) return parsed.href;
  if (refusedHost(parsed)) throw validationFailed([{ path: "url", message: REFUSED }]);
  const host = hostOf(parsed);
  if (!isIP(host)) {
    const addrs = await (opts.resolve ?? resolveAll)(host).catch(() => [] as string[]);
    if (addrs.some(isForbiddenAddress)) throw validationFailed([{ path: "url", message: REFUSED }]);
  }
  return parsed.href;
}

export class RefusedAddressError extends Error {
  override readonly name = "RefusedAddressError";
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * The `lookup` of every delivery's socket: resolves the name, refuses it when any address is
 * forbidden, and hands the socket exactly the addresses it checked (no second resolution).
 */
export function guardedLookup(allowPrivate: boolean, resolve: Resolve = resolveAll) {
  return (host: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolve(host).then(
      (addrs) => {
        if (addrs.length === 0) return callback(Object.assign(new Error(`${host} has no address`), { code: "ENOTFOUND" }), "");
        if (!allowPrivate && addrs.some(isForbiddenAddress)) {
          return callback(new RefusedAddressError(`${host} resolves to a refused address`), "");
        }
        const all = addrs.map((address) => ({ address, family: isIP(address) }));
        if (options.all) callback(null, all);
        else callback(null, all[0]?.address ?? "", all[0]?.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ""),
    );
  };
}
