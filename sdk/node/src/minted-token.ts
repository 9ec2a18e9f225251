// A token the node clients mint themselves from the tenant's credentials.

/**
 * Caches a minted token; re-mints when it is close to expiry or when asked to.
 *
 * With `laterIatOnRefresh`, a forced re-mint (the server refused the token) first waits for the
 * next whole second and uses it as `iat`: token revocation compares the second-precision `iat`
 * with `revoked_before` (millisecond precision), so a token minted in the same second as the
 * revocation would be refused again. Waiting (at most one second, through the client's `sleep`)
 * keeps `iat` honest (never in the future) and later than any revocation the server had already
 * applied when it refused the old token, as long as the two clocks agree.
 */
export class MintedToken {
  private token: string | undefined;
  private refreshAtMs = 0;

  constructor(
    private readonly mint: (issuedAtSeconds: number | undefined) => Promise<string>,
    private readonly lifetimeSeconds: number | undefined,
    private readonly laterIatOnRefresh?: { sleep: (ms: number) => Promise<void> },
  ) {}

  async get(forceRefresh: boolean): Promise<string> {
    if (!forceRefresh && this.token !== undefined && Date.now() < this.refreshAtMs) {
      return this.token;
    }
    let issuedAt: number | undefined;
    if (forceRefresh && this.laterIatOnRefresh) {
      const now = Date.now();
      issuedAt = Math.ceil(now / 1000);
      const waitMs = issuedAt * 1000 - now;
      if (waitMs > 0) await this.laterIatOnRefresh.sleep(waitMs);
    }
    const mintedAt = Date.now();
    const token = await this.mint(issuedAt);
    this.token = token;
    if (this.lifetimeSeconds === undefined) {
      this.refreshAtMs = Number.POSITIVE_INFINITY;
    } else {
      const marginSeconds = Math.min(60, this.lifetimeSeconds * 0.2);
      this.refreshAtMs = mintedAt + (this.lifetimeSeconds - marginSeconds) * 1000;
    }
    return token;
  }
}
