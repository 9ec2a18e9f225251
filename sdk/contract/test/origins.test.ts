import { describe, expect, it } from "vitest";
import { distinctOrigins, originLimits, originProblem, originsBody } from "../src/index.js";

// What an allowed origin is: exactly what a browser sends in its Origin header, nothing rewritten.

describe("originProblem", () => {
  it.each([
    "https://app.example",
    "http://localhost:5173",
    "http://127.0.0.1:8080",
    "https://[::1]:8443",
    "https://xn--bcher-kva.example",
    "https://app.example:8443",
    "https://a.b.c.example",
  ])("accepts %s", (origin) => {
    expect(originProblem(origin)).toBeNull();
  });

  it.each([
    ["javascript:alert(1)", "http or https only"],
    ["null", "an origin: scheme://host[:port]"],
    ["", "an origin: scheme://host[:port]"],
    ["app.example", "an origin: scheme://host[:port]"],
    ["ftp://app.example", "http or https only"],
    ["file:///etc/passwd", "http or https only"],
    ["data:text/html,hi", "http or https only"],
    ["https://*.example", "an exact origin: no wildcard"],
    ["*", "an exact origin: no wildcard"],
    ["https://user:pw@app.example", "no userinfo"],
    ["https://user@app.example", "no userinfo"],
    ["https://app.example/", "written as the browser sends it: https://app.example"],
    ["https://app.example/path", "written as the browser sends it: https://app.example"],
    ["https://app.example?x=1", "written as the browser sends it: https://app.example"],
    ["https://app.example#top", "written as the browser sends it: https://app.example"],
    ["https://App.Example", "written as the browser sends it: https://app.example"],
    ["https://app.example:443", "written as the browser sends it: https://app.example"],
    ["http://app.example:80", "written as the browser sends it: http://app.example"],
    [" https://app.example", "written as the browser sends it: https://app.example"],
    ["https://bücher.example", "written as the browser sends it: https://xn--bcher-kva.example"],
    ["https:\\\\app.example", "written as the browser sends it: https://app.example"],
    [`https://${"a".repeat(300)}.example`, `at most ${originLimits.originChars} characters`],
  ])("refuses %j", (origin, message) => {
    expect(originProblem(origin)).toContain(message);
  });
});

describe("originsBody", () => {
  it("takes at most 20 origins, each checked, naming the field", () => {
    const list = (n: number) => Array.from({ length: n }, (_, i) => `https://app${i}.example`);
    expect(originsBody.safeParse({ origins: list(20) }).success).toBe(true);
    expect(originsBody.safeParse({ origins: [] }).success).toBe(true);
    const many = originsBody.safeParse({ origins: list(21) });
    expect(many.success ? [] : many.error.issues.map((i) => i.path.join("."))).toEqual(["origins"]);
    const bad = originsBody.safeParse({ origins: ["https://ok.example", "https://ok.example/"] });
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join("."))).toEqual(["origins.1"]);
    expect(originsBody.safeParse({ origins: [1] }).success).toBe(false);
  });

  it("distinctOrigins keeps the first of each, in order", () => {
    expect(distinctOrigins(["https://b.example", "https://a.example", "https://b.example"])).toEqual(["https://b.example", "https://a.example"]);
  });
});
