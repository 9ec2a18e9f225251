import { isIPv4, isIPv6 } from "node:net";

// Which IP addresses a webhook may never reach unless the deployment allows private ones
// (WEBHOOK_ALLOW_PRIVATE): private, loopback, link-local, multicast, unspecified and the other
// special-purpose ranges (IANA registries), IPv4 also when embedded in an IPv6 address
// (IPv4-mapped, -compatible, -translated, NAT64, 6to4). Addresses arrive in the canonical text a
// resolver or WHATWG URL parsing gives (decimal, octal and hex IPv4 hosts are normalised there).

type Cidr = readonly [prefix: readonly number[], bits: number];

const V4_FORBIDDEN: readonly Cidr[] = [
  [[0, 0, 0, 0], 8], // "this network", 0.0.0.0 unspecified
  [[10, 0, 0, 0], 8], // private
  [[100, 64, 0, 0], 10], // carrier-grade NAT
  [[127, 0, 0, 0], 8], // loopback
  [[169, 254, 0, 0], 16], // link-local (cloud metadata services)
  [[172, 16, 0, 0], 12], // private
  [[192, 0, 0, 0], 24], // IETF protocol assignments
  [[192, 0, 2, 0], 24], // documentation
  [[192, 88, 99, 0], 24], // 6to4 relay anycast
  [[192, 168, 0, 0], 16], // private
  [[198, 18, 0, 0], 15], // benchmarking
  [[198, 51, 100, 0], 24], // documentation
  [[203, 0, 113, 0], 24], // documentation
  [[224, 0, 0, 0], 4], // multicast
  [[240, 0, 0, 0], 4], // reserved, broadcast
];

const V6_FORBIDDEN: readonly Cidr[] = [
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 96], // ::, ::1 and IPv4-compatible ::a.b.c.d
  [[0x01, 0x00, 0, 0, 0, 0, 0, 0], 64], // discard-only
  [[0x20, 0x01, 0x00, 0x00], 23], // IETF protocol assignments (Teredo included)
  [[0x20, 0x01, 0x0d, 0xb8], 32], // documentation
  [[0xfc], 7], // unique local
  [[0xfe, 0x80], 10], // link-local
  [[0xfe, 0xc0], 10], // site-local (deprecated)
  [[0xff], 8], // multicast
];

/** Where an IPv4 address hides inside an IPv6 one: its prefix and the offset of its 4 bytes. */
const V6_EMBEDDING: readonly (readonly [Cidr, number])[] = [
  [[[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 96], 12], // IPv4-mapped ::ffff:a.b.c.d
  [[[0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0], 96], 12], // IPv4-translated ::ffff:0:a.b.c.d
  [[[0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 96], 12], // NAT64 well-known prefix
  [[[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48], 12], // NAT64 local-use prefix
  [[[0x20, 0x02], 16], 2], // 6to4
];

function inCidr(bytes: Uint8Array, [prefix, bits]: Cidr): boolean {
  for (let i = 0; i < bits; i += 8) {
    const mask = bits - i >= 8 ? 0xff : (0xff << (8 - (bits - i))) & 0xff;
    if (((bytes[i / 8] ?? 0) & mask) !== ((prefix[i / 8] ?? 0) & mask)) return false;
  }
  return true;
}

export function ipv4Bytes(s: string): Uint8Array | null {
  if (!isIPv4(s)) return null;
  return Uint8Array.from(s.split(".").map(Number));
}

/** The 16 bytes of an IPv6 address (`::` and an IPv4 tail allowed, a zone id ignored). */
export function ipv6Bytes(s: string): Uint8Array | null {
  const addr = s.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!isIPv6(addr)) return null;
  let groups: number[] = [];
  const [head = "", tail] = addr.split("::");
  const parse = (part: string): number[] => {
    if (!part) return [];
    return part.split(":").flatMap((g) => {
      const v4 = ipv4Bytes(g);
      return v4 ? [((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0)] : [parseInt(g, 16)];
    });
  };
  const h = parse(head);
  if (tail === undefined) groups = h;
  else {
    const t = parse(tail);
    groups = [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
  }
  if (groups.length !== 8) return null;
  return Uint8Array.from(groups.flatMap((g) => [g >> 8, g & 0xff]));
}

/** True when a webhook must not reach `ip`. Anything that is not an IP address is refused too. */
export function isForbiddenAddress(ip: string): boolean {
  const v4 = ipv4Bytes(ip);
  if (v4) return V4_FORBIDDEN.some((c) => inCidr(v4, c));
  const v6 = ipv6Bytes(ip);
  if (!v6) return true;
  for (const [cidr, at] of V6_EMBEDDING) {
    if (inCidr(v6, cidr)) return V4_FORBIDDEN.some((c) => inCidr(v6.subarray(at, at + 4), c));
  }
  return V6_FORBIDDEN.some((c) => inCidr(v6, c));
}
