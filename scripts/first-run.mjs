// The README's quick start, as a newcomer types it: every command of its `sh` blocks, in order,
// through bash, each block's output compared with the `text` block the README shows after it;
// then the curl shown beside each step (`sh curl` blocks), each of which must answer JSON that is
// not an error. The README is the one list of steps: this script knows none of them.
//
//   FEEDS_URL=… FEEDS_EMAIL=… FEEDS_PASSWORD=… node scripts/first-run.mjs [--readme <file>]
//
// FEEDS_URL, FEEDS_EMAIL and FEEDS_PASSWORD name the running system and its staff login (what
// `npm start` prints); the README's `export` of a variable given here is skipped, and the given
// URL and email stand for the README's in the output. The profile goes to FEEDS_CONFIG_DIR, else a
// fresh temporary folder (never the real ~/.config/feeds). Output is compared line by line once
// times, tokens and secrets are masked and ids are numbered in order of first appearance (so the
// activity a notification names must be the one the post printed). A block of reads alone
// (`feeds read`, `feeds notifications`) is tried again for up to 20 s while it differs: fan-out and
// notifications arrive within seconds, and a person would look again. Exit 0 when every step
// matched; 1 on the first that did not, naming it and showing both outputs.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const { values } = parseArgs({ options: { readme: { type: "string", default: join(root, "README.md") } } });
const given = ["FEEDS_URL", "FEEDS_EMAIL", "FEEDS_PASSWORD"];
for (const name of given) {
  if (!process.env[name]) {
    process.stderr.write(`first-run: set ${given.join(", ")} (npm start prints them)\n`);
    process.exit(2);
  }
}

