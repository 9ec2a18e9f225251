// Builds the operator console (Vite) into console/dist and prints what it adds to what the
// gateway serves: every file's size, raw and gzipped, and the total gzipped against its limit
// (issue 22: 300 KB). Fails when over the limit or when index.html holds an inline script (the
// gateway's Content-Security-Policy would refuse it). `npm start` and `npm test` run it after tsc.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "vite";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = join(root, "dist");
/** The console's budget, gzipped (issue 22). */
export const CONSOLE_LIMIT_BYTES = 300 * 1024;

const files = (dir) => readdirSync(dir).flatMap((e) => (statSync(join(dir, e)).isDirectory() ? files(join(dir, e)) : [join(dir, e)]));
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

/** Sizes of the built files: [{file, raw, gzipped}] and the gzipped total. */
export function consoleSizes() {
  const list = files(dist).map((f) => {
    const body = readFileSync(f);
    return { file: relative(dist, f), raw: body.length, gzipped: gzipSync(body, { level: 9 }).length };
  });
  return { files: list, gzipped: list.reduce((n, f) => n + f.gzipped, 0) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const t0 = performance.now();
  await build({ configFile: join(root, "vite.config.mjs") });
  const index = readFileSync(join(dist, "index.html"), "utf8");
  const inline = [...index.matchAll(/<script\b([^>]*)>/g)].filter((m) => !/\bsrc=/.test(m[1]));
  if (inline.length) {
    console.error("console/dist/index.html holds an inline script: the Content-Security-Policy refuses it");
    process.exit(1);
  }
  const { files: list, gzipped } = consoleSizes();
  console.log(`operator console (vite build, ${((performance.now() - t0) / 1000).toFixed(1)} s) -> console/dist:`);
  for (const f of list) console.log(`  ${f.file.padEnd(40)} ${kb(f.raw).padStart(10)} ${kb(f.gzipped).padStart(10)} gzipped`);
  console.log(`  total: ${kb(gzipped)} gzipped (limit ${kb(CONSOLE_LIMIT_BYTES)})`);
  if (gzipped > CONSOLE_LIMIT_BYTES) process.exit(1);
}
