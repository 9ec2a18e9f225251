// The console's build (scripts/build.mjs runs it): served by the gateway under /console/, hashed
// file names under assets/, no inline script (the gateway's Content-Security-Policy forbids it).
import { defineConfig } from "vite";

export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    // Everything is a file: no data: URL or inline module for the policy to refuse.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
