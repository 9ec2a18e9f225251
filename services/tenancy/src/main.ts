import { runServiceMain } from "@feeds/kit";
import { buildTenancy } from "./build.js";

await runServiceMain("tenancy", buildTenancy);
