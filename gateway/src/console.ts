import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { FeedsError, type Logger } from "@feeds/kit";
import { sendError } from "./http.js";

// The operator console (console/, docs/console.md): a single-page app whose built files
// (`npm run build -w console` → console/dist) the gateway itself serves at /console. Served by
// the gateway, not by a server of its own behind it: the files are a few static assets read once
// at boot, the console then calls /operator and /admin on the same origin (no CORS, no
// third-party origin in its Content-Security-Policy), and split mode needs no extra process.
// These paths are not API routes: they are outside the route table and docs/openapi.json, as
// /openapi.json is.

/** Where `npm run build -w console` writes: <root>/console/dist (gateway/dist/console.js → ../../console/dist). */
export const CONSOLE_DIST = fileURLToPath(new URL("../../console/dist/", import.meta.url));

/** The console's path prefix. */
export const CONSOLE_PATH = "/console";

/**
 * Its policy: scripts, styles, fonts, images and API calls from this origin only, no inline
 * script or style, no plugin, never framed; forms post nowhere else; no <base> rewriting.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join("; ");

/** Hashed assets (`assets/<name>-<hash>.<ext>`) never change under their name: a year, immutable. */
const IMMUTABLE = "public, max-age=31536000, immutable";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
};

interface StaticFile {
  type: string;
  body: Buffer;
  gzip: Buffer | undefined;
  etag: string;
  cache: string;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Every built file by its URL path under /console/, read (and gzipped) once. */
export function loadConsole(dir: string): Map<string, StaticFile> | undefined {
  if (!existsSync(join(dir, "index.html"))) return undefined;
  const files = new Map<string, StaticFile>();
  for (const path of filesUnder(dir)) {
    const type = TYPES[extname(path)];
    if (!type) continue;
    const name = relative(dir, path).split(sep).join("/");
    const body = readFileSync(path);
    const gzip = body.length > 512 && !type.startsWith("image/png") ? gzipSync(body, { level: 9 }) : undefined;
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
    files.set(name, { type, body, gzip: gzip && gzip.length < body.length ? gzip : undefined, etag, cache: name.startsWith("assets/") ? IMMUTABLE : "no-cache" });
  }
  return files;
}

function send(req: FastifyRequest, reply: FastifyReply, file: StaticFile): FastifyReply {
  reply
    .header("content-type", file.type)
    .header("cache-control", file.cache)
    .header("etag", file.etag)
    .header("vary", "Accept-Encoding")
    .header("content-security-policy", CONSOLE_CSP)
    .header("x-frame-options", "DENY")
    .header("x-content-type-options", "nosniff")
    .header("referrer-policy", "no-referrer")
    .header("cross-origin-opener-policy", "same-origin")
    .header("cross-origin-resource-policy", "same-origin");
  if (req.headers["if-none-match"] === file.etag) return reply.code(304).send();
  const gzip = file.gzip && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? "")) ? file.gzip : undefined;
  if (gzip) reply.header("content-encoding", "gzip");
  return reply.code(200).send(gzip ?? file.body);
}

/**
 * Serves the console at /console: `assets/…` by exact name (404 otherwise), any other path under
 * /console the app's index.html (its own router reads the path). Without a built console the
 * paths answer 404 and the boot logs why.
 */
export function installConsole(app: FastifyInstance, log: Pick<Logger, "warn">, dir = CONSOLE_DIST): void {
  const files = loadConsole(dir);
  if (!files) {
    log.warn({ dir }, "the operator console is not built (npm run build -w console): /console answers 404");
    return;
  }
  const index = files.get("index.html") as StaticFile;
  const serve = async (req: FastifyRequest<{ Params: { "*"?: string } }>, reply: FastifyReply) => {
    const rest = req.params["*"] ?? "";
    // Only the built names: nothing from the request reaches the file system.
    const file = files.get(rest);
    if (file) return send(req, reply, file);
    if (rest.startsWith("assets/") || /\.[a-z0-9]+$/i.test(rest)) {
      return sendError(reply, req.id, new FeedsError("NOT_FOUND", `no console file ${CONSOLE_PATH}/${rest}`));
    }
    return send(req, reply, index);
  };
  app.get(CONSOLE_PATH, serve);
  app.get(`${CONSOLE_PATH}/*`, serve);
}
