import { isFeedsApiError } from "@feeds/client";
import type { OperatorSignal } from "@feeds/contract";
import { useEffect, useRef, useState } from "preact/hooks";
import { client, currentSession, unauthorized } from "./session.js";

// Live tables: one poller per tab asks `GET /operator/signal` every POLL_MS with If-None-Match
// (the SDK's `signal({etag})`), so an unchanged tenant costs a 304 and nothing else. The signal's
// version moves on every change of the tenant's activities, users and webhook event records
// (inserts, patches, soft deletes); a live table refetches its page only when it moved.

/** How often the signal is asked (docs/console.md). */
export const POLL_MS = 2000;

export interface LiveState {
  signal: OperatorSignal | undefined;
  /** When this tab last saw the version move (undefined: not since it opened). */
  changedAt: Date | undefined;
}

let state: LiveState = { signal: undefined, changedAt: undefined };
let etag: string | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;
let running = false;
const listeners = new Set<(s: LiveState) => void>();

async function poll(): Promise<void> {
  const session = currentSession();
  if (!session || session.operator.role === "staff") return stop();
  try {
    const res = await client.signal({ etag });
    if (!res.notModified) {
      etag = res.etag ?? undefined;
      const moved = state.signal !== undefined && state.signal.version !== res.body.version;
      state = { signal: res.body, changedAt: moved ? new Date() : state.changedAt };
      for (const fn of listeners) fn(state);
    }
  } catch (e) {
    if (isFeedsApiError(e) && e.status === 401) {
      stop();
      unauthorized();
      return;
    }
    // A failed poll is retried at the next tick.
  }
  if (running) timer = setTimeout(() => void poll(), POLL_MS);
}

function start(): void {
  if (running) return;
  running = true;
  void poll();
}

function stop(): void {
  running = false;
  if (timer) clearTimeout(timer);
  timer = undefined;
}

/** Forgets the last signal (a new session starts from scratch). */
export function resetLive(): void {
  stop();
  state = { signal: undefined, changedAt: undefined };
  etag = undefined;
}

/** The signal, polled while a component uses it. */
export function useLive(): LiveState {
  const [s, set] = useState(state);
  useEffect(() => {
    listeners.add(set);
    start();
    return () => {
      listeners.delete(set);
      if (listeners.size === 0) stop();
    };
  }, []);
  return s;
}

/** Calls `reload` each time the signal's version moves after the first answer, while `active`. */
export function useLiveReload(live: LiveState, reload: () => void, active: boolean): void {
  const seen = useRef<number | undefined>(live.signal?.version);
  useEffect(() => {
    const v = live.signal?.version;
    if (v === undefined) return;
    if (seen.current === undefined) {
      seen.current = v;
      return;
    }
    if (v !== seen.current) {
      seen.current = v;
      if (active) reload();
    }
  }, [live.signal?.version, active, reload]);
}

/** "Live · last changed …" above a live table. */
export function liveNote(live: LiveState): string {
  const at = live.changedAt ? live.changedAt.toLocaleTimeString() : "not since this page opened";
  return `Live (checked every ${POLL_MS / 1000} s) · last changed: ${at}`;
}
