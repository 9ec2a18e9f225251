#!/usr/bin/env node
// `feeds`, the command-line client (cli/src, compiled to cli/dist by `tsc -b`, which `npm start`
// and `npm test` run). A shim, so that the bin exists and is executable before the first build.
import { existsSync } from "node:fs";

const entry = new URL("../dist/index.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write("feeds: not built yet: run `npx tsc -b` (npm start and npm test build it)\n");
  process.exit(1);
}
const { run } = await import(entry.href);
process.exitCode = await run(process.argv.slice(2), process.env);
