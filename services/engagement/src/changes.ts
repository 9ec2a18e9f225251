import { internal, OUTBOX_GRACE_MS } from "@feeds/kit";

// How the engagement service's writes and its outbox relay share a pending change (kit's outbox):
// the writer makes its count update within WRITER_WINDOW_MS of the change, the relay touches a
// change only once it is older than the grace, so the two never both make it.

/** How long a change is its writer's: the relay finishes it after this (engagement's outbox). */
export const GRACE_MS = Math.max(OUTBOX_GRACE_MS, 5_000);
/** A writer makes its count update within this much of its change, or leaves it to the relay. */
export const WRITER_WINDOW_MS = 3_000;
/** How long a write waits for an earlier change of the same document (its writer's or the relay's). */
const WAIT_MS = GRACE_MS + 2_500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `attempt` until it answers something other than "busy" (another change of the document is
 * pending: normally cleared within milliseconds of its write, by the relay after the grace if its
 * writer died), waiting a little longer each time; INTERNAL (retryable) past the wait.
 */
export async function whenSettled<T>(attempt: () => Promise<T | "busy">): Promise<T> {
  const until = Date.now() + WAIT_MS;
  for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
    const r = await attempt();
    if (r !== "busy") return r;
    if (Date.now() + pause > until) throw internal(new Error("an earlier change of the document is still pending"));
    await sleep(pause);
  }
}

/** The writer's deadline for the count update of a change made at `at`. */
export const notAfter = (at: Date): number => at.getTime() + WRITER_WINDOW_MS;
