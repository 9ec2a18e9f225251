import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** Debian's Chromium, which `npm test`'s set-up installs with apt when it is missing. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Headless Chromium with the flags this machine needs (no sandbox as root, no GPU, none of the
 * background connections a closed network refuses). Loud when it is missing: a bare vitest run
 * may not have it, and `what` cannot run without it.
 */
export async function launchChromium(what: string): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: run \`apt-get install -y chromium\` (npm test does it) — ${what} cannot run without it`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
  });
}

/** A page error without the page's stack (whose `http://127.0.0.1:port/` frames vitest cannot map). */
export async function inPage<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    const plain = new Error((e instanceof Error ? e.message : String(e)).split("\n    at ")[0]);
    plain.stack = plain.message;
    throw plain;
  }
}
