import { SignJWT } from "jose";

/**
 * Token helpers (contract section 1).
 *
 * Server and user tokens are JWTs signed with HS256 using the tenant's `api_secret` (its UTF-8
 * bytes are the HMAC key). The protected header carries `kid` = the tenant's `api_key`.
 *
 * - server token claims: `{server: true, iat, exp?}` — no `exp` unless `expiresIn` is given
 * - user token claims:   `{user_id, iat, exp}`       — `exp` always; `expiresIn` defaults to `1h`
 */

export interface TokenOptions {
  /** Lifetime such as `30s`, `15m`, `1h`, `7d`. */
  expiresIn?: string | undefined;
  /**
   * Issue time (`iat`), as a Date or in seconds since the epoch. Defaults to now. Useful in tests,
   * e.g. to mint a token that is already expired or one issued before a revocation.
   */
  issuedAt?: Date | number | undefined;
}

export const DEFAULT_USER_TOKEN_EXPIRES_IN = "1h";

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * Parses a duration of the form `<positive integer><unit>` with unit `s`, `m`, `h` or `d`
 * (`30s`, `15m`, `1h`, `7d`) into seconds. Throws a TypeError on anything else.
 */
export function parseDuration(value: string): number {
  if (typeof value !== "string") {
    throw new TypeError(`invalid duration: expected a string such as "15m", got ${typeof value}`);
  }
  const match = /^(\d{1,9})([smhd])$/.exec(value);
  const amount = match?.[1];
  const unit = match?.[2];
  if (amount === undefined || unit === undefined) {
    throw new TypeError(`invalid duration "${value}": use a positive integer followed by s, m, h or d (e.g. "15m")`);
  }
  const n = Number.parseInt(amount, 10);
  const perUnit = UNIT_SECONDS[unit];
  if (n <= 0 || perUnit === undefined) {
    throw new TypeError(`invalid duration "${value}": must be greater than zero`);
  }
  return n * perUnit;
}

function issuedAtSeconds(issuedAt: Date | number | undefined): number {
  if (issuedAt === undefined) return Math.floor(Date.now() / 1000);
  if (issuedAt instanceof Date) {
    const ms = issuedAt.getTime();
    if (!Number.isFinite(ms)) throw new TypeError("invalid issuedAt date");
    return Math.floor(ms / 1000);
  }
  if (!Number.isFinite(issuedAt) || issuedAt < 0) throw new TypeError("invalid issuedAt seconds");
  return Math.floor(issuedAt);
}

function requireNonEmpty(name: string, value: unknown): asserts value is string {
  if (typeof value !== "string" || value.length === 0) {
    throw new TypeError(`${name} must be a non-empty string`);
  }
}

async function sign(
  apiKey: string,
  apiSecret: string,
  claims: Record<string, unknown>,
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: "JWT", kid: apiKey })
    .sign(new TextEncoder().encode(apiSecret));
}

/** Mints a server token (tenant backend). Without `expiresIn` the token has no `exp` claim. */
export async function createServerToken(
  apiKey: string,
  apiSecret: string,
  options: TokenOptions = {},
): Promise<string> {
  requireNonEmpty("apiKey", apiKey);
  requireNonEmpty("apiSecret", apiSecret);
  const iat = issuedAtSeconds(options.issuedAt);
  const claims: Record<string, unknown> = { server: true, iat };
  if (options.expiresIn !== undefined) claims["exp"] = iat + parseDuration(options.expiresIn);
  return sign(apiKey, apiSecret, claims);
}

/** Mints a user token for one end-user. `exp` is always set (`expiresIn` defaults to `1h`). */
export async function createUserToken(
  apiKey: string,
  apiSecret: string,
  userId: string,
  options: TokenOptions = {},
): Promise<string> {
  requireNonEmpty("apiKey", apiKey);
  requireNonEmpty("apiSecret", apiSecret);
  requireNonEmpty("userId", userId);
  const iat = issuedAtSeconds(options.issuedAt);
  const exp = iat + parseDuration(options.expiresIn ?? DEFAULT_USER_TOKEN_EXPIRES_IN);
  return sign(apiKey, apiSecret, { user_id: userId, iat, exp });
}
