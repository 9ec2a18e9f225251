// Writes docs/openapi.json: the OpenAPI document generated from @feeds/contract's route table
// (gateway/src/openapi/document.ts). Run after `npx tsc -b`; gateway/test/openapi-document.test.ts
// fails while the committed file differs from a regeneration.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { operations } from "@feeds/contract";
import { openApiDocument, placeholderServer } from "../gateway/dist/openapi/document.js";
import { root } from "./lib/setup.mjs";

const file = join(root, "docs", "openapi.json");
writeFileSync(file, `${JSON.stringify(openApiDocument(operations, { serverUrl: placeholderServer }), null, 2)}\n`);
console.log(`wrote ${file}`);
