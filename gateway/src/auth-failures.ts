import { isCode } from "@feeds/kit";
import { addressBucket } from "./client-address.js";
import type { RateLimiter } from "./rate-limit.js";

/**
 * A budget of failed authentications per client address (IPv6: per /64) and minute. Past it, a
 * credential that would need a lookup (an api key not in memory, any operator session) is
 * refused with 429 before the lookup: random well-formed kids and session tokens cannot reach
 * MongoDB at request rate. Credentials answered from memory are not held back.
 */
export function createAuthFailureBudget(limiter: RateLimiter, limitPerMinute: number) {
  return {
    /** Throws the 429 when `address` has spent its budget this minute. */
    async check(address: string): Promise<void> {
      const { count, window } = await limiter.peek("authfail", addressBucket(address));
      if (count >= limitPerMinute) throw limiter.refusal("auth", window);
    },
    /** Runs one authentication; a 401 it ends in is counted against `address`. */
    async spend<T>(address: string, authenticate: () => Promise<T>): Promise<T> {
      try {
        return await authenticate();
      } catch (e) {
        // A Redis outage must not turn the caller's 401 into a 500: the 401 stands either way.
        if (isCode(e, "UNAUTHENTICATED")) await limiter.hit("authfail", [addressBucket(address)]).catch(() => undefined);
        throw e;
      }
    },
  };
}

export type AuthFailureBudget = ReturnType<typeof createAuthFailureBudget>;
