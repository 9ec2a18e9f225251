// The browser of test/e2e/browser.test.ts: Debian's Chromium at /usr/bin/chromium, installed with
// apt when missing (root, or passwordless sudo on a CI runner). playwright-core drives it; no
// browser build is downloaded.
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";

export const CHROMIUM = "/usr/bin/chromium";

/** Installs chromium when missing; throws with the reason when it cannot. */
export function ensureChromium(log) {
  if (existsSync(CHROMIUM)) return;
  log("installing chromium for the browser test (apt-get install chromium)…");
  const asRoot = process.getuid?.() === 0 ? [] : ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"];
  const apt = (...args) =>
    spawnSync(asRoot[0] ?? "apt-get", [...asRoot.slice(1), ...(asRoot.length ? ["apt-get"] : []), ...args], {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    }).status === 0;
  const install = () => apt("install", "-y", "--no-install-recommends", "chromium");
  if (!install() && !(apt("update") && install())) {
    throw new Error("chromium is missing and `apt-get install chromium` failed: install it (the browser test needs /usr/bin/chromium)");
  }
  if (!existsSync(CHROMIUM)) throw new Error(`the chromium package installed no ${CHROMIUM}`);
}
