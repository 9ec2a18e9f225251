import { isFeedsApiError, type ErrorCode } from "@feeds/client";
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { call } from "./session.js";

// Pieces every page uses: the error box (code, words, copyable requestId), copy buttons,
// loaders, paged tables.

/** What each code means to an operator (interface section 7). */
const WORDS: Record<ErrorCode, string> = {
  VALIDATION_FAILED: "The request was refused: check the fields below.",
  UNAUTHENTICATED: "Your session has ended: log in again.",
  FORBIDDEN: "Not allowed for your role.",
  NOT_FOUND: "Not found.",
  CONFLICT: "Refused because of the current state.",
  CONTENT_REJECTED: "The content was rejected.",
  RATE_LIMITED: "Too many requests: wait a moment and try again.",
  INTERNAL: "The server failed or could not be reached: try again.",
};

export type Reasons = Partial<Record<ErrorCode, string>>;

/** An error from a call: its code, status, the reason in words, the server's message and a copyable requestId. */
export function ErrorBox({ error, reasons }: { error: unknown; reasons?: Reasons | undefined }) {
  if (!error) return null;
  if (!isFeedsApiError(error)) {
    return (
      <div class="error" role="alert">
        <strong>Error</strong> {error instanceof Error ? error.message : "something went wrong"}
      </div>
    );
  }
  const code: ErrorCode = error.code;
  return (
    <div class="error" role="alert">
      <p>
        <strong class="code">{code}</strong> {error.status ? <span>(HTTP {error.status})</span> : null} {reasons?.[code] ?? WORDS[code] ?? ""}
      </p>
      <p class="message">{error.message}</p>
      {error.fields.length ? (
        <ul>
          {error.fields.map((f) => (
            <li key={f.path}>
              <code>{f.path || "(body)"}</code>: {f.message}
            </li>
          ))}
        </ul>
      ) : null}
      {error.retryAfterSeconds ? <p>Retry after {error.retryAfterSeconds} s.</p> : null}
      {error.requestId ? (
        <p class="rid">
          Request id <code>{error.requestId}</code> <CopyButton text={error.requestId} label="Copy request id" />
        </p>
      ) : null}
    </div>
  );
}

/** Copies `text`; says so in a live region. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState("");
  const copy = () => {
    navigator.clipboard.writeText(text).then(
      () => setDone("Copied"),
      () => setDone("Copy failed: select the text instead"),
    );
  };
  return (
    <>
      <button type="button" class="small" onClick={copy}>
        {label}
      </button>
      <span class="status" role="status">
        {done}
      </span>
    </>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Loads `fn` now and whenever `deps` change; `reload()` loads again. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const seq = useRef(0);
  const load = useCallback(() => {
    const n = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    call(fn).then(
      (data) => n === seq.current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => n === seq.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, deps);
  useEffect(load, [load]);
  return { ...state, reload: load };
}

/** A keyset-paged list: the current page's `next`, the page before it for "First page". */
export function usePages<P extends { results: unknown[]; next: string | null }>(fetchPage: (next: string | undefined) => Promise<P>, deps: unknown[]) {
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [page, setPage] = useState(1);
  const loaded = useLoad(() => fetchPage(cursor), [...deps, cursor]);
  useEffect(() => {
    setCursor(undefined);
    setPage(1);
  }, deps);
  const next = loaded.data?.next ?? null;
  return {
    ...loaded,
    page,
    hasNext: next !== null && next !== "",
    nextPage: () => {
      if (next) {
        setCursor(next);
        setPage((p) => p + 1);
      }
    },
    firstPage: () => {
      if (cursor === undefined) loaded.reload();
      setCursor(undefined);
      setPage(1);
    },
  };
}

/** "Next page" and "First page" under a paged table. */
export function Pager({ pages }: { pages: { page: number; hasNext: boolean; nextPage: () => void; firstPage: () => void; loading: boolean } }) {
  return (
    <div class="pager">
      <span>Page {pages.page}</span>
      <button type="button" onClick={pages.firstPage} disabled={pages.page === 1}>
        First page
      </button>
      <button type="button" onClick={pages.nextPage} disabled={!pages.hasNext || pages.loading}>
        Next page
      </button>
    </div>
  );
}

/** A table that scrolls sideways on narrow screens (focusable, so the keyboard can scroll it). */
export function Table({ label, head, children, empty }: { label: string; head: string[]; children: ComponentChildren; empty?: boolean }) {
  return (
    <div class="scroll" role="region" aria-label={label} tabIndex={0}>
      <table>
        <caption class="sr-only">{label}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th scope="col" key={h}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {empty ? (
            <tr>
              <td colSpan={head.length}>None.</td>
            </tr>
          ) : (
            children
          )}
        </tbody>
      </table>
    </div>
  );
}

/** A date as the operator's locale shows it, the ISO value in its title. */
export function When({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span>—</span>;
  return <time dateTime={iso}>{new Date(iso).toLocaleString()}</time>;
}

export function Page({ title, children }: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Feeds console`;
  }, [title]);
  return (
    <>
      <h1 id="page-title" tabIndex={-1}>
        {title}
      </h1>
      {children}
    </>
  );
}
