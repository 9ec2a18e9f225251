import { describe, expect, it } from "vitest";
import { isForbiddenAddress, ipv6Bytes } from "../src/webhooks/address-policy.js";
import { checkDestinationUrl, guardedLookup, parseDestinationUrl, refusedHost } from "../src/webhooks/url-policy.js";

// Which hosts a webhook may reach (WEBHOOK_ALLOW_PRIVATE unset): every special-purpose range is
// refused, in whatever form a URL may write it.

describe("forbidden addresses", () => {
  it.each([
    "0.0.0.0",
    "0.1.2.3",
    "10.0.0.1",
    "10.255.255.255",
    "100.64.0.1",
    "100.127.255.254",
    "127.0.0.1",
    "127.255.255.254",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.8",
    "192.0.2.1",
    "192.168.1.1",
    "198.18.0.1",
    "198.51.100.7",
    "203.0.113.9",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:10.1.2.3",
    "::ffff:169.254.169.254",
    "::ffff:0:127.0.0.1",
    "::127.0.0.1",
    "64:ff9b::127.0.0.1",
    "64:ff9b::a00:1",
    "2002:7f00:1::",
    "2002:c0a8:101::1",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "fe80::1%eth0",
    "febf::1",
    "fec0::1",
    "ff00::1",
    "ff02::1",
    "2001:db8::1",
    "2001::1",
    "100::1",
    "not-an-address",
  ])("%s is refused", (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each(["1.1.1.1", "8.8.8.8", "93.184.216.34", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "169.253.1.1", "223.255.255.255", "2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"])(
    "%s is allowed",
    (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    },
  );

  it("parses IPv6 in every written form to the same bytes", () => {
    const a = ipv6Bytes("::ffff:127.0.0.1");
    expect(a).not.toBeNull();
    expect(ipv6Bytes("[::ffff:7f00:1]")).toEqual(a);
    expect(ipv6Bytes("0:0:0:0:0:ffff:7f00:0001")).toEqual(a);
    expect(ipv6Bytes("1:2:3:4:5:6:7:8:9")).toBeNull();
  });
});

describe("destination URLs", () => {
  const refuse = (url: string) => checkDestinationUrl(url, { allowPrivate: false, resolve: async () => ["93.184.216.34"] });

  it.each([
    "http://127.0.0.1:8080/hook",
    "http://[::1]/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.0.0.1/",
    "http://0x7f000001/",
    "http://127.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0/",
    "http://[::]/",
    "http://0/",
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.0.10/",
    "http://100.64.1.1/",
    "http://224.0.0.1/",
    "http://[fe80::1]/",
    "http://[ff02::1]/",
    "http://[fd00::1]/",
    "http://localhost:3000/",
    "http://LOCALHOST./",
    "http://api.localhost/",
  ])("%s is refused when private addresses are not allowed", async (url) => {
    await expect(refuse(url)).rejects.toMatchObject({ code: "VALIDATION_FAILED", fields: [{ path: "url" }] });
  });

  it.each(["ftp://example.com/", "file:///etc/passwd", "javascript:alert(1)", "gopher://example.com/", "example.com/hook", "http://user:pw@example.com/", "http://"])(
    "%s is refused whatever the deployment allows",
    async (url) => {
      await expect(checkDestinationUrl(url, { allowPrivate: true })).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    },
  );

  it("a name that resolves to a refused address is refused; one that does not resolve is left to delivery", async () => {
    await expect(checkDestinationUrl("https://evil.example/", { allowPrivate: false, resolve: async () => ["93.184.216.34", "10.0.0.7"] })).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    await expect(checkDestinationUrl("https://down.example/x", { allowPrivate: false, resolve: async () => Promise.reject(new Error("ENOTFOUND")) })).resolves.toBe(
      "https://down.example/x",
    );
  });

  it("stores the normalised URL without its fragment", async () => {
    await expect(refuse("HTTPS://Hooks.Example.COM:443/a/../b?x=1#frag")).resolves.toBe("https://hooks.example.com/b?x=1");
    await expect(checkDestinationUrl("http://127.0.0.1:9000/h", { allowPrivate: true })).resolves.toBe("http://127.0.0.1:9000/h");
  });

  it("decimal and octal hosts are normalised before the check, at delivery too", () => {
    const u = parseDestinationUrl("http://2130706433/");
    expect(typeof u === "string" ? u : u.hostname).toBe("127.0.0.1");
    expect(typeof u === "string" ? false : refusedHost(u)).toBe(true);
  });
});

describe("the delivery socket's lookup", () => {
  const lookupOnce = (allowPrivate: boolean, addrs: string[], all: boolean) =>
    new Promise<{ err: Error | null; address: unknown }>((resolve) => {
      guardedLookup(allowPrivate, async () => addrs)("hooks.example", { all }, (err, address) => resolve({ err, address }));
    });

  it("refuses a name that resolves to loopback (DNS rebinding) and hands over only what it checked", async () => {
    expect((await lookupOnce(false, ["127.0.0.1"], false)).err?.name).toBe("RefusedAddressError");
    expect((await lookupOnce(false, ["93.184.216.34", "::1"], true)).err?.name).toBe("RefusedAddressError");
    expect(await lookupOnce(false, ["93.184.216.34"], false)).toEqual({ err: null, address: "93.184.216.34" });
    expect(await lookupOnce(false, ["93.184.216.34"], true)).toEqual({ err: null, address: [{ address: "93.184.216.34", family: 4 }] });
    expect(await lookupOnce(true, ["127.0.0.1"], false)).toEqual({ err: null, address: "127.0.0.1" });
  });
});
