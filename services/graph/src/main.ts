import { runServiceMain } from "@feeds/kit";
import { buildGraph } from "./build.js";

await runServiceMain("graph", buildGraph);
