import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../scripts/infra.mjs";

// The `feeds` command line (cli/), run as a user runs it: its own process, its own environment,
// a profile under a folder of the test's (never the real home).

const root = join(import.meta.dirname, "..", "..");
const bin = join(root, "cli", "bin", "feeds.mjs");
const work = mkdtempSync(join(tmpdir(), "feeds-cli-test-"));
const home = join(work, "home");
const configDir = join(work, "config");
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function feeds(args: string[], env: Record<string, string | undefined> = {}): Promise<Result> {
  const base = { PATH: process.env.PATH, HOME: home, FEEDS_URL: inject("baseUrl"), FEEDS_CONFIG_DIR: configDir };
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd: root, env: { ...base, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/** One line on stderr, `feeds: …`, no stack frame. */
function oneLine(r: Result, code: number, pattern: RegExp) {
  expect(r.code, r.stderr).toBe(code);
  expect(r.stdout).toBe("");
  const lines = r.stderr.trimEnd().split("\n");
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^feeds: /);
  expect(lines[0]).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

const modeOf = (path: string) => statSync(path).mode & 0o777;
const profilePath = join(configDir, "default.json");
let tenant: { id: string; api_key: string; api_secret: string };

describe("feeds (the command-line tool)", () => {
  beforeAll(async () => {
    mkdirSync(home, { recursive: true });
    const login = await feeds(["login"], { FEEDS_EMAIL: inject("staffEmail"), FEEDS_PASSWORD: inject("staffPassword") });
    expect(login.stderr).toBe("");
    expect(login.stdout).toMatch(/^logged in to http:\/\/127\.0\.0\.1:\d+ as .+ \(staff\); session until \S+Z\n$/);
    const created = await feeds(["tenant", "create", "CLI test", "--json"]);
    expect(created.stderr).toBe("");
    const answer = JSON.parse(created.stdout);
    tenant = { id: answer.tenant.id, api_key: answer.tenant.api_key, api_secret: answer.api_secret };
  });

  it("keeps the session and the tenant's secret in a file only its owner reads (file 0600, folder 0700)", () => {
    expect(modeOf(configDir)).toBe(0o700);
    expect(modeOf(profilePath)).toBe(0o600);
    const profile = JSON.parse(readFileSync(profilePath, "utf8"));
    expect(profile.url).toBe(inject("baseUrl"));
    expect(profile.session.operator.role).toBe("staff");
    expect(profile.tenant).toBe(tenant.id);
    expect(profile.tenants[tenant.id].api_secret).toBe(tenant.api_secret);
    expect(existsSync(join(home, ".config"))).toBe(false);
  });

  it("finds the profile under FEEDS_CONFIG_DIR, else $XDG_CONFIG_HOME/feeds, else ~/.config/feeds", async () => {
    const xdg = join(work, "xdg");
    mkdirSync(join(xdg, "feeds"), { recursive: true });
    copyFileSync(profilePath, join(xdg, "feeds", "default.json"));
    const viaXdg = await feeds(["whoami"], { FEEDS_CONFIG_DIR: undefined, XDG_CONFIG_HOME: xdg });
    expect(viaXdg.stdout).toContain(`profile ${join(xdg, "feeds", "default.json")}; tenant ${tenant.id}`);
    const viaHome = await feeds(["whoami"], { FEEDS_CONFIG_DIR: undefined });
    oneLine(viaHome, 1, /^feeds: not logged in \(profile "default"\): run feeds login$/);
    mkdirSync(join(home, ".config", "feeds"), { recursive: true });
    copyFileSync(profilePath, join(home, ".config", "feeds", "default.json"));
    const found = await feeds(["whoami"], { FEEDS_CONFIG_DIR: undefined });
    expect(found.stdout).toContain(`profile ${join(home, ".config", "feeds", "default.json")}`);
  });

  it("acts for the tenant it created: users, follows, posts, reads, reactions, tokens, --json", async () => {
    expect((await feeds(["user", "put", "ann", "--custom", '{"name":"Ann"}'])).stdout).toBe('user ann {"name":"Ann"}\n');
    expect((await feeds(["follow", "timeline:cy", "user:ann"])).stdout).toBe("timeline:cy follows user:ann\n");
    const posted = await feeds(["post", "user:ann", "--as", "ann", "--verb", "post", "--object", "note:9", "--json"]);
    const activity = JSON.parse(posted.stdout);
    expect(activity).toMatchObject({ actor: "user:ann", verb: "post", object: "note:9", origin_feed: "user:ann", actor_user: { id: "ann", custom: { name: "Ann" } } });
    // The origin feed shows a write at once (fan-out to timeline:cy comes later).
    const read = JSON.parse((await feeds(["read", "user:ann", "--json"])).stdout);
    expect(read.results.map((a: { id: string }) => a.id)).toEqual([activity.id]);
    expect(read.results[0]).not.toHaveProperty("own_reactions");
    expect((await feeds(["react", activity.id, "wow", "--as", "cy"])).stdout).toBe(`cy reacted wow to ${activity.id}\n`);
    const asCy = await feeds(["read", "user:ann", "--as", "cy"]);
    expect(asCy.stdout).toContain('reaction_counts {"wow":1}  own_reactions ["wow"]');
    const token = (await feeds(["token", "user", "ann", "--expires-in", "15m"])).stdout.trim();
    expect(token).toMatch(/^eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+$/);
    const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString());
    expect(claims.exp - claims.iat).toBe(900);
    expect(claims.user_id).toBe("ann");
  });

  it("takes the tenant from FEEDS_API_KEY and FEEDS_API_SECRET, without a profile", async () => {
    const r = await feeds(["user", "put", "dee"], { FEEDS_CONFIG_DIR: join(work, "empty"), FEEDS_API_KEY: tenant.api_key, FEEDS_API_SECRET: tenant.api_secret });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("user dee {}\n");
    oneLine(await feeds(["user", "put", "dee"], { FEEDS_CONFIG_DIR: join(work, "empty") }), 1, /no tenant in profile "default": run feeds tenant create <name>/);
    oneLine(await feeds(["user", "put", "dee"], { FEEDS_API_KEY: tenant.api_key }), 2, /set both FEEDS_API_KEY and FEEDS_API_SECRET/);
    oneLine(
      await feeds(["user", "put", "dee"], { FEEDS_API_KEY: tenant.api_key, FEEDS_API_SECRET: "x".repeat(43) }),
      1,
      /does not accept the tenant's api key and secret/,
    );
  });

  it("answers a wrong URL, a malformed feed ref or option with one line on stderr and a non-zero exit", async () => {
    const closed = await freePort();
    oneLine(await feeds(["login", "a@example.com"], { FEEDS_URL: `http://127.0.0.1:${closed}`, FEEDS_CONFIG_DIR: join(work, "other"), FEEDS_PASSWORD: "x" }), 1, /^feeds: cannot reach http:\/\/127\.0\.0\.1:\d+: connection refused/);
    oneLine(await feeds(["read", "x:y", "--url", "not a url"]), 2, /--url "not a url" is not a URL/);
    oneLine(await feeds(["read", "timeline"]), 2, /feed "timeline" is not a feed ref group:id/);
    oneLine(await feeds(["follow", "timeline:cy", "user:a b"]), 2, /target feed "user:a b" is not a feed ref/);
    oneLine(await feeds(["read", "user:ann", "--limit", "500"]), 2, /--limit must be a whole number from 1 to 100/);
    oneLine(await feeds(["read", "user:ann", "--bogus"]), 2, /Unknown option '--bogus'/);
    oneLine(await feeds(["post", "user:ann", "--as", "ann", "--verb", "post", "--object", "x", "--custom", "{"]), 2, /--custom is not JSON/);
    oneLine(await feeds(["token", "user", "ann", "--expires-in", "soon"]), 2, /--expires-in "soon" is not a duration/);
    oneLine(await feeds(["react", "00000000-0000-4000-8000-000000000000", "like", "--as", "ann"]), 1, /^feeds: NOT_FOUND \(HTTP 404\): .* \[request [\w-]+\]$/);
    oneLine(await feeds(["frobnicate"]), 2, /unknown command "frobnicate"/);
    // Stored credentials go only to the system they came from.
    oneLine(await feeds(["whoami", "--url", `http://127.0.0.1:${closed}`]), 1, /holds a session for http:\/\/127\.0\.0\.1:\d+, not http:\/\/127\.0\.0\.1:\d+: run feeds login/);
  });

  it("says to log in again when the session has expired or ended", async () => {
    const profile = JSON.parse(readFileSync(profilePath, "utf8"));
    writeFileSync(join(configDir, "expired.json"), JSON.stringify({ ...profile, session: { ...profile.session, expires_at: "2020-01-01T00:00:00.000Z" } }));
    oneLine(await feeds(["tenant", "create", "x", "--profile", "expired"]), 1, /the session in profile "expired" expired at 2020-01-01T00:00:00.000Z: run feeds login/);
    writeFileSync(join(configDir, "ended.json"), JSON.stringify({ ...profile, session: { ...profile.session, token: "y".repeat(43) } }));
    oneLine(await feeds(["whoami", "--profile", "ended"]), 1, /the session in profile "ended" is no longer accepted \(expired, logged out or disabled\): run feeds login/);
  });

  it("invites an operator into the profile's tenant, who accepts and logs in as its owner", async () => {
    const invited = await feeds(["operator", "invite", "owner@cli.test", "--name", "Owner", "--role", "owner", "--json"]);
    expect(invited.stderr).toBe("");
    const answer = JSON.parse(invited.stdout);
    expect(answer.teammate).toMatchObject({ email: "owner@cli.test", role: "owner", invite_pending: true });
    const accepted = await feeds(["operator", "accept", answer.invite_token, "--profile", "owner"], { FEEDS_PASSWORD: "a long enough password" });
    expect(accepted.stderr).toBe("");
    expect(accepted.stdout).toMatch(/ as owner@cli\.test \(owner\); session until /);
    const me = await feeds(["whoami", "--profile", "owner"]);
    expect(me.stdout).toContain(`owner@cli.test (owner of ${tenant.id})`);
    const loggedOut = await feeds(["logout", "--profile", "owner"]);
    expect(loggedOut.stdout).toMatch(/^logged out of /);
    oneLine(await feeds(["whoami", "--profile", "owner"]), 1, /not logged in \(profile "owner"\)/);
  });
});