/** The quick start's blocks: `{kind: "sh" | "text" | "curl", lines, heading}`, in README order. */
export function quickStartBlocks(markdown) {
  const start = markdown.indexOf("<!-- quick-start -->");
  const end = markdown.indexOf("<!-- /quick-start -->");
  if (start < 0 || end < start) throw new Error("the README has no <!-- quick-start --> … <!-- /quick-start --> section");
  const blocks = [];
  let heading = "";
  let open = null;
  for (const line of markdown.slice(start, end).split("\n")) {
    if (open) {
      if (/^\s*```\s*$/.test(line)) {
        blocks.push(open);
        open = null;
      } else open.lines.push(line);
      continue;
    }
    const h = /^#+\s+(.*)$/.exec(line);
    if (h) heading = h[1].trim();
    const fence = /^\s*```(\w+)(?:\s+(\w+))?\s*$/.exec(line);
    if (fence) open = { kind: fence[2] === "curl" ? "curl" : fence[1], lines: [], heading };
  }
  return blocks;
}

/** Shell commands of a block: continuation lines joined, blank lines and comments dropped. */
function commandsOf(lines) {
  const out = [];
  let pending = "";
  for (const line of lines) {
    const joined = pending + line;
    if (/\\$/.test(line)) {
      pending = `${joined.slice(0, -1)} `;
      continue;
    }
    pending = "";
    if (joined.trim() && !joined.trim().startsWith("#")) out.push(joined.trim());
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Running: each command in bash with the variables the commands before it set.

const configDir = process.env.FEEDS_CONFIG_DIR ?? mkdtempSync(join(tmpdir(), "feeds-first-run-"));
const work = mkdtempSync(join(tmpdir(), "feeds-first-run-env-"));
let env = { ...process.env, FEEDS_CONFIG_DIR: configDir };
// The quick start acts through the profile it builds, not through credentials of the caller's.
delete env.FEEDS_API_KEY;
delete env.FEEDS_API_SECRET;
delete env.FEEDS_PROFILE;
/** What the README exports for the given variables, to stand for the given values in output. */
const shown = {};

function run(command) {
  const exported = /^export\s+(\w+)=(.*)$/.exec(command);
  if (exported && given.includes(exported[1])) {
    shown[exported[1]] = exported[2].replace(/\s+#.*$/, "").replace(/^['"]|['"]$/g, "");
    return { status: 0, stdout: "", stderr: "", skipped: true };
  }
  const envFile = join(work, "env");
  const script = `set -a\n${command}\n__status=$?\nenv -0 > ${JSON.stringify(envFile)}\nexit $__status\n`;
  const r = spawnSync("bash", ["-c", script], { cwd: root, env, encoding: "utf8", timeout: 120_000 });
  try {
    const next = {};
    for (const entry of readFileSync(envFile, "utf8").split("\0")) {
      const i = entry.indexOf("=");
      if (i > 0) next[entry.slice(0, i)] = entry.slice(i + 1);
    }
    for (const k of ["_", "SHLVL", "OLDPWD", "__status"]) delete next[k];
    env = next;
  } catch {
    /* the command ended the shell: the variables stay as they were */
  }
  rmSync(envFile, { force: true });
  return { status: r.status ?? 1, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error };
}

// ------------------------------------------------------------------------------------------
// Comparing: what changes from run to run is masked; ids are numbered by first appearance.

function createMask() {
  const seen = new Map();
  const numbered = (kind) => (value) => {
    const key = `${kind}:${value}`;
    if (!seen.has(key)) seen.set(key, `<${kind}-${[...seen.keys()].filter((k) => k.startsWith(`${kind}:`)).length + 1}>`);
    return seen.get(key);
  };
  return (text, substitutions = []) => {
    let t = text;
    for (const [from, to] of substitutions) if (from) t = t.split(from).join(to);
    return t
      .replace(/eyJ[\w-]*\.eyJ[\w-]*\.[\w-]+/g, "<jwt>")
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, numbered("uuid"))
      .replace(/\bt_[0-9a-f]{18}\b/g, numbered("tenant"))
      .replace(/\bak_[0-9a-f]{24}\b/g, numbered("api_key"))
      .replace(/\bop_[0-9a-f]{18}\b/g, numbered("operator"))
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
      .replace(/(?<![\w-])[A-Za-z0-9_-]{40,}(?![\w-])/g, "<secret>")
      .replace(/[ \t]+$/gm, "")
      .trimEnd();
  };
}
const maskShown = createMask();
const maskActual = createMask();
const actualSubstitutions = () => given.filter((g) => shown[g]).map((g) => [process.env[g], shown[g]]);

const isRead = (command) => /^(npx feeds|npm run feeds --) (read|notifications)\b/.test(command);

function differenceOf(expected, actual) {
  const e = expected.split("\n");
  const a = actual.split("\n");
  const at = e.findIndex((line, i) => line !== a[i]);
  const line = at < 0 ? e.length : at;
  return [`  first difference at line ${line + 1}:`, `  README shows: ${e[line] ?? "(nothing)"}`, `  it printed:   ${a[line] ?? "(nothing)"}`, "  README (masked):", ...e.map((l) => `    ${l}`), "  printed (masked):", ...a.map((l) => `    ${l}`)].join("\n");
}

const blocks = quickStartBlocks(readFileSync(values.readme, "utf8"));
const steps = [];
blocks.forEach((b, i) => {
  if (b.kind !== "sh") return;
  const next = blocks[i + 1];
  steps.push({ heading: b.heading, commands: commandsOf(b.lines), expected: next?.kind === "text" ? next.lines.join("\n") : "" });
});
const curls = blocks.filter((b) => b.kind === "curl").map((b) => ({ heading: b.heading, commands: commandsOf(b.lines) }));
if (steps.length === 0) {
  process.stderr.write("first-run: the quick start has no sh blocks\n");
  process.exit(1);
}

function fail(lines) {
  process.stderr.write(`${lines.join("\n")}\n`);
  rmSync(work, { recursive: true, force: true });
  if (!process.env.FEEDS_CONFIG_DIR) rmSync(configDir, { recursive: true, force: true });
  process.exit(1);
}

const began = performance.now();
let waited = 0;
let commandCount = 0;
for (const [n, step] of steps.entries()) {
  const stepBegan = performance.now();
  const reads = step.commands.every(isRead);
  const deadline = stepBegan + 20_000;
  for (;;) {
    let printed = "";
    let failure = null;
    for (const command of step.commands) {
      const r = run(command);
      if (!r.skipped) commandCount += 1;
      if (r.status !== 0 || r.error) {
        failure = [`step ${n + 1} (${step.heading}) failed: \`${command}\` exited ${r.status}${r.error ? ` (${r.error.message})` : ""}`, r.stderr.trimEnd(), r.stdout.trimEnd()];
        break;
      }
      if (r.stderr.trim()) {
        failure = [`step ${n + 1} (${step.heading}): \`${command}\` wrote to stderr:`, r.stderr.trimEnd()];
        break;
      }
      printed += r.stdout;
    }
    if (failure) fail(failure);
    // Both sides masked afresh each try: a retried read must not number ids twice.
    const expected = createMask()(step.expected);
    const actual = createMask()(printed, actualSubstitutions());
    if (expected === actual) {
      // The ids of this step's output join the run's numbering on both sides.
      const e = maskShown(step.expected);
      const a = maskActual(printed, actualSubstitutions());
      if (e !== a) fail([`step ${n + 1} (${step.heading}): an id differs from the one earlier steps showed`, differenceOf(e, a)]);
      break;
    }
    if (!reads || performance.now() > deadline) {
      fail([`step ${n + 1} (${step.heading}): the output differs from the README${reads ? " (still after 20 s)" : ""}`, `  $ ${step.commands.join("\n  $ ")}`, differenceOf(expected, actual)]);
    }
    waited += 1000;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  process.stdout.write(`ok ${String(n + 1).padStart(2)}  ${((performance.now() - stepBegan) / 1000).toFixed(1).padStart(5)} s  ${step.heading}\n`);
}
const quickStartSeconds = (performance.now() - began) / 1000;

// The curl beside each step: run after the whole quick start (they write as its steps do).
const curlBegan = performance.now();
for (const block of curls) {
  for (const command of block.commands) {
    const r = run(command);
    const assigned = /^(\w+)=\$\(/.exec(command)?.[1];
    if (r.status !== 0) fail([`curl for "${block.heading}" failed: \`${command}\` exited ${r.status}`, r.stderr.trimEnd()]);
    if (assigned) {
      const value = env[assigned] ?? "";
      if (!value || value === "undefined" || value === "null") fail([`curl for "${block.heading}": \`${command}\` left ${assigned} empty`, r.stderr.trimEnd()]);
      continue;
    }
    let body;
    try {
      body = JSON.parse(r.stdout);
    } catch {
      fail([`curl for "${block.heading}": \`${command}\` did not answer JSON:`, r.stdout.slice(0, 500)]);
    }
    if (body && typeof body === "object" && "error" in body) fail([`curl for "${block.heading}": \`${command}\` answered an error:`, r.stdout.slice(0, 500)]);
  }
  process.stdout.write(`ok curl  ${block.heading}\n`);
}
process.stdout.write(
  `quick start: ${steps.length} steps, ${commandCount} commands, ${quickStartSeconds.toFixed(1)} s wall (of which ${(waited / 1000).toFixed(0)} s waiting for fan-out or notifications); the curl beside it: ${curls.length} blocks, ${((performance.now() - curlBegan) / 1000).toFixed(1)} s\n`,
);
rmSync(work, { recursive: true, force: true });
if (!process.env.FEEDS_CONFIG_DIR) rmSync(configDir, { recursive: true, force: true });
