import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { routes } from "../src/index.js";
import { routeTable } from "../src/route-table.js";
import { renderRouteTable } from "../scripts/route-table.mjs";

const committed = readFileSync(new URL("../src/route-table.ts", import.meta.url), "utf8");

describe("the schema-free route table (@feeds/contract/routes)", () => {
  it("is the generator's output for the route table as it is (run sdk/contract/scripts/route-table.mjs)", () => {
    expect(committed).toBe(renderRouteTable(routes));
  });

  it("names every route of the table with its verb, path, auth and statuses", () => {
    for (const [group, defs] of Object.entries(routes)) {
      for (const [name, def] of Object.entries(defs)) {
        const plain = (routeTable as Record<string, Record<string, unknown>>)[group]?.[name];
        expect(plain, `${group}.${name}`).toEqual({
          method: def.method,
          path: def.path,
          auth: def.auth,
          statuses: Object.keys(def.responses).map(Number).sort((a, b) => a - b),
        });
      }
    }
  });

  it("imports nothing, so a bundle of it carries no schema library", () => {
    expect(committed).not.toMatch(/^\s*import\b/m);
    expect(readFileSync(new URL("../src/errors.ts", import.meta.url), "utf8")).not.toMatch(/^\s*import\b/m);
  });
});
