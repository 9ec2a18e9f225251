import { runServiceMain } from "@feeds/kit";
import { buildEngagement } from "./build.js";

await runServiceMain("engagement", buildEngagement);
