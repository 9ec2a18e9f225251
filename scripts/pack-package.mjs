// npm pack's prepack/postpack step of each published package (sdk/*), run from the package's
// folder: `node ../../scripts/pack-package.mjs prepack|postpack`.
// - prepack: the project's LICENSE travels in the tarball (Apache-2.0 asks for a copy with every
//   distribution) without a second copy in the repository; build outputs whose source is gone
//   (a renamed or moved file, which `tsc -b` does not delete) are removed so they are not shipped.
// - postpack: the copied LICENSE goes again.
import { copyFileSync, existsSync, readdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const license = fileURLToPath(new URL("../LICENSE", import.meta.url));
const outputs = /\.(d\.ts|js)(\.map)?$/;

function pruneStale(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "bundle") pruneStale(path);
      continue;
    }
    if (!outputs.test(entry.name)) continue;
    const source = join("src", relative("dist", path).replace(outputs, ".ts"));
    if (!existsSync(source)) rmSync(path);
  }
}

const action = process.argv[2];
if (action === "prepack") {
  copyFileSync(license, "LICENSE");
  pruneStale("dist");
} else if (action === "postpack") rmSync("LICENSE", { force: true });
else throw new Error("usage: pack-package.mjs prepack|postpack");
