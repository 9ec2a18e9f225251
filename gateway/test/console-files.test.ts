import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import Fastify from "fastify";
import { afterAll, describe, expect, it } from "vitest";
import { CONSOLE_CSP, installConsole } from "../src/console.js";

// How the gateway serves the operator console's built files (gateway/src/console.ts): the app for
// any page path, hashed assets by exact name with a year's immutable caching, the index never
// cached, the policy on every answer, and nothing outside the built set (test/e2e/console.test.ts
// drives the real build in a browser).

const dir = mkdtempSync(join(tmpdir(), "feeds-console-"));
const script = `console.log(${JSON.stringify("x".repeat(2000))});`;
mkdirSync(join(dir, "assets"));
writeFileSync(join(dir, "index.html"), `<!doctype html><script type="module" src="/console/assets/index-AbCd1234.js"></script>`);
writeFileSync(join(dir, "assets", "index-AbCd1234.js"), script);
writeFileSync(join(dir, "secret.env"), "not served: no known type");
afterAll(() => rmSync(dir, { recursive: true, force: true }));


async function app(from: string) {
  const warned: unknown[] = [];
  const a = Fastify();
  installConsole(a, { warn: (o: unknown) => void warned.push(o) }, from);
  await a.ready();
  return { a, warned };
}

describe("the gateway's /console files", () => {
  it("answers the app for every page path, with the policy and no caching of the index", async () => {
    const { a } = await app(dir);
    for (const url of ["/console", "/console/", "/console/team", "/console/invite"]) {
      const res = await a.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(res.headers["cache-control"]).toBe("no-cache");
      expect(res.headers["content-security-policy"]).toBe(CONSOLE_CSP);
      expect(res.headers["x-frame-options"]).toBe("DENY");
      expect(res.body).toContain("index-AbCd1234.js");
    }
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    expect(CONSOLE_CSP).toMatch(/script-src 'self'(;|$)/);
  });

  it("serves a hashed asset for a year, gzipped when asked, 304 on its ETag", async () => {
    const { a } = await app(dir);
    const plain = await a.inject({ url: "/console/assets/index-AbCd1234.js" });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(plain.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(plain.body).toBe(script);
    const gz = await a.inject({ url: "/console/assets/index-AbCd1234.js", headers: { "accept-encoding": "gzip, br" } });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gz.rawPayload).toString()).toBe(script);
    const again = await a.inject({ url: "/console/assets/index-AbCd1234.js", headers: { "if-none-match": String(plain.headers.etag) } });
    expect(again.statusCode).toBe(304);
  });

  it("answers 404 for any file it did not build: unknown assets, other types, paths that climb", async () => {
    const { a } = await app(dir);
    for (const url of ["/console/assets/nope-12345678.js", "/console/secret.env", "/console/assets/..%2fsecret.env", "/console/favicon.ico"]) {
      const res = await a.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.body).not.toContain("not served");
    }
  });

  it("without a build, logs why and serves nothing", async () => {
    const { a, warned } = await app(join(dir, "missing"));
    expect(warned).toHaveLength(1);
    expect((await a.inject({ url: "/console/" })).statusCode).toBe(404);
  });
});
