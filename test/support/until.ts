/**
 * Polls `fn` every `everyMs` until it answers something other than undefined; a throw counts as
 * not yet (its message is named if the wait times out).
 */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const v = await fn().catch((e: unknown) => {
      last = e;
      return undefined;
    });
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? ` (${last.message})` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
