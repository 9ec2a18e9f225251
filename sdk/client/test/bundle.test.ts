import { describe, expect, it } from "vitest";
import { USER_CLIENT_LIMIT_BYTES, bundleSizes } from "../scripts/bundle.mjs";

// The browser package's weight, bundled as an app would (esbuild, ESM, minified, browser
// platform) from the built package (dist/): a size limit, so an assertion.

describe("@feeds/client bundle", () => {
  it(`the user client alone stays within ${USER_CLIENT_LIMIT_BYTES / 1024} KB gzipped, and carries no schema library`, async () => {
    const { userClient, whole } = await bundleSizes();
    const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
    console.log(
      `@feeds/client: user client alone ${kb(userClient.minified)} minified / ${kb(userClient.gzipped)} gzipped; ` +
        `whole package ${kb(whole.minified)} minified / ${kb(whole.gzipped)} gzipped`,
    );
    expect(userClient.gzipped).toBeLessThanOrEqual(USER_CLIENT_LIMIT_BYTES);
    for (const b of [userClient, whole]) {
      expect(b.inputs.filter((i) => /node_modules\/(zod|jose)\//.test(i))).toEqual([]);
      expect(b.inputs.some((i) => i.includes("contract/dist/route-table.js"))).toBe(true);
    }
    // A tenant secret never reaches the browser: no token minting in the package.
    expect(new TextDecoder().decode(whole.code)).not.toMatch(/createServerToken|apiSecret|HS256/);
  });
});
