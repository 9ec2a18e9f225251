// A vitest reporter that says, once, how long after `npm test` began (FEEDS_TEST_T0, epoch ms)
// the first test started, and keeps the figure in .cache/first-test.json for scripts/test.mjs.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { root } from "./setup.mjs";

export default class FirstTestReporter {
  told = false;

  onTestCaseReady(test) {
    if (this.told) return;
    this.told = true;
    const t0 = Number(process.env.FEEDS_TEST_T0);
    if (!Number.isFinite(t0)) return;
    const seconds = (Date.now() - t0) / 1000;
    mkdirSync(join(root, ".cache"), { recursive: true });
    writeFileSync(join(root, ".cache", "first-test.json"), `${JSON.stringify({ seconds, test: test.fullName })}\n`);
    process.stderr.write(`[feeds] first test started ${seconds.toFixed(1)} s after npm test began (${test.module.moduleId.replace(`${root}/`, "")})\n`);
  }
}
