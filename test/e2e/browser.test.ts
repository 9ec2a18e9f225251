import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { inPage, launchChromium } from "../support/chromium.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUserToken } from "@feeds/node";
import { bundleSizes } from "../../sdk/client/scripts/bundle.mjs";
import { baseUrl, http, newOperator, newTenant, type TestTenant } from "../support/api.js";
import { until } from "../support/until.js";

// @feeds/client in a real browser (headless Debian Chromium through playwright-core): a page from
// a second origin loads the built browser bundle, takes its user token from this test's own token
// endpoint, reads a timeline, posts, reacts, lives through a token expiry by asking its provider
// again; the same page from an origin the tenant did not allow is refused by the browser (CORS).
// scripts/test.mjs installs chromium with apt when it is missing; without it this test fails.

/** Lifetime of the page's user tokens; the gateway accepts a token up to 5 s past its exp. */
const TOKEN_SECONDS = 2;
const CLOCK_TOLERANCE_SECONDS = 5;

const page = `<!doctype html><meta charset="utf-8"><title>feeds in a browser</title>
<h1>@feeds/client</h1><pre id="out">loading…</pre>
<script type="module">
import { UserClient } from "/feeds-client.js";
const out = document.getElementById("out");
const show = (s) => { out.textContent += "\\n" + s; };
window.scenario = async (apiBase, user, waitMs) => {
  out.textContent = "origin " + location.origin;
  let tokenCalls = 0;
  const client = new UserClient({ baseUrl: apiBase, maxRetries: 0, tokenProvider: async () => {
    tokenCalls += 1;
    return (await fetch("/token?user=" + encodeURIComponent(user))).text();
  } });
  const posted = await client.addActivity("user:" + user, { actor: user, verb: "post", object: "note:1", text: "hello from a browser" });
  show("posted " + posted.id);
  const timeline = await client.readFeed("user:" + user);
  show("timeline: " + timeline.results.map((a) => a.id).join(", "));
  const reaction = await client.react(posted.id, "like");
  show("reacted " + reaction.kind);
  const callsBeforeExpiry = tokenCalls;
  await new Promise((r) => setTimeout(r, waitMs));
  const after = await client.readFeed("user:" + user);
  show("after expiry: " + after.results.length + " activities, token asked " + tokenCalls + " times");
  return { posted: posted.id, timeline: timeline.results.map((a) => a.id), reaction: reaction.kind, after: after.results.map((a) => a.id), callsBeforeExpiry, tokenCalls };
};
window.refused = async (apiBase, user) => {
  out.textContent = "origin " + location.origin;
  const client = new UserClient({ baseUrl: apiBase, maxRetries: 0, tokenProvider: async () => (await fetch("/token?user=" + user)).text() });
  try {
    await client.readFeed("user:" + user);
    return { refused: false };
  } catch (e) {
    show("refused: " + e.message);
    return { refused: true, name: e.name, code: e.code, status: e.status, cause: String(e.cause) };
  }
};
document.getElementById("out").textContent = "ready";
</script>`;

/** The page's module has run (evaluated in the page). */
const ready = `document.getElementById("out")?.textContent === "ready"`;

/** A tiny site: the page, the built bundle and a token endpoint minting short-lived user tokens. */
async function startSite(t: TestTenant, bundle: Uint8Array): Promise<{ origin: string; server: Server; minted: () => number }> {
  let minted = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/") res.writeHead(200, { "content-type": "text/html" }).end(page);
    else if (url.pathname === "/feeds-client.js") res.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
    else if (url.pathname === "/token") {
      minted += 1;
      void createUserToken(t.apiKey, t.apiSecret, url.searchParams.get("user") ?? "", { expiresIn: `${TOKEN_SECONDS}s` }).then((token) =>
        res.writeHead(200, { "content-type": "text/plain" }).end(token),
      );
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, minted: () => minted };
}

describe("@feeds/client in headless Chromium", () => {
  let browser: Browser | undefined;
  const sites: Server[] = [];

  beforeAll(async () => {
    browser = await launchChromium("the browser test");
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    for (const s of sites) s.close();
  });

  it("an allowed origin reads, posts, reacts and survives a token expiry; another origin is refused", () => inPage(async () => {
    const { whole } = await bundleSizes();
    const t = await newTenant();
    const allowed = await startSite(t, whole.code);
    const other = await startSite(t, whole.code);
    sites.push(allowed.server, other.server);
    const owner = await newOperator(t.id, "owner");
    const set = await http("PUT", "/operator/tenant/origins", { token: owner.token, body: { origins: [allowed.origin] } });
    expect(set.status).toBe(200);
    // Preflights are answered from every gateway's in-memory union, refreshed within seconds.
    await until(
      "the origin allowed by preflights",
      async () => {
        const res = await fetch(`${baseUrl()}/v1/feeds/user/a`, { method: "OPTIONS", headers: { origin: allowed.origin, "access-control-request-method": "POST" } });
        await res.arrayBuffer();
        return res.headers.get("access-control-allow-origin") === allowed.origin ? true : undefined;
      },
      10_000,
      200,
    );

    const context = await browser!.newContext();
    const tab = await context.newPage();
    const logs: string[] = [];
    tab.on("console", (m) => logs.push(m.text()));
    tab.on("pageerror", (e) => logs.push(`page error: ${e.message}`));
    await tab.goto(`${allowed.origin}/`);
    await inPage(() => tab.waitForFunction(ready, undefined, { timeout: 10_000 }));
    const waitMs = (TOKEN_SECONDS + CLOCK_TOLERANCE_SECONDS + 2) * 1000;
    const result = await inPage(() => tab.evaluate(([api, wait]) => (globalThis as unknown as { scenario: (a: string, u: string, w: number) => Promise<Record<string, unknown>> }).scenario(api, "ann", wait), [baseUrl(), waitMs] as const));
    await tab.screenshot({ path: "/tmp/feeds-browser-test.png" });

    expect(result["timeline"]).toEqual([result["posted"]]);
    expect(result["reaction"]).toBe("like");
    expect(result["after"]).toEqual([result["posted"]]);
    // One token for the first requests, one more after the expired one was refused (401).
    expect(result["callsBeforeExpiry"]).toBe(1);
    expect(result["tokenCalls"]).toBe(2);
    expect(allowed.minted()).toBe(2);

    const refusedTab = await context.newPage();
    refusedTab.on("console", (m) => logs.push(m.text()));
    await refusedTab.goto(`${other.origin}/`);
    await inPage(() => refusedTab.waitForFunction(ready, undefined, { timeout: 10_000 }));
    const refused = await inPage(() => refusedTab.evaluate((api) => (globalThis as unknown as { refused: (a: string, u: string) => Promise<Record<string, unknown>> }).refused(api, "ann"), baseUrl()));
    expect(refused).toMatchObject({ refused: true, name: "FeedsApiError", code: "INTERNAL", status: 0 });
    expect(String(refused["cause"])).toMatch(/TypeError: Failed to fetch/);
    expect(logs.join("\n")).toMatch(/blocked by CORS policy/);
    await context.close();
  }), 120_000);
});
