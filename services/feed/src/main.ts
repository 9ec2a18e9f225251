import { runServiceMain } from "@feeds/kit";
import { buildFeed } from "./build.js";

await runServiceMain("feed", buildFeed);
