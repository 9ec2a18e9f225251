import { describe, expect, it } from "vitest";
import { baseUrl, http } from "../support/api.js";

// Split mode: the gateway process (gateway/dist/main.js, no service in it) serves the operator
// console's files itself, with the same headers as the one-process system (docs/console.md), and
// the console's first call answers as it does there. The browser flows are
// test/e2e/console.test.ts's.

describe("the operator console in split mode", () => {
  it("is served by the gateway process at /console with its policy and caching", async () => {
    const res = await fetch(`${baseUrl()}/console/login`);
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const script = /<script type="module" crossorigin src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${baseUrl()}${script}`);
    await asset.arrayBuffer();
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    // The console's calls reach the services through the same gateway: a session-less one is 401.
    expect((await http("GET", "/operator/me")).status).toBe(401);
  });
});
