import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import type { Operator } from "@feeds/node";
import { CliError, usageError } from "./errors.js";

/** A tenant the CLI created: its secret is answered once, so this is where it is kept. */
export interface StoredTenant {
  id: string;
  name: string;
  api_key: string;
  api_secret: string;
}

/** One profile file: the system it belongs to, the operator session, the tenants created. */
export interface Profile {
  url?: string;
  session?: { token: string; expires_at: string; operator: Operator };
  /** The tenant id the feed commands act for. */
  tenant?: string;
  tenants?: Record<string, StoredTenant>;
}

export type Env = Readonly<Record<string, string | undefined>>;

/** `FEEDS_CONFIG_DIR`, else `$XDG_CONFIG_HOME/feeds`, else `~/.config/feeds`. */
export function configDir(env: Env): string {
  if (env["FEEDS_CONFIG_DIR"]) return env["FEEDS_CONFIG_DIR"];
  const xdg = env["XDG_CONFIG_HOME"];
  // The XDG spec: a relative value is invalid and ignored.
  if (xdg && isAbsolute(xdg)) return join(xdg, "feeds");
  return join(homedir(), ".config", "feeds");
}

const profileName = /^[A-Za-z0-9_-]{1,64}$/;

/** `<config dir>/<name>.json`, readable by its owner alone (file 0600, directory 0700). */
export class ProfileStore {
  readonly path: string;

  constructor(
    readonly dir: string,
    readonly name: string,
  ) {
    if (!profileName.test(name)) throw usageError(`profile name "${name}" must match ${profileName.source}`);
    this.path = join(dir, `${name}.json`);
  }

  load(): Profile {
    if (!existsSync(this.path)) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(this.path, "utf8"));
    } catch (e) {
      throw new CliError(`cannot read profile ${this.path}: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw new CliError(`profile ${this.path} is not a JSON object: remove it and log in again`);
    }
    return parsed;
  }

  /** Written whole to a private temporary file, then renamed over the old one. */
  save(profile: Profile): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(profile, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.path);
  }
}

/** `http(s)://host[:port][/prefix]` without a trailing slash, or a usage error naming `from`. */
export function normaliseUrl(value: string, from: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usageError(`${from} "${value}" is not a URL (expected e.g. http://127.0.0.1:8080)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw usageError(`${from} "${value}" is not an http(s) URL`);
  }
  if (url.search || url.hash || url.username || url.password) {
    throw usageError(`${from} "${value}" must be a plain base URL (no query, fragment or credentials)`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}
