import { runServiceMain } from "@feeds/kit";
import { buildIdentity } from "./build.js";

await runServiceMain("identity", buildIdentity);
