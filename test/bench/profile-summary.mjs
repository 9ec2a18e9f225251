// Where a V8 CPU profile's time went, by part: `node test/bench/profile-summary.mjs <file.cpuprofile> [top]`
// (profiles from `npm run bench -- --cpu-prof`). Self time is grouped by package (node_modules/<pkg>),
// by our workspace (kit, gateway, services/<name>), by Node's own modules (node:<module>) and by V8's
// pseudo-nodes (garbage collector, program, idle); then the top functions by self time.
import { readFileSync } from "node:fs";

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: node test/bench/profile-summary.mjs <file.cpuprofile> [top]");
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

/** The part a call frame belongs to. */
function partOf(frame) {
  const url = frame.url ?? "";
  if (!url) return frame.functionName.startsWith("(") ? frame.functionName : "(native)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith("node:")) return url;
  const ours = /\/(kit|gateway|sdk|system)\/(?:dist|src)\//.exec(url) ?? /\/services\/([^/]+)\//.exec(url);
  if (ours) return url.includes("/services/") ? `services/${ours[1]}` : ours[1];
  return url.replace(/^file:\/\//, "");
}

// Self time per node: samples × the mean interval.
const hits = new Map();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
const totalUs = profile.endTime - profile.startTime;
const usPerSample = totalUs / Math.max(1, profile.samples.length);
const parts = new Map();
const fns = new Map();
let busyUs = 0;
for (const [id, n] of hits) {
  const node = byId.get(id);
  const us = n * usPerSample;
  const part = partOf(node.callFrame);
  parts.set(part, (parts.get(part) ?? 0) + us);
  if (part !== "(idle)") busyUs += us;
  const f = node.callFrame;
  const where = f.url ? `${part}${part.startsWith("node:") ? "" : `/${f.url.slice(f.url.lastIndexOf("/") + 1)}`}` : part;
  const key = `${f.functionName || "(anonymous)"} ${where}:${f.lineNumber + 1}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
}
const pct = (us) => `${((100 * us) / busyUs).toFixed(1).padStart(5)}%`;
console.log(`${file}: ${(totalUs / 1e6).toFixed(1)} s profiled, ${(busyUs / 1e6).toFixed(2)} s busy (not idle); shares of busy time`);
console.log("\nby part (self time):");
for (const [part, us] of [...parts].filter(([p]) => p !== "(idle)").sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${part}`);
console.log(`\ntop ${top} functions (self time):`);
for (const [key, us] of [...fns].filter(([k]) => !k.includes("(idle)")).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${key}`);
