import { OperatorClient, isFeedsApiError, type FeedsApiError } from "@feeds/client";
import type { Operator } from "@feeds/contract";
import { currentPath, navigate } from "./router.js";

// The operator's session: its token and who they are, in memory and in this tab's sessionStorage
// (a reload keeps it, a closed tab forgets it); never localStorage. Every API call goes through
// `client` (the SDK's OperatorClient, same origin); a 401 anywhere ends the session and returns
// to the login page, which brings the operator back to where they were.

const SESSION_KEY = "feeds-console.session";
const RETURN_KEY = "feeds-console.return";

export interface Session {
  token: string;
  expiresAt: string;
  operator: Operator;
}

/** The console's one client: same origin, one retry of a 429/5xx (the SDK's policy). */
export const client = new OperatorClient({ baseUrl: location.origin, maxRetries: 1, timeoutMs: 15_000 });

let session: Session | undefined = read();
const listeners = new Set<() => void>();

function read(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(SESSION_KEY);
    if (!raw) return undefined;
    const s = JSON.parse(raw) as Session;
    if (typeof s.token !== "string" || typeof s.operator?.role !== "string") return undefined;
    if (Date.parse(s.expiresAt) <= Date.now()) return undefined;
    client.setToken(s.token);
    return s;
  } catch {
    return undefined;
  }
}

export const currentSession = (): Session | undefined => session;

export function onSessionChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function startSession(s: { token: string; expires_at: string; operator: Operator }): void {
  session = { token: s.token, expiresAt: s.expires_at, operator: s.operator };
  client.setToken(s.token);
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
  for (const fn of listeners) fn();
}

export function endSession(): void {
  session = undefined;
  client.setToken(undefined);
  sessionStorage.removeItem(SESSION_KEY);
  for (const fn of listeners) fn();
}

/** Where a staff member or a tenant operator starts. */
export const homeOf = (op: Operator): string => (op.role === "staff" ? "/console/tenants" : "/console/tenant");

/** After login: back to the page a 401 interrupted, else home. */
export function afterLogin(op: Operator): void {
  const back = sessionStorage.getItem(RETURN_KEY);
  sessionStorage.removeItem(RETURN_KEY);
  const ok = back && back.startsWith("/console/") && !back.startsWith("/console/login") && !back.startsWith("/console/invite");
  navigate(ok ? back : homeOf(op), { replace: true });
}

/** A 401 from any call: forget the session, remember the page, go to login. */
export function unauthorized(): void {
  // Several calls in flight meet the same 401: the first one decides.
  if (!session) return;
  sessionStorage.setItem(RETURN_KEY, currentPath());
  endSession();
  navigate("/console/login", { replace: true });
}

export async function logout(): Promise<void> {
  try {
    await client.logout();
  } catch {
    // The session ends here whatever the server answered.
  }
  endSession();
  navigate("/console/login", { replace: true });
}

/**
 * Asks `GET /operator/me` again (each navigation): a role changed by an owner meanwhile changes
 * which controls show; a 401 ends the session.
 */
export async function refreshOperator(): Promise<void> {
  if (!session) return;
  const op = await call(() => client.currentOperator());
  if (session && (op.role !== session.operator.role || op.name !== session.operator.name)) {
    session = { ...session, operator: op };
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
    for (const fn of listeners) fn();
  }
}

/** An API error (the SDK's FeedsApiError) or anything else thrown by a call. */
export type CallError = FeedsApiError | Error;

/** Runs a call; a 401 ends the session (and rethrows so the caller stops). */
export async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isFeedsApiError(e) && e.status === 401) unauthorized();
    throw e;
  }
}
