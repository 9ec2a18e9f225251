// The browser bundle of @feeds/client and its size. `npm run build -w sdk/client` (after tsc)
// writes dist/bundle/feeds-client.min.js (the whole package: ESM, minified, browser platform) and
// prints what the user client alone and the whole package weigh, minified and gzipped.
// sdk/client/test/bundle.test.ts holds the user client to its limit.
import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const entry = fileURLToPath(new URL("../dist/index.js", import.meta.url));
/** The limit on the user client alone, gzipped (issue 21). */
export const USER_CLIENT_LIMIT_BYTES = 30 * 1024;

async function bundle(contents) {
  const out = await build({
    stdin: { contents, resolveDir: fileURLToPath(new URL("..", import.meta.url)), loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const code = out.outputFiles[0].contents;
  return { code, minified: code.length, gzipped: gzipSync(code).length, inputs: Object.keys(out.metafile.inputs) };
}

/** The user client alone (what an app that imports only UserClient ships) and the whole package. */
export async function bundleSizes() {
  const userClient = await bundle(`export { UserClient } from ${JSON.stringify(entry)};`);
  const whole = await bundle(`export * from ${JSON.stringify(entry)};`);
  return { userClient, whole };
}

const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { userClient, whole } = await bundleSizes();
  const outDir = fileURLToPath(new URL("../dist/bundle/", import.meta.url));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(`${outDir}feeds-client.min.js`, whole.code);
  console.log(`@feeds/client bundle (esbuild, ESM, minified, browser):`);
  console.log(`  user client alone: ${kb(userClient.minified)} minified, ${kb(userClient.gzipped)} gzipped (limit ${kb(USER_CLIENT_LIMIT_BYTES)})`);
  console.log(`  whole package:     ${kb(whole.minified)} minified, ${kb(whole.gzipped)} gzipped -> dist/bundle/feeds-client.min.js`);
  if (userClient.gzipped > USER_CLIENT_LIMIT_BYTES) process.exit(1);
}
