// npm pack's prepack/postpack step of each published package (sdk/*): the project's LICENSE
// travels in every tarball (Apache-2.0 asks for a copy with every distribution) without a second
// copy in the repository. Run from the package's folder: `node ../../scripts/package-license.mjs copy|remove`.
import { copyFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../LICENSE", import.meta.url));
const action = process.argv[2];
if (action === "copy") copyFileSync(root, "LICENSE");
else if (action === "remove") rmSync("LICENSE", { force: true });
else throw new Error("usage: package-license.mjs copy|remove");
