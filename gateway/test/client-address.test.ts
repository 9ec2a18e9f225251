import { describe, expect, it } from "vitest";
import { addressBucket } from "../src/client-address.js";

describe("addressBucket", () => {
  it("keeps an IPv4 address whole", () => {
    expect(addressBucket("203.0.113.9")).toBe("203.0.113.9");
  });

  it("counts an IPv4-mapped IPv6 address as its IPv4 address, dotted or not", () => {
    expect(addressBucket("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(addressBucket("::ffff:cb00:7109")).toBe("203.0.113.9");
  });

  it("counts every address of one IPv6 /64 alike, however it is written", () => {
    const bucket = "2001:db8:1:2::/64";
    for (const a of ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::9", "2001:DB8:0001:0002:ffff::1", "2001:db8:1:2::1.2.3.4", "2001:db8:1:2::1%eth0"]) {
      expect(addressBucket(a)).toBe(bucket);
    }
    expect(addressBucket("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(addressBucket("::1")).toBe("0:0:0:0::/64");
  });

  it("leaves what is no address as it is", () => {
    expect(addressBucket("not an address")).toBe("not an address");
  });
});
