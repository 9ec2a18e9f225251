import { OperatorClient, ServerClient, UserClient, type ClientOptions } from "@feeds/node";
import { CliError, usageError, type Credential } from "./errors.js";
import { configDir, normaliseUrl, ProfileStore, type Env, type Profile, type StoredTenant } from "./profile.js";

export interface Globals {
  url: string | undefined;
  json: boolean;
  profile: string;
}

export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** A wrong URL should fail fast: two retries of the SDK's policy, 15 s per attempt. */
const clientOptions = { maxRetries: 2, timeoutMs: 15_000 } satisfies Partial<ClientOptions>;

/** What every command runs with: the base URL, the profile, the clients, the output. */
export class Context {
  readonly store: ProfileStore;
  /** The credential of the last client handed out, for the message of a 401. */
  credential: Credential = "none";
  private cached: Profile | undefined;

  constructor(
    readonly env: Env,
    readonly globals: Globals,
    readonly io: Io,
  ) {
    this.store = new ProfileStore(configDir(env), globals.profile);
  }

  get profile(): Profile {
    this.cached ??= this.store.load();
    return this.cached;
  }

  saveProfile(profile: Profile): void {
    this.store.save(profile);
    this.cached = profile;
  }

  /** `--url`, else `FEEDS_URL`, else the URL the profile was logged in to. */
  baseUrl(): string {
    if (this.globals.url !== undefined) return normaliseUrl(this.globals.url, "--url");
    const fromEnv = this.env["FEEDS_URL"];
    if (fromEnv) return normaliseUrl(fromEnv, "FEEDS_URL");
    if (this.profile.url) return this.profile.url;
    throw usageError("no base URL: pass --url or set FEEDS_URL (npm start prints it)");
  }

  /** Stored credentials are sent only to the system they came from. */
  private requireSameSystem(what: string): string {
    const url = this.baseUrl();
    const own = this.profile.url;
    if (own !== undefined && own !== url) {
      throw new CliError(`profile "${this.store.name}" holds ${what} for ${own}, not ${url}: run feeds login --url ${url}, or use another --profile`);
    }
    return url;
  }

  /** A client without credentials (login, invite acceptance). */
  anonymous(): OperatorClient {
    this.credential = "none";
    return new OperatorClient({ baseUrl: this.baseUrl(), ...clientOptions });
  }

  /** The profile's operator session, refused here when it is known to have expired. */
  operator(): OperatorClient {
    const session = this.profile.session;
    if (!session) throw new CliError(`not logged in (profile "${this.store.name}"): run feeds login`);
    const url = this.requireSameSystem("a session");
    if (Date.parse(session.expires_at) <= Date.now()) {
      throw new CliError(`the session in profile "${this.store.name}" expired at ${session.expires_at}: run feeds login`);
    }
    this.credential = "session";
    return new OperatorClient({ baseUrl: url, token: session.token, ...clientOptions });
  }

  /** `FEEDS_API_KEY` and `FEEDS_API_SECRET`, else the profile's tenant. */
  tenantCredentials(): { apiKey: string; apiSecret: string } {
    const apiKey = this.env["FEEDS_API_KEY"];
    const apiSecret = this.env["FEEDS_API_SECRET"];
    if (apiKey || apiSecret) {
      if (!apiKey || !apiSecret) throw usageError("set both FEEDS_API_KEY and FEEDS_API_SECRET, or neither");
      return { apiKey, apiSecret };
    }
    const tenant = this.currentTenant();
    if (!tenant) {
      throw new CliError(
        `no tenant in profile "${this.store.name}": run feeds tenant create <name>, or set FEEDS_API_KEY and FEEDS_API_SECRET`,
      );
    }
    this.requireSameSystem("its tenant");
    return { apiKey: tenant.api_key, apiSecret: tenant.api_secret };
  }

  currentTenant(): StoredTenant | undefined {
    const id = this.profile.tenant;
    return id === undefined ? undefined : this.profile.tenants?.[id];
  }

  /** A server token's client (the tenant's backend). */
  server(): ServerClient {
    const creds = this.tenantCredentials();
    const client = new ServerClient({ baseUrl: this.baseUrl(), ...creds, expiresIn: "5m", ...clientOptions });
    this.credential = "tenant";
    return client;
  }

  /** A user token's client: acting as one end user. */
  user(userId: string): UserClient {
    const creds = this.tenantCredentials();
    const client = new UserClient({ baseUrl: this.baseUrl(), ...creds, userId, expiresIn: "5m", ...clientOptions });
    this.credential = "tenant";
    return client;
  }

  /** The answer as JSON (`--json`), or the human lines. */
  print(answer: unknown, lines: () => string[]): void {
    if (this.globals.json) this.io.stdout(`${JSON.stringify(answer, null, 2)}\n`);
    else for (const line of lines()) this.io.stdout(`${line}\n`);
  }

  note(line: string): void {
    this.io.stderr(`${line}\n`);
  }
}
