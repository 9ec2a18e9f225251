import { isIPv4, isIPv6 } from "node:net";

// The bucket a client address counts under in per-address limits. One IPv6 subscriber usually
// holds a whole /64 and can pick any address in it, so an IPv6 address counts as its /64; an
// IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) counts as the IPv4 address it carries.

/** The eight 16-bit groups of an IPv6 address, or null when it is not one. */
function ipv6Groups(address: string): number[] | null {
  let text = address.split("%")[0] ?? "";
  if (!isIPv6(text)) return null;
  // A dotted IPv4 tail becomes its two hexadecimal groups.
  text = text.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a: string, b: string, c: string, d: string) =>
    `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  const [left = "", right] = text.split("::");
  const head = parse(left);
  if (right === undefined) return head;
  const tail = parse(right);
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** `a.b.c.d` for IPv4 (and IPv4-mapped IPv6), `xxxx:xxxx:xxxx:xxxx::/64` for IPv6, else the text. */
export function addressBucket(address: string): string {
  if (isIPv4(address)) return address;
  const groups = ipv6Groups(address);
  if (!groups || groups.length !== 8) return address;
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  if (mapped) {
    const [hi = 0, lo = 0] = groups.slice(6);
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(":")}::/64`;
}
