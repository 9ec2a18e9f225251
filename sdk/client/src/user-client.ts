import { HttpClient, type CallOptions, type TokenContext } from "./http.js";
import type { ClientOptions } from "./client-base.js";
import { FeedApiClient } from "./feed-api-client.js";
import { routeTable } from "@feeds/contract/routes";
import type { User } from "@feeds/contract";

/** Where a browser gets its user token: typically a call to the app's own backend, which mints it. */
export type TokenProvider = () => Promise<string>;

export interface BrowserUserClientOptions extends ClientOptions {
  /**
   * Called for the first request, and again once after an UNAUTHENTICATED answer (an expired or
   * revoked token); the request is then sent once more with the new token. Never a tenant secret.
   */
  tokenProvider: TokenProvider;
}

/**
 * The provider's token, kept until the server refuses it; then the provider is asked again, once
 * per refused token: requests refused with a token that has already been replaced (or is being
 * replaced) get the new one without asking again.
 */
export function providedToken(provider: TokenProvider): (ctx: TokenContext) => Promise<string> {
  let current: Promise<string> | undefined;
  let latest: string | undefined;
  let pending = false;
  const ask = (): Promise<string> => {
    pending = true;
    const asked = provider();
    current = asked;
    asked.then(
      (token) => {
        if (current !== asked) return;
        latest = token;
        pending = false;
      },
      () => {
        if (current !== asked) return;
        current = undefined;
        pending = false;
      },
    );
    return asked;
  };
  return ({ refresh, refused }) => {
    if (current === undefined) return ask();
    if (!refresh || pending || (refused !== undefined && refused !== latest)) return current;
    return ask();
  };
}

/** An end-user's client in a browser: reads, writes on the user's own feeds, engagement. */
export class UserClient extends FeedApiClient {
  constructor(options: BrowserUserClientOptions) {
    if (typeof options.tokenProvider !== "function") throw new TypeError("tokenProvider must be a function returning a token");
    super(new HttpClient({ ...options, token: providedToken(options.tokenProvider), refreshOnUnauthenticated: true }), options);
  }

  /** `GET /v1/me` — the calling user's record (404 when there is none). */
  me(call?: CallOptions): Promise<User> {
    return this.route(routeTable.user.me, { call });
  }
}
